# The soak's clients: forked processes, several per cluster, each running
# one workload in a loop until its deadline and writing one history line per
# operation.  What a lock protects lives in the store (SoakTopology), written
# either through postgres_fdw inside the locked transaction or straight, in
# the store's own autocommit transactions, while the lock is held; reads go
# straight to the store, never through the transaction's foreign snapshot.
package SoakWorkload;

use strict;
use warnings;

use DBI;
use Time::HiRes qw(time usleep);

# History fields, tab-separated, one line per operation.
our @FIELDS = qw(op kind cluster client keys t0 t1 status sqlstate extra);

my %role_ops = (
	list => \&op_list,
	rw => \&op_rw,
	sem => \&op_sem);

# Start one client; returns its pid.  $spec: cluster number, client number,
# role, the cluster's and the store's connection strings, deadline (epoch s),
# history file, seed.
sub start
{
	my (%spec) = @_;
	my $pid = fork() // die "fork: $!";
	return $pid if $pid;
	srand($spec{seed});
	my $c = bless {%spec, seq => 0}, __PACKAGE__;
	open $c->{hist}, '>>', $spec{history} or die "$spec{history}: $!";
	$c->{hist}->autoflush(1);
	while (time() < $spec{deadline})
	{
		if (!$c->connected)
		{
			usleep(300_000);
			next;
		}
		$role_ops{ $spec{role} }->($c);
	}
	$c->{db}->disconnect if $c->{db};
	$c->{store}->disconnect if $c->{store};
	POSIX::_exit(0);
}

sub connected
{
	my ($c) = @_;
	for my $which (qw(db store))
	{
		next if $c->{$which} && $c->{$which}->ping > 0;
		my $dsn = $which eq 'db' ? $c->{dsn} : $c->{store_dsn};
		$c->{$which} = DBI->connect($dsn, '', '', { AutoCommit => 1, RaiseError => 0, PrintError => 0 })
		  or return 0;
		my $app = "soak:c$c->{cluster}:$c->{client}";
		$c->{$which}->do("SET application_name = '$app'");
		$c->{$which}->do("SET lock_timeout = '15s'");
		$c->{$which}->do("SET statement_timeout = '90s'");
	}
	return 1;
}

sub pause_s
{
	my $r = rand();
	return 0.001 + rand(0.03) if $r < 0.85;
	return 0.05 + rand(0.45) if $r < 0.97;
	return 4 + rand(8);    # long sections: a holder may outlive its session
}

sub record
{
	my ($c, $h) = @_;
	$h->{t1} = time();
	print { $c->{hist} } join("\t", map { $h->{$_} // '' } @FIELDS), "\n";
}

# Start an operation's history entry.
sub begin_op
{
	my ($c, $kind, @keys) = @_;
	return {
		op => ($c->{cluster} * 10 + $c->{client}) * 10_000_000 + ++$c->{seq},
		kind => $kind, cluster => $c->{cluster}, client => $c->{client},
		keys => join('+', @keys), t0 => time(), status => 'fail', extra => '' };
}

# Run one statement on the cluster (or the store); on error fill the entry
# and roll the cluster's transaction back.  A broken connection during
# COMMIT leaves the outcome unknown.
sub run
{
	my ($c, $h, $which, $sql, @bind) = @_;
	my $db = $c->{$which};
	my $sth = $db->prepare($sql);
	if ($sth && $sth->execute(@bind))
	{
		my $row = $sth->{NUM_OF_FIELDS} ? $sth->fetchrow_arrayref : [];
		return $row ? [@$row] : [];
	}
	my $state = $db->state || '?';
	my $msg = ($db->errstr // '') =~ s/\s+/ /gr;
	$h->{sqlstate} = $state;
	$h->{extra} .= ($h->{extra} ? ' ' : '') . "err=$which:" . substr($msg, 0, 120);
	my $dead = $db->ping <= 0;
	$h->{status} = 'info' if $dead && $which eq 'db' && $sql eq 'COMMIT';
	$c->{db}->do('ROLLBACK') unless $which eq 'db' && $dead;
	return undef;
}

# Show the nemesis where critical sections run (long ones apart: a worker
# stopped under one of those lets the holder outlive its session).
sub in_section
{
	my ($c, $pause) = @_;
	my $mark = !defined $pause ? '' : $pause >= 1 ? ':in:long' : ':in';
	$c->{db}->do("SET application_name = 'soak:c$c->{cluster}:$c->{client}$mark'");
}

sub store_now { my ($c, $h) = @_; my $r = run($c, $h, 'store', 'SELECT clock_timestamp()::text'); return $r && $r->[0]; }

# Exclusive lock-set: read each key's list straight from the store, pause,
# write it back with one new element through postgres_fdw (fenced by the
# lock's token and by the version read), commit.  Single keys, multi-key and session-level locks.
# A third of the single keys is the cluster's own (S<cluster>): only its
# clients ask for it, so its node lingers and is taken there without the
# worker (zk_lock.linger in odd clusters), under the same faults.
sub op_list
{
	my ($c) = @_;
	my $r = rand();
	my $kind = $r < 0.7 ? 'list' : $r < 0.85 ? 'multi' : 'session';
	my @keys = ($kind eq 'list' && rand() < 0.33 ? "S$c->{cluster}" : 'L' . int(rand(3)));
	push @keys, 'L' . ((substr($keys[0], 1) + 1 + int(rand(2))) % 3) if $kind eq 'multi';
	my $h = $c->begin_op($kind, @keys);
	my $karr = 'ARRAY[' . join(',', map { "'$_'" } @keys) . ']';
	if ($kind eq 'session')
	{
		run($c, $h, 'db', "SELECT zk_session_lock('$keys[0]')") or return $c->session_done($h);
	}
	$c->{db}->do('BEGIN');
	if ($kind ne 'session')
	{
		run($c, $h, 'db', $kind eq 'multi' ? "SELECT zk_lock($karr)" : "SELECT zk_lock('$keys[0]')")
		  or return $c->record($h);
	}
	my $pause = pause_s();
	$c->in_section($pause);
	my (%tok, %elems, %ver, $t1);
	for my $k (@keys)
	{
		my $row = run($c, $h, 'db', 'SELECT zk_lock_token($1)', $k) or return $c->session_done($h);
		$tok{$k} = $row->[0];
		$row = run($c, $h, 'store', 'SELECT elems::text, version, clock_timestamp()::text FROM lists WHERE key = $1', $k)
		  or return $c->session_done($h);
		($elems{$k}, $ver{$k}, my $t) = @$row;
		$t1 //= $t;
	}
	usleep(1e6 * $pause);
	my $t2 = $c->store_now($h) or return $c->session_done($h);
	for my $k (@keys)
	{
		run($c, $h, 'db',
			'UPDATE lists SET elems = $1::bigint[] || $2::bigint, max_token = $3, version = $4 WHERE key = $5',
			$elems{$k}, $h->{op}, $tok{$k}, $ver{$k} + 1, $k) or return $c->session_done($h);
		run($c, $h, 'db', 'INSERT INTO intervals VALUES ($1, $2, $3, $4, $5)', $h->{op}, $k, 'x', $t1, $t2)
		  or return $c->session_done($h);
	}
	$h->{extra} = 'tok=' . join(',', map { $tok{$_} } @keys);
	$c->in_section(undef);
	run($c, $h, 'db', 'COMMIT') or return $c->session_done($h);
	$h->{status} = 'ok';
	return $c->session_done($h);
}

# Record a session-level operation and give its lock back (a lost one is
# acknowledged this way too: that call fails with 40001 by design).
sub session_done
{
	my ($c, $h) = @_;
	my $alive = $c->{db}->ping > 0;
	$c->{db}->do('ROLLBACK') if $alive;
	if ($h->{kind} eq 'session' && $alive)
	{
		# a lost session-level lock fails every commit until acknowledged
		if (($h->{extra} // '') =~ /was lost/
			&& $c->{db}->do('BEGIN') && $c->{db}->do('SELECT 1') && $c->{db}->do('COMMIT'))
		{
			$h->{extra} .= ' ack_after_lost';
		}
		$c->{db}->do('ROLLBACK');
		$c->{db}->do('SELECT zk_session_unlock_all()');
	}
	$c->record($h);
}

# Shared and exclusive: a writer changes the store's pair in two steps, each
# committed at once; a reader reads it twice.  Each writes its interval on
# the store's clock (a writer's from its first step to its second, a
# reader's from its first read to its second): a committed reader's inside a
# committed writer's is a half-done change seen.  (What a reader saw is only
# a figure: a writer whose lock was lost may leave the pair half-done for
# good, and the next holder rightly sees that.)
sub op_rw
{
	my ($c) = @_;
	my $writer = rand() < 0.4;
	my $h = $c->begin_op($writer ? 'writer' : 'reader', 'P');
	$c->{db}->do('BEGIN');
	run($c, $h, 'db', $writer ? "SELECT zk_lock('P')" : "SELECT zk_lock_shared('P')") or return $c->record($h);
	my $pause = pause_s();
	$c->in_section($pause);
	my ($t1, $t2);
	if ($writer)
	{
		my $r = run($c, $h, 'store',
			"UPDATE pair SET a = a + 1, writer_a = \$1 WHERE key = 'P' RETURNING clock_timestamp()::text", $h->{op})
		  or return $c->record($h);
		$t1 = $r->[0];
		usleep(1e6 * $pause);
		$r = run($c, $h, 'store',
			"UPDATE pair SET b = a, writer_b = \$1 WHERE key = 'P' RETURNING clock_timestamp()::text", $h->{op})
		  or return $c->record($h);
		$t2 = $r->[0];
	}
	else
	{
		my %half;
		for my $i (1 .. 2)
		{
			my $row = run($c, $h, 'store',
				"SELECT a, b, writer_a, writer_b, clock_timestamp()::text FROM pair WHERE key = 'P'")
			  or return $c->record($h);
			$half{ $row->[2] } = 1 if $row->[0] != $row->[1] || $row->[2] != $row->[3];
			($i == 1 ? $t1 : $t2) = $row->[4];
			usleep(1e6 * $pause) if $i == 1;
		}
		$h->{extra} = 'half=' . join(',', sort keys %half) if %half;
	}
	run($c, $h, 'db', 'INSERT INTO intervals VALUES ($1, $2, $3, $4, $5)', $h->{op}, 'P', $writer ? 'w' : 'r', $t1, $t2)
	  or return $c->record($h);
	$c->in_section(undef);
	run($c, $h, 'db', 'COMMIT') or return $c->record($h);
	$h->{status} = 'ok';
	$c->record($h);
}

# Semaphores of 2: each holder writes its interval on the store's clock.
sub op_sem
{
	my ($c) = @_;
	my $h = $c->begin_op('sem', 'S');
	$c->{db}->do('BEGIN');
	run($c, $h, 'db', "SELECT zk_semaphore('S', 2)") or return $c->record($h);
	my $pause = pause_s();
	$c->in_section($pause);
	my $t1 = $c->store_now($h) or return $c->record($h);
	usleep(1e6 * $pause);
	my $t2 = $c->store_now($h) or return $c->record($h);
	run($c, $h, 'db', 'INSERT INTO intervals VALUES ($1, $2, $3, $4, $5)', $h->{op}, 'S', 'sem', $t1, $t2)
	  or return $c->record($h);
	$c->in_section(undef);
	run($c, $h, 'db', 'COMMIT') or return $c->record($h);
	$h->{status} = 'ok';
	$c->record($h);
}

1;
