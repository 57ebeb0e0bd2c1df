# zk_lock against core advisory locks: the same random sequences of the
# operations both offer (tries at both levels and in both modes, session
# unlocks, unlock all, savepoints, commit, rollback) run on two sessions of
# one cluster with pg_advisory_*, and on a session in each of two clusters
# with zk_*.  Results, SQLSTATEs of errors and warnings must agree.
#
# Releases reach ZooKeeper after the command that made them returns, so
# each step waits until neither cluster has a node still going before the
# next one; what is compared is what is decided, not how soon.
#
# The differences allowed are the two README lists:
# * zk_try_lock and zk_try_lock_shared outside a transaction block warn
#   (25P01) that the lock lasts only until the statement ends; core's
#   pg_try_advisory_xact_lock says nothing.  Removed before comparing.
# * A key whose exclusive node is older than a shared lock its session holds
#   keeps that node when the exclusive lock is released (another cluster's
#   writer may be queued between the two), so other readers are refused
#   until the shared lock goes.  A sequence that meets it ends there, once
#   the zk_locks view shows that kept node.
# Any other difference fails.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $sequences = $ENV{ZKL_DIFF_SEQUENCES} // 80;
my $steps = $ENV{ZKL_DIFF_STEPS} // 30;

my $zk = start_zookeeper('differential');
my $a = new_zk_cluster('dfa', $zk);
my $b = new_zk_cluster('dfb', $zk);

sub session
{
	my ($node) = @_;
	my $h = $node->background_psql('postgres', on_error_stop => 0);
	$h->query("\\set VERBOSITY verbose");
	$h->{stderr} = '';
	return $h;
}

# core: two sessions of cluster A; zk_lock: one session in A, one in B
my @core = (session($a), session($a));
my @zk = (session($a), session($b));
my @watch = (session($a), session($b));

# op => [core SQL, zk_lock SQL]; K is the key
my %ops = (
	try_x => ['pg_try_advisory_xact_lock(K)', 'zk_try_lock(K::bigint)'],
	try_s => ['pg_try_advisory_xact_lock_shared(K)', 'zk_try_lock_shared(K::bigint)'],
	stry_x => ['pg_try_advisory_lock(K)', 'zk_session_try_lock(K::bigint)'],
	stry_s => ['pg_try_advisory_lock_shared(K)', 'zk_session_try_lock_shared(K::bigint)'],
	unlock_x => ['pg_advisory_unlock(K)', 'zk_session_unlock(K::bigint)'],
	unlock_s => ['pg_advisory_unlock_shared(K)', 'zk_session_unlock_shared(K::bigint)'],
	unlock_all => ['pg_advisory_unlock_all()', 'zk_session_unlock_all()'],);
my @plain = ('BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT p', 'ROLLBACK TO SAVEPOINT p',
	'RELEASE SAVEPOINT p');
# weights: tries most, then transaction control, then unlocks
my @menu = ((map { ($_) x 4 } qw(try_x try_s stry_x stry_s)),
	(map { ($_) x 2 } qw(unlock_x unlock_s)), 'unlock_all',
	(map { ("plain$_") x 2 } 0 .. $#plain));

# Run one statement; returns "result | error and warning SQLSTATEs".
sub run
{
	my ($h, $sql) = @_;
	$h->{stderr} = '';
	my $out = $h->query($sql);
	my @codes = $h->{stderr} =~ /\b(ERROR|WARNING):\s+([0-9A-Z]{5}):/g;
	my @pairs;
	push @pairs, shift(@codes) . ' ' . shift(@codes) while @codes;
	$out =~ s/\s+$//;
	return "$out | " . join(', ', @pairs);
}

# No node of either cluster still going (or a try still deciding).
sub settled
{
	return wait_for(
		sub {
			my $n = 0;
			$n += run($_, "SELECT count(*) FROM zk_locks WHERE state IN ('releasing', 'waiting')") =~ /^0 /
			  ? 0 : 1
			  for @watch;
			return $n == 0;
		},
		20);
}

# The listed difference: the other zk session keeps an exclusive node of key
# $k that is older than the node of its shared lock on the key.
sub kept_exclusive
{
	my ($other, $k) = @_;
	my $pid = run($zk[$other], 'SELECT pg_backend_pid()') =~ s/ \|.*//r;
	my $rows = run($watch[$other],
		"SELECT string_agg(mode || ':' || scope || ':' || right(node, 10), ' ') FROM zk_locks "
		  . "WHERE pid = $pid AND key = '$k' AND state = 'granted'");
	my ($x) = $rows =~ /exclusive:kept:(\d+)/;
	my ($sh) = $rows =~ /shared:(?:session|transaction)[a-z ]*:(\d+)/;
	return defined $x && defined $sh && $x < $sh;
}

# Back to nothing held; returns whether no node of either cluster is left.
sub reset_all
{
	for my $h (@core, @zk)
	{
		run($h, 'ROLLBACK');
		run($h, 'SELECT pg_advisory_unlock_all()');
		run($h, 'SELECT zk_session_unlock_all()');
	}
	settled();
	return wait_for(sub { (grep { run($_, 'SELECT count(*) FROM zk_locks') =~ /^0 / } @watch) == 2 }, 10);
}

my ($compared, $differed, $listed) = (0, 0, 0);
my %seen;		# what core answered: granted, refused, an error, a warning
my @unexplained;
for my $seq (1 .. $sequences)
{
	srand($seq);
	reset_all() or push @unexplained, "before sequence $seq: a node was left behind";
	my @log;
	my @inblock = (0, 0);
	for my $step (1 .. $steps)
	{
		my $s = int(rand(2));
		my $k = 1 + int(rand(2));
		my $op = $menu[ int(rand(@menu)) ];
		my ($csql, $zsql);
		if ($op =~ /^plain(\d+)/)
		{
			$csql = $zsql = $plain[$1];
		}
		else
		{
			($csql, $zsql) = map { 'SELECT ' . s/K/$k/r } @{ $ops{$op} };
		}
		my $cr = run($core[$s], $csql);
		my $zr = run($zk[$s], $zsql);
		$zr =~ s/ \| WARNING 25P01$/ | / if $op =~ /^try_/ && !$inblock[$s] && $cr !~ /WARNING/;
		$inblock[$s] = 1 if $csql eq 'BEGIN';
		$inblock[$s] = 0 if $csql eq 'COMMIT' || $csql eq 'ROLLBACK';
		settled() or push @unexplained, "sequence $seq step $step: a node never settled";
		push @log, "s$s $zsql: core [$cr] zk [$zr]";
		$compared++;
		$seen{granted}++ if $cr =~ /^t /;
		$seen{refused}++ if $cr =~ /^f /;
		$seen{error}++ if $cr =~ /ERROR/;
		$seen{warning}++ if $cr =~ /WARNING/;
		next if $cr eq $zr;
		$differed++;
		if ($op =~ /^(try|stry)_s$/ && $cr =~ /^t / && $zr =~ /^f / && kept_exclusive(1 - $s, $k))
		{
			$listed++;
			last;
		}
		push @unexplained, "sequence $seq differs at step $step:\n  " . join("\n  ", @log);
		last;
	}
}
reset_all() or push @unexplained, "after the last sequence: a node was left behind";

# The downgrade both orders of which core allows: a shared lock taken first
# lets the exclusive node go at once; one taken after it keeps it (listed).
run($zk[0], 'SELECT zk_session_try_lock_shared(7::bigint)');
run($zk[0], 'BEGIN');
like(run($zk[0], 'SELECT zk_try_lock(7::bigint)'), qr/^t /, 'A takes exclusive the key it holds shared');
like(run($zk[1], 'SELECT zk_try_lock_shared(7::bigint)'), qr/^f /, 'B, a reader, is refused meanwhile');
run($zk[0], 'COMMIT');
settled();
like(run($zk[1], 'SELECT zk_try_lock_shared(7::bigint)'), qr/^t /,
	'once A releases the exclusive lock, B reads at once');
like(run($zk[1], 'SELECT zk_try_lock(7::bigint)'), qr/^f /, 'while a writer of B is still refused');
is(run($watch[0], "SELECT count(*) FROM zk_locks WHERE scope = 'kept'"), '0 | ', 'A keeps no node');
ok(reset_all(), 'no node left');

# An upgrade past a queued writer, then the downgrade: the writer keeps
# waiting while the shared lock lives, and a reader of B behind it waits too
# (FIFO); both go once A lets the key go.
run($zk[0], 'SELECT zk_session_lock_shared(8::bigint)');
my $w = $b->background_psql('postgres', on_error_stop => 0);
$w->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock(8::bigint);\n\\echo writer granted\n");
ok(wait_for(sub { run($watch[1], "SELECT count(*) FROM zk_locks WHERE state = 'waiting'") =~ /^1 / }, 10),
	'a writer of B queues behind A\'s read');
run($zk[0], 'BEGIN');
like(run($zk[0], 'SELECT zk_try_lock(8::bigint)'), qr/^f /,
	'A\'s try to upgrade is refused while the writer waits, as core\'s try is');
like(run($zk[0], 'SELECT 1 FROM (SELECT zk_lock(8::bigint)) g'), qr/^1 /, 'A upgrades past it, as core does');
run($zk[0], 'COMMIT');
wait_for(sub { run($watch[0], "SELECT count(*) FROM zk_locks WHERE state = 'releasing'") =~ /^0 / }, 10);
ok(!wait_for(sub { $w->{run}->pump_nb; $w->{stdout} =~ /writer granted/ }, 1),
	'after the downgrade the writer still waits for A\'s read');
like(run($zk[1], 'SELECT zk_try_lock_shared(8::bigint)'), qr/^f /, 'and a reader of B behind it is refused');
run($zk[0], 'SELECT zk_session_unlock_shared(8::bigint)');
ok(wait_for(sub { $w->{run}->pump_nb; $w->{stdout} =~ /writer granted/ }, 10),
	'once A lets the key go, the writer is granted');
$w->query('COMMIT');
$w->quit;
ok(reset_all(), 'no node left');

diag("differential: $compared operations in $sequences sequences ("
	  . join(', ', map { "$seen{$_} $_" } sort keys %seen)
	  . "), $differed differed, $listed of them the listed one");
is(join("\n", @unexplained), '', 'no unexplained difference from core advisory locks');
cmp_ok($seen{$_} // 0, '>', 0, "core answered with a $_ at some step") for qw(granted refused error warning);

$_->quit for @core, @zk, @watch;
done_testing();
