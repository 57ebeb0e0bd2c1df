# A session-level lock that leans on a node lost during its backend's
# commit is lost once that commit is over.
#
# A's backend holds key "lean" exclusive at transaction level (node X) and
# takes it shared at session level in the same transaction (node S, after
# X).  S is granted past B's writer W, which queued between them: W waits
# for X, and S holds only by leaning on X.  A's COMMIT passes its check and
# then waits for a synchronous standby that does not exist (the commit
# window), while X is deleted from outside and B's writer is granted.  A
# loss in the commit window cancels nothing: that commit was decided.  But
# the session-level lock outlives the commit, and must then be lost, its
# node deleted, and its backend told (40001), not left "granted" beside B's
# writer.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('lost_in_commit');
# Without the local hand-over, A's other request below reads the key's
# queue in ZooKeeper.  A synchronous standby that never comes, and WAL
# senders, without which no commit waits for one; only the session that
# asks for it waits (synchronous_commit).
my $a = new_zk_cluster('lic_a', $zk, init => { allows_streaming => 1 },
	conf => "zk_lock.local_handover = off\nsynchronous_standby_names = 'nobody'\nsynchronous_commit = local\n");
my $b = new_zk_cluster('lic_b', $zk);

sub a_row
{
	my ($pid, $mode) = @_;
	return $a->safe_psql('postgres',
		"SELECT state || ' ' || coalesce(node, '') FROM zk_locks WHERE pid = $pid AND key = 'lean' AND mode = '$mode'");
}

$a->safe_psql('postgres', 'CREATE TABLE t (x int)');
my $h = $a->background_psql('postgres', on_error_stop => 0);
my $pid = $h->query_safe('SELECT pg_backend_pid()');
$h->query_safe("\\set VERBOSITY verbose\nSET synchronous_commit = on");
$h->query_safe("BEGIN; SELECT zk_lock('lean'); INSERT INTO t VALUES (1)");
my $w = $b->background_psql('postgres', on_error_stop => 0);
$w->query_until(qr/asked/, "\\echo asked\nBEGIN; SELECT zk_lock('lean');\n\\echo w granted\n");
ok(wait_for(sub { waiting_count($b) == 1 }, 10), "B's writer waits behind A's exclusive node");
$h->query_safe("SELECT zk_session_lock_shared('lean')");
my ($x_node) = a_row($pid, 'exclusive') =~ /^granted (\S+)$/;
my ($s_node) = a_row($pid, 'shared') =~ /^granted (\S+)$/;
ok(defined $x_node && defined $s_node, 'A holds the key both ways, through two nodes');
is(key_queue_len($zk, 'lean'), 3, "B's writer stands between them");

# the commit window: past the check, waiting for a standby that never comes
$h->query_until(qr/committing/, "\\echo committing\nCOMMIT;\n\\echo committed\n");
ok(wait_for(sub {
		$a->safe_psql('postgres', "SELECT wait_event FROM pg_stat_activity WHERE pid = $pid") eq 'SyncRep'
	}, 10), "A's commit passed its check and waits in its window");

my $lost_before = zk_status($a, 'lost');
like(zk_cli($zk, 'delete', "/zk_lock/tlean/$x_node"), qr/^(?!.*Node does not exist)/s,
	'the exclusive node is deleted from outside');
ok(wait_for(sub { $w->{run}->pump_nb; $w->{stdout} =~ /w granted/ }, 10), "B's writer is granted");
# A learns it from a listing of the key: another request of A's for it
is($a->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('lean'); COMMIT"), 'f',
	'a try of another backend of A is refused');
ok(wait_for(sub { zk_status($a, 'lost') > $lost_before }, 10), 'A counts the exclusive lock lost');
like(a_row($pid, 'shared'), qr/^granted /, 'the shared lock is kept while the commit goes on');

# the standby requirement lifted: the commit ends, and with it the session-level lock
$a->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = ''");
$a->reload;
ok(wait_for(sub { $h->{run}->pump_nb; $h->{stdout} =~ /committed/ }, 10), "A's commit is over");
ok(wait_for(sub { a_row($pid, 'shared') =~ /^lost/ }, 10), 'then its session-level lock is lost');
ok(wait_for(sub { !grep { /\Q$s_node\E/ } zk_lock_nodes($zk) }, 10), 'and its node deleted');
$h->{stderr} = '';
$h->query('SELECT 1');
like($h->{stderr}, qr/ERROR:  40001: zk_lock session-level lock on key "lean" was lost\n.*DETAIL:  .*or its node was deleted/,
	'its backend is told: the next statement fails with 40001 naming the key, and why');
$h->{stderr} = '';
$h->query("SELECT zk_session_unlock_shared('lean')");
like($h->{stderr}, qr/The loss is acknowledged now/, 'until it acknowledges the loss');
$h->{stderr} = '';
$h->query_safe('SELECT 1');
is($h->{stderr}, '', 'then its statements run again');

$w->query_safe('COMMIT');
$w->quit;
$h->quit;
ok(wait_for(sub { key_queue_len($zk, 'lean') == 0 }, 10), 'no node of the key is left behind');

$a->stop;
$b->stop;
done_testing();
