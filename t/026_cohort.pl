# Local hand-over (lock cohorting): inside a cluster an exclusive lock's node
# passes from a releasing holder to a local waiter with no round trip.
#  - Under load on one key from both clusters, with A's connection reset
#    every 300 ms: every increment counts, and every holder's fencing token
#    is above the one before it, as a fenced resource outside both clusters
#    sees them; local hand-overs and cross-cluster grants both happened.
#  - A waiter of another cluster is granted after at most
#    zk_lock.local_handover_limit more hand-overs (plus those before the
#    holder's cluster could have seen it queue), not when the local load ends.
#  - A session lost while holders got their nodes by hand-over: every such
#    holder's commit fails with 40001, and B takes the keys.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZkLockTest;

my $limit = 2;
my $timeout_s = 6;
my ($zk, $proxy, $ca, $cb) = cohort_clusters('cohort', 'co', $limit, $timeout_s);
END { proxy_do($proxy, 'pass') if $proxy; }
is($ca->safe_psql('postgres', 'SHOW zk_lock.local_handover'), 'on', 'local hand-over is on by default');

# --- mutual exclusion and tokens under load and connection resets ---
my $counter = install_counter('cohort', $ca, $cb);
my $fence = "${ZkLockTest::scratch}/fence";
append_to_file($fence, "0\n");
chmod 0666, $fence;
for my $node ($ca, $cb)
{
	# a resource that refuses a token not above the last one it saw
	$node->safe_psql('postgres', q{
CREATE FUNCTION fenced(path text, token bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE last bigint;
BEGIN
  last := coalesce(nullif(btrim(pg_read_file(path), E' \n'), '')::bigint, 0);
  IF token <= last THEN
    RAISE EXCEPTION 'fencing token % is not above %', token, last;
  END IF;
  EXECUTE format('COPY (SELECT %s) TO %L', token, path);
  RETURN last;
END $$;
CREATE TABLE grants(token bigint, at timestamptz, cluster text);
});
}
my ($clients, $per) = (4, 40);
my $expected = 2 * $clients * $per;
my $resets = 0;
my @res = run_counter_load([ $ca, $cb ], $clients, $per,
	"BEGIN;\nSELECT zk_lock('hot');\nSELECT bump('$counter');\n"
	  . "INSERT INTO grants SELECT zk_lock_token('hot'), clock_timestamp(), current_setting('cluster_name')"
	  . " FROM (SELECT fenced('$fence', zk_lock_token('hot'))) f;\nCOMMIT;\n",
	timeout => 240,
	during => sub { $resets = resets_until($proxy, sub { counter_reached($counter, $expected) }) });
is($_->[0], 0, 'load finished: no error, the fenced resource refused no token') or diag($_->[2]) for @res;
is(slurp_file($counter) =~ s/\s+//gr, $expected, "every increment counted ($expected) across $resets resets");

my @grants;
for my $node ($ca, $cb)
{
	push @grants, map { [ split /\|/ ] }
	  split /\n/, $node->safe_psql('postgres', 'SELECT token, extract(epoch from at), cluster FROM grants');
}
@grants = sort { $a->[1] <=> $b->[1] } @grants;
is(scalar(@grants), $expected, 'every holder logged its token');
my ($rising, $local, $cross) = (1, 0, 0);
for my $i (1 .. $#grants)
{
	my ($p, $g) = ($grants[ $i - 1 ], $grants[$i]);
	$rising = 0, diag("token $g->[0] after $p->[0]") if $g->[0] <= $p->[0];
	$local++ if token_node($g->[0]) == token_node($p->[0]);
	$cross++ if $g->[2] ne $p->[2];
}
ok($rising, 'tokens strictly increase in the order the holders held the key');
cmp_ok($local, '>', 10, "holders got the node by local hand-over ($local times)");
cmp_ok($cross, '>', 2, "and the key went between the clusters ($cross times)");

# --- a foreign waiter is served within the bound ---
# a hand-over under way when A's read shows B's node, and one kept for a listing
my @ta = foreign_writer_rounds($ca, $cb, 'fair', 'zk_lock', $limit, 2);
my $handed = grep { token_node($ta[$_]) == token_node($ta[ $_ - 1 ]) } 1 .. $#ta;
cmp_ok($handed, '>', scalar(@ta) / 2, "most of A's grants were hand-overs ($handed of " . scalar(@ta) . ')');

# --- a session lost while local holders got their nodes by hand-over ---
my %hold;
for my $k (qw(l1 l2))
{
	my $first = $ca->background_psql('postgres', on_error_stop => 0);
	$first->query_safe("BEGIN; SELECT zk_lock('$k')");
	my $next = $ca->background_psql('postgres', on_error_stop => 0);
	$next->query_until(qr/asked/, "\\set VERBOSITY verbose\n\\echo asked\nBEGIN;\nSELECT zk_lock('$k');\n\\echo granted $k\n");
	ok(wait_for(sub { waiting_count($ca) >= 1 }, 10), "$k: a local waiter behind the holder");
	my $token0 = $first->query_safe("SELECT zk_lock_token('$k')");
	$first->query_safe('COMMIT');
	ok(wait_for(sub { $next->{run}->pump_nb; $next->{stdout} =~ /granted $k/ }, 10), "$k: handed over");
	my ($token1) = $next->query_safe("SELECT zk_lock_token('$k')") =~ /(\d+)\s*$/;
	ok(token_node($token1) == token_node($token0) && $token1 > $token0, "$k: same node, a greater token");
	my ($pid) = $next->query_safe('SELECT pg_backend_pid()') =~ /(\d+)\s*$/;
	is($ca->safe_psql('postgres', "SELECT pid FROM zk_lock_queue('$k') WHERE granted"), $pid,
		"$k: zk_lock_queue shows the new holder");
	is($ca->safe_psql('postgres', "SELECT pid || ' ' || token FROM zk_locks WHERE key = '$k' AND state = 'granted'"),
		"$pid $token1", "$k: so does zk_locks, with its token");
	$first->quit;
	$hold{$k} = $next;
}
is(key_queue_len($zk, 'l1') + key_queue_len($zk, 'l2'), 2, 'one node per key in ZooKeeper');
my $lost0 = zk_status($ca, 'lost');
proxy_do($proxy, 'blackhole');
ok(wait_for(sub { scalar(grep { $cb->safe_psql('postgres', "SELECT zk_try_lock('$_')") eq 't' } qw(l1 l2)) == 2 },
		3 * $timeout_s), 'B takes both keys once A\'s session expired');
proxy_do($proxy, 'pass');
ok(wait_for(sub { zk_status($ca, 'lost') >= $lost0 + 2 }, 30), 'A counts both handed-over locks lost');
for my $k (qw(l1 l2))
{
	$hold{$k}->query('COMMIT');
	like($hold{$k}->{stderr}, qr/ERROR:  40001: zk_lock lock on key "$k" was lost/,
		"$k: the handed-over holder's commit fails with 40001");
	$hold{$k}->quit;
}
ok(wait_for(sub { zk_lock_nodes($zk) == 0 }, 20), 'no lock node left behind');

done_testing();
