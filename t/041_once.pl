# zk_once: a job done once per period across clusters.  Two clusters share a
# job: the period is done by the first transaction that commits it, whichever
# cluster; a rollback leaves it owed; while one cluster does a period the
# other gets NULL at once; the record in ZooKeeper says who did what; bad
# arguments get clear errors.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('once');
my $a = new_zk_cluster('oa', $zk);
my $b = new_zk_cluster('ob', $zk);

# A period of an hour: the test runs inside one period (unless it crosses an
# hour's boundary, which the anchor below keeps far away).
my $anchor = $a->safe_psql('postgres', "SELECT now() - interval '10 minutes'");
my $call = "zk_once('nightly', interval '1 hour', '$anchor')";

my $first = $a->safe_psql('postgres', "BEGIN; SELECT $call; ROLLBACK");
is($first, $a->safe_psql('postgres', "SELECT '$anchor'::timestamptz"),
	'a new job: the period begun now is owed (it starts at the anchor)');
is($b->safe_psql('postgres', "BEGIN; SELECT $call IS NOT NULL; COMMIT"), 't',
	'rolled back in A: still owed, and B does it');
is($a->safe_psql('postgres', "BEGIN; SELECT $call IS NULL; COMMIT"), 't', 'then A finds nothing owed');
is($b->safe_psql('postgres', "BEGIN; SELECT $call IS NULL; COMMIT"), 't', 'nor does B');

is($b->safe_psql('postgres',
	"SELECT period || ' ' || (last_done = first_period) || ' ' || done_by_cluster || ' ' || (running_cluster IS NULL)
	 FROM zk_once_jobs WHERE name = 'nightly'"), '01:00:00 true ob true',
	'zk_once_jobs: the period, the one done, by B, nobody running it now');
my $rec = zk_cli($zk, 'get /zk_lock/.once/tnightly');
like($rec, qr/^zk_once 1$/m, 'the record is in ZooKeeper, under the root');
like($rec, qr/^done \d+$/m, 'it names the period done');
like($rec, qr/^by \d+ \d+ \d+ \S+ ob$/m, 'and the cluster that did it');

# while one cluster does a period, the other gets NULL at once
my $job = "zk_once('hourly', interval '1 hour', '$anchor')";
my $h = $a->background_psql('postgres');
my $got = $h->query_safe("BEGIN; SELECT $job");
isnt($got, '', 'A does the period of another job');
is($h->query_safe("SELECT $job"), $got, 'a repeat call in its transaction says the same');
my $t0 = time();
is($b->safe_psql('postgres', "BEGIN; SELECT $job IS NULL; COMMIT"), 't', 'B gets NULL while A does it');
cmp_ok(time() - $t0, '<', 5, 'at once');
like($a->safe_psql('postgres', "SELECT key || ' ' || key_type FROM zk_locks"), qr/^hourly once$/m,
	'zk_locks shows the claim as a once key');
is($b->safe_psql('postgres', "SELECT running_cluster || ' ' || (last_done IS NULL) FROM zk_once_jobs WHERE name = 'hourly'"),
	'oa true', 'zk_once_jobs, read in B: A runs the job\'s first period');
$b->safe_psql('postgres', 'CREATE ROLE reader LOGIN');
is($b->safe_psql('postgres', 'SELECT count(*) FROM zk_once_jobs', extra_params => [ '-U', 'reader' ]), '2',
	'any role may read it');
$h->query_safe('SELECT zk_unlock_all()');
is($b->safe_psql('postgres', "BEGIN; SELECT $job IS NULL; COMMIT"), 't',
	'zk_unlock_all() does not give the claim up before the commit');
$h->query_safe('COMMIT');
is($b->safe_psql('postgres', "BEGIN; SELECT $job IS NULL; COMMIT"), 't', 'A committed: done, nothing owed');
$h->quit;

# a savepoint rolled back gives the claim up, and the period with it: a later
# call in the transaction asks again (a retry loop must not do it unclaimed)
my $sp = "zk_once('savepoint', interval '1 hour', '$anchor')";
my $ha = $a->background_psql('postgres');
my $hb = $b->background_psql('postgres');
is($ha->query_safe("BEGIN; SAVEPOINT s; SELECT $sp IS NOT NULL"), 't', 'A takes a period in a savepoint');
$ha->query_safe('ROLLBACK TO s');
is($hb->query_safe("BEGIN; SELECT $sp IS NOT NULL"), 't', 'rolled back: B takes the period');
is($ha->query_safe("SELECT $sp IS NULL"), 't', 'A asks again and gets NULL: B does it now');
$hb->query_safe('COMMIT');
$ha->query_safe('COMMIT');
is($a->safe_psql('postgres', "BEGIN; SELECT $sp IS NULL; COMMIT"), 't', 'done once, by B');
$ha->quit;
$hb->quit;

# a job whose periods pass while it is not done: the earliest owed comes
# first, then `latest` takes the period begun now and counts those it passes over
my $fast = "zk_once('fast', interval '1 second', '2026-01-01 00:00:00+00'";
my $p0 = $a->safe_psql('postgres', "BEGIN; SELECT extract(epoch FROM $fast))::bigint; COMMIT");
ok($p0 =~ /^\d+$/ && abs($p0 - time()) < 5, 'a new job of 1 s periods: the period begun now');
sleep(4);
is($a->safe_psql('postgres', "BEGIN; SELECT extract(epoch FROM $fast))::bigint; COMMIT"), $p0 + 1,
	'four periods later: the earliest owed comes next');
my $late = $a->safe_psql('postgres', "BEGIN; SELECT extract(epoch FROM $fast, latest => true))::bigint; COMMIT");
cmp_ok($late, '>=', $p0 + 4, 'latest: the period begun now');
my $skipped = $late - ($p0 + 2);
like(zk_cli($zk, 'get /zk_lock/.once/tfast'), qr/^skipped $skipped$/m,
	"the $skipped periods passed over are counted");
my $after = $a->safe_psql('postgres', "BEGIN; SELECT extract(epoch FROM $fast))::bigint; COMMIT");
ok($after eq '' || $after > $late, 'and nothing before it is owed any more (NULL, or a period begun since)');

# Calls in one cluster share its once area, one at a time.  Eight clients
# commit periods of jobs of their own at once (a new job each time: a read, a
# make, and the seal at commit): every seal gets the area and lands in time,
# none waits out its deadline (7 s here) and none is logged as not recorded.
my $log_at = -s $a->logfile;
my ($busy) = run_counter_load([$a], 8, 12,
	"\\set j random(1, 1000000000)\nBEGIN;\n" .
	"SELECT zk_once('busy-' || :client_id || '-' || :j, interval '1 hour', '$anchor') IS NOT NULL;\nCOMMIT;\n",
	pgbench_args => [ '--latency-limit=6000' ]);
is($busy->[0], 0, 'eight clients commit periods of their own jobs at once') or diag($busy->[2]);
like($busy->[1], qr/above the 6000\.0 ms latency limit: 0\//,
	'no commit waits out the seal\'s 7 s deadline for the once area');
unlike(slurp_file($a->logfile, $log_at), qr/could not be recorded/, 'every period is recorded');
is($a->safe_psql('postgres',
	"SELECT count(*) FILTER (WHERE last_done IS NOT NULL) || ' ' || count(*) FROM zk_once_jobs WHERE name LIKE 'busy-%'"),
	'96 96', 'each of the 96 jobs has its period done');

# errors
my ($ret, $out, $err) = $a->psql('postgres', "SELECT zk_once('nightly', interval '30 minutes', '$anchor')");
like($err, qr/zk_once job "nightly" has another period or anchor/, 'another period: an error');
($ret, $out, $err) = $a->psql('postgres', "SELECT zk_once('', interval '1 hour')");
like($err, qr/zk_once name must not be empty/, 'an empty name');
($ret, $out, $err) = $a->psql('postgres', "SELECT zk_once(repeat('x', 257), interval '1 hour')");
like($err, qr/zk_once name is too long/, 'a name too long');
($ret, $out, $err) = $a->psql('postgres', "SELECT zk_once(NULL, interval '1 hour')");
like($err, qr/zk_once name must not be NULL/, 'a NULL name');
($ret, $out, $err) = $a->psql('postgres', "SELECT zk_once('x', interval '0')");
like($err, qr/zk_once period must be positive/, 'a zero period');
($ret, $out, $err) = $a->psql('postgres', "SELECT zk_once('x', interval '-1 hour')");
like($err, qr/zk_once period must be positive/, 'a negative period');
($ret, $out, $err) = $a->psql('postgres', "SELECT zk_once('x', interval '1 month')");
like($err, qr/zk_once period must not count months/, 'a period of months');
($ret, $out, $err) = $a->psql('postgres', "SELECT zk_once('x', interval '1 hour', 'infinity')");
like($err, qr/zk_once anchor must be finite/, 'an infinite anchor');
($ret, $out, $err) = $a->psql('postgres', "SELECT zk_once('x', NULL)");
like($err, qr/zk_once period must not be NULL/, 'a NULL period');

my $prep = "zk_once('prepared', interval '1 hour', '$anchor')";
($ret, $out, $err) = $a->psql('postgres', "BEGIN; SELECT $prep IS NOT NULL; PREPARE TRANSACTION 'p'");
like($err, qr/cannot PREPARE a transaction that does a zk_once period/, 'PREPARE is refused with a period pending');
is($b->safe_psql('postgres', "BEGIN; SELECT $prep IS NOT NULL; COMMIT"), 't', 'and the period stays owed');

ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');
$a->stop;
$b->stop;
done_testing();
