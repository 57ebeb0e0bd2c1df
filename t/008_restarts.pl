# Restarts: a worker that fails with an ERROR is restarted and resumes the
# same ZooKeeper session, so holders keep their locks; after a crash-restart
# of the whole server (a backend killed with SIGKILL), the new worker closes
# the session left over, so the other cluster gets the lock at once rather
# than after the session timeout.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('restarts');
# 30 s: anything faster than that was not an expiry.
my $conf = "zk_lock.session_timeout = '30s'\nrestart_after_crash = on\n";
my $a = new_zk_cluster('ca', $zk, conf => $conf);
my $b = new_zk_cluster('cb', $zk, conf => $conf);

sub sessions
{
	my ($node) = @_;
	my @ids = slurp_file($node->logfile) =~ /connected to ZooKeeper, session (0x[0-9a-f]+)/g;
	return @ids;
}

sub worker_pid
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT worker_pid FROM zk_lock_status()');
}

ok(wait_for(sub { scalar(sessions($a)) == 1 }, 10), 'A connected');
my ($session) = sessions($a);

# --- worker ERROR: restarted, same session, holder keeps its lock ---
my $ha = $a->background_psql('postgres', on_error_stop => 0);
$ha->query_safe("BEGIN; SELECT zk_lock('survives')");
my $old_pid = worker_pid($a);
$a->append_conf('postgresql.conf', "zk_lock.test_fail_worker = on\n");
$a->reload;
ok(wait_for(sub { slurp_file($a->logfile) =~ /failing on request/ }, 10), 'the worker failed with an ERROR');
ok(wait_for(sub { my $p = worker_pid($a); $p ne '' && $p != $old_pid }, 15), 'and was restarted');
ok(wait_for(sub { scalar(sessions($a)) == 2 }, 15), 'the new worker connected');
is((sessions($a))[-1], $session, 'to the same session');
is($b->safe_psql('postgres', "SELECT zk_try_lock('survives')"), 'f', 'the lock is still held');
$ha->query_safe('COMMIT');
pass('the holder committed');
ok(wait_for(sub { $b->safe_psql('postgres', "SELECT zk_try_lock('survives')") eq 't' }, 10),
	'and the key is free for B afterwards');

# --- crash-restart: the left-over session is closed at once ---
$ha->query_safe("BEGIN; SELECT zk_lock('crash')");
my $victim = $ha->query_safe('SELECT pg_backend_pid()');
is($b->safe_psql('postgres', "SELECT zk_try_lock('crash')"), 'f', 'A holds crash');
my $t0 = time();
kill 'KILL', $victim;
is($b->safe_psql('postgres', "SELECT zk_try_lock('crash', 20000)"), 't',
	'B gets the key well before the 30 s session timeout');
my $took = time() - $t0;
# a leftover session waited out would take 30 s: 15 s leaves room for a slow
# machine's recovery, new session and close, and still tells the two apart
cmp_ok($took, '<', 15, sprintf('within 15 s: %.1f s after the SIGKILL (session timeout 30 s)', $took));
# the worker logs once the close is answered, so B may be granted just before
ok(wait_for(sub { slurp_file($a->logfile) =~ /closed session \Q$session\E left over from before a restart/ }, 5),
	'A\'s new worker closed the old session');
ok(wait_for(sub { scalar(sessions($a)) == 3 }, 15), 'and opened a new one');
isnt((sessions($a))[-1], $session, 'a different one');
ok(wait_for(sub { eval { $a->safe_psql('postgres', "SELECT zk_try_lock('crash')") } // '' eq 't' }, 20),
	'A works again');
eval { $ha->quit };

ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');
$a->stop;
$b->stop;
done_testing();
