# zk_lock.linger: a released exclusive lock's node stays for the cluster's
# next request of the key.  zk_locks shows it with no backend (pid NULL)
# while it lingers, and a new request of the cluster takes it over.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('linger');
my $a = new_zk_cluster('lga', $zk, conf => "zk_lock.linger = '60s'\n");
ok(wait_for(sub { $a->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' }, 30),
	'A grants');

$a->safe_psql('postgres', "BEGIN; SELECT zk_lock('lg'); SELECT pg_sleep(0.5); COMMIT");    # held long enough to be kept
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT pid IS NULL, state FROM zk_locks WHERE key = 'lg'") eq 't|lingering' }, 5),
	'a released node that lingers shows with a NULL pid')
  or diag($a->safe_psql('postgres', 'SELECT * FROM zk_locks'));
my $node = $a->safe_psql('postgres', "SELECT node FROM zk_locks WHERE key = 'lg'");
is(
	$a->safe_psql('postgres',
		"BEGIN; SELECT zk_lock('lg'); SELECT pid = pg_backend_pid(), state, node FROM zk_locks WHERE key = 'lg'; COMMIT"),
	"\nt|granted|$node", 'the next request of the cluster takes that node over, with its pid');

$a->stop;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'a stop gives it up')
  or diag(join("\n", zk_lock_nodes($zk)));
done_testing();
