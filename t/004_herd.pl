# Herd-free queueing, checked with the ZooKeeper server's own counters:
# every waiter watches exactly one node (its predecessor) and nothing
# watches the key's children, and a hand-over costs a constant number of
# requests, whatever the length of the queue.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('herd');
# The per-request queue in ZooKeeper (one node per waiter) is what this file
# checks: local hand-over (on by default; t/026) would keep local waiters
# out of ZooKeeper, so it is off here.
my @clusters = map { new_zk_cluster($_, $zk, conf => "zk_lock.local_handover = off\n") } qw(ha hb);

# Upper bound on ZooKeeper requests per hand-over: the waiter's getChildren
# after its watch fires, its delete at commit, a commit proof when the last
# one is older than half its bound (hand-overs slowed by a loaded machine:
# a CI run measured 5.70 with 10 waiters), and pings.  A herd (every waiter
# re-reading the children on each release) costs O(queue) instead: half the
# queue more per hand-over on average, 15 with 30 waiters.
my $bound = 7;

sub drain
{
	my ($key, $waiters) = @_;
	my $holder = $clusters[0]->background_psql('postgres');
	$holder->query_safe("BEGIN; SELECT zk_lock('$key')");

	my @runs;
	for my $i (1 .. $waiters)
	{
		my $node = $clusters[ $i % 2 ];
		my ($out, $err) = ('', '');
		push @runs, IPC::Run::start(
			[ 'psql', '-X', '-q', '-h', $node->host, '-p', $node->port, '-d', 'postgres',
			  '-c', "BEGIN; SELECT zk_lock('$key'); COMMIT;" ],
			'>', \$out, '2>', \$err, IPC::Run::timeout(120));
	}
	my $nodes = sub { scalar grep { m{^/zk_lock/t\Q$key\E/} } zk_lock_nodes($zk) };
	ok(wait_for(sub { $nodes->() == $waiters + 1 }, 30), "$waiters waiters queued in ZooKeeper");
	# besides, each cluster's worker watches the sessions' presence nodes (lock-delay)
	my $expected = $waiters + scalar(@clusters);
	ok(wait_for(sub { zk_mntr($zk)->{zk_watch_count} >= $expected }, 10), 'their watches are set');
	is(zk_mntr($zk)->{zk_watch_count}, $expected,
		"zk_watch_count = $waiters + one per cluster: one watch per waiter, no child watch on the key");

	my $before = zk_mntr($zk)->{zk_packets_received};
	$holder->query_safe('COMMIT');
	$_->finish for @runs;
	is(scalar(grep { $_->result(0) != 0 } @runs), 0, 'every waiter got the lock and committed');
	ok(wait_for(sub { $nodes->() == 0 }, 10), 'queue drained, no node left');
	# a watch set on a predecessor already gone would stay for the session's life
	ok(wait_for(sub { zk_mntr($zk)->{zk_watch_count} == scalar(@clusters) }, 10),
		'no watch left behind but each cluster\'s one on the sessions');
	my $per = (zk_mntr($zk)->{zk_packets_received} - $before) / $waiters;
	cmp_ok($per, '<=', $bound, sprintf('%.2f ZooKeeper requests per hand-over with %d waiters', $per, $waiters));
	$holder->quit;
	return $per;
}

my $per10 = drain('herd10', 10);
my $per30 = drain('herd30', 30);
cmp_ok($per30, '<=', $per10 + 1,
	sprintf('cost per hand-over does not grow with the queue (%.2f at 10, %.2f at 30)', $per10, $per30));

$_->stop for @clusters;
done_testing();
