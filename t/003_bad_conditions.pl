# Bad conditions give clear errors with SQLSTATEs, never a hang or a crash,
# and leave nothing behind: ZooKeeper unreachable, hosts not set, slot table
# full, library not preloaded.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('bad');

sub sqlstate_of
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	my ($code) = $err =~ /(?:ERROR|FATAL):\s+([0-9A-Z]{5}):/;
	return ($code // 'none', $err);
}

# The worker process, found by its title (it runs even when a test breaks its session).
sub worker_running
{
	my ($node) = @_;
	my ($pm) = split /\n/, PostgreSQL::Test::Utils::slurp_file($node->data_dir . '/postmaster.pid');
	return scalar grep { /zk_lock worker/ } `ps -o args= --ppid $pm`;
}

# --- ZooKeeper unreachable: a port nobody listens on ---
my $dead_port = PostgreSQL::Test::Cluster::get_free_port();
my $u = new_zk_cluster('unreachable', undef,
	hosts => "127.0.0.1:$dead_port", conf => 'zk_lock.connect_timeout = 1000');
my $t0 = time();
my ($code, $err) = sqlstate_of($u, "SELECT zk_lock('k')");
my $took = time() - $t0;
is($code, '08001', 'ZooKeeper unreachable: connection error class 08') or diag($err);
like($err, qr/could not connect to ZooKeeper within zk_lock.connect_timeout/, 'message names the setting');
cmp_ok($took, '<', 10, 'and it returns (no hang)');
like($err, qr/DETAIL:  ZooKeeper hosts: 127\.0\.0\.1:$dead_port; last connection error: .*Connection refused/,
	'the error names the hosts tried and why the connect failed');
($code) = sqlstate_of($u, "SELECT zk_try_lock('k')");
is($code, '08001', 'try-lock too');
ok(worker_running($u), 'the worker is still running');
my @failed = grep { /cannot connect to ZooKeeper at "127\.0\.0\.1:$dead_port": .*Connection refused/ }
  split /\n/, PostgreSQL::Test::Utils::slurp_file($u->logfile);
is(scalar(@failed), 1, 'the worker logged its failed connects once, not at every retry');

# The right list, reloaded while no session exists, is used at once.
$u->safe_psql('postgres', "ALTER SYSTEM SET zk_lock.hosts = '127.0.0.1:$zk'");
$u->reload;
$t0 = time();
ok(wait_for(sub { $u->safe_psql('postgres', 'SELECT state FROM zk_lock_status()') eq 'connected' }, 20),
	'a corrected zk_lock.hosts connects without a restart');
cmp_ok(time() - $t0, '<', 10, 'within seconds, not after the old list times out');
is($u->safe_psql('postgres', 'SELECT hosts FROM zk_lock_status()'), "127.0.0.1:$zk",
	'zk_lock_status() shows the list in use');
is($u->safe_psql('postgres', "BEGIN; SELECT count(*) FROM (SELECT zk_lock('k')) l; COMMIT;"), '1', 'and locks work');
like(PostgreSQL::Test::Utils::slurp_file($u->logfile), qr/hosts changed to "127\.0\.0\.1:$zk"; connecting there/,
	'the log says it moved to the new list');
$u->safe_psql('postgres', "ALTER SYSTEM RESET zk_lock.hosts");
$u->reload;

# --- hosts not set ---
$u->append_conf('postgresql.conf', "zk_lock.hosts = ''\n");
$u->reload;
ok(wait_for(sub { $u->safe_psql('postgres', 'SHOW zk_lock.hosts') eq '' }, 10), 'hosts cleared');
($code, $err) = sqlstate_of($u, "SELECT zk_lock('k')");
is($code, '55000', 'hosts not set: object not in prerequisite state') or diag($err);
like($err, qr/HINT:.*zk_lock.hosts/, 'with a hint');

# --- a malformed host list is refused when set, not retried for ever ---
for my $bad ('not a host list!!', '127.0.0.1', 'zk1:2181,', 'zk1:99999', 'zk1:2181/chroot', '[::1:2181')
{
	($code, $err) = sqlstate_of($u, "ALTER SYSTEM SET zk_lock.hosts = '$bad'");
	is($code, '22023', "ALTER SYSTEM refuses zk_lock.hosts = '$bad' (22023)") or diag($err);
}
like($err, qr/DETAIL:  "\[::1:2181" is not host:port/, 'and says which entry is wrong');
($code, $err) = sqlstate_of($u, "ALTER SYSTEM SET zk_lock.hosts = 'zk1.example:2181,10.0.0.2:2182,[::1]:2183'");
is($code, 'none', 'a well-formed list of names, addresses and a bracketed IPv6 address is accepted')
  or diag($err);
$u->safe_psql('postgres', 'ALTER SYSTEM RESET zk_lock.hosts');
$u->stop;

# --- slot table full ---
my $s = new_zk_cluster('small', $zk, conf => 'zk_lock.max_locks = 16');
($code, $err) = sqlstate_of($s,
	"BEGIN; SELECT zk_lock('k' || i) FROM generate_series(1, 17) i; COMMIT;");
is($code, '53200', 'slot table full: 53200') or diag($err);
like($err, qr/HINT:.*zk_lock.max_locks/, 'with a hint to raise zk_lock.max_locks');
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10),
	'the aborted transaction left no lock node');
is($s->safe_psql('postgres',
		"BEGIN; SELECT count(zk_lock('k' || i)) FROM generate_series(1, 16) i; COMMIT;"),
	'16', 'all slots usable again afterwards');
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'and released at commit');
$s->stop;

# --- not preloaded: CREATE EXTENSION works, the functions say what to do ---
my $np = new_zk_cluster('nopreload', $zk, preload => 0);
($code, $err) = sqlstate_of($np, "SELECT zk_lock('k')");
is($code, '55000', 'not preloaded: clear error') or diag($err);
like($err, qr/HINT:.*shared_preload_libraries/, 'with a hint to preload');
$np->stop;

done_testing();
