# 1.1's kinds under connection resets: cluster A reaches ZooKeeper through a
# proxy that resets its connection every 300 ms while both clusters load a
# multi-key lock (listed in opposite orders) and then a semaphore of 2.
# Lost replies are looked up by uuid; a multi-key request must keep its one
# place on both keys (no deadlock), every increment must count, the
# semaphore must never let a third in, and nothing may be left behind.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZkLockTest;

my $zk = start_zookeeper('kres');
my $proxy = start_proxy('kres', $zk);
END { proxy_do($proxy, 'pass') if $proxy; }
my $ca = new_zk_cluster('ra', undef, hosts => "127.0.0.1:$proxy->{port}");
my $cb = new_zk_cluster('rb', $zk);
ok(wait_for(sub { zk_status($ca, 'state') eq 'connected' }, 20), 'A connected through the proxy');
$_->safe_psql('postgres', "ALTER SYSTEM SET lock_timeout = '60s'; SELECT pg_reload_conf()") for ($ca, $cb);

my $session = zk_status($ca, 'session_id');
my $connects0 = zk_status($ca, 'connects');
my $lost0 = zk_status($ca, 'lost');

# --- multi-key locks ---
my $counter = install_counter('kres', $ca, $cb);
my ($clients, $per) = (3, 30);
my $expected = 2 * $clients * $per;
my $resets = 0;
my @res = run_counter_load([ $ca, $cb ], $clients, $per,
	"BEGIN;\nSELECT zk_lock(CASE current_setting('cluster_name') WHEN 'ra' THEN array['ka', 'kb'] ELSE array['kb', 'ka'] END);\n" .
	"SELECT bump('$counter');\nCOMMIT;\n",
	timeout => 240,
	during => sub {
		$resets = resets_until($proxy, sub { counter_reached($counter, $expected) });
	});
is($_->[0], 0, 'multi-key load finished: no error, no deadlock') or diag($_->[2]) for @res;
is(slurp_file($counter) =~ s/\s+//gr, $expected, "every increment counted ($expected) across $resets resets");

# --- a semaphore of 2 ---
$_->safe_psql('postgres', 'CREATE TABLE inside(t_in timestamptz, t_out timestamptz)') for ($ca, $cb);
my $count = sub { my $n = 0; $n += $_->safe_psql('postgres', 'SELECT count(*) FROM inside') for ($ca, $cb); $n };
my $sem_total = 2 * $clients * $per;
my $sem_resets = 0;
@res = run_counter_load([ $ca, $cb ], $clients, $per,
	"BEGIN;\nSELECT zk_semaphore('kres', 2);\nSELECT extract(epoch from clock_timestamp()) AS t_in \\gset\n" .
	"SELECT pg_sleep(0.003);\nINSERT INTO inside VALUES (to_timestamp(:t_in), clock_timestamp());\nCOMMIT;\n",
	timeout => 240,
	during => sub { $sem_resets = resets_until($proxy, sub { $count->() >= $sem_total - 10 }) });
is($_->[0], 0, 'semaphore load finished without errors') or diag($_->[2]) for @res;
my @ev;
for my $node ($ca, $cb)
{
	for (split /\n/, $node->safe_psql('postgres', 'SELECT extract(epoch from t_in), extract(epoch from t_out) FROM inside'))
	{
		my ($in, $out) = split /\|/;
		push @ev, [ $in, 1 ], [ $out, -1 ];
	}
}
is(scalar(@ev), 2 * $sem_total, 'every transaction logged its stay');
my ($inside, $most) = (0, 0);
for (sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } @ev)
{
	$inside += $_->[1];
	$most = $inside if $inside > $most;
}
cmp_ok($most, '<=', 2, "never more than two inside at once across $sem_resets resets (most: $most)");

# --- the resets were real, and harmless ---
cmp_ok(zk_status($ca, 'connects') - $connects0, '>=', ($resets + $sem_resets) / 2, 'A really reconnected again and again');
is(zk_status($ca, 'lost'), $lost0, 'no lock was lost to the resets');
is(zk_status($ca, 'session_id'), $session, 'A kept its session throughout');
note(sprintf('A: %d reconnections, %d creates recovered by uuid, %d deletes retried, %d ops batched',
	zk_status($ca, 'connects') - $connects0, zk_status($ca, 'recovered'), zk_status($ca, 'delete_retries'),
	zk_status($ca, 'batched')));
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 20), 'no orphan lock node after the resets')
  or diag(join("\n", zk_lock_nodes($zk)));

$ca->stop;
$cb->stop;
done_testing();
