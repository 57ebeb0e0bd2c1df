# Hand-overs that skip a second read of the queue, and the cases where they
# must not.  A waiter whose only blocker is released is granted on the
# delete itself: on its watch event (another cluster; after one read of its
# own node, so that a session death announced in the same transaction is
# seen first), or on its own cluster's delete reply when the released node
# held the lock exclusively.
# When the watched node goes but another blocker is still ahead (a waiter
# that gave up, a reader behind two writers), the waiter must read the queue
# again and keep waiting.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('handover');
# The per-request queue in ZooKeeper (one node per waiter) is what this file
# checks: local hand-over (on by default; t/026) would keep local waiters
# out of ZooKeeper, so it is off here.
my $a = new_zk_cluster('hoa', $zk, conf => "zk_lock.local_handover = off\n");
my $b = new_zk_cluster('hob', $zk, conf => "zk_lock.local_handover = off\n");

# A session on NODE that, in a transaction, asks for a lock and prints
# "got granted" once zk_lock returns, or "got <result>" of a try-lock.
sub ask
{
	my ($node, $call) = @_;
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $got = $call =~ /^zk_try/ ? "SELECT ${call}::text AS got \\gset\n"
	  : "SELECT $call;\nSELECT 'granted' AS got \\gset\n";
	$s->query_until(qr/started/, "\\echo started\nBEGIN;\n$got\\echo got :got\n");
	return $s;
}

sub answered
{
	my ($s, $want, $secs) = @_;
	$s->{timeout}->start($secs);
	return pump_until($s->{run}, $s->{timeout}, \$s->{stdout}, qr/got \Q$want\E/);
}

# states of the key's requests in NODE, oldest first
sub states
{
	my ($node, $key) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(state, ',' ORDER BY wait_start) FROM zk_locks WHERE key = '$key'");
}

# the holder and the waiter that must stay behind it are both in cluster A;
# GIVE_UP is the request in between that gives up after 2 s
sub remaining_blocker
{
	my ($key, $give_up_node, $give_up_call, $waiter_call, $what) = @_;
	my $holder = $a->background_psql('postgres');
	$holder->query_safe("BEGIN; SELECT zk_lock('$key')");
	my $quitter = ask($give_up_node, $give_up_call);
	ok(wait_for(sub { key_queue_len($zk, $key) == 2 }, 10), "$what: a request queued behind the holder");
	my $waiter = ask($a, $waiter_call);
	ok(wait_for(sub { key_queue_len($zk, $key) == 3 }, 10), "$what: a waiter queued behind both");
	ok(answered($quitter, 'false', 10), "$what: the middle request gave up");
	ok(wait_for(sub { key_queue_len($zk, $key) == 2 }, 10), "$what: its node is gone");
	# time for a wrong grant to show: the watch fired, the read is one round trip
	sleep 1;
	is(states($a, $key), 'granted,waiting', "$what: the waiter still waits for the holder");
	$holder->query_safe('COMMIT');
	ok(answered($waiter, 'granted', 10), "$what: the waiter is granted once the holder commits");
	$waiter->query_safe('COMMIT');
	ok(wait_for(sub { key_queue_len($zk, $key) == 0 }, 10), "$what: nothing left behind");
	$_->quit for ($holder, $quitter, $waiter);
}

remaining_blocker('k1', $b, "zk_try_lock('k1', 2000)", "zk_lock('k1')",
	'watched node in another cluster');
remaining_blocker('k2', $b, "zk_try_lock('k2', 2000)", "zk_lock_shared('k2')",
	'reader behind two writers');
remaining_blocker('k3', $a, "zk_try_lock('k3', 2000)", "zk_lock('k3')",
	'watched node of this cluster, never granted');

# --- the shortcut itself: a chain of hand-overs across both clusters ---
# Each waiter is granted only after its predecessor commits, in order.
my $first = $a->background_psql('postgres');
$first->query_safe("BEGIN; SELECT zk_lock('k4')");
my @chain;
for my $i (1 .. 4)
{
	my $node = $i % 2 ? $b : $a;
	push @chain, ask($node, "zk_lock('k4')");
	ok(wait_for(sub { key_queue_len($zk, 'k4') == $i + 1 }, 10), "chain: waiter $i queued");
}
$first->query_safe('COMMIT');
for my $i (1 .. 4)
{
	ok(answered($chain[ $i - 1 ], 'granted', 10), "chain: waiter $i granted");
	my $holders = grep { $_ eq 'granted' } map { split /,/, states($_, 'k4') } ($a, $b);
	is($holders, 1, "chain: waiter $i is the only holder in either cluster");
	$chain[ $i - 1 ]->query_safe('COMMIT');
}
ok(wait_for(sub { key_queue_len($zk, 'k4') == 0 }, 10), 'chain: nothing left behind');
$_->quit for ($first, @chain);

$a->stop;
$b->stop;
done_testing();
