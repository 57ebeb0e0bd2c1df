# Upgrades as core grants them: a backend that holds a key shared and asks
# it exclusive goes ahead of the waiters it holds up (a writer behind it, a
# reader behind that writer), as pg_advisory_xact_lock does, whether they
# wait in its own cluster, in a second one, or in two others; they follow
# in their order after its commit.  A waiter the upgrade went past is never
# granted beside it, also when the node it waited behind goes.  The shared
# lock given up inside the upgrading transaction keeps its node while the
# exclusive one lives.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('upgrade');
my $conf = "deadlock_timeout = '5s'\n";
my ($ca, $cb, $cc) = map { new_zk_cluster($_, $zk, conf => $conf) } qw(upa upb upc);
for my $n ($ca, $cb, $cc)
{
	ok(wait_for(sub { $n->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' }, 30),
		$n->name . ' grants');
}

sub session
{
	my ($node) = @_;
	my $h = $node->background_psql('postgres', on_error_stop => 0);
	$h->query_safe("\\set VERBOSITY verbose\nSET lock_timeout = '60s'");
	return $h;
}

# Ask in the background; the marker shows when the call returned.
sub ask
{
	my ($h, $sql, $mark) = @_;
	$h->{stderr} = '';
	$h->query_until(qr/asked $mark/, "\\echo asked $mark\n$sql;\n\\echo done $mark\n");
}

sub done
{
	my ($h, $mark) = @_;
	$h->{run}->pump_nb;
	return $h->{stdout} =~ /done $mark/;
}

sub waiting
{
	my ($node, $key, $n) = @_;
	return wait_for(sub {
		$node->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE key = '$key' AND state = 'waiting'") eq $n
	}, 10);
}

# --- the three-way upgrade: U reads, W writes behind it, R reads behind W, U asks exclusive ---
sub three_way
{
	my ($what, $key, $un, $wn, $rn) = @_;
	my ($u, $w, $r) = (session($un), session($wn), session($rn));
	$u->query_safe("BEGIN; SELECT zk_lock_shared('$key')");
	ask($w, "BEGIN; SELECT zk_lock('$key')", 'w');
	ok(waiting($wn, $key, 1), "$what: the writer waits behind the reader");
	ask($r, "BEGIN; SELECT zk_lock_shared('$key')", 'r');
	ok(waiting($rn, $key, $rn == $wn ? 2 : 1), "$what: a reader waits behind the writer");
	my $t0 = time();
	ask($u, "SELECT zk_lock('$key')", 'u');
	ok(wait_for(sub { done($u, 'u') }, 20), "$what: the upgrade is granted");
	my $took = time() - $t0;
	# deadlock_timeout is 5 s: a broken circle would take it at least
	cmp_ok($took, '<', 4, sprintf('%s: at once, not by a deadlock search (%.2f s)', $what, $took));
	unlike($u->{stderr} . $w->{stderr} . $r->{stderr}, qr/40P01|deadlock/, "$what: nobody is a deadlock victim");
	sleep 2;
	ok(!done($w, 'w') && !done($r, 'r'), "$what: the writer and the reader still wait while it holds");
	$u->query_safe('COMMIT');
	ok(wait_for(sub { done($w, 'w') }, 10), "$what: after its commit the writer is granted");
	ok(!done($r, 'r'), "$what: the reader still waits for the writer");
	$w->query_safe('COMMIT');
	ok(wait_for(sub { done($r, 'r') }, 10), "$what: then the reader");
	$r->query_safe('COMMIT');
	$_->quit for $u, $w, $r;
	ok(wait_for(sub { key_queue_len($zk, $key) == 0 }, 10), "$what: no node left");
}

three_way('one cluster', 'k3', $ca, $ca, $ca);
three_way('waiters in a second cluster', 'k3b', $ca, $cb, $cb);
three_way('waiters in two other clusters', 'k3c', $ca, $cb, $cc);

# --- a waiter the upgrade went past, whose predecessor goes ---
{
	my ($u, $w, $r) = map { session($ca) } 1 .. 3;
	$u->query_safe("BEGIN; SELECT zk_lock_shared('kg')");
	ask($w, "BEGIN; SET statement_timeout = '3s'; SELECT zk_lock('kg')", 'w');
	ok(waiting($ca, 'kg', 1), 'the writer waits behind the reader');
	ask($r, "BEGIN; SELECT zk_lock_shared('kg')", 'r');
	ok(waiting($ca, 'kg', 2), 'a reader waits behind the writer');
	ask($u, "SELECT zk_lock('kg')", 'u');
	ok(wait_for(sub { done($u, 'u') }, 20), 'the upgrade is granted');
	ok(wait_for(sub { $w->{run}->pump_nb; $w->{stderr} =~ /statement timeout/ }, 10),
		'the writer gives up (its statement_timeout)');
	sleep 2;
	ok(!done($r, 'r'), 'the reader behind it is not granted beside the exclusive holder');
	is($cb->safe_psql('postgres', "BEGIN; SELECT zk_try_lock_shared('kg'); COMMIT"), 'f',
		'nor is another cluster\'s reader');
	my $t0 = time();
	$u->query_safe('COMMIT');
	ok(wait_for(sub { done($r, 'r') }, 10), 'the reader is granted after the commit');
	cmp_ok(time() - $t0, '<', 3, 'promptly');
	$r->query_safe('COMMIT');
	$w->query('ROLLBACK');
	$_->quit for $u, $w, $r;
}

# --- the shared lock given up inside the upgrading transaction ---
{
	my $u = session($ca);
	$u->query_safe("BEGIN; SELECT zk_lock_shared('kd'); SELECT zk_lock('kd')");
	is($u->query_safe("SELECT zk_unlock_shared('kd')"), 't', 'the shared lock is given up');
	is(key_queue_len($zk, 'kd'), 2, 'its node stays while the exclusive one lives');
	is($cb->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('kd'); COMMIT"), 'f',
		'another cluster is refused the key');
	is($cb->safe_psql('postgres', "BEGIN; SELECT zk_try_lock_shared('kd'); COMMIT"), 'f',
		'also shared');
	$u->query_safe('COMMIT');
	ok(wait_for(sub { $cb->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('kd'); COMMIT") eq 't' }, 10),
		'after the commit it is free');
	$u->quit;
}

ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));
$_->stop for $ca, $cb, $cc;
done_testing();
