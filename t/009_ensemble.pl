# ZooKeeper failover on a 3-member ensemble.  During a mutual-exclusion load
# from two clusters, first the member cluster A's worker is connected to (a
# follower) is killed (SIGKILL), then, once it is back, the leader.  Each
# time the sessions and every lock survive and the load goes on.  A is given
# the two followers only, so that each run kills a connected follower and a
# leader some other member's clients fail over from.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my @ports = start_ensemble('ens', 3);
my $hosts = join(',', map { "127.0.0.1:$_" } @ports);
my @followers = grep { $_->{mode} eq 'follower' } map { zk_member('ens', $_) } 1 .. 3;
is(scalar @followers, 2, 'the ensemble has a leader and two followers');
my $a = new_zk_cluster('ea', undef,
	hosts => join(',', map { "127.0.0.1:$_->{port}" } @followers));
my $b = new_zk_cluster('eb', undef, hosts => $hosts);

sub member_where
{
	my ($cond) = @_;
	for my $i (1 .. 3)
	{
		my $m = zk_member('ens', $i);
		return ($i, $m) if $cond->($m);
	}
	return;
}

ok(wait_for(sub { zk_status($a, 'state') eq 'connected' && zk_status($b, 'state') eq 'connected' }, 20),
	'both clusters connected to the ensemble');
my %session = map { $_->name => zk_status($_, 'session_id') } ($a, $b);

# A lock held across both faults, by a transaction that stays open.
my $held = $a->background_psql('postgres');
$held->query_safe("BEGIN; SELECT zk_lock('held across failover')");

my $counter = install_counter('ens', $a, $b);
my $clients = 4;
my $per_client = 40;
my $expected = 2 * $clients * $per_client;
my $body = "BEGIN;\nSELECT zk_lock('counter');\nSELECT bump('$counter');\nCOMMIT;\n";

# The counter file is empty for an instant while COPY rewrites it: read again.
sub count
{
	for (1 .. 100)
	{
		my $v = slurp_file($counter) =~ s/\s+//gr;
		return 0 + $v if $v ne '';
		Time::HiRes::usleep(1000);
	}
	die "counter file stays empty";
}

# Run the load; once it is under way, kill the member $pick chooses and
# measure how long increments stop.
sub load_with_kill
{
	my ($what, $pick) = @_;
	my ($killed, $t_kill, $at_kill, $resumed);
	my @res = run_counter_load([ $a, $b ], $clients, $per_client, $body,
		during => sub {
			wait_for(sub { count() >= $expected / 4 }, 60) or return;
			my ($i, $m) = $pick->();
			$killed = $i;
			$at_kill = count();
			$t_kill = time();
			kill 'KILL', $m->{pid};
			note("$what: killed member $i ($m->{mode}) at count $at_kill");
			wait_for(sub { count() > $at_kill + 2 }, 60) and $resumed = time() - $t_kill;
		});
	is($_->[0], 0, "$what: pgbench finished without errors") or diag($_->[2]) for @res;
	ok(defined $killed, "$what: a member was killed mid-load");
	ok(defined $resumed, "$what: the load went on");
	note(sprintf('%s: increments resumed %.2f s after the kill', $what, $resumed // -1));
	return $killed;
}

sub reset_counter
{
	open my $fh, '>', $counter or die;
	print $fh "0\n";
	close $fh;
}

sub member_of_a
{
	my $server = zk_status($a, 'server');
	note("A's worker is connected to $server");
	return member_where(sub { $server =~ /:$_[0]{port}$/ });
}

reset_counter();
my $follower = load_with_kill('connected follower killed', sub {
	my ($i, $m) = member_of_a();
	is($m->{mode}, 'follower', 'the member A is connected to is a follower');
	return ($i, $m);
});
is(count(), $expected, "connected follower killed: every increment counted ($expected)");

zk_restart_member('ens', $follower);
reset_counter();
load_with_kill('leader killed', sub {
	my ($i, $m) = member_where(sub { $_[0]{mode} eq 'leader' });
	my ($ia) = member_of_a();
	isnt($ia, $i, 'A is not connected to the leader');
	return ($i, $m);
});
is(count(), $expected, "leader killed: every increment counted ($expected)");

for my $node ($a, $b)
{
	is(zk_status($node, 'session_id'), $session{ $node->name }, $node->name . ': same session throughout');
	is(zk_status($node, 'lost'), '0', $node->name . ': no lock lost');
}
is($held->query_safe("SELECT 'still held' FROM zk_locks WHERE key = 'held across failover' AND state = 'granted'"),
	'still held', 'the lock held across both faults is still held');
$held->query_safe('COMMIT');
$held->quit;

my (undef, $lead) = member_where(sub { $_[0]{mode} eq 'leader' });
ok(wait_for(sub { scalar(zk_lock_nodes($lead->{port})) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($lead->{port})));
$a->stop;
$b->stop;
done_testing();
