# ZooKeeper frozen (SIGSTOP) under held locks.
#  - Shorter than the session timeout: a holder that commits while its worker
#    is disconnected waits for the reconnection, then commits.
#  - Longer: the worker treats its session as lost without waiting to be
#    told; the holder's commit fails (40001), and a waiter in the other
#    cluster ends up holding the key in a new session.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('outage');
my $zkpid = slurp_file("${ZkLockTest::scratch}/zk_outage/zk.pid");
chomp $zkpid;
my $zk_frozen = 0;
END { kill 'CONT', $zkpid if $zk_frozen; }

# 12 s: the client notices the silence after 8 s and declares the session
# lost 3 s later (11/12 of it), which leaves time to act in between, even on
# a slow machine (6 s left 1.5 s for a COMMIT and two psql runs).
my $conf = "zk_lock.session_timeout = '12s'\nzk_lock.connect_timeout = '20s'\n";
my $a = new_zk_cluster('oa', $zk, conf => $conf);
my $b = new_zk_cluster('ob', $zk, conf => $conf);

sub freeze { kill 'STOP', $zkpid; $zk_frozen = 1; }
sub thaw { kill 'CONT', $zkpid; $zk_frozen = 0; }

sub log_count
{
	my ($node, $re) = @_;
	my @m = slurp_file($node->logfile) =~ /$re/g;
	return scalar @m;
}

sub waiting_commit
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query ILIKE 'commit%'");
}

# --- short outage: commit waits for the reconnection ---
my $ha = $a->background_psql('postgres', on_error_stop => 0);
$ha->set_query_timer_restart();
$ha->query_safe("BEGIN; SELECT zk_lock('short')");
my $lost_before = log_count($a, qr/lost the connection to ZooKeeper/);
freeze();
ok(wait_for(sub { log_count($a, qr/lost the connection to ZooKeeper/) > $lost_before }, 15),
	'A noticed the silence');
$ha->query_until(qr/sent/, "\\echo sent\nCOMMIT;\nSELECT 'committed';\n");
ok(wait_for(sub { waiting_commit($a) == 1 }, 5), 'the commit waits: the lock cannot be confirmed');
thaw();
like($ha->query_until(qr/committed/, ''), qr/committed/, 'after the reconnection the commit goes through');
is($a->safe_psql('postgres', 'SELECT lost FROM zk_lock_status()'), '0', 'nothing was lost');

# --- right after a freeze the client has noticed nothing yet: only
#     zk_lock.verify_on_commit makes the commit wait for ZooKeeper ---
ok(wait_for(sub { $a->safe_psql('postgres', 'SELECT state FROM zk_lock_status()') eq 'connected' }, 15),
	'A connected again');
$ha->query_safe("BEGIN; SELECT zk_lock('plain')");
freeze();
my $t1 = time();
$ha->query_safe('COMMIT');
my $plain_ms = 1000 * (time() - $t1);
thaw();
cmp_ok($plain_ms, '<', 1000, sprintf('a plain commit does not ask ZooKeeper (%.0f ms)', $plain_ms));

$ha->query_safe("SET zk_lock.verify_on_commit = on; BEGIN; SELECT zk_lock('verified')");
freeze();
$ha->query_until(qr/sent/, "\\echo sent\nCOMMIT;\nSELECT 'verified commit';\n");
ok(wait_for(sub { waiting_commit($a) == 1 }, 5), 'a verified commit waits for ZooKeeper');
sleep 1;
is(waiting_commit($a), 1, 'and keeps waiting while ZooKeeper is frozen');
thaw();
like($ha->query_until(qr/verified commit/, ''), qr/verified commit/,
	'it commits once ZooKeeper confirms the lock node');
$ha->query_safe('RESET zk_lock.verify_on_commit');

# --- long outage: holder loses its lock, a waiter gets it in a new session ---
my $hb = $b->background_psql('postgres', on_error_stop => 0);
$hb->set_query_timer_restart();
$hb->query_safe("BEGIN; SELECT zk_lock('long')");
my $wa = $a->background_psql('postgres', on_error_stop => 0);
$wa->set_query_timer_restart();
$wa->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock('long');\nSELECT 'wa granted';\n");
ok(wait_for(sub { scalar(grep { m{/tlong/} } zk_lock_nodes($zk)) == 2 }, 10), 'holder in B, waiter in A');

# (an earlier freeze may have outlasted B's timeout too: count from here)
my $expired_before = log_count($b, qr/treating session 0x[0-9a-f]+ as expired/);
my $a_expired_before = log_count($a, qr/treating session 0x[0-9a-f]+ as expired/);
my $t0 = time();
freeze();
ok(wait_for(sub { log_count($b, qr/treating session 0x[0-9a-f]+ as expired/) > $expired_before }, 20),
	'B treats its session as lost on its own');
note(sprintf('B declared the session lost %.1f s after ZooKeeper froze (timeout 12 s)', time() - $t0));
is($b->safe_psql('postgres', "SELECT state FROM zk_locks WHERE key = 'long'"), 'lost',
	'zk_locks shows the holder\'s lock as lost');
$hb->query_safe('\set VERBOSITY verbose');
$hb->query('COMMIT');
like($hb->{stderr}, qr/ERROR:  40001: zk_lock lock on key "long" was lost/, 'the holder cannot commit');
# A's last ping may have come later than B's: thawing before A's own deadline
# would let A keep its session, and this part is about a new one
ok(wait_for(sub { log_count($a, qr/treating session 0x[0-9a-f]+ as expired/) > $a_expired_before }, 20),
	'A treats its session as lost too');
thaw();
like($wa->query_until(qr/wa granted/, ''), qr/wa granted/, 'the waiter in A ends up holding the key');
my @sessions = slurp_file($a->logfile) =~ /connected to ZooKeeper, session (0x[0-9a-f]+)/g;
isnt($sessions[-1], $sessions[0], 'in a new session of A');
$wa->query_safe('COMMIT');
cmp_ok($b->safe_psql('postgres', 'SELECT lost FROM zk_lock_status()'), '>=', 1, 'B counted the lost lock');

$_->quit for ($ha, $hb, $wa);
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left');
$a->stop;
$b->stop;
done_testing();
