# A cluster whose view is stale must not commit under a lock another
# cluster has been granted since (the commit proof, README "Failure
# semantics"):
#  - A's worker is stopped (SIGSTOP: a debugger, a VM freeze, a stuck
#    LWLock) while a backend of A holds a key idle; the session expires, B is
#    granted the key and commits; A's COMMIT then fails with 40001.  A short
#    stop only delays A's commit.
#  - A is cut off past the session timeout; B takes the keys and commits;
#    on A, unlocking the lost lock (zk_unlock, zk_unlock_all) or stacking a
#    new request onto it does not make the commit (or a PREPARE TRANSACTION)
#    valid: 40001 each time.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZkLockTest;

my $zk = start_zookeeper('stale');
my $proxy = start_proxy('stale', $zk);
END { proxy_do($proxy, 'pass') if $proxy; }

my $timeout_s = 6;
my $conf = "zk_lock.session_timeout = '${timeout_s}s'\nzk_lock.connect_timeout = '20s'\n"
  . "max_prepared_transactions = 2\n";
my $a = new_zk_cluster('va', undef, hosts => "127.0.0.1:$proxy->{port}", conf => $conf);
my $b = new_zk_cluster('vb', $zk, conf => $conf);

my $stopped_pid;
END { kill 'CONT', $stopped_pid if $stopped_pid; }

sub connected { return zk_status($_[0], 'state') eq 'connected'; }

ok(wait_for(sub { connected($a) }, 20), 'A connected through the proxy');

# --- a short stop of A's worker only delays A's commit ---
my $ha = $a->background_psql('postgres', on_error_stop => 0);
$ha->query_safe("\\set VERBOSITY verbose\nBEGIN; SELECT zk_lock('brief')");
my $worker = zk_status($a, 'worker_pid');
$stopped_pid = $worker;
kill 'STOP', $worker;
sleep 2;    # the proof (at most half of zk_lock.proof_bound old when it stopped) is stale now
$ha->query_until(qr/sent/, "\\echo sent\nCOMMIT;\nSELECT 'brief committed';\n");
ok(!wait_for(sub { $ha->{run}->pump_nb; $ha->{stdout} =~ /brief committed/ }, 1),
	'with its worker stopped, A\'s commit waits for a fresh proof');
kill 'CONT', $worker;
$stopped_pid = undef;
like($ha->query_until(qr/brief committed/, ''), qr/brief committed/,
	'once the worker runs again the commit goes through');
is($ha->{stderr}, '', 'without an error');

# --- the worker stopped past the session timeout: B commits, A must not ---
$ha->query_safe("BEGIN; SELECT zk_lock('frozen')");
my $wb = $b->background_psql('postgres', on_error_stop => 0);
$wb->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock('frozen');\n\\echo b granted\n");
ok(wait_for(sub { key_queue_len($zk, 'frozen') == 2 }, 10), 'A holds, B waits');
$stopped_pid = $worker;
kill 'STOP', $worker;
my $t0 = time();
ok(wait_for(sub { $wb->{run}->pump_nb; $wb->{stdout} =~ /b granted/ }, 3 * $timeout_s),
	'B is granted the key once ZooKeeper expires A\'s session');
note(sprintf('B granted %.1f s after A\'s worker stopped', time() - $t0));
$wb->query_safe('COMMIT');
$ha->query('COMMIT');
like($ha->{stderr}, qr/ERROR:  40001: could not prove the zk_lock session alive before commit/,
	'A\'s commit fails with 40001 while its worker is stopped');
note(sprintf('A\'s commit failed %.1f s after its worker stopped', time() - $t0));
kill 'CONT', $worker;
$stopped_pid = undef;
ok(wait_for(sub { connected($a) && zk_status($a, 'expirations') >= 1 }, 30),
	'A\'s worker, running again, finds its session gone and connects anew');

# --- cut off past the session timeout: unlocking a lost lock does not help ---
my @keys = qw(unlocked unlocked-all stacked prepared);
my %h;
for my $k (@keys)
{
	$h{$k} = $a->background_psql('postgres', on_error_stop => 0);
	$h{$k}->query_safe("\\set VERBOSITY verbose\nBEGIN; SELECT zk_lock('$k')");
}
my $lost_before = zk_status($a, 'lost');
proxy_do($proxy, 'blackhole');
ok(wait_for(sub {
		scalar(grep { $b->safe_psql('postgres', "SELECT zk_try_lock('$_')") eq 't' } @keys) == 4
	}, 3 * $timeout_s), 'B can take every key once A\'s session expired');
ok(wait_for(sub { zk_status($a, 'lost') >= $lost_before + 4 }, 10), 'A counts the four locks lost');

$h{'unlocked'}->query("SELECT zk_unlock('unlocked'); COMMIT");
like($h{'unlocked'}->{stderr}, qr/ERROR:  40001: zk_lock lock on key "unlocked" was lost/,
	'zk_unlock of the lost lock, then COMMIT: 40001');
$h{'unlocked-all'}->query("SELECT zk_unlock_all(); COMMIT");
like($h{'unlocked-all'}->{stderr}, qr/ERROR:  40001: zk_lock lock on key "unlocked-all" was lost/,
	'zk_unlock_all(), then COMMIT: 40001');
$h{'stacked'}->query("SELECT zk_lock('stacked')");
like($h{'stacked'}->{stderr}, qr/ERROR:  40001: zk_lock lock on key "stacked" was lost/,
	'stacking a request onto the lost lock: 40001');
$h{'stacked'}->query('COMMIT');
is($h{'stacked'}->query("SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid()"), '0',
	'and that transaction could only roll back, holding nothing after');

$h{'prepared'}->query("SELECT zk_unlock('prepared'); PREPARE TRANSACTION 'after_loss'");
like($h{'prepared'}->{stderr}, qr/ERROR:  40001: zk_lock lock on key "prepared" was lost/,
	'zk_unlock, then PREPARE TRANSACTION: 40001, nothing prepared');
is($a->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '0', 'no prepared transaction');

proxy_do($proxy, 'pass');
ok(wait_for(sub { connected($a) }, 30), 'A reconnected in a new session');
is($a->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('after', 5000); COMMIT;"), 't',
	'and commits under a new lock again');

$_->quit for ($ha, $wb, values %h);
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));
$a->stop;
$b->stop;
done_testing();
