# Creates and deletes coalesced into ZooKeeper multis.
#  - Many backends locking at once: the worker sends their creates and
#    deletes in multis, every lock is granted, nothing is left behind.
#  - Fencing tokens stay strictly increasing for one key while its creates
#    travel in multis with other keys' (two creates of one key never share a
#    multi, which would give them one czxid).
#  - One op failing inside a multi fails none of its neighbours: a key node
#    no one may write to (ACL set by another client) refuses its create, the
#    others in the multi are sent again and succeed.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('multi');
my $a = new_zk_cluster('ma', $zk);

sub status
{
	my ($col) = @_;
	return $a->safe_psql('postgres', "SELECT $col FROM zk_lock_status()");
}

$a->safe_psql('postgres', 'CREATE TABLE toks (token bigint, at timestamptz)');

# 16 clients on their own keys, 8 more on one shared key, at once
my $distinct = "BEGIN;\nSELECT zk_lock(:client_id::bigint);\nCOMMIT;\n";
my $shared = "BEGIN;\nSELECT zk_lock('one key');\n"
  . "INSERT INTO toks VALUES (zk_lock_token('one key'), clock_timestamp());\nCOMMIT;\n";
my $bg = $a->background_psql('postgres', on_error_stop => 0);
my @res = run_counter_load([$a], 16, 60, $distinct,
	during => sub {
		my @one = run_counter_load([$a], 8, 20, $shared);
		is($_->[0], 0, 'same-key clients finished without errors') or diag($_->[2]) for @one;
	});
is($_->[0], 0, 'distinct-key clients finished without errors') or diag($_->[2]) for @res;
my $batched = status('batched');
cmp_ok($batched, '>', 0, "creates and deletes went out in multis ($batched ops)");
is($a->safe_psql('postgres', 'SELECT count(*) FROM toks'), '160', 'every same-key transaction got its token');
is($a->safe_psql('postgres',
	'SELECT count(*) FROM (SELECT token <= lag(token) OVER (ORDER BY at) AS stale FROM toks) t WHERE stale'),
	'0', 'tokens of one key strictly increase from holder to holder');
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));

# --- a failing op inside a multi ---
my $out = '';
IPC::Run::run([ '/usr/share/zookeeper/bin/zkCli.sh', '-server', "127.0.0.1:$zk",
	'create', '/zk_lock/tread-only', 'x', 'world:anyone:r' ], '<', \'', '>', \$out, '2>&1',
	IPC::Run::timeout(60));
like($out, qr{Created /zk_lock/tread-only}, 'a key node nobody may create under');
my $rolled_before = status('rolled_back');
my ($denied, $other) = (0, 0);
@res = run_counter_load([$a], 16, 40, $distinct,
	during => sub {
		for (1 .. 40)
		{
			my ($ret, $o, $err) = $a->psql('postgres', "SELECT zk_lock('read-only')", on_error_stop => 0);
			if ($err =~ /ZooKeeper denied access/) { $denied++ } else { $other++ }
		}
	});
is($_->[0], 0, 'its neighbours in multis all got their locks') or diag($_->[2]) for @res;
is($denied, 40, 'the refused create failed alone, with 42501, every time');
is($other, 0, 'and never otherwise');
note(sprintf('%d ops were sent again after a neighbour in their multi failed',
	status('rolled_back') - $rolled_before));
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));

$bg->quit;
$a->stop;
done_testing();
