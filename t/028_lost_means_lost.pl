# A lost lock commits nothing anywhere, and says so whatever the log
# settings.  Cluster A reaches ZooKeeper through a proxy that cuts it off
# until its session expires and cluster B takes the keys:
#   - a transaction that wrote through postgres_fdw is refused at COMMIT and
#     its remote write is absent, whichever of zk_lock and postgres_fdw the
#     session used first (PostgreSQL runs transaction callbacks
#     last-registered first);
#   - with log_min_messages = fatal a statement cancelled because its lock
#     was lost still fails with 40001 (not 57014), reported once;
#   - a commit past its check is not cancelled by a loss that comes while
#     postgres_fdw commits remotely (the commit window): the remote and the
#     local commit both happen, never one without the other.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('lost_means_lost');
my $proxy = start_proxy('lost_means_lost', $zk);
END { proxy_do($proxy, 'pass') if $proxy; }

my $timeout_s = 6;
my $conf = "zk_lock.session_timeout = '${timeout_s}s'\nzk_lock.connect_timeout = '20s'\n";
my $a = new_zk_cluster('lml_a', undef, hosts => "127.0.0.1:$proxy->{port}",
	conf => $conf . "log_min_messages = fatal\nlog_min_error_statement = panic\n");
my $b = new_zk_cluster('lml_b', $zk, conf => $conf);
ok(wait_for(sub { zk_status($a, 'state') eq 'connected' }, 20), 'A connected through the proxy');

sub b_can_take
{
	my ($key) = @_;
	return $b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('$key', 0); COMMIT");
}

# B's table, written from A through postgres_fdw
$b->safe_psql('postgres', 'CREATE TABLE remote_t (id int, tag text)');
$a->safe_psql('postgres', join(";\n",
	'CREATE EXTENSION postgres_fdw',
	"CREATE SERVER b FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '" . $b->host . "', port '"
	  . $b->port . "', dbname 'postgres')",
	'CREATE USER MAPPING FOR CURRENT_USER SERVER b',
	"CREATE FOREIGN TABLE ft (id int, tag text) SERVER b OPTIONS (table_name 'remote_t')"));
sub remote_rows
{
	my ($id) = @_;
	return $b->safe_psql('postgres', "SELECT count(*) FROM remote_t WHERE id = $id");
}

# a commit that holds its lock writes through the foreign table as usual
$a->safe_psql('postgres', "BEGIN; SELECT zk_lock('fdw-ok'); INSERT INTO ft VALUES (0, 'ok'); COMMIT");
is(remote_rows(0), '1', 'a commit under a held lock writes the remote row');

# zk_lock first: its callback is registered before postgres_fdw's
my $h1 = $a->background_psql('postgres', on_error_stop => 0);
$h1->query_safe("\\set VERBOSITY verbose\nBEGIN; SELECT zk_lock('fdw-1')");
$h1->query_safe("INSERT INTO ft VALUES (1, 'zk_lock first')");
# postgres_fdw first: a session whose first remote use comes before its first zk call
my $h2 = $a->background_psql('postgres', on_error_stop => 0);
$h2->query_safe("\\set VERBOSITY verbose\nSELECT count(*) FROM ft");
$h2->query_safe("BEGIN; INSERT INTO ft VALUES (2, 'postgres_fdw first')");
$h2->query_safe("SELECT zk_lock('fdw-2')");
# a commit past its check, held up in postgres_fdw's remote commit (B's
# deferred trigger waits for an advisory lock the test holds)
$b->safe_psql('postgres', <<'SQL');
CREATE TABLE win_t (id int);
CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(42);
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER hold_commit AFTER INSERT ON win_t DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION hold_commit();
SQL
$a->safe_psql('postgres',
	"CREATE TABLE local_win (id int); CREATE FOREIGN TABLE fwin (id int) SERVER b OPTIONS (table_name 'win_t')");
my $gate = $b->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(42)');
my $h4 = $a->background_psql('postgres', on_error_stop => 0);
$h4->query_safe("\\set VERBOSITY verbose\nBEGIN; SELECT zk_lock('window'); INSERT INTO fwin VALUES (1); INSERT INTO local_win VALUES (1)");
$h4->query_until(qr/committing/, "\\echo committing\nCOMMIT;\n\\echo committed\n");
ok(wait_for(sub { $b->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory'") eq '1' }, 20),
	'a commit is past its check, in its remote commit');

# a running statement, to be cancelled with quiet logs
my $h3 = $a->background_psql('postgres', on_error_stop => 0);
$h3->query_safe("\\set VERBOSITY verbose\nBEGIN; SELECT zk_lock('cancel-me')");
$h3->query_until(qr/sleeping/, "\\echo sleeping\nSELECT pg_sleep(60);\n\\echo woke\n");

is(b_can_take('fdw-1'), 'f', 'B cannot take the keys while A holds them');
my $log_offset = -s $a->logfile;
proxy_do($proxy, 'blackhole');
ok(wait_for(sub { scalar(grep { b_can_take($_) eq 't' } qw(fdw-1 fdw-2 cancel-me)) == 3 }, 4 * $timeout_s),
	'B can take every key once A\'s session expired');

# item: the commit check runs before postgres_fdw's pre-commit
$h1->query('COMMIT');
like($h1->{stderr}, qr/ERROR:  40001: zk_lock lock on key "fdw-1" was lost/,
	'zk_lock used first: COMMIT is refused with 40001');
is(remote_rows(1), '0', 'and the remote write is absent from B');
$h2->query('COMMIT');
like($h2->{stderr}, qr/ERROR:  40001: zk_lock lock on key "fdw-2" was lost/,
	'postgres_fdw used first: COMMIT is refused with 40001');
is(remote_rows(2), '0', 'and the remote write is absent from B');

# item: the lost-lock error whatever the log settings
ok(wait_for(sub { $h3->{run}->pump_nb; $h3->{stdout} =~ /woke/ }, 10), 'the running statement ended');
like($h3->{stderr}, qr/ERROR:  40001: zk_lock lock on key "cancel-me" was lost/,
	'with log_min_messages = fatal it still fails with 40001 naming the key');
unlike($h3->{stderr}, qr/57014|canceling statement/, 'not as a plain query cancel');
$h3->{stderr} = '';
$h3->query('ROLLBACK');
$h3->query('SELECT 1');
is($h3->{stderr}, '', 'reported once: the transaction after the rollback commits');
# item: the commit past its check goes through, the loss notwithstanding
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT value FROM zk_lock_counters WHERE counter = 'lost'") >= 4 }, 20),
	"A's worker marked the lock of that commit lost too");
$gate->query_safe('SELECT pg_advisory_unlock(42)');
ok(wait_for(sub { $h4->{run}->pump_nb; $h4->{stdout} =~ /committed/ }, 20), 'the held-up commit ended');
unlike($h4->{stderr}, qr/ERROR/, 'it was not cancelled: it commits');
like($h4->{stderr}, qr/WARNING:  01000: zk_lock lock on key "window" was lost while this transaction committed/,
	'with a warning that names the key');
is($a->safe_psql('postgres', "SELECT value FROM zk_lock_counters WHERE counter = 'committed_past_loss'"), '1',
	'and zk_lock_counters counts it');
is($b->safe_psql('postgres', 'SELECT count(*) FROM win_t'), '1', 'its remote row is in B');
is($a->safe_psql('postgres', 'SELECT count(*) FROM local_win'), '1', 'and its local row in A');
$gate->quit;
my $log = slurp_file($a->logfile, $log_offset);
unlike($log, qr/ERROR:/, 'and the server log stayed quiet');

# back in a new session: the same writes commit
proxy_do($proxy, 'pass');
ok(wait_for(sub { zk_status($a, 'state') eq 'connected' }, 30), 'A reconnected in a new session');
$h1->{stderr} = '';
$h1->query_safe("BEGIN; SELECT zk_try_lock('fdw-1', 5000); INSERT INTO ft VALUES (1, 'again'); COMMIT");
is(remote_rows(1), '1', 'the same session writes the remote row under the lock taken again');
$_->quit for ($h1, $h2, $h3, $h4);
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));
$a->stop;
$b->stop;
done_testing();
