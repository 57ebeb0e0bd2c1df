# Waiting on one cluster: the wait shows in pg_stat_activity, a cancelled
# waiter leaves no node behind, three waiters are granted in FIFO order, and
# two backends that take keys in opposite orders get a 40P01 (the younger
# wait) after deadlock_timeout, whether they wait in ZooKeeper's queue
# (local hand-over off) or for a local hand-over (on), with a DETAIL line
# per step of the circle (process, key, mode, blocked by), as core's, in
# the error and in the server log.
# (These steps block until another session acts, which isolationtester can
# only detect for heavyweight-lock waits, so they live here.)
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('waits');
# The per-request queue in ZooKeeper (one node per waiter) is what this file
# checks: local hand-over (on by default; t/026) would keep local waiters
# out of ZooKeeper, so it is off here.
my $node = new_zk_cluster('w', $zk, conf => "zk_lock.local_handover = off\n");

sub start_waiter
{
	my ($key, $tag) = @_;
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	$s->set_query_timer_restart();
	$s->query_until(qr/started/,
		"\\echo started\nBEGIN;\nSELECT pg_backend_pid() AS pid \\gset\nSELECT zk_lock('$key');\nSELECT '$tag granted:' || nextval('grant_seq');\n");
	return $s;
}

$node->safe_psql('postgres', 'CREATE SEQUENCE grant_seq');

# --- the wait is visible, and cancelling it leaves nothing behind ---
my $holder = $node->background_psql('postgres');
$holder->query_safe("BEGIN; SELECT zk_lock('cancel-me')");
my $w = start_waiter('cancel-me', 'cancelled');
ok(wait_for(sub { key_queue_len($zk, 'cancel-me') == 2 }, 10), 'waiter queued behind the holder in ZooKeeper');
is($node->safe_psql('postgres',
		"SELECT wait_event_type || '/' || wait_event FROM pg_stat_activity WHERE backend_type = 'client backend' AND wait_event_type = 'Extension'"),
	'Extension/Extension', 'the waiter shows an Extension wait in pg_stat_activity');
is($node->safe_psql('postgres',
		"SELECT string_agg(state || ':' || (token IS NOT NULL) || ':' || (node IS NOT NULL), ',' ORDER BY wait_start) FROM zk_locks WHERE key = 'cancel-me'"),
	'granted:true:true,waiting:false:true',
	'zk_locks shows the holder granted (with its fencing token) and the waiter waiting');
is($node->safe_psql('postgres',
		"SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE backend_type = 'client backend' AND wait_event_type = 'Extension'"),
	'1', 'waiter cancelled');
ok(pump_until($w->{run}, $w->{timeout}, \$w->{stderr}, qr/canceling statement due to user request/),
	'the waiter got the cancel error');
ok(wait_for(sub { key_queue_len($zk, 'cancel-me') == 1 }, 10), 'its node was deleted; the holder\'s remains');
$holder->query_safe('COMMIT');
is($node->safe_psql('postgres', "SELECT zk_try_lock('cancel-me')"), 't',
	'after the holder commits the key is free: no cancelled waiter stands in front');
$w->quit;

# --- giving up while the create is still in flight leaves nothing behind ---
# A 1 ms deadline usually expires before ZooKeeper has answered the create;
# the node made afterwards must still be deleted.
$holder->query_safe("BEGIN; SELECT zk_lock('in-flight')");
my $script = join('', map {
	"SET statement_timeout = '1ms'; SELECT zk_lock('in-flight');\n"
	  . "RESET statement_timeout; SELECT zk_try_lock('in-flight', 1);\n"
} 1 .. 40);
my ($ret, $stdout, $stderr) = $node->psql('postgres', $script, on_error_stop => 0);
my $timeouts = () = $stderr =~ /canceling statement due to statement timeout/g;
cmp_ok($timeouts, '>=', 20, "statement timeouts hit ($timeouts of 40)");
unlike($stdout, qr/^t$/m, 'no bounded try-lock succeeded while the key was held');
ok(wait_for(sub { key_queue_len($zk, 'in-flight') == 1 }, 10),
	'only the holder\'s node remains after 80 abandoned requests')
  or diag(join("\n", zk_lock_nodes($zk)));
$holder->query_safe('COMMIT');
ok(wait_for(sub { zk_mntr($zk)->{zk_ephemerals_count} == scalar(zk_session_nodes($zk)) }, 10),
	'no ephemeral node but the session\'s presence once the holder commits');

# --- FIFO: waiters are granted in the order they queued ---
$holder->query_safe("BEGIN; SELECT zk_lock('fifo')");
my @waiters;
for my $i (1 .. 3)
{
	push @waiters, start_waiter('fifo', "w$i");
	ok(wait_for(sub { key_queue_len($zk, 'fifo') == $i + 1 }, 10), "waiter $i queued");
}
my $last = $node->safe_psql('postgres', 'SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM grant_seq');
$holder->query_safe('COMMIT');
my $prev = $holder;
for my $i (1 .. 3)
{
	my $got = $waiters[ $i - 1 ]->query_until(qr/granted:\d+/, '');
	my ($n) = $got =~ /w$i granted:(\d+)/;
	is($n, $last + $i, "waiter $i is granted ${\($i == 1 ? 'first' : 'next')}");
	is(key_queue_len($zk, 'fifo'), 4 - $i, 'one node fewer after each hand-over');
	$waiters[ $i - 1 ]->query_safe('COMMIT');
}
$_->quit for @waiters;
$holder->quit;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');

for my $handover ('off', 'on')
{
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET zk_lock.local_handover = $handover; ALTER SYSTEM SET deadlock_timeout = '1s';"
		  . ' SELECT pg_reload_conf()');
	ok(wait_for(sub { $node->safe_psql('postgres', 'SHOW zk_lock.local_handover') eq $handover }, 10),
		"local hand-over $handover");
	sleep(1);    # the worker's reload
	my @s = map { $node->background_psql('postgres', on_error_stop => 0) } (1, 2);
	$_->query_safe("\\set VERBOSITY verbose\nSET lock_timeout = '20s'") for @s;
	my @pid = map { $_->query_safe('SELECT pg_backend_pid()') =~ /(\d+)/ } @s;
	# a text key and a bigint key; the younger wait asks shared
	$s[0]->query_safe("BEGIN; SELECT zk_lock('dl1')");
	$s[1]->query_safe("BEGIN; SELECT zk_lock(4201)");
	$s[0]->query_until(qr/asked/, "\\echo asked\nSELECT zk_lock(4201);\n\\echo first done\n");
	sleep(1);    # the second wait is the younger
	my $log_at = -s $node->logfile;
	my $t0 = time();
	$s[1]->query_until(qr/second done/, "SELECT zk_lock_shared('dl1');\n\\echo second done\n");
	my $took = time() - $t0;
	like($s[1]->{stderr}, qr/40P01: deadlock detected: processes .* wait for each other's zk_lock locks/,
		"hand-over $handover: opposite orders, the younger wait fails with 40P01");
	cmp_ok($took, '<', 10, "hand-over $handover: after deadlock_timeout (${took} s; lock_timeout is 20 s)");
	# as core's DETAIL: a line per step, from the victim's, each key as the user wrote it
	my @steps = (
		"Process $pid[1] waits for a shared zk_lock on key \"dl1\", blocked by process $pid[0].",
		"Process $pid[0] waits for an exclusive zk_lock on key \"4201\", blocked by process $pid[1].");
	like($s[1]->{stderr}, qr/DETAIL:  \Q$steps[0]\E\n\Q$steps[1]\E\n/,
		"hand-over $handover: the DETAIL names each process, key, mode and who blocks it")
	  or diag($s[1]->{stderr});
	ok(wait_for(sub { slurp_file($node->logfile, $log_at) =~ /DETAIL:  \Q$steps[0]\E\n\t\Q$steps[1]\E\n/ }, 5),
		"hand-over $handover: the server log has the same lines")
	  or diag(slurp_file($node->logfile, $log_at));
	$s[1]->query('ROLLBACK');
	ok(wait_for(sub { $s[0]->{run}->pump_nb; $s[0]->{stdout} =~ /first done/ }, 10),
		"hand-over $handover: the other one gets its lock");
	like($s[0]->query('SELECT 1'), qr/1/, 'and goes on');
	$s[0]->query('COMMIT');
	$_->quit for @s;
}
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left after the deadlocks');
is($node->safe_psql('postgres', "SELECT value FROM zk_lock_counters WHERE counter = 'deadlocks'"), '2',
	'zk_lock_counters counts the two 40P01s');

$node->stop;
done_testing();
