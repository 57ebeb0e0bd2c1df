# A SIGTERM to the worker that does not come from the postmaster never closes
# its session while client backends remain, even once a shutdown has begun:
#  - A smart shutdown of A waits for a client that holds a key in an open
#    transaction; the worker, sent SIGTERM meanwhile (pg_terminate_backend and
#    kill), goes on serving under the same session: the holder keeps its key
#    and commits, and B, in another cluster, is never paused.  Once the client
#    has gone, the shutdown ends in a clean stop (no lock-delay for B).
#  - A fast shutdown whose SIGTERM reaches the worker together with another
#    one while a holder is connected still stops cleanly, and does not hang.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZkLockTest;

my $zk = start_zookeeper('stray_sigterm');
# A lock-delay and a session timeout far above the waits below: a key that
# came free early was given back, not left to an expiry; a pause shows.
my $delay_s = 10;
my $conf = "zk_lock.lock_delay = '${delay_s}s'\nzk_lock.session_timeout = '30s'\n";
my $a = new_zk_cluster('ssa', $zk, conf => $conf);
my $b = new_zk_cluster('ssb', $zk, conf => $conf);
my $paused = qr/a ZooKeeper session that may have held locks ended/;

sub grants
{
	my ($node) = @_;
	return wait_for(sub { $node->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' },
		3 * $delay_s);
}

# a fresh worker grants nothing for its first lock_delay: wait that out
ok(grants($a) && grants($b), 'both clusters grant');
$a->safe_psql('postgres', 'CREATE TABLE t (i int)');

# --- a smart shutdown waits for a holder; SIGTERMs to the worker meanwhile ---
my $h = $a->background_psql('postgres', on_error_stop => 0);
$h->query_safe("BEGIN; SELECT zk_lock('held'); INSERT INTO t VALUES (1)");
my $o = $a->background_psql('postgres', on_error_stop => 0);
my ($worker, $sid) = split /\|/, $o->query_safe('SELECT worker_pid, session_id FROM zk_lock_status()');
note("worker $worker, session $sid");
is($b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('held'); COMMIT"), 'f', 'A holds the key');

kill 'TERM', $a->{_pid};    # smart shutdown
ok(wait_for(sub { slurp_file($a->logfile) =~ /received smart shutdown request/ }, 10),
	'A shuts down, smartly: it waits for its clients');
my $pidfile = slurp_file($a->data_dir . '/postmaster.pid');
like($pidfile, qr/^stopping$/m, 'its pid file says "stopping"');

is($o->query_safe("SELECT pg_terminate_backend($worker)"), 't', 'pg_terminate_backend of the worker');
ok(wait_for(sub { slurp_file($a->logfile) =~ /zk_lock worker terminated by PID \d+ while the server shuts down; it serves/ }, 10),
	'the worker says it serves the client backends left');
kill 'TERM', $worker;    # and a kill from outside
# a clean stop would have closed the session by now
sleep(4);
my ($pid_now, $sid_now, $state) =
  split /\|/, $o->query_safe('SELECT worker_pid, session_id, state FROM zk_lock_status()');
is($pid_now, $worker, 'the same worker runs');
is($sid_now, $sid, 'under the same session');
is($state, 'connected', 'connected');
unlike(slurp_file($a->logfile), qr/it restarts and resumes|every lock of session|could not give every lock/,
	'it neither restarted nor began to stop');
is($b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('held'); COMMIT"), 'f', 'A still holds the key');
my $t0 = time();
is($b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('free', 5000); COMMIT"), 't', 'B grants another key');
ok(time() - $t0 < $delay_s / 3, sprintf('at once: B is not paused (%.2f s)', time() - $t0));
is($o->query_safe("BEGIN; SELECT zk_try_lock('new-in-a'); COMMIT"), 't', 'A\'s worker grants new requests');

$h->query('COMMIT');
is($h->{stderr}, '', 'the holder commits without an error');
is($o->query_safe('SELECT count(*) FROM t'), '1', 'its row is in');
$t0 = time();
is($b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('held', 5000); COMMIT"), 't', 'B gets the key then');
ok(time() - $t0 < $delay_s / 3, sprintf('at once (%.2f s)', time() - $t0));

$h->quit;
$o->quit;
my $pm = $a->{_pid};
ok(wait_for(sub { !kill(0, $pm) }, 30), 'with its clients gone, A shut down');
$a->_update_pid(0);
like(slurp_file($a->logfile), qr/every lock of session \Q$sid\E given back/,
	'its worker gave every lock back before closing the session: a clean stop');
like(slurp_file($a->logfile), qr/zk_lock worker stopped/, 'the worker says it stopped');
unlike(slurp_file($a->logfile), qr/zk_lock worker started.*zk_lock worker started/s,
	'the worker was never started again');
ok(wait_for(sub { zk_cmd($zk, 'dump') !~ /\Q$sid\E/ }, 10), 'the session is gone from ZooKeeper');
unlike(slurp_file($b->logfile), $paused, 'B never paused for A');

# --- a fast shutdown, its SIGTERM and another together, a holder connected ---
$a->start;
ok(grants($a), 'A grants again');
$h = $a->background_psql('postgres', on_error_stop => 0);
$h->query_safe("BEGIN; SELECT zk_lock('held-fast')");
($worker, $sid) = split /\|/, $h->query_safe('SELECT worker_pid, session_id FROM zk_lock_status()');
my $log_at = -s $a->logfile;
$pm = $a->{_pid};
kill 'TERM', $worker;
kill 'INT', $pm;
ok(wait_for(sub { !kill(0, $pm) }, 30), 'A shut down, fast, its worker signalled by someone else too');
$a->_update_pid(0);
$h->{run}->kill_kill;
my $log = substr(slurp_file($a->logfile), $log_at);
like($log, qr/every lock of session \Q$sid\E given back/, 'in a clean stop');
unlike($log, qr/it restarts and resumes/, 'not taken for a restart');
ok(wait_for(sub { zk_cmd($zk, 'dump') !~ /\Q$sid\E/ }, 10), 'the session is gone from ZooKeeper');
$t0 = time();
is($b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('held-fast', 5000); COMMIT"), 't',
	'B gets the key A held');
ok(time() - $t0 < $delay_s / 3, sprintf('at once (%.2f s)', time() - $t0));
unlike(slurp_file($b->logfile), $paused, 'B never paused for A');

$b->stop;
done_testing();
