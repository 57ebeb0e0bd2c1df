# Deadlocks across clusters: two clusters that take two keys in opposite
# orders, a ring of three, two and three clusters' readers upgrading one key, a cycle
# through a semaphore, and cycles through a row lock (across clusters, and inside one) each end with
# one 40P01 (whose DETAIL names every step) within a few deadlock_timeouts,
# and the others go on; a long wait with no cycle, and a load taking keys in
# one order, are never called a deadlock; log_lock_waits logs a zk wait as
# long as deadlock_timeout, as core logs its own.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('gdeadlock');
my $conf = "deadlock_timeout = '1s'\nlog_lock_waits = on\n";
my @c = map { new_zk_cluster($_, $zk, conf => $conf) } qw(gda gdb gdc);
for my $n (@c)
{
	ok(wait_for(sub { $n->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' }, 30),
		$n->name . ' grants');
}

sub session
{
	my ($node) = @_;
	my $h = $node->background_psql('postgres', on_error_stop => 0);
	$h->query_safe("\\set VERBOSITY verbose\nSET lock_timeout = '40s'");
	return $h;
}

# Each of @s holds its key, then asks for the next one's: a ring.  Returns
# which sessions failed with 40P01, which were granted, and how long it took.
sub ring
{
	my ($tag, @s) = @_;
	my $n = scalar @s;
	$s[$_]->query_safe("BEGIN; SELECT zk_lock('$tag$_')") for 0 .. $n - 1;
	my $t0 = time();
	for my $i (0 .. $n - 1)
	{
		my $next = ($i + 1) % $n;
		$s[$i]->{stderr} = '';
		$s[$i]->query_until(qr/asked $i/, "\\echo asked $i\nSELECT zk_lock('$tag$next');\n\\echo done $i\n");
	}
	my (@failed, @granted);
	wait_for(
		sub {
			@failed = grep { $s[$_]->{run}->pump_nb; $s[$_]->{stderr} =~ /40P01/ } 0 .. $n - 1;
			return @failed > 0;
		},
		30);
	my $took = time() - $t0;
	my @stderr = map { $_->{stderr} } @s;
	$s[$_]->query('ROLLBACK') for @failed;
	# each one granted commits, which lets the next one in
	my %done;
	wait_for(
		sub {
			for my $i (0 .. $n - 1)
			{
				next if $done{$i} || grep { $_ == $i } @failed;
				$s[$i]->{run}->pump_nb;
				next unless $s[$i]->{stdout} =~ /done $i/;
				$stderr[$i] = $s[$i]->{stderr};
				$done{$i} = 1;
				$s[$i]->query('COMMIT');
			}
			return keys(%done) == $n - @failed;
		},
		30);
	@granted = grep { $stderr[$_] !~ /40P01/ } sort keys %done;
	# (a second victim would have shown by now: the others are all through)
	@failed = grep { $stderr[$_] =~ /40P01/ } 0 .. $n - 1;
	return (\@failed, \@granted, $took, \@stderr);
}

# --- two clusters, opposite orders ---
my @two = (session($c[0]), session($c[1]));
my ($failed, $granted, $took, $stderr) = ring('ab', @two);
is(scalar @$failed, 1, 'two clusters AB/BA: exactly one of them gets 40P01');
is(scalar @$granted, 1, 'and the other is granted');
cmp_ok($took, '<', 10, sprintf('within a few deadlock_timeouts (%.1f s; lock_timeout is 40 s)', $took));
my $err = $stderr->[ $failed->[0] // 0 ];
like($err, qr/ERROR:  40P01: deadlock detected across clusters/, 'the error reads like core\'s');
like($err, qr/DETAIL:  Process \d+ of cluster gd[ab] \(ZooKeeper session 0x[0-9a-f]+\) waits for an exclusive zk_lock on key "ab\d", blocked by process \d+ of cluster gd[ab]/,
	'its DETAIL names each step: process, cluster, session, key, mode');
like($err, qr/gda.*\n.*gdb|gdb.*\n.*gda/, 'both clusters appear in it');
my $victim_node = $c[ $failed->[0] // 0 ];
ok(wait_for(sub { slurp_file($victim_node->logfile) =~ /deadlock across clusters: process \d+ gives way/ }, 5),
	'the victim\'s cluster logs the cycle');
is($victim_node->safe_psql('postgres', "SELECT value FROM zk_lock_counters WHERE counter = 'deadlocks'"), '1',
	'and counts it');
like(slurp_file($c[0]->logfile) . slurp_file($c[1]->logfile),
	qr/process \d+ still waiting for exclusive zk_lock on key "ab\d" after \d+\.\d{3} ms/,
	'log_lock_waits: a zk wait as long as deadlock_timeout is logged');
$_->quit for @two;

# --- a ring of three clusters ---
my @three = map { session($_) } @c;
($failed, $granted, $took, $stderr) = ring('ring', @three);
is(scalar @$failed, 1, 'a ring of three clusters: exactly one 40P01');
is(scalar @$granted, 2, 'and the two others are granted in turn');
cmp_ok($took, '<', 10, sprintf('within a few deadlock_timeouts (%.1f s)', $took));
like($stderr->[ $failed->[0] // 0 ], qr/gda.*\n.*\n|gdb.*\n.*\n/, 'its DETAIL has a line per step');
$_->quit for @three;

# --- readers of two, then of three, clusters that all upgrade one key ---
# (a real circle: core too fails all but one, one at a time)
for my $n (2, 3)
{
	my @up = map { session($c[$_]) } 0 .. $n - 1;
	$_->query_safe("BEGIN; SELECT zk_lock_shared('up$n')") for @up;
	$up[$_]->query_until(qr/asked $_/, "\\echo asked $_\nSELECT zk_lock('up$n');\n\\echo up $_\n") for 0 .. $n - 1;
	my (%failed, @left);
	for my $round (1 .. $n - 1)
	{
		my @new;
		ok(wait_for(sub {
			@new = grep { !$failed{$_} && do { $up[$_]->{run}->pump_nb; $up[$_]->{stderr} =~ /40P01/ } } 0 .. $n - 1;
			@new > 0 }, 15),
			"$n clusters upgrading one key: a 40P01 (round $round)");
		is(scalar @new, 1, "$n clusters upgrading one key: one victim at a time (round $round)");
		for (@new) { $failed{$_} = 1; $up[$_]->query('ROLLBACK') }
	}
	@left = grep { !$failed{$_} } 0 .. $n - 1;
	is(scalar @left, 1, "$n clusters upgrading one key: one is left");
	my $last = $left[0] // 0;
	ok(wait_for(sub { $up[$last]->{run}->pump_nb; $up[$last]->{stdout} =~ /up $last/ }, 10), "$n clusters: the last one upgrades");
	$up[$last]->query_safe('COMMIT');
	$_->quit for @up;
}

# --- a cycle through a semaphore ---
{
	my ($s1, $b1) = (session($c[0]), session($c[1]));
	$s1->query_safe("BEGIN; SELECT zk_semaphore('sem', 1)");
	$b1->query_safe("BEGIN; SELECT zk_lock('semk')");
	$s1->query_until(qr/asked/, "\\echo asked\nSELECT zk_lock('semk');\n\\echo s1 done\n");
	$b1->query_until(qr/asked/, "\\echo asked\nSELECT zk_semaphore('sem', 1);\n\\echo b1 done\n");
	my @failed;
	my $t0 = time();
	ok(wait_for(sub { @failed = grep { $_->{run}->pump_nb; $_->{stderr} =~ /40P01/ } $s1, $b1; @failed > 0 }, 20),
		'a cycle through a semaphore gets 40P01');
	my $took = time() - $t0;
	is(scalar @failed, 1, 'one victim');
	cmp_ok($took, '<', 10, sprintf('within a few deadlock_timeouts (%.1f s)', $took));
	like($failed[0] ? $failed[0]->{stderr} : '', qr/waits for a semaphore zk_lock on key "sem"|waits for an exclusive zk_lock on key "semk"/,
		'its DETAIL names the steps');
	$failed[0]->query('ROLLBACK') if @failed;
	my $other = (@failed && $failed[0] == $s1) ? $b1 : $s1;
	my $tag = $other == $s1 ? 's1' : 'b1';
	ok(wait_for(sub { $other->{run}->pump_nb; $other->{stdout} =~ /$tag done/ }, 10), 'the other goes on');
	$other->query_safe('COMMIT');
	$_->quit for $s1, $b1;
}

# --- cycles through a row lock: across clusters, and inside one ---
$c[0]->safe_psql('postgres', 'CREATE TABLE rl (id int PRIMARY KEY, v int); INSERT INTO rl VALUES (1, 0)');
sub row_cycle
{
	my ($what, $across) = @_;
	my ($a1, $a2) = (session($c[0]), session($c[0]));
	my $b1 = $across ? session($c[1]) : undef;
	my $other = $across ? "${what}y" : "${what}x";
	$a2->query_safe('BEGIN; UPDATE rl SET v = v + 1 WHERE id = 1');
	$a1->query_safe("BEGIN; SELECT zk_lock('${what}x')");
	$b1->query_safe("BEGIN; SELECT zk_lock('${what}y')") if $across;
	$a2->query_until(qr/asked/, "\\echo asked\nSELECT zk_lock('$other');\n\\echo a2 done\n");
	$a1->query_until(qr/asked/, "\\echo asked\nUPDATE rl SET v = v + 1 WHERE id = 1;\n\\echo a1 done\n");
	$b1->query_until(qr/asked/, "\\echo asked\nSELECT zk_lock('${what}x');\n\\echo b1 done\n") if $across;
	my @all = grep { defined } ($a1, $a2, $b1);
	my @failed;
	my $t0 = time();
	ok(wait_for(sub { @failed = grep { $_->{run}->pump_nb; $_->{stderr} =~ /40P01/ } @all; @failed > 0 }, 20),
		"$what: a cycle through a row lock gets 40P01");
	my $took = time() - $t0;
	is(scalar @failed, 1, "$what: one victim");
	ok(@failed && $failed[0] == $a2, "$what: the zk waiter gives way, not the row lock's waiter");
	like($failed[0] ? $failed[0]->{stderr} : '', qr/waits for a row or table lock/, "$what: the DETAIL names the row lock's wait");
	cmp_ok($took, '<', 10, sprintf("$what: within a few deadlock_timeouts (%.1f s)", $took));
	$a2->query('ROLLBACK');
	ok(wait_for(sub { $a1->{run}->pump_nb; $a1->{stdout} =~ /a1 done/ }, 10), "$what: the row lock's waiter goes on");
	$a1->query_safe('COMMIT');
	if ($across)
	{
		ok(wait_for(sub { $b1->{run}->pump_nb; $b1->{stdout} =~ /b1 done/ }, 10), "$what: and so does the other cluster");
		$b1->query_safe('COMMIT');
	}
	$_->quit for @all;
}
row_cycle('rowa', 1);
row_cycle('rowi', 0);

# --- a long wait with no cycle is no deadlock ---
my ($h, $w) = (session($c[0]), session($c[1]));
# the detector's cost, in requests ZooKeeper receives: idle, then while one wait is long
my ($p0, $t0) = (zk_mntr($zk)->{zk_packets_received}, time());
sleep(2);
my ($p1, $t1) = (zk_mntr($zk)->{zk_packets_received}, time());
$h->query_safe("BEGIN; SELECT zk_lock('long')");
$w->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock('long');\n\\echo long done\n");
ok(!wait_for(sub { $w->{run}->pump_nb; $w->{stdout} =~ /long done/ || $w->{stderr} =~ /ERROR/ }, 5),
	'a wait of five deadlock_timeouts behind a holder that is not waiting: no 40P01');
my ($p2, $t2) = (zk_mntr($zk)->{zk_packets_received}, time());
diag(sprintf('ZooKeeper requests per second, three clusters: %.1f idle, %.1f over a wait that is long '
	  . 'for four of its five seconds (deadlock_timeout 1 s; the two lock requests included)',
	($p1 - $p0) / ($t1 - $t0), ($p2 - $p1) / ($t2 - $t1)));
my $wpid = $c[1]->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND backend_type = 'client backend'");
is($c[2]->safe_psql('postgres',
		"SELECT waiting_cluster, waiting_pid, waiting_key, waiting_mode, waiting_since < now(), "
		  . "coalesce(blocking_cluster, '-'), coalesce(blocking_pid, 0), blocking_key, blocking_mode, "
		  . "blocking_node LIKE 'x-%' FROM zk_lock_waits"),
	"gdb|$wpid|long|exclusive|t|-|0|long|exclusive|t",
	'zk_lock_waits, read in a third cluster, shows the wait: who waits, for what, since when, and the node (its holder does not wait)');
$h->query_safe('COMMIT');
ok(wait_for(sub { $w->{run}->pump_nb; $w->{stdout} =~ /long done/ }, 10), 'the waiter is granted once the holder commits');
unlike($w->{stderr}, qr/40P01/, 'and was never called a deadlock');
$w->query_safe('COMMIT');
$_->quit for $h, $w;

# --- load in one key order: long waits, and never a deadlock ---
my $deadlocks = sub {
	my $sum = 0;
	$sum += $_->safe_psql('postgres', "SELECT value FROM zk_lock_counters WHERE counter = 'deadlocks'") for @c;
	return $sum;
};
is($deadlocks->(), 8, 'one 40P01 for each of the eight cycles above (the three upgraders make two)');
for my $n (@c)
{
	$n->safe_psql('postgres', "ALTER SYSTEM SET deadlock_timeout = '100ms'; SELECT pg_reload_conf()");
}
sleep(1);    # the workers' reload
my $waits_before = () = join('', map { slurp_file($_->logfile) } @c) =~ /still waiting for/g;
my @load = run_counter_load(\@c, 4, 25, q{
\set a random(1, 3)
BEGIN;
SELECT zk_lock('ld' || :a);
SELECT zk_lock('ld' || (:a + 1));
SELECT pg_sleep(0.05);
COMMIT;
}, timeout => 180);
my $txns = 0;
$txns += $_->[1] =~ /number of transactions actually processed: (\d+)/ ? $1 : 0 for @load;
is(join(',', map { $_->[0] } @load), '0,0,0', 'a load in one key order: every client ran to the end')
  or diag(join("\n", map { $_->[2] } @load));
is($txns, 300, 'all 300 transactions committed');
my $waits = (() = join('', map { slurp_file($_->logfile) } @c) =~ /still waiting for/g) - $waits_before;
cmp_ok($waits, '>', 10, "with waits longer than deadlock_timeout ($waits logged), so the detectors ran");
is($deadlocks->(), 8, 'and no 40P01 but those of the cycles above');
diag("load: $txns transactions, $waits waits over deadlock_timeout, no deadlock");

ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));
$_->stop for @c;
done_testing();
