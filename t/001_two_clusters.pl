# Two clusters, one ZooKeeper: cross-cluster blocking, hand-over at commit,
# release at abort and at backend exit, and mutual exclusion under load.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('main');
my $a = new_zk_cluster('a', $zk);
my $b = new_zk_cluster('b', $zk);

# --- B blocks on a key A holds, and gets it right after A commits ---
my $ha = $a->background_psql('postgres');
$ha->query_safe("BEGIN; SELECT zk_lock('handover')");

my $hb = $b->background_psql('postgres');
$hb->query_until(qr/go/,
	"\\echo go\nBEGIN; SELECT zk_lock('handover'); SELECT 'b-granted', extract(epoch from clock_timestamp()); COMMIT;\n");
ok(wait_for(sub { waiting_count($b) == 1 }, 10), 'B waits for the lock A holds');
is($b->safe_psql('postgres', "SELECT zk_try_lock('handover')"), 'f',
	'a third session in B cannot take it either');
sleep 1;
is(waiting_count($b), 1, 'B is still waiting after a second');

my $token_a = $ha->query_safe("SELECT zk_lock_token('handover')");
like($token_a, qr/^\d+$/, "A's lock has a fencing token ($token_a)");
my $commit_at = time();
$ha->query_safe('COMMIT');
ok(wait_for(sub { waiting_count($b) == 0 }, 10), 'B is granted after A commits');
note(sprintf('hand-over: B granted %.1f ms after A committed (wall clock seen by the test)',
	1000 * (time() - $commit_at)));
$hb->query_safe("BEGIN; SELECT zk_lock('handover')");
my $token_b = $hb->query_safe("SELECT zk_lock_token('handover')");
cmp_ok($token_b, '>', $token_a, "the next holder, in B, has a greater token ($token_b)");
$hb->query_safe('COMMIT');
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT zk_try_lock('handover')") eq 't' }, 10),
	"B's commit released it; A can take the key again");
$hb->quit;

# --- A's abort releases ---
$ha->query_safe("BEGIN; SELECT zk_lock('abort-key')");
is($b->safe_psql('postgres', "SELECT zk_try_lock('abort-key')"), 'f', 'held by A');
$ha->query_safe('ROLLBACK');
ok(wait_for(sub { $b->safe_psql('postgres', "SELECT zk_try_lock('abort-key')") eq 't' }, 10),
	'A\'s rollback released the key for B');

# --- backend exit releases ---
$ha->query_safe("BEGIN; SELECT zk_lock('exit-key')");
$ha->quit;
ok(wait_for(sub { $b->safe_psql('postgres', "SELECT zk_try_lock('exit-key')") eq 't' }, 10),
	'a backend that exits while holding releases the key');

# --- a terminated waiter leaves no node behind ---
$ha = $a->background_psql('postgres');
$ha->query_safe("BEGIN; SELECT zk_lock('term-key')");
my $hw = $b->background_psql('postgres', on_error_stop => 0);
$hw->query_until(qr/go/, "\\echo go\nSELECT zk_lock('term-key');\n");
ok(wait_for(sub { waiting_count($b) == 1 }, 10), 'waiter queued in B');
$b->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND wait_event_type = 'Extension'");
ok(wait_for(sub { waiting_count($b) == 0 }, 10), 'waiter terminated');
$ha->query_safe('COMMIT');
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10),
	'no lock node left after the holder commits and the waiter was terminated');
eval { $hw->quit };

# --- mutual exclusion: read-modify-write of a counter outside both clusters ---
my $counter = install_counter('main', $a, $b);
my $clients = 4;
my $per_client = 25;
my $expected = 2 * $clients * $per_client;

sub check_load
{
	is($_->[0], 0, 'pgbench finished') or diag($_->[2]) for @_;
}

# Control: the same load without the lock must lose updates, or the test proves nothing.
check_load(run_counter_load([ $a, $b ], $clients, $per_client, "SELECT bump('$counter');\n"));
my $unlocked = 0 + PostgreSQL::Test::Utils::slurp_file($counter);
cmp_ok($unlocked, '<', $expected, "without zk_lock, increments are lost ($unlocked of $expected)");

open my $fh, '>', $counter or die;
print $fh "0\n";
close $fh;
my $t0 = time();
check_load(run_counter_load([ $a, $b ], $clients, $per_client,
	"BEGIN;\nSELECT zk_lock('counter');\nSELECT bump('$counter');\nCOMMIT;\n"));
my $elapsed = time() - $t0;
is(0 + PostgreSQL::Test::Utils::slurp_file($counter), $expected,
	"with zk_lock across two clusters, every increment counts ($expected)");
note(sprintf('locked load: %d increments in %.2f s', $expected, $elapsed));

ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10),
	'no lock node remains in ZooKeeper after the load')
  or diag(join("\n", zk_lock_nodes($zk)));

$a->stop;
$b->stop;
done_testing();
