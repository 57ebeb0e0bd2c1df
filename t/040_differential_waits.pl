# zk_lock against core advisory locks, with waits: random sequences over
# three sessions of transaction-level locks on one key, blocking and tried,
# in both modes (so upgrades among waiters: a reader asks exclusive while a
# writer waits behind it and a reader behind that writer), with BEGIN,
# COMMIT, ROLLBACK and savepoints.  Core runs them on three sessions of
# cluster A with pg_advisory_xact_lock*; zk_lock on two sessions of A and
# one of B (its waits cross clusters, and two of its sessions share a
# worker).  After every step each session's state must agree: still
# waiting, or what its call returned (result and SQLSTATEs).
#
# A step waits until both sides are settled: every call has returned or is
# seen waiting (core: pg_locks; zk_lock: zk_locks) twice in a row with
# nothing being released.  What is compared is what is decided, not how soon.
# A sequence never asks for a circle (two readers of the key both asking it
# exclusive): core and zk_lock would each break it, but not necessarily with
# the same victim.  The one difference README lists for tries outside a
# transaction block (25P01) is removed before comparing; the corner of an
# upgrade met by a reader whose turn comes at that moment needs two things
# at once, which a settled step never asks.  Any other difference fails.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZkLockTest;

my $sequences = $ENV{ZKL_DIFF3_SEQUENCES} // 20;
my $steps = $ENV{ZKL_DIFF3_STEPS} // 20;

my $zk = start_zookeeper('diffwaits');
# Local hand-over lets a waiter of the releasing cluster go before an older
# one of another cluster (zk_lock.local_handover_limit bounds it; README,
# *Differences*): off here, so that the order is the queue's.
my $conf = "zk_lock.local_handover = off\n";
my $a = new_zk_cluster('dwa', $zk, conf => $conf);
my $b = new_zk_cluster('dwb', $zk, conf => $conf);

sub session
{
	my ($node) = @_;
	my $h = $node->background_psql('postgres', on_error_stop => 0);
	$h->set_query_timer_restart();    # (the sessions outlive the default timeout)
	$h->query("\\set VERBOSITY verbose");
	$h->{stderr} = '';
	return $h;
}

my @core = map { session($a) } 0 .. 2;
my @zk = (session($a), session($b), session($a));
my %watch = (dwa => session($a), dwb => session($b));
my @zk_node = ('dwa', 'dwb', 'dwa');
my @core_pid = map { $_->query('SELECT pg_backend_pid()') =~ s/\s+//gr } @core;
my @zk_pid = map { $_->query('SELECT pg_backend_pid()') =~ s/\s+//gr } @zk;

# op => [core SQL, zk_lock SQL]; every one returns 1 when granted
my %ops = (
	lock_x => ['SELECT 1 FROM (SELECT pg_advisory_xact_lock(7)) g', 'SELECT 1 FROM (SELECT zk_lock(7::bigint)) g'],
	lock_s => ['SELECT 1 FROM (SELECT pg_advisory_xact_lock_shared(7)) g',
		'SELECT 1 FROM (SELECT zk_lock_shared(7::bigint)) g'],
	try_x => ['SELECT pg_try_advisory_xact_lock(7)', 'SELECT zk_try_lock(7::bigint)'],
	try_s => ['SELECT pg_try_advisory_xact_lock_shared(7)', 'SELECT zk_try_lock_shared(7::bigint)'],);
my @menu = ((map { ($_) x 3 } qw(lock_x lock_s)), qw(try_x try_s BEGIN BEGIN COMMIT ROLLBACK),
	'SAVEPOINT p', 'ROLLBACK TO SAVEPOINT p');

# "result | SQLSTATEs" of what a call printed
sub outcome
{
	my ($out, $err) = @_;
	my @codes = $err =~ /\b(ERROR|WARNING):\s+([0-9A-Z]{5}):/g;
	my @pairs;
	push @pairs, shift(@codes) . ' ' . shift(@codes) while @codes;
	$out =~ s/^\s+|\s+$//g;
	return "$out | " . join(', ', @pairs);
}

my $mark = 0;
my @can_wait = (0, 0, 0);    # the session's pending statement is a lock call

# Send a statement; its outcome is read by poll().  Returns the mark.
sub send_sql
{
	my ($h, $sql) = @_;
	my $m = ++$mark;
	$h->{stderr} = '';
	$h->{stdout} = '';
	my $got = $h->query_until(qr/asked $m\n/, "\\echo asked $m\n$sql;\n\\echo done $m\n");
	# (what came after the marker is the statement's: keep it for poll)
	$h->{stdout} = $got =~ /asked $m\n(.*)$/s ? $1 : '';
	return $m;
}

# The outcome of mark m if the statement returned, else undef.
sub poll
{
	my ($h, $m) = @_;
	$h->{run}->pump_nb;
	return undef unless $h->{stdout} =~ /^(.*?)done $m\n/s;
	return outcome($1, $h->{stderr});
}

sub core_waiting
{
	my ($i) = @_;
	return $watch{dwa}->query("SELECT count(*) FROM pg_locks WHERE pid = $core_pid[$i] AND NOT granted")
	  =~ /^\s*1/;
}

sub zk_waiting
{
	my ($i) = @_;
	return $watch{ $zk_node[$i] }
	  ->query("SELECT count(*) FROM zk_locks WHERE pid = $zk_pid[$i] AND state = 'waiting'") =~ /^\s*1/;
}

sub zk_moving
{
	return grep { $_->query("SELECT count(*) FROM zk_locks WHERE state = 'releasing'") !~ /^\s*0/ } values %watch;
}

# Settle both sides: every pending call returned (its outcome kept) or seen
# waiting three times, 60 ms apart, with nothing being released.  Returns
# the states.
sub settle
{
	my ($pending) = @_;    # side => [mark or undef per session]
	my %state;
	my $seen_waiting = 0;
	for my $try (1 .. 200)
	{
		my $open = 0;
		for my $side ('core', 'zk')
		{
			my $hs = $side eq 'core' ? \@core : \@zk;
			for my $i (0 .. 2)
			{
				my $m = $pending->{$side}[$i];
				next unless defined $m;
				my $o = poll($hs->[$i], $m);
				if (defined $o)
				{
					$state{$side}[$i] = $o;
					$pending->{$side}[$i] = undef;
					next;
				}
				# (only a lock call may wait; a try or a command is waited for)
				my $w = $can_wait[$i] && ($side eq 'core' ? core_waiting($i) : zk_waiting($i));
				$state{$side}[$i] = 'waiting';
				$open++ unless $w;
			}
		}
		if ($open == 0 && !zk_moving())
		{
			return \%state if ++$seen_waiting >= 3 || !grep { defined } @{ $pending->{zk} }, @{ $pending->{core} };
		}
		else
		{
			$seen_waiting = 0;
		}
		usleep(60_000);
	}
	return undef;
}

sub holds
{
	my ($held, $i, $mode) = @_;
	return $held->[$i]{$mode} // 0;
}

my ($compared, $waits_seen, $upgrades_past, $statements) = (0, 0, 0, 0);
my @unexplained;
for my $seq (1 .. $sequences)
{
	srand(1000 + $seq);
	wait_for(sub { !zk_moving() && (grep { $_->query('SELECT count(*) FROM zk_locks') =~ /^\s*0/ } values %watch) == 2 },
		10)
	  or push @unexplained, "before sequence $seq: a node was left behind";
	my %pending = (core => [ undef, undef, undef ], zk => [ undef, undef, undef ]);
	my @waiting = (0, 0, 0);
	my @inblock = (0, 0, 0);
	my @held = ({}, {}, {});    # what each session's transaction holds (both sides agree, or we stop)
	my @asked = ('', '', '');
	my @log;
	for my $step (1 .. $steps)
	{
		my @free = grep { !$waiting[$_] } 0 .. 2;
		last unless @free;
		my $s = $free[ int(rand(@free)) ];
		my $op = $menu[ int(rand(@menu)) ];
		$op = 'BEGIN' if $op =~ /^lock_/ && !$inblock[$s];
		# never a circle: a reader asks exclusive only while no other reader waits to
		$op = 'try_x'
		  if $op eq 'lock_x' && holds(\@held, $s, 's')
		  && grep { $_ != $s && $waiting[$_] && $asked[$_] eq 'lock_x' && holds(\@held, $_, 's') } 0 .. 2;
		my ($csql, $zsql) = $ops{$op} ? @{ $ops{$op} } : ($op, $op);
		$pending{core}[$s] = send_sql($core[$s], $csql);
		$pending{zk}[$s] = send_sql($zk[$s], $zsql);
		$asked[$s] = $op;
		$statements++;
		$can_wait[$s] = $op =~ /^lock_/;
		$upgrades_past++ if $op eq 'lock_x' && holds(\@held, $s, 's') && grep { $waiting[$_] } 0 .. 2;
		my $st = settle(\%pending);
		if (!defined $st)
		{
			push @unexplained, "sequence $seq step $step: never settled:\n  " . join("\n  ", @log, "s$s $op");
			last;
		}
		my @line;
		my $differs = 0;
		for my $i (0 .. 2)
		{
			my $c = $st->{core}[$i];
			my $z = $st->{zk}[$i];
			next unless defined $c || defined $z;
			$c //= '(nothing)';
			$z //= '(nothing)';
			$z =~ s/ \| WARNING 25P01$/ | / if $i == $s && $op =~ /^try_/ && !$inblock[$s] && $c !~ /WARNING/;
			push @line, "s$i core [$c] zk [$z]";
			$compared++;
			$differs ||= $c ne $z;
			$waiting[$i] = $c eq 'waiting';
			$waits_seen++ if $waiting[$i] && $i == $s;
			next if $waiting[$i];
			# what its transaction now holds (an error ends what it held)
			my $what = $i == $s ? $op : $asked[$i];
			my ($mode) = $what =~ /^(?:lock|try)_([xs])$/;
			$held[$i] = {} if $c =~ /ERROR/;
			$held[$i]{$mode} = 1 if $mode && $c =~ /^(1|t) \|/ && $inblock[$i];
		}
		push @log, "s$s $op: " . join('; ', @line);
		if ($differs)
		{
			push @unexplained, "sequence $seq differs at step $step:\n  " . join("\n  ", @log);
			last;
		}
		$inblock[$s] = 1 if $op eq 'BEGIN';
		($inblock[$s], $held[$s]) = (0, {}) if $op eq 'COMMIT' || $op eq 'ROLLBACK';
	}
	diag("sequence $seq:\n  " . join("\n  ", @log)) if $ENV{ZKL_DIFF3_DEBUG};
	# let every waiter go: end the transactions that do not wait, until none does
	for my $round (1 .. 6)
	{
		for my $i (0 .. 2)
		{
			$core[$i]->query('ROLLBACK') unless defined $pending{core}[$i];
			$zk[$i]->query('ROLLBACK') unless defined $pending{zk}[$i];
		}
		last unless grep { defined } @{ $pending{core} }, @{ $pending{zk} };
		settle(\%pending);
	}
	my @stuck = grep { defined $pending{core}[$_] || defined $pending{zk}[$_] } 0 .. 2;
	if (@stuck)
	{
		push @unexplained, "sequence $seq: s@stuck still waits once every other transaction ended:\n  "
		  . join("\n  ", @log);
		last;
	}
}
ok(wait_for(sub { !zk_moving() && (grep { $_->query('SELECT count(*) FROM zk_locks') =~ /^\s*0/ } values %watch) == 2 },
		15), 'no lock left in either cluster');

diag("differential with waits: $statements statements on each side, $compared session states compared, "
	  . "in $sequences sequences of up to $steps steps; "
	  . "$waits_seen calls waited, $upgrades_past upgrades asked while others waited");
is(join("\n", @unexplained), '', 'no difference from core advisory locks');
cmp_ok($waits_seen, '>', 20, 'calls waited');
cmp_ok($upgrades_past, '>', 5, 'and readers asked exclusive while others waited');

$_->quit for @core, @zk, values %watch;
done_testing();
