# Lock-delay: after a session that may hold locks dies, no cluster grants any
# lock for zk_lock.lock_delay, which is longer than the commit proof's bound;
# so a cut-off holder's last possible commit comes before the next grant.
#  - A commits one transaction after another under a key, and is cut off
#    from ZooKeeper; B asks for the key.  A's last commit comes before B's
#    grant, and B's grant comes at least lock_delay after B's worker saw
#    A's session end.
#  - A copy of A's data directory (pg_basebackup) started as a standby never
#    touches A's session: A keeps its lock, B cannot take it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use List::Util ();
use Time::Local qw(timegm);
use ZkLockTest;

my $zk = start_zookeeper('delay');
my $proxy = start_proxy('delay', $zk);
END { proxy_do($proxy, 'pass') if $proxy; }

my $delay_ms = 2500;
my $conf = "zk_lock.session_timeout = '6s'\nzk_lock.connect_timeout = '8s'\n"
  . "zk_lock.proof_bound = '1s'\nzk_lock.lock_delay = '${delay_ms}ms'\n";
my $a = new_zk_cluster('da', undef, hosts => "127.0.0.1:$proxy->{port}", conf => $conf,
	init => { allows_streaming => 1 });
my $b = new_zk_cluster('db', $zk, conf => $conf);

# The epoch of a server log line's timestamp ('%m': ms, UTC in these tests).
sub log_epoch
{
	my ($node, $re) = @_;
	my ($y, $mo, $d, $h, $mi, $s) = slurp_file($node->logfile) =~
	  /^(\d+)-(\d+)-(\d+) (\d+):(\d+):([\d.]+) UTC [^\n]*$re/m or return undef;
	return timegm(0, $mi, $h, $d, $mo - 1, $y) + $s;
}

ok(wait_for(sub { zk_status($a, 'state') eq 'connected' }, 20), 'A connected through the proxy');
# a fresh worker does not grant during its first lock_delay (it cannot know
# what died just before it looked): wait that out before measuring
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT zk_try_lock('warm', 0)") eq 't' }, 20), 'A grants');
ok(wait_for(sub { $b->safe_psql('postgres', "SELECT zk_try_lock('warm', 0)") eq 't' }, 20), 'B grants');

# --- A commits under 'k' in a loop, and holds 'held' in an open transaction ---
# (the loop may hold nothing at the instant of the cut; 'held' is held for sure)
my $held_a = $a->background_psql('postgres', on_error_stop => 0);
$held_a->query_safe("BEGIN; SELECT zk_lock('held')");
my $g0 = zk_status($a, 'grants');
my $loop = start_commit_loop($a, 'k', 40);
# a slow machine's loop may need more than a second for its first commits
ok(wait_for(sub { zk_status($a, 'grants') >= $g0 + 20 }, 10), 'A\'s loop commits under k');
proxy_do($proxy, 'blackhole');
my $cut = time();

my $wb = $b->background_psql('postgres', on_error_stop => 0);
$wb->query_until(qr/asked/,
	"\\echo asked\nBEGIN;\nSELECT zk_lock('held');\nSELECT zk_lock('k');\n\\echo b granted\n");
ok(wait_for(sub { $wb->{run}->pump_nb; $wb->{stdout} =~ /b granted/ }, 30), 'B is granted both keys');
note(sprintf('B granted %.1f s after the cut', time() - $cut));
my ($granted) = $wb->query_safe("SELECT extract(epoch FROM granted_at) FROM zk_locks WHERE key = 'k'")
  =~ /([\d.]+)\s*$/;
my ($granted_held) = $wb->query_safe("SELECT extract(epoch FROM granted_at) FROM zk_locks WHERE key = 'held'")
  =~ /([\d.]+)\s*$/;
my ($rc, $err, @ends) = finish_commit_loop($loop);
isnt($rc, 0, 'A\'s load ended with an error');
like($err, qr/could not prove the zk_lock session alive|zk_lock lock on key "k" was lost|could not connect to ZooKeeper/,
	'a zk_lock error: cut off, A could neither commit nor take the key again');

cmp_ok(scalar(@ends), '>', 10, scalar(@ends) . ' commits of A before the cut');
my $last = List::Util::max(@ends);
cmp_ok($last, '<', $granted, sprintf('A\'s last commit came %.2f s before B\'s grant', $granted - $last));
my $seen = log_epoch($b, qr/a ZooKeeper session that may have held locks ended/);
ok(defined $seen, 'B\'s worker saw A\'s session end');
cmp_ok($granted_held - ($seen // 0), '>=', $delay_ms / 1000 - 0.01,
	sprintf('B was granted the key A held %.2f s after that: not before zk_lock.lock_delay (%.1f s)',
		$granted_held - ($seen // 0), $delay_ms / 1000));
cmp_ok($b->safe_psql('postgres', "SELECT value FROM zk_lock_counters WHERE counter = 'lock_delay_pauses'"),
	'>=', 1, 'zk_lock_counters counts the pause');
$wb->query_safe('COMMIT');
$held_a->quit;
proxy_do($proxy, 'pass');
ok(wait_for(sub { zk_status($a, 'state') eq 'connected' }, 30), 'A reconnected');

# --- a copy of A's data directory never touches A's session ---
ok(wait_for(sub { $a->safe_psql('postgres', "SELECT zk_try_lock('warm', 0)") eq 't' }, 20),
	'A grants again');
my $ha = $a->background_psql('postgres', on_error_stop => 0);
$ha->query_safe("BEGIN; SELECT zk_lock('primary-key')");
my $session = zk_status($a, 'session_id');
$a->backup('copy');
my $standby = PostgreSQL::Test::Cluster->new('dcopy');
$standby->init_from_backup($a, 'copy', has_streaming => 1);
$standby->append_conf('postgresql.conf', "cluster_name = 'dcopy'\n");
$standby->start;
ok(wait_for(sub { slurp_file($standby->logfile) =~ /connected to ZooKeeper, session/ }, 30),
	'the copy\'s worker runs and connects');
like(slurp_file($standby->logfile), qr/not closing the ZooKeeper session named in "pg_zk_lock.session"/,
	'it leaves the session named in the copied file alone');
is(zk_status($a, 'session_id'), $session, 'A keeps its session');
is($b->safe_psql('postgres', "SELECT zk_try_lock('primary-key', 1000)"), 'f', 'and its lock: B cannot take it');
$ha->query_safe('COMMIT');
pass('A commits under its lock');
my $mode = sprintf('%o', (stat($a->data_dir . '/pg_zk_lock.session'))[2] & 07777);
is($mode, '600', 'the session file is readable by the server\'s OS user only');

$_->quit for ($wb, $ha);
$standby->stop;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));
$a->stop;
$b->stop;
done_testing();
