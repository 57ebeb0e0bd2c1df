# The worker's session: state changes are logged; a ZooKeeper restart is
# ridden out by reconnecting with the same session and every lock kept; a
# worker stopped with pg_terminate_backend (or any SIGTERM but the
# postmaster's) is restarted and resumes the session, its holders keep their
# locks; a shutdown closes the session so other clusters need not wait.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZkLockTest;

my $zk = start_zookeeper('session');
my $zkdir = "${ZkLockTest::scratch}/zk_session";
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

# --- pg_terminate_backend of the worker: it restarts and resumes its session ---
$ha->query_safe("BEGIN; SELECT zk_lock('term-key')");
is($b->safe_psql('postgres', "SELECT zk_try_lock('term-key')"), 'f', 'A holds term-key');
my $old = worker_pid($a);
ok($old, 'A\'s worker runs');
is($a->safe_psql('postgres',
		"SELECT pid || ' ' || coalesce(datname, '-') FROM pg_stat_activity WHERE backend_type = 'zk_lock worker'"),
	"$old -", 'the worker is in pg_stat_activity, as "zk_lock worker", with no database');
my ($ret, $out, $err) = $a->psql('postgres', "SELECT pg_cancel_backend($old)");
is($out . $err, 't', 'pg_cancel_backend reaches the worker, without a warning');
usleep(300_000);
is(worker_pid($a), $old, 'and leaves it running: it has no statement to cancel');
($ret, $out, $err) = $a->psql('postgres', "SELECT pg_terminate_backend($old)");
is($out . $err, 't', 'pg_terminate_backend stops it, without a warning');
ok(wait_for(sub { my $p = worker_pid($a); $p && $p != $old }, 15), 'the worker was restarted');
like(slurp_file($a->logfile), qr/zk_lock worker terminated by PID \d+; it restarts and resumes session \Q$first_session\E/,
	'the log says who stopped it and which session it resumes');
ok(wait_for(sub { scalar(session_ids($a)) >= 3 }, 15), 'it connected again');
is((session_ids($a))[-1], $first_session, 'with the same session');
is($b->safe_psql('postgres', "SELECT zk_try_lock('term-key')"), 'f', 'A still holds term-key');
$ha->query_safe('COMMIT');
is($b->safe_psql('postgres', "SELECT zk_try_lock('term-key', 10000)"), 't',
	'A commits normally, and B gets the key after it');

# --- shutdown: the worker closes its session, ZooKeeper drops its nodes at once ---
$ha->quit;
$hb->quit;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');
my $sid = (session_ids($a))[-1];
like(zk_cmd($zk, 'dump'), qr/\Q$sid\E/, 'A\'s session has ephemeral nodes (its presence node)');
# A service manager stopping the cluster may signal every process at once:
# the worker's SIGTERM from it must not be taken for a terminate.
my $pm = $a->{_pid};
my $w = worker_pid($a);
note("worker $w, postmaster $pm");
kill 'TERM', $w;
kill 'INT', $pm;    # fast shutdown
ok(wait_for(sub { !kill(0, $pm) }, 30), 'A shut down, its worker signalled by someone else too');
$a->_update_pid(0);
ok(wait_for(sub { zk_cmd($zk, 'dump') !~ /\Q$sid\E/ }, 10),
	'its nodes are gone within 10 s, well inside the 30 s session timeout: the session was closed');
like(slurp_file($a->logfile), qr/zk_lock worker stopped/, 'the worker says it stopped (not that it restarts)');

$b->stop;
done_testing();
