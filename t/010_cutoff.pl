# A cluster cut off from ZooKeeper by a network fault (a TCP proxy between
# cluster A and the server), while A holds a lock B waits for.
#  - Blackhole for longer than the session timeout: B gets the lock once the
#    server expires A's session; A's running statement is cancelled, A's
#    commit fails, and a resource guarded by the fencing token rejects every
#    write A makes with its old token once B has written.
#  - Connections reset every few hundred ms during a two-cluster load:
#    mutual exclusion holds and no lock node is left behind (creates whose
#    reply was lost are found again by uuid, lost deletes are retried).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZkLockTest;

my $zk = start_zookeeper('cutoff');
my $proxy = start_proxy('a', $zk);
END { proxy_do($proxy, 'pass') if $proxy; }

my $timeout_s = 6;
my $conf = "zk_lock.session_timeout = '${timeout_s}s'\nzk_lock.connect_timeout = '20s'\n";
my $a = new_zk_cluster('fa', undef, hosts => "127.0.0.1:$proxy->{port}", conf => $conf);
my $b = new_zk_cluster('fb', $zk, conf => $conf);

# The guarded resource: one row in B, written only with a token at least as
# recent as the last accepted one (README, "Fencing tokens").
$b->safe_psql('postgres', 'CREATE TABLE fenced (id int PRIMARY KEY, token bigint NOT NULL, writer text)');
$b->safe_psql('postgres', "INSERT INTO fenced VALUES (1, 0, 'nobody')");

sub guarded_write
{
	my ($token, $writer) = @_;
	return $b->safe_psql('postgres',
		"WITH w AS (UPDATE fenced SET token = $token, writer = '$writer' WHERE id = 1 AND token <= $token RETURNING 1) SELECT count(*) FROM w");
}

ok(wait_for(sub { zk_status($a, 'state') eq 'connected' }, 20), 'A connected through the proxy');

# --- A holds 'fence' (idle in its transaction) and 'busy' (running a statement) ---
my $ha = $a->background_psql('postgres', on_error_stop => 0);
$ha->query_safe("BEGIN; SELECT zk_lock('fence')");
my $token_a = $ha->query_safe("SELECT zk_lock_token('fence')");
is(guarded_write($token_a, 'A'), '1', "A writes with its token ($token_a)");

my $busy = $a->background_psql('postgres', on_error_stop => 0);
$busy->query_safe("\\set VERBOSITY verbose\nBEGIN; SELECT zk_lock('busy')");
$busy->query_until(qr/running/, "\\echo running\nSELECT pg_sleep(60);\n\\echo after sleep\n");

my $wb = $b->background_psql('postgres', on_error_stop => 0);
$wb->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock('fence');\n\\echo b granted\n");
ok(wait_for(sub { scalar(grep { m{/tfence/} } zk_lock_nodes($zk)) == 2 }, 10), 'A holds, B waits');

# --- cut A off ---
my $t0 = time();
proxy_do($proxy, 'blackhole');

# A's application keeps writing with its old token until B has written.
my ($accepted_after_b, $rejected, $b_wrote, $t_b) = (0, 0, 0);
my $stderr_seen = '';
my $granted_b = 0;
for my $i (1 .. 200)
{
	last if $b_wrote && $rejected >= 5;
	$wb->{run}->pump_nb;
	if (!$granted_b && $wb->{stdout} =~ /b granted/)
	{
		$granted_b = 1;
		$t_b = time() - $t0;
		$wb->{stdout} = '';    # the echo is the last output of that step
	}
	if ($granted_b && !$b_wrote)
	{
		my $token_b = $wb->query_safe("SELECT zk_lock_token('fence')");
		cmp_ok($token_b, '>', $token_a, "B's token ($token_b) is greater than A's");
		is(guarded_write($token_b, 'B'), '1', 'B writes with its token');
		$b_wrote = 1;
	}
	my $ok = guarded_write($token_a, 'A');
	if ($b_wrote) { $ok ? $accepted_after_b++ : $rejected++; }
	usleep(100_000);
}
ok($granted_b, 'B was granted the lock while A was cut off');
note(sprintf('B granted %.1f s after the cut (session timeout %d s)', $t_b // -1, $timeout_s));
cmp_ok($t_b // 0, '>=', $timeout_s - 1, 'not before the server could expire A\'s session');
is($accepted_after_b, 0, "every write with A's stale token was rejected ($rejected tried)");
is($b->safe_psql('postgres', 'SELECT writer FROM fenced'), 'B', 'the resource holds B\'s write');

# A's worker declared its session lost on its own, and says so.
ok(wait_for(sub { zk_status($a, 'lost') >= 2 }, 10), 'A counts both locks as lost');
like($busy->query_until(qr/after sleep/, ''), qr/after sleep/, "A's running statement ended");
like($busy->{stderr}, qr/ERROR:  40001: zk_lock lock on key "busy" was lost/,
	'it was cancelled with a clear message');
like($busy->{stderr}, qr/running statement was cancelled/, 'which says why');
$ha->query('COMMIT');
like($ha->{stderr}, qr/zk_lock lock on key "fence" was lost/, "A's commit fails: the two never both commit");
$wb->query_safe('COMMIT');
is($b->safe_psql('postgres', 'SELECT writer FROM fenced'), 'B', 'B committed under the lock');

# --- the network heals: A works again, in a new session ---
proxy_do($proxy, 'pass');
ok(wait_for(sub { zk_status($a, 'state') eq 'connected' }, 30), 'A reconnected');
note(sprintf('A connected again %.1f s after the cut', time() - $t0));
is($a->safe_psql('postgres', "SELECT zk_try_lock('fence')"), 't', 'and can take the key again');
$busy->query('ROLLBACK');
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left after the cut-off')
  or diag(join("\n", zk_lock_nodes($zk)));

# --- connection resets during a load ---
my $counter = install_counter('cutoff', $a, $b);
my $clients = 4;
my $per_client = 40;
my $expected = 2 * $clients * $per_client;
my $connects_before = zk_status($a, 'connects');
my $lost_before = zk_status($a, 'lost');
my $session = zk_status($a, 'session_id');
my $resets = 0;
my @res = run_counter_load([ $a, $b ], $clients, $per_client,
	"BEGIN;\nSELECT zk_lock('counter');\nSELECT bump('$counter');\nCOMMIT;\n",
	timeout => 180,
	during => sub { $resets = resets_until($proxy, sub { counter_reached($counter, $expected) }) });
is($_->[0], 0, 'pgbench finished without errors') or diag($_->[2]) for @res;
is(0 + slurp_file($counter), $expected, "every increment counted ($expected) across $resets resets");
cmp_ok(zk_status($a, 'connects') - $connects_before, '>=', $resets / 2, 'A really reconnected again and again');
is(zk_status($a, 'lost'), $lost_before, 'no lock was lost to the resets');
is(zk_status($a, 'session_id'), $session, 'A kept its session throughout');
note(sprintf('A: %d reconnections, %d creates recovered by uuid, %d deletes retried',
	zk_status($a, 'connects') - $connects_before, zk_status($a, 'recovered'), zk_status($a, 'delete_retries')));
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 20), 'no orphan lock node after the resets')
  or diag(join("\n", zk_lock_nodes($zk)));

$_->quit for ($ha, $busy, $wb);
$a->stop;
$b->stop;
done_testing();
