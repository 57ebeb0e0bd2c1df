# Session-level locks across two clusters: a lock survives COMMIT and
# ROLLBACK and blocks the other cluster until zk_session_unlock or the
# session ends; a lost one cancels the running statement with 40001, and
# fails every commit and zk_* call of the session with 40001 naming the key
# until zk_session_unlock, zk_session_unlock_all or DISCARD ALL acknowledges
# the loss.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('session_locks');
my $proxy = start_proxy('session_locks', $zk);
END { proxy_do($proxy, 'pass') if $proxy; }

my $timeout_s = 6;
my $conf = "zk_lock.session_timeout = '${timeout_s}s'\nzk_lock.connect_timeout = '20s'\n";
my $a = new_zk_cluster('sla', undef, hosts => "127.0.0.1:$proxy->{port}", conf => $conf);
my $b = new_zk_cluster('slb', $zk, conf => $conf);
ok(wait_for(sub { zk_status($a, 'state') eq 'connected' }, 20), 'A connected through the proxy');

sub b_can_take
{
	my ($key) = @_;
	return $b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('$key', 0); COMMIT");
}

# --- held across transactions, released by zk_session_unlock ---
my $ha = $a->background_psql('postgres', on_error_stop => 0);
$ha->query_safe("\\set VERBOSITY verbose\nSELECT zk_session_lock('job')");
is($ha->{stderr}, '', 'taken outside a transaction block, without a warning');
is(b_can_take('job'), 'f', 'B cannot take the key A holds');
$ha->query_safe('BEGIN; SELECT 1; COMMIT');
$ha->query_safe('BEGIN; SELECT 1; ROLLBACK');
$ha->query_safe('SELECT 2');
is(b_can_take('job'), 'f', 'still held after a COMMIT, a ROLLBACK and an autocommit statement');

my $hb = $b->background_psql('postgres', on_error_stop => 0);
$hb->query_until(qr/asked/, "\\echo asked\nSELECT zk_session_lock('job');\n\\echo b granted\n");
ok(wait_for(sub { key_queue_len($zk, 'job') == 2 }, 10), 'B waits for it with zk_session_lock');
ok(!wait_for(sub { $hb->{run}->pump_nb; $hb->{stdout} =~ /b granted/ }, 1), 'and keeps waiting');
is($ha->query_safe("SELECT zk_session_unlock('job')"), 't', 'A unlocks it');
ok(wait_for(sub { $hb->{run}->pump_nb; $hb->{stdout} =~ /b granted/ }, 10), 'and B is granted');
like($hb->query_safe("SELECT zk_session_unlock('job')"), qr/\bt$/, 'B unlocks it in turn');

# --- released when the session ends ---
my $hc = $a->background_psql('postgres');
$hc->query_safe("SELECT zk_session_lock_shared('job2')");
is(b_can_take('job2'), 'f', 'a shared session-level lock keeps a writer of B out');
$hc->quit;
ok(wait_for(sub { b_can_take('job2') eq 't' }, 10), 'until its session ends');

# --- unlocking inside a transaction: that commit still needs the proof ---
$ha->query_safe("SELECT zk_session_lock('unlock-stale')");
my $worker = zk_status($a, 'worker_pid');
my $stopped = $worker;
END { kill 'CONT', $stopped if $stopped; }
kill 'STOP', $worker;
sleep 2;    # the proof is older than zk_lock.proof_bound now
$ha->query_until(qr/sent/, "\\echo sent\nBEGIN;\nSELECT zk_session_unlock('unlock-stale');\nCOMMIT;\n\\echo unlocked\n");
ok(!wait_for(sub { $ha->{run}->pump_nb; $ha->{stdout} =~ /unlocked/ }, 1),
	'with its worker stopped, a transaction that unlocks a session-level lock waits at COMMIT');
kill 'CONT', $worker;
$stopped = undef;
ok(wait_for(sub { $ha->{run}->pump_nb; $ha->{stdout} =~ /unlocked/ }, 10), 'and commits once the worker runs again');
is($ha->{stderr}, '', 'without an error');
$ha->{stdout} = '';

# --- lost: an idle holder, a running statement, a zk_session_* call, unlock_all ---
my $hu = $a->background_psql('postgres', on_error_stop => 0);
$hu->query_safe("\\set VERBOSITY verbose\nSELECT zk_session_lock('lost-u1'), zk_session_lock_shared('lost-u2')");
my $hr = $a->background_psql('postgres', on_error_stop => 0);
my $hs = $a->background_psql('postgres', on_error_stop => 0);
my $hp = $a->background_psql('postgres', on_error_stop => 0);
$hp->query_safe("\\set VERBOSITY verbose\nSELECT zk_session_lock('lost-sp')");
$ha->query_safe("SELECT zk_session_lock('lost-idle')");
$hs->query_safe("\\set VERBOSITY verbose\nSELECT zk_session_lock('lost-call')");
$hr->query_safe("\\set VERBOSITY verbose\nSELECT zk_session_lock('lost-running')");
$hr->query_until(qr/sleeping/, "\\echo sleeping\nSELECT pg_sleep(60);\n\\echo woke\n");
my $lost_before = zk_status($a, 'lost');
proxy_do($proxy, 'blackhole');
ok(wait_for(sub {
		scalar(grep { b_can_take($_) eq 't' } qw(lost-idle lost-call lost-running lost-u1 lost-u2 lost-sp)) == 6
	}, 4 * $timeout_s), 'B can take every key once A\'s session expired');
ok(wait_for(sub { zk_status($a, 'lost') >= $lost_before + 6 }, 10), 'A counts the six locks lost');

ok(wait_for(sub { $hr->{run}->pump_nb; $hr->{stdout} =~ /woke/ }, 10), 'the running statement ended');
like($hr->{stderr}, qr/ERROR:  40001: zk_lock session-level lock on key "lost-running" was lost/,
	'cancelled with 40001 naming the key');
like($hr->{stderr}, qr/HINT:  Acknowledge it with zk_session_unlock\(\)/, 'the hint says to acknowledge, not to retry');
$hr->{stderr} = '';
$hr->query('SELECT 1');
like($hr->{stderr}, qr/ERROR:  40001: zk_lock session-level lock on key "lost-running" was lost/,
	'lost stays lost: the next statement fails too');

# the retry a 40001 invites: refused, read-only or not, until acknowledged
$ha->query('SELECT 1');
like($ha->{stderr}, qr/ERROR:  40001: zk_lock session-level lock on key "lost-idle" was lost/,
	'an idle holder\'s next commit fails with 40001 naming the key');
unlike($ha->{stderr}, qr/Retry the transaction/, 'and does not invite a retry');
for my $try (1 .. 3)
{
	$ha->{stderr} = '';
	$ha->query("BEGIN; SELECT 1; COMMIT");
	like($ha->{stderr}, qr/ERROR:  40001: zk_lock session-level lock on key "lost-idle" was lost/,
		"retry $try of a read-only transaction is refused too");
}
$ha->{stderr} = '';
$ha->query("BEGIN; SELECT zk_lock('unrelated'); COMMIT");
like($ha->{stderr}, qr/ERROR:  40001: zk_lock session-level lock on key "lost-idle" was lost/,
	'so is a zk_* call on another key');
is(b_can_take('lost-idle'), 't', 'all the while B can take the key');
$ha->{stderr} = '';
is($ha->query("SELECT zk_session_unlock('lost-idle')"), '', 'zk_session_unlock(key) acknowledges the loss');
like($ha->{stderr}, qr/ERROR:  40001: .*\n.*DETAIL:  .*The loss is acknowledged now/,
	'reporting it a last time (its transaction ran under the lost lock)');
$ha->{stderr} = '';
$ha->query('BEGIN; SELECT 1; COMMIT');
is($ha->{stderr}, '', 'from then on transactions commit');
is($ha->query("SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid() AND state <> 'releasing'"), '0',
	'and the lock is no longer held');
$hr->{stderr} = '';
$hr->query("SELECT zk_session_unlock_shared('lost-running')");
$hr->{stderr} = '';
$hr->query('SELECT 1');
like($hr->{stderr}, qr/ERROR:  40001: zk_lock session-level lock on key "lost-running"/,
	'unlocking the key in the other mode acknowledges nothing');
$hr->{stderr} = '';
$hr->query("SELECT zk_session_unlock('lost-running')");
$hr->{stderr} = '';
$hr->query('SELECT 1');
is($hr->{stderr}, '', 'the right mode does');

$hs->query("SELECT zk_session_lock('another')");
like($hs->{stderr}, qr/ERROR:  40001: zk_lock session-level lock on key "lost-call" was lost/,
	'the next zk_* call fails with 40001 naming the lost key');
$hs->{stderr} = '';
$hs->query('DISCARD ALL');
is($hs->{stderr}, '', 'DISCARD ALL acknowledges it, without an error (a pooler\'s reset query)');
$hs->query('SELECT 1');
is($hs->{stderr}, '', 'and the session commits again');
is($hs->query("SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid() AND state <> 'releasing'"), '0',
	'holding nothing');

# an acknowledgement whose error a savepoint catches: its transaction still does not commit
$hp->query("BEGIN; SELECT 1; SAVEPOINT s; SELECT zk_session_unlock('lost-sp');");
like($hp->{stderr}, qr/ERROR:  40001: .*"lost-sp" was lost/, 'the acknowledging call fails');
$hp->{stderr} = '';
$hp->query("ROLLBACK TO s; COMMIT");
like($hp->{stderr}, qr/ERROR:  40001: zk_lock lock on key "lost-sp" was lost/,
	'and its transaction, gone on past a savepoint, is refused at COMMIT');
$hp->{stderr} = '';
$hp->query('SELECT 1');
is($hp->{stderr}, '', 'the next one commits: the loss was acknowledged');

$hu->query('SELECT zk_session_unlock_all()');
like($hu->{stderr}, qr/ERROR:  40001: zk_lock session-level lock on key "lost-u[12]" was lost/,
	'zk_session_unlock_all() with lost locks acknowledges them and reports one');
$hu->{stderr} = '';
is($hu->query("SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid() AND state <> 'releasing'"), '0',
	'it released them all');
is($hu->{stderr}, '', 'and the next statement commits');

# --- back in a new session, session-level locks work again ---
proxy_do($proxy, 'pass');
ok(wait_for(sub { zk_status($a, 'state') eq 'connected' }, 30), 'A reconnected in a new session');
is($ha->query_safe("SELECT zk_session_try_lock('after', 5000)"), 't', 'and locks again');
is(b_can_take('after'), 'f', 'against B');
$_->quit for ($ha, $hb, $hr, $hs, $hu, $hp);
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));
$a->stop;
$b->stop;
done_testing();
