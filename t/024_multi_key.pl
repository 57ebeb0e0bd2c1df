# Multi-key locks across two clusters: all or nothing, one ZooKeeper multi
# per request, and no deadlock between requests that list shared keys in
# opposite orders.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('multi');
my $ca = new_zk_cluster('ma', $zk);
my $cb = new_zk_cluster('mb', $zk);

# --- a try against one held key: false, and none of the others held or queued ---
my $ha = $ca->background_psql('postgres');
$ha->query_safe("BEGIN; SELECT zk_lock('y')");
is($cb->safe_psql('postgres', "BEGIN; SELECT zk_try_lock(array['x', 'y', 'z']); SELECT count(*) FROM zk_locks WHERE state <> 'releasing'; COMMIT"),
	"f\n0", 'zk_try_lock(array) against one held key: false, and B holds none of the others');
is($cb->safe_psql('postgres', "BEGIN; SELECT zk_try_lock(array['x', 'y', 'z'], 300); COMMIT"), 'f',
	'with a 300 ms bound: false as well');
ok(wait_for(sub { key_queue_len($zk, 'x') + key_queue_len($zk, 'z') == 0 }, 10),
	'no node left queued on the free keys');
is(key_queue_len($zk, 'y'), 1, 'only the holder\'s node on the held key');
is($cb->safe_psql('postgres', "SELECT count(*) FROM zk_locks"), '0', 'nothing left in B\'s table');

# --- one request is one multi: ZooKeeper gives its nodes one czxid ---
my $hb = $cb->background_psql('postgres');
$hb->query_safe("BEGIN; SELECT zk_lock(array['p', 'q', 'r'])");
my @tokens = map { $hb->query_safe("SELECT zk_lock_token('$_')") } qw(p q r);
like($tokens[0], qr/^\d+$/, "a token for each key ($tokens[0])");
is(scalar(grep { $_ eq $tokens[0] } @tokens), 3,
	"the three nodes of zk_lock(array['p','q','r']) were made by one ZooKeeper transaction (one czxid)");
$hb->query_safe('COMMIT');

# --- a blocking request waits for the held key, then holds all ---
$hb->query_until(qr/go/, "\\echo go\nBEGIN; SELECT zk_lock(array['x', 'y']);\n");
ok(wait_for(sub { waiting_count($cb) == 1 }, 10), 'B waits for y, which A holds');
is($ca->safe_psql('postgres', "SELECT zk_try_lock('x')"), 'f',
	'meanwhile x is queued for B: A cannot take it past B');
$ha->query_safe('COMMIT');
ok(wait_for(sub { waiting_count($cb) == 0 }, 10), 'B gets both once A commits');
$hb->query_safe('SELECT 1');
is($hb->query_safe("SELECT string_agg(key, ',' ORDER BY key) FROM zk_locks WHERE state = 'granted'"), 'x,y',
	'B holds x and y');
$hb->query_safe('COMMIT');

# --- no deadlock: A loops on [a, b], B on [b, a], two clients each, 200 rounds ---
my $counter = install_counter('multi', $ca, $cb);
$_->safe_psql('postgres', "ALTER SYSTEM SET lock_timeout = '30s'; SELECT pg_reload_conf()") for ($ca, $cb);
my @res = run_counter_load([ $ca, $cb ], 2, 100,
	"BEGIN;\nSELECT zk_lock(CASE current_setting('cluster_name') WHEN 'ma' THEN array['a', 'b'] ELSE array['b', 'a'] END);\n" .
	"SELECT bump('$counter');\nCOMMIT;\n",
	timeout => 240);
is(scalar(grep { $_->[0] != 0 } @res), 0, 'every client finished: no deadlock, no lock timeout')
  or diag(join("\n", map { $_->[2] } @res));
is(slurp_file($counter) =~ s/\s+//gr, 400, 'and 400 increments under both keys, none lost');
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');

$ha->quit;
$hb->quit;
$_->stop for ($ca, $cb);
done_testing();
