# The worker's session: state changes are logged; a ZooKeeper restart is
# ridden out by reconnecting with the same session and every lock kept; a
# worker stopped with SIGTERM closes its session so other clusters get the
# lock at once, its holders' commits fail (40001), and it is restarted.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('session');
my $zkdir = "${PostgreSQL::Test::Utils::tmp_check}/zk_session";
# A session timeout far above the waits below: a lock that came free early
# can only have been freed by the session being closed, not by expiry.
my $conf = "zk_lock.session_timeout = '30s'\n";
my $a = new_zk_cluster('sa', $zk, conf => $conf);
my $b = new_zk_cluster('sb', $zk, conf => $conf);

sub worker_pid
{
	my ($node) = @_;
	my ($pm) = split /\n/, slurp_file($node->data_dir . '/postmaster.pid');
	my ($line) = grep { /zk_lock worker/ } `ps -o pid=,args= --ppid $pm`;
	return $line ? (split ' ', $line)[0] : undef;
}

sub session_ids
{
	my ($node) = @_;
	my @ids = slurp_file($node->logfile) =~ /connected to ZooKeeper, session (0x[0-9a-f]+)/g;
	return @ids;
}

ok(wait_for(sub { scalar(session_ids($a)) >= 1 }, 10), 'connection logged at LOG with the session id');
my ($first_session) = session_ids($a);

# --- ZooKeeper restarts: reconnect, same session, lock kept ---
my $ha = $a->background_psql('postgres', on_error_stop => 0);
$ha->query_safe("BEGIN; SELECT zk_lock('restart-key')");
my $hb = $b->background_psql('postgres');
$hb->set_query_timer_restart();
$hb->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock('restart-key');\nSELECT 'b granted';\n");
ok(wait_for(sub { scalar(grep { m{/trestart-key/} } zk_lock_nodes($zk)) == 2 }, 10),
	'holder in A, waiter from B queued');

system('bash', "$FindBin::RealBin/../test/zk.sh", 'stop', $zkdir) == 0 or die;
system('bash', "$FindBin::RealBin/../test/zk.sh", 'start', $zkdir, $zk) == 0 or die;
ok(wait_for(sub { slurp_file($a->logfile) =~ /lost the connection to ZooKeeper; reconnecting/ }, 10),
	'loss of the connection logged');
ok(wait_for(sub { scalar(session_ids($a)) >= 2 }, 30), 'A reconnected');
is((session_ids($a))[-1], $first_session, 'with the same session');
is(scalar(grep { m{/trestart-key/} } zk_lock_nodes($zk)), 2, 'both nodes survived the restart');
is($a->safe_psql('postgres', "SELECT zk_try_lock('restart-key')"), 'f', 'the lock is still held');
$ha->query_safe('COMMIT');
like($hb->query_until(qr/b granted/, ''), qr/b granted/, 'A committed normally and B was granted');
$hb->query_safe('COMMIT');

# --- SIGTERM to the worker: session closed, holder's lock lost, worker back ---
$ha->query_safe("BEGIN; SELECT zk_lock('term-key')");
is($b->safe_psql('postgres', "SELECT zk_try_lock('term-key')"), 'f', 'A holds term-key');
my $old = worker_pid($a);
ok($old, 'A\'s worker runs');
kill 'TERM', $old;
is($b->safe_psql('postgres', "SELECT zk_try_lock('term-key', 15000)"), 't',
	'B gets the key well within the 30 s session timeout: the session was closed');
$ha->query_safe('\\set VERBOSITY verbose');
$ha->query('COMMIT');
like($ha->{stderr}, qr/ERROR:  40001: zk_lock lock on key "term-key" was lost/, 'A\'s commit fails: its lock was lost');
ok(wait_for(sub { my $p = worker_pid($a); $p && $p != $old }, 15), 'the worker was restarted');
ok(wait_for(sub { scalar(session_ids($a)) >= 3 }, 15), 'and connected again');
isnt((session_ids($a))[-1], $first_session, 'with a new session');
is($a->safe_psql('postgres', "SELECT zk_try_lock('term-key')"), 't', 'A can lock again');
$ha->quit;
$hb->quit;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');

$a->stop;
$b->stop;
done_testing();
