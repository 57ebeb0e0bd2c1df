# A clean stop or restart of one cluster costs the others no lock-delay; an
# expiry still does.  zk_lock.lock_delay is 10 s, so a grant that waited one
# out stands out from the rest (tens of milliseconds).
#  - A takes a new key, commits and sleeps 50 ms, 200 times, while B (holding
#    a session-level and a transaction-level lock) stops with a fast shutdown
#    and starts again: every grant of the loop stays well under lock_delay,
#    and B's keys are free for A at once;
#  - B frozen (its worker and a holder stopped with SIGSTOP): A gets B's key
#    only after B's session can have expired plus lock_delay, and B's commit
#    is refused once it runs again.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('clean_stop');
my $delay_s = 10;
my $timeout_s = 6;
my $conf = "zk_lock.lock_delay = '${delay_s}s'\nzk_lock.session_timeout = '${timeout_s}s'\n"
  . "zk_lock.connect_timeout = '20s'\n";
my $a = new_zk_cluster('csa', $zk, conf => $conf);
my $b = new_zk_cluster('csb', $zk, conf => $conf);

# a fresh worker grants nothing for its first lock_delay: wait that out
for my $n ($a, $b)
{
	ok(wait_for(sub { $n->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' },
			3 * $delay_s), $n->name . ' grants');
}

$a->safe_psql('postgres', q{
CREATE TABLE grants (i int, ms float8, at timestamptz);
CREATE PROCEDURE lock_loop(n int) LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
BEGIN
	FOR i IN 1 .. n LOOP
		t0 := clock_timestamp();
		PERFORM zk_lock('loop-' || i);
		INSERT INTO grants VALUES (i, extract(epoch FROM clock_timestamp() - t0) * 1000, clock_timestamp());
		COMMIT;
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$});
sub a_now { return $a->safe_psql('postgres', 'SELECT clock_timestamp()'); }

# B holds locks of both levels when it stops
my $hb = $b->background_psql('postgres', on_error_stop => 0);
$hb->query_safe("SELECT zk_session_lock('b-session')");
$hb->query_safe("BEGIN; SELECT zk_lock('b-xact')");
is($a->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('b-xact'); COMMIT"), 'f', 'B holds its keys');

my $loop = $a->background_psql('postgres', on_error_stop => 0);
$loop->query_until(qr/looping/, "\\echo looping\nCALL lock_loop(200);\n\\echo loop done\n");
ok(wait_for(sub { $a->safe_psql('postgres', 'SELECT count(*) FROM grants') >= 20 }, 30), 'A loops');

my $before_stop = a_now();
$b->stop('fast');
$hb->{run}->kill_kill;
my $t0 = time();
is($a->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('b-xact', 5000); COMMIT"), 't',
	'after B\'s fast shutdown its transaction-level key is free');
is($a->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('b-session', 5000); COMMIT"), 't',
	'and its session-level key');
my $took = time() - $t0;
ok($took < $delay_s / 3, sprintf('both at once, not after a lock-delay (%.2f s)', $took));
like(slurp_file($b->logfile), qr/every lock of session 0x[0-9a-f]+ given back/,
	'B\'s worker gave every lock back before closing its session');
my $stopped = a_now();

$b->start;
ok(wait_for(sub { zk_status($b, 'state') eq 'connected' }, 20), 'B runs again');
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT count(*) FROM grants WHERE at > '$stopped'") >= 40 },
		30), 'A\'s loop went on past B\'s start');
my $restarted = a_now();
$b->restart('fast');
ok(wait_for(sub { zk_status($b, 'state') eq 'connected' }, 20), 'and after a restart');
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT count(*) FROM grants WHERE at > '$restarted'") >= 40 },
		30), 'A\'s loop went on past B\'s restart');

ok(wait_for(sub { $loop->{run}->pump_nb; $loop->{stdout} =~ /loop done/ }, 120), 'A\'s loop ended');
unlike($loop->{stderr}, qr/ERROR/, 'without an error');
my ($n, $max, $during) = split /\|/, $a->safe_psql('postgres',
	"SELECT count(*), round(max(ms)), count(*) FILTER (WHERE at > '$before_stop') FROM grants");
is($n, '200', 'every grant of the loop made');
ok($during > 80, "$during of them after B's stop began");
ok($max < $delay_s * 1000 / 2, "the slowest took $max ms: none waited out the ${delay_s} s lock-delay");
unlike(slurp_file($a->logfile), qr/a ZooKeeper session that may have held locks ended/,
	'A never paused for B\'s stops');

# --- an expiry still delays: B frozen while it holds a key ---
ok(wait_for(sub { $b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' },
		3 * $delay_s), 'B grants again');
my $hf = $b->background_psql('postgres', on_error_stop => 0);
$hf->query_safe("\\set VERBOSITY verbose\nBEGIN; SELECT zk_lock('frozen')");
my $holder = $hf->query_safe('SELECT pg_backend_pid()');
my $worker = zk_status($b, 'worker_pid');
my @frozen = ($worker, $holder);
END { kill 'CONT', @frozen if @frozen; }
kill 'STOP', @frozen;
my $frozen_at = time();
is($a->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('frozen', 60000); COMMIT"), 't',
	'A gets the frozen cluster\'s key in the end');
my $waited = time() - $frozen_at;
ok($waited > $timeout_s + $delay_s - 1,
	sprintf('only once B\'s session can have expired and a lock-delay passed (%.1f s)', $waited));
kill 'CONT', @frozen;
@frozen = ();
$hf->query('COMMIT');
like($hf->{stderr}, qr/ERROR:  40001:/, 'B\'s commit is refused once it runs again');

$hf->quit;
$loop->quit;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));
$a->stop;
$b->stop;
done_testing();
