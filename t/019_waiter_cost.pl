# What a long wait costs ZooKeeper.  A waiter checks its blocker again every
# half session timeout (a watch event may be lost); it does so by setting the
# watch on that one node again, not by reading the key's whole queue, which
# for thousands of waiters on a key was gigabytes per round.  Counted with
# the server's own getChildren response counters.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('cost');
# 2 s: waiters check their blocker every second
# The per-request queue in ZooKeeper (one node per waiter) is what this file
# checks: local hand-over (on by default; t/026) would keep local waiters
# out of ZooKeeper, so it is off here.
my $a = new_zk_cluster('ca', $zk, conf => "zk_lock.session_timeout = '2s'\nzk_lock.local_handover = off\n");

sub children_reads
{
	my $m = zk_mntr($zk);
	return $m->{zk_response_packet_get_children_cache_hits} +
	  $m->{zk_response_packet_get_children_cache_misses};
}

my $waiters = 20;
my $holder = $a->background_psql('postgres');
$holder->query_safe("BEGIN; SELECT zk_lock('patient')");
my @runs;
for (1 .. $waiters)
{
	push @runs, IPC::Run::start(
		[ 'psql', '-X', '-q', '-h', $a->host, '-p', $a->port, '-d', 'postgres',
		  '-c', "BEGIN; SELECT zk_lock('patient'); COMMIT;" ],
		'>', \my $out, '2>', \my $err, IPC::Run::timeout(120));
}
ok(wait_for(sub { key_queue_len($zk, 'patient') == $waiters + 1 }, 30), "$waiters waiters queued");
ok(wait_for(sub { zk_mntr($zk)->{zk_watch_count} >= $waiters + 1 }, 10), 'their watches are set');

my ($reads, $packets) = (children_reads(), zk_mntr($zk)->{zk_packets_received});
# each request read its queue once, right behind its create: the counters see our reads
cmp_ok($reads, '>=', $waiters + 1, "the server counted the queue reads so far ($reads)");
sleep 4;    # four checks of each waiter
my $read_during = children_reads() - $reads;
my $packets_during = zk_mntr($zk)->{zk_packets_received} - $packets;
cmp_ok($packets_during, '>=', 2 * $waiters, "the waiters did check their blockers ($packets_during requests in 4 s)");
is($read_during, 0, 'without reading the queue again');

$holder->query_safe('COMMIT');
$_->finish for @runs;
is(scalar(grep { $_->result(0) != 0 } @runs), 0, 'every waiter got the lock in turn');
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');
$holder->quit;
$a->stop;
done_testing();
