# Shared (read) locks: readers share, across clusters too; a writer waits for
# every reader; readers arriving behind a waiting writer wait (FIFO, so the
# writer is not starved); a lone reader may upgrade; two local upgraders
# deadlock and one gets 40P01; mixed queues stay herd-free.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZkLockTest;

my $zk = start_zookeeper('shared');
# The per-request queue in ZooKeeper (one node per waiter) is what this file
# checks: local hand-over (on by default; t/026) would keep local waiters
# out of ZooKeeper, so it is off here.
my $a = new_zk_cluster('ra', $zk, conf => "zk_lock.local_handover = off\n");
my $b = new_zk_cluster('rb', $zk, conf => "zk_lock.local_handover = off\n");

# A session that asks for a lock in the background; ->granted waits for it.
sub ask
{
	my ($node, $sql, $tag) = @_;
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	$s->set_query_timer_restart();
	$s->query_until(qr/asked/, "\\echo asked\nBEGIN;\n$sql;\nSELECT '$tag granted';\n");
	return $s;
}

sub state_of
{
	my ($node, $key) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(mode || ':' || state, ',' ORDER BY wait_start) FROM zk_locks WHERE key = '$key' AND state <> 'releasing'");
}

# --- readers share, in both clusters; a writer waits for all of them ---
my $r1 = ask($a, "SELECT zk_lock_shared('doc')", 'r1');
like($r1->query_until(qr/r1 granted/, ''), qr/r1 granted/, 'reader in A granted');
my $r2 = ask($b, "SELECT zk_lock_shared('doc')", 'r2');
like($r2->query_until(qr/r2 granted/, ''), qr/r2 granted/, 'reader in B granted at the same time');
is($a->safe_psql('postgres', "SELECT zk_try_lock('doc')"), 'f', 'a writer cannot get in');

my $w = ask($a, "SELECT zk_lock('doc')", 'w');
ok(wait_for(sub { key_queue_len($zk, 'doc') == 3 }, 10), 'writer queued behind the two readers');
is(state_of($a, 'doc'), 'shared:granted,exclusive:waiting', 'zk_locks in A: reader granted, writer waiting');
my $queue_sql = "SELECT string_agg(position || ':' || mode || ':' || granted || ':' || cluster, ' ' ORDER BY position) FROM zk_lock_queue('doc')";
is($a->safe_psql('postgres', $queue_sql), '1:shared:true:ra 2:shared:true:rb 3:exclusive:false:ra',
	'zk_lock_queue in A lists both clusters\' contenders in order');
is($b->safe_psql('postgres', $queue_sql), $a->safe_psql('postgres', $queue_sql),
	'and B sees the same queue');

# FIFO: a reader arriving after the waiting writer does not overtake it
is($b->safe_psql('postgres', "SELECT zk_try_lock_shared('doc')"), 'f',
	'a new reader cannot jump ahead of the waiting writer');
my $r3 = ask($b, "SELECT zk_lock_shared('doc')", 'r3');
ok(wait_for(sub { key_queue_len($zk, 'doc') == 4 }, 10), 'late reader queued behind the writer');

$r1->query_safe('COMMIT');
ok(wait_for(sub { key_queue_len($zk, 'doc') == 3 }, 10), 'first reader gone');
is(state_of($a, 'doc'), 'exclusive:waiting', 'the writer still waits for the reader in B');
$r2->query_safe('COMMIT');
like($w->query_until(qr/w granted/, ''), qr/w granted/, 'writer granted once every reader is gone');
is(state_of($b, 'doc'), 'shared:waiting', 'the late reader waits for the writer');
$w->query_safe('COMMIT');
like($r3->query_until(qr/r3 granted/, ''), qr/r3 granted/, 'then the late reader is granted');
$r3->query_safe('COMMIT');
$_->quit for ($r1, $r2, $w, $r3);

# --- a lone reader may upgrade (its own node does not block it) ---
is($a->safe_psql('postgres',
		"BEGIN; SELECT zk_lock_shared('up'); SELECT zk_try_lock('up'); COMMIT;"),
	"\nt", 'a backend holding the key shared gets it exclusive when alone');

# --- but a reader in the other cluster still blocks the upgrade ---
my $other = ask($b, "SELECT zk_lock_shared('up2')", 'other');
$other->query_until(qr/other granted/, '');
is($a->safe_psql('postgres',
		"BEGIN; SELECT zk_lock_shared('up2'); SELECT zk_try_lock('up2', 200); COMMIT;"),
	"\nf", 'upgrade waits for readers of other backends');
$other->query_safe('COMMIT');
$other->quit;

# --- two local upgraders deadlock: one gets 40P01, the other proceeds ---
# (the one whose request the worker decides second: usually the second to
# ask, but the first one's own read of the queue may come back after it)
my $u1 = ask($a, "SELECT zk_lock_shared('dl')", 'u1');
$u1->query_until(qr/u1 granted/, '');
my $u2 = ask($a, "SELECT zk_lock_shared('dl')", 'u2');
$u2->query_until(qr/u2 granted/, '');
$_->query_safe('\set VERBOSITY verbose') for ($u1, $u2);
$u1->query_until(qr/asked again/, "\\echo asked again\nSELECT zk_lock('dl');\nSELECT 'u1 upgraded';\n");
ok(wait_for(sub { key_queue_len($zk, 'dl') == 3 }, 10), 'first upgrader waits for the other reader');
$u2->query_until(qr/asked too/, "\\echo asked too\nSELECT zk_lock('dl');\nSELECT 'u2 upgraded';\n");
ok( wait_for(
		sub {
			$_->{run}->pump_nb for ($u1, $u2);
			return ($u1->{stderr} . $u2->{stderr}) =~ /ERROR:  40P01: deadlock detected/;
		},
		10),
	'one upgrader gets 40P01');
my ($victim, $winner) = $u2->{stderr} =~ /40P01/ ? ($u2, $u1) : ($u1, $u2);
unlike($winner->{stderr}, qr/40P01/, 'only one of them');
like($victim->{stderr},
	qr/DETAIL:  Process \d+ waits for an exclusive zk_lock on key "dl", blocked by process \d+\.\nProcess \d+ waits for an exclusive zk_lock on key "dl", blocked by process \d+\./,
	'its DETAIL names both steps, as core\'s');
$victim->{stderr} = '';
$victim->query('ROLLBACK');
ok(wait_for(sub { $winner->{run}->pump_nb; $winner->{stdout} =~ /u\d upgraded/ }, 10),
	'the other upgrader proceeds');
$winner->query('COMMIT');
$_->quit for ($u1, $u2);

# --- herd-free with readers and writers mixed over two clusters ---
# queue: X0(A) holds; R1(A) R2(B) watch X0; W3(A) watches R2; R4(B) watches W3;
# W5(B) watches R4.  One watch per waiter, each on one node.
my $h = $a->background_psql('postgres');
$h->query_safe("BEGIN; SELECT zk_lock('mix')");
my @q;
my $i = 0;
for my $step ([ $a, 'zk_lock_shared' ], [ $b, 'zk_lock_shared' ], [ $a, 'zk_lock' ],
	[ $b, 'zk_lock_shared' ], [ $b, 'zk_lock' ])
{
	$i++;
	my ($node, $fn) = @$step;
	my $s = $node->background_psql('postgres');
	$s->set_query_timer_restart();
	$s->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT $fn('mix');\nSELECT 'q$i granted';\n");
	push @q, $s;
	ok(wait_for(sub { key_queue_len($zk, 'mix') == $i + 1 }, 10), "waiter $i queued");
}
# besides, each of the two clusters' workers watches the sessions' presence nodes (lock-delay)
ok(wait_for(sub { zk_mntr($zk)->{zk_watch_count} >= 5 + 2 }, 10), 'watches set');
is(zk_mntr($zk)->{zk_watch_count}, 5 + 2,
	'zk_watch_count = 5 for 5 mixed waiters, + 1 per cluster: no child watch, no extra watch');
my $before = zk_mntr($zk)->{zk_packets_received};
$h->query_safe('COMMIT');
for my $k (0 .. $#q)
{
	like($q[$k]->query_until(qr/q@{[$k+1]} granted/, ''), qr/granted/, "waiter @{[$k+1]} granted");
	$q[$k]->query_safe('COMMIT');
}
ok(wait_for(sub { key_queue_len($zk, 'mix') == 0 }, 10), 'queue drained');
my $per = (zk_mntr($zk)->{zk_packets_received} - $before) / 5;
cmp_ok($per, '<=', 5, sprintf('%.2f ZooKeeper requests per waiter', $per));
$_->quit for (@q, $h);

# --- same key, same backend, as core: a holder's further requests on its key
#     never wait for waiters queued behind it, and no waiter of another
#     cluster is granted while the backend holds any mode of the key ---
{
	my $x = $a->background_psql('postgres', on_error_stop => 0);
	$x->query_safe("BEGIN; SELECT zk_lock('own')");
	my $w = $b->background_psql('postgres', on_error_stop => 0);
	$w->set_query_timer_restart();
	$w->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock('own');\n\\echo w granted\n");
	ok(wait_for(sub { key_queue_len($zk, 'own') == 2 }, 10), 'A holds own exclusively, B queues behind');
	$x->query_safe("SET lock_timeout = '5s'");
	my $t = time();
	$x->query_safe("SELECT zk_lock_shared('own')");
	cmp_ok(time() - $t, '<', 2, 'the holder asks for it shared too: granted at once, past B\'s waiter');
	$x->query_safe("SELECT zk_unlock('own')");
	is($x->query_safe("SELECT mode FROM zk_locks WHERE pid = pg_backend_pid() AND state = 'granted' AND key = 'own' ORDER BY mode"),
		"exclusive\nshared", 'unlocking the exclusive hold keeps the node: a downgrade');
	usleep(500_000);
	$w->{run}->pump_nb;
	unlike($w->{stdout}, qr/w granted/, 'B is not granted while A still holds the key shared');
	$t = time();
	$x->query_safe("SELECT zk_lock('own')");
	cmp_ok(time() - $t, '<', 2, 'asking for it exclusive again: granted at once (nobody else reads)');
	$x->query_safe('COMMIT');
	like($w->query_until(qr/w granted/, ''), qr/w granted/, 'B is granted once A\'s transaction ends');
	$w->query_safe('COMMIT');
	$_->quit for ($x, $w);
}

ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');
$a->stop;
$b->stop;
done_testing();
