# zk_lock.linger: a released lock's node (a writer's or a reader's) stays
# for the cluster's next request of the key in that mode.  zk_locks shows
# it with no backend (pid NULL) while it lingers, and a new request of the
# cluster takes it over.
#
# A lingering node never refuses a free key to another cluster: B's
# try-locks (timeout 0, every 100 ms) while A reuses the key (50 ms held,
# 50 ms free) win about as often with A's linger 5 s as with linger off;
# a key A really holds answers B false at once, and so does a lingering
# node whose cluster does not answer (its worker stopped), within the
# bound of a few round trips, far below the 5 s linger; one whose cluster
# answers late (stopped 120 ms) is waited for.  Multi-key tries
# (text[] and bigint[]) follow the same rule: true on a key that only
# lingers in A, false on one A holds.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(usleep);
use ZkLockTest;

my $zk = start_zookeeper('linger');
my $a = new_zk_cluster('lga', $zk, conf => "zk_lock.linger = '60s'\n");
ok(wait_for(sub { $a->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' }, 30),
	'A grants');

$a->safe_psql('postgres', "BEGIN; SELECT zk_lock('lg'); SELECT pg_sleep(0.5); COMMIT");    # held long enough to be kept
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT pid IS NULL, state FROM zk_locks WHERE key = 'lg'") eq 't|lingering' }, 5),
	'a released node that lingers shows with a NULL pid')
  or diag($a->safe_psql('postgres', 'SELECT * FROM zk_locks'));
my $node = $a->safe_psql('postgres', "SELECT node FROM zk_locks WHERE key = 'lg'");
cmp_ok($a->safe_psql('postgres', "SELECT value FROM zk_lock_counters WHERE counter = 'lingers'"), '>=', 1,
	'zk_lock_counters counts it');
is(
	$a->safe_psql('postgres',
		"BEGIN; SELECT zk_lock('lg'); SELECT pid = pg_backend_pid(), state, node FROM zk_locks WHERE key = 'lg'; COMMIT"),
	"\nt|granted|$node", 'the next request of the cluster takes that node over, with its pid');

my $b = new_zk_cluster('lgb', $zk);
$b->safe_psql('postgres', q{
	CREATE FUNCTION timed_try(k text) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE t0 timestamptz := clock_timestamp(); r bool;
	BEGIN
		r := zk_try_lock(k);
		RETURN r || ' ' || round(extract(epoch FROM clock_timestamp() - t0) * 1000);
	END $$;
	CREATE FUNCTION timed(q text) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE t0 timestamptz := clock_timestamp(); r bool;
	BEGIN
		EXECUTE 'SELECT ' || q INTO r;
		RETURN r || ' ' || round(extract(epoch FROM clock_timestamp() - t0) * 1000);
	END $$});
ok(wait_for(sub { $b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' }, 30),
	'B grants');

# A reuses 'hot' (50 ms held, 50 ms free) while B tries it every 100 ms; B's wins.
my $script = "${ZkLockTest::scratch}/reuse.sql";
append_to_file($script, "BEGIN;\nSELECT zk_lock('hot');\nSELECT pg_sleep(0.05);\nCOMMIT;\nSELECT pg_sleep(0.05);\n");
sub wins_against_reuse
{
	my ($tries) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', 1, '-T', 30, '-f', $script, '-h', $a->host, '-p', $a->port, 'postgres' ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(90));
	usleep(500_000);
	my $wins = 0;
	for (1 .. $tries)
	{
		$wins++ if $b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('hot', 0); COMMIT") eq 't';
		usleep(100_000);
	}
	$h->kill_kill;
	$h->finish;
	return $wins;
}
sub set_linger
{
	my ($ms) = @_;
	$a->safe_psql('postgres', "ALTER SYSTEM SET zk_lock.linger = '$ms'; SELECT pg_reload_conf()");
	ok(wait_for(sub { $a->safe_psql('postgres', 'SHOW zk_lock.linger') eq $ms }, 10), "A: linger $ms");
	usleep(300_000);    # the worker's reload
}
set_linger('0');
my $wins_off = wins_against_reuse(40);
set_linger('5s');
my $wins_on = wins_against_reuse(40);
note("B's try-locks won $wins_off of 40 against linger off, $wins_on of 40 against linger 5 s");
cmp_ok($wins_off, '>=', 8, 'linger off: B wins some of its tries');
cmp_ok($wins_on, '>=', $wins_off / 2,
	"a lingering node does not refuse the free key: $wins_on wins against $wins_off with linger off");

# A holds 'held': B's try is false at once, however long A lingers.
my $hold = $a->background_psql('postgres');
$hold->query_safe("BEGIN; SELECT zk_lock('held')");
my ($r, $ms) = split ' ', $b->safe_psql('postgres', "SELECT timed_try('held')");
is($r, 'false', 'a key held in another cluster: the try is false');
cmp_ok($ms, '<', 1000, "at once ($ms ms; linger is 5000 ms)");
($r, $ms) = split ' ', $b->safe_psql('postgres', "SELECT timed('zk_try_lock(array[''held'', ''held-free''])')");
is($r, 'false', 'a multi-key try with a key held in another cluster is false');
cmp_ok($ms, '<', 1000, "at once ($ms ms)");
$hold->query_safe('COMMIT');
$hold->quit;

# Readers' nodes linger too: A's next reader takes one, B's exclusive try
# waits for it and wins; a key A's reader holds answers B's writer false at
# once (the mark comes off when A sees B's node) and its reader true.
$a->safe_psql('postgres', "BEGIN; SELECT zk_lock_shared('rd'); SELECT pg_sleep(0.3); COMMIT");
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT pid IS NULL, state, mode FROM zk_locks WHERE key = 'rd'") eq 't|lingering|shared' }, 5),
	"a reader's released node lingers too")
  or diag($a->safe_psql('postgres', 'SELECT * FROM zk_locks'));
$node = $a->safe_psql('postgres', "SELECT node FROM zk_locks WHERE key = 'rd'");
is($a->safe_psql('postgres',
		"BEGIN; SELECT zk_lock_shared('rd'); SELECT state, node FROM zk_locks WHERE key = 'rd' AND pid = pg_backend_pid(); COMMIT"),
	"\ngranted|$node", "A's next reader takes that node over");
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT state FROM zk_locks WHERE key = 'rd'") eq 'lingering' }, 5),
	'and it lingers again');
($r, $ms) = split ' ', $b->safe_psql('postgres', "SELECT timed_try('rd')");
is($r, 'true', "B's exclusive try on a key whose reader's node only lingers in A: true");
cmp_ok($ms, '<', 1000, "within the bound ($ms ms; linger is 5000 ms)");
$hold = $a->background_psql('postgres');
$hold->query_safe("BEGIN; SELECT zk_lock_shared('rdh')");
($r, $ms) = split ' ', $b->safe_psql('postgres', "SELECT timed_try('rdh')");
is($r, 'false', "a key A's reader holds: B's exclusive try is false");
cmp_ok($ms, '<', 1000, "soon ($ms ms; linger is 5000 ms)");
is($b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock_shared('rdh'); COMMIT"), 't', "and B's shared try is true");
$hold->query_safe('COMMIT');
$hold->quit;

# A multi-key try follows the same rule: a key that only lingers in A is waited for, not refused.
for my $case ([ 'text', "'mk'", "zk_try_lock(array[''mk'', ''mk-free''])" ],
	[ 'bigint', '4242::bigint', 'zk_try_lock(array[4242, 4243]::bigint[])' ])
{
	my ($type, $key, $try) = @$case;
	$a->safe_psql('postgres', "BEGIN; SELECT zk_lock($key); SELECT pg_sleep(0.3); COMMIT");
	ok(wait_for(sub { $a->safe_psql('postgres', "SELECT state FROM zk_locks WHERE key = ${key}::text") eq 'lingering' }, 5),
		"$type key $key lingers in A");
	($r, $ms) = split ' ', $b->safe_psql('postgres', "SELECT timed('$try')");
	is($r, 'true', "$type\[\] multi-key try on a key that only lingers in A: true");
	cmp_ok($ms, '<', 1000, "$type\[\]: within the bound ($ms ms; linger is 5000 ms)");
}

# A lingers with 'slow', and its worker is slow to wake (stopped for 120 ms, as a
# loaded server's may be): B's try waits for it and wins.  (With a floor of 25 ms
# for the wait, it answered false under load.)
$a->safe_psql('postgres', "BEGIN; SELECT zk_lock('slow'); SELECT pg_sleep(0.3); COMMIT");
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT state FROM zk_locks WHERE key = 'slow'") eq 'lingering' }, 5),
	'slow lingers in A');
my $slow = zk_status($a, 'worker_pid');
kill 'STOP', $slow;
my $waker = fork() // die "fork: $!";
if ($waker == 0)
{
	usleep(120_000);
	kill 'CONT', $slow;
	POSIX::_exit(0);
}
($r, $ms) = split ' ', $b->safe_psql('postgres', "SELECT timed_try('slow')");
waitpid($waker, 0);
kill 'CONT', $slow;
is($r, 'true', "a key that only lingers in a cluster slow to answer: true ($ms ms)");

# A lingers with 'cold', then its worker stops answering: B's try gives up within the bound.
$a->safe_psql('postgres', "BEGIN; SELECT zk_lock('cold'); SELECT pg_sleep(0.3); COMMIT");
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT state FROM zk_locks WHERE key = 'cold'") eq 'lingering' }, 5),
	'cold lingers in A');
my $worker = zk_status($a, 'worker_pid');
END { kill 'CONT', $worker if $worker; }
kill 'STOP', $worker;
($r, $ms) = split ' ', $b->safe_psql('postgres', "SELECT timed_try('cold')");
kill 'CONT', $worker;
is($r, 'false', 'a lingering node whose cluster does not answer: false');
cmp_ok($ms, '<', 2500, "within the bound ($ms ms; linger is 5000 ms)");
ok(wait_for(sub { $b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('cold', 0); COMMIT") eq 't' }, 10),
	'once A answers again, it gives the node up');

$b->stop;
$a->stop;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'a stop gives it up')
  or diag(join("\n", zk_lock_nodes($zk)));
done_testing();
