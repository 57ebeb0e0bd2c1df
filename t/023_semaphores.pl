# Counting semaphores across clusters: at most `holders` transactions of all
# clusters hold a key; a third waits and gets in when one commits; mismatched
# holders fail with 22023; a try that fails leaves nothing; a release costs a
# bounded number of ZooKeeper requests however many wait (one child watch per
# cluster and key, not one per waiter).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('sem');
my @c = (new_zk_cluster('sa', $zk), new_zk_cluster('sb', $zk), new_zk_cluster('sc', $zk));
my ($ca, $cb, $cc) = @c;

# semaphore nodes of a text key under the default root
sub sem_nodes
{
	my ($key) = @_;
	return scalar grep { m{^/zk_lock/mt\Q$key\E/} } zk_lock_nodes($zk);
}

# --- a semaphore of 2: A and B get in, C waits, and gets in when A commits ---
my $ha = $ca->background_psql('postgres');
my $hb = $cb->background_psql('postgres');
$ha->query_safe("BEGIN; SELECT zk_semaphore('pool', 2)");
$hb->query_safe("BEGIN; SELECT zk_semaphore('pool', 2)");
is($ca->safe_psql('postgres', "SELECT kind || ' ' || mode || ' ' || holders || ' ' || state FROM zk_locks WHERE key = 'pool'"),
	'semaphore counting 2 granted', 'zk_locks shows the kind, mode and holders');
my $hc = $cc->background_psql('postgres');
$hc->query_until(qr/go/,
	"\\echo go\nBEGIN; SELECT zk_semaphore('pool', 2);\n");
ok(wait_for(sub { waiting_count($cc) == 1 }, 10), 'a third holder, in C, waits');
is($cc->safe_psql('postgres',
	"SELECT string_agg(cluster || ':' || granted || ':' || holders, ' ' ORDER BY position) FROM zk_lock_queue('pool') WHERE kind = 'semaphore'"),
	'sa:true:2 sb:true:2 sc:false:2', 'zk_lock_queue shows every cluster\'s holders and the waiter, with holders');
is($cc->safe_psql('postgres', "SELECT zk_try_semaphore('pool', 2)"), 'f',
	'a try in C while two hold and one waits: false');
is(sem_nodes('pool'), 3, 'and leaves no node behind (two holders, one waiter)');
is($ca->safe_psql('postgres', "SELECT 'lock-free' FROM (SELECT zk_lock('pool')) l"), 'lock-free',
	'the lock key space is another: zk_lock(\'pool\') does not wait');

# mismatched holders, from a fourth session: 22023 naming both numbers
my ($ret, $out, $err) = $cb->psql('postgres', "BEGIN; SELECT zk_semaphore('pool', 3)");
like($err, qr/holders 3 differ from 2 of a live request/, 'holders 3 against a live 2: error names both');
($ret, $out, $err) = $cb->psql('postgres',
	"\\set VERBOSITY verbose\nBEGIN; SELECT zk_try_semaphore('pool', 5, 2000)");
like($err, qr/22023/, 'SQLSTATE 22023, for a try too');
ok(wait_for(sub { sem_nodes('pool') == 3 }, 10), 'the refused requests leave no node');

my $tok_a = $ha->query_safe("SELECT zk_lock_token('pool')");
like($tok_a, qr/^\d+$/, "a semaphore holder has a fencing token ($tok_a)");
$ha->query_safe('COMMIT');
ok(wait_for(sub { waiting_count($cc) == 0 }, 10), 'C gets in when A commits');
$hc->query_safe('SELECT 1');	# what the waiting statement printed
my $tok_c = $hc->query_safe("SELECT zk_lock_token('pool')");
cmp_ok($tok_c, '>', $tok_a, "C's token is greater ($tok_c)");
is($hb->query_safe("SELECT zk_unlock_semaphore('pool')"), 't', 'zk_unlock_semaphore releases early');
($ret, $out, $err) = $cb->psql('postgres', "BEGIN; SELECT zk_unlock_semaphore('pool'); COMMIT");
like($err, qr/you don't hold zk_lock semaphore "pool"/, 'unlocking one not held warns');
is($out, 'f', '... and returns false');
$hb->query_safe('COMMIT');
$hc->query_safe('ROLLBACK');
ok(wait_for(sub { sem_nodes('pool') == 0 }, 10), 'commit and rollback release: no node left');

# a new holders value is fine once no request is live
is($ca->safe_psql('postgres', "BEGIN; SELECT zk_try_semaphore('pool', 5); COMMIT"), 't',
	'with no live request, another holders value is accepted');

# --- the herd bound: a release costs requests per cluster, not per waiter ---
# Two holders in A; waiters spread over B and C, each committing once in.
my $bound = 6;
sub drain
{
	my ($key, $waiters) = @_;
	my @h = map { $ca->background_psql('postgres') } 1 .. 2;
	$_->query_safe("BEGIN; SELECT zk_semaphore('$key', 2)") for @h;
	my @runs;
	for my $i (1 .. $waiters)
	{
		my $node = $c[ 1 + $i % 2 ];
		my ($o, $e) = ('', '');
		push @runs, IPC::Run::start(
			[ 'psql', '-X', '-q', '-h', $node->host, '-p', $node->port, '-d', 'postgres',
			  '-c', "BEGIN; SELECT zk_semaphore('$key', 2); COMMIT;" ],
			'>', \$o, '2>', \$e, IPC::Run::timeout(120));
	}
	ok(wait_for(sub { sem_nodes($key) == $waiters + 2 }, 30), "$waiters waiters queued in ZooKeeper");
	# one child watch on the key per cluster with waiters, and each cluster's presence watch
	my $expected = 2 + scalar(@c);
	ok(wait_for(sub { zk_mntr($zk)->{zk_watch_count} >= $expected }, 10), 'their watches are set');
	is(zk_mntr($zk)->{zk_watch_count}, $expected,
		"zk_watch_count = one child watch per cluster with waiters + one presence watch per cluster");

	my $before = zk_mntr($zk)->{zk_packets_received};
	$_->query_safe('COMMIT') for @h;
	$_->finish for @runs;
	is(scalar(grep { $_->result(0) != 0 } @runs), 0, 'every waiter got in and committed');
	ok(wait_for(sub { sem_nodes($key) == 0 }, 10), 'queue drained, no node left');
	my $per = (zk_mntr($zk)->{zk_packets_received} - $before) / ($waiters + 2);
	cmp_ok($per, '<=', $bound, sprintf('%.2f ZooKeeper requests per release with %d waiters', $per, $waiters));
	$_->quit for @h;
	return $per;
}
my $per6 = drain('herd6', 6);
my $per20 = drain('herd20', 20);
# A herd costs about one request per waiter and release: some 14 more at 20
# than at 6.  The margin of 3 leaves room for the pings of a slower drain
# (they count as packets too) on a loaded machine.
cmp_ok($per20, '<=', $per6 + 3,
	sprintf('cost per release does not grow with the queue (%.2f at 6, %.2f at 20)', $per6, $per20));

# --- never more than `holders` inside at once, under load from three clusters ---
# Each transaction logs when it got in and when it was about to commit (one
# machine, one clock); the most intervals that overlap must be 2, and is.
$_->safe_psql('postgres', 'CREATE TABLE inside(t_in timestamptz, t_out timestamptz)') for @c;
my @res = run_counter_load(\@c, 3, 25,
	"BEGIN;\nSELECT zk_semaphore('load', 2);\nSELECT extract(epoch from clock_timestamp()) AS t_in \\gset\n" .
	"SELECT pg_sleep(0.005);\nINSERT INTO inside VALUES (to_timestamp(:t_in), clock_timestamp());\nCOMMIT;\n",
	timeout => 180);
is(scalar(grep { $_->[0] != 0 } @res), 0, 'every client of every cluster finished')
  or diag(join("\n", map { $_->[2] } @res));
my @ev;
for my $node (@c)
{
	for (split /\n/, $node->safe_psql('postgres',
		"SELECT extract(epoch from t_in), extract(epoch from t_out) FROM inside"))
	{
		my ($in, $out) = split /\|/;
		push @ev, [ $in, 1 ], [ $out, -1 ];
	}
}
is(scalar(@ev), 2 * 3 * 3 * 25, 'every transaction logged its stay');
# at equal times count the leave first: a stay is half-open
my ($inside, $most) = (0, 0);
for (sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } @ev)
{
	$inside += $_->[1];
	$most = $inside if $inside > $most;
}
is($most, 2, 'at most two transactions of all clusters were inside at once, and two were');

$ha->quit;
$hb->quit;
eval { $hc->quit };
$_->stop for @c;
done_testing();
