# The soak's nemesis: a random schedule of faults drawn from one seed, several
# at once, each healed after a random time.  Every fault is logged with its
# start and heal, so the checker can tie what it sees to what was done.
package SoakNemesis;

use strict;
use warnings;

use List::Util qw(shuffle);
use POSIX ();
use Time::HiRes qw(time usleep);

# kind => [weight, scope, shortest, longest seconds]; scope says what one
# fault of the kind occupies, so that faults of one scope never overlap (one
# member fault at a time keeps a quorum most of the time; one process fault
# per cluster).  A duration of 0 is an instant fault.
our %KINDS = (
	member_kill => [ 3, 'member', 1, 10 ],
	member_pause => [ 3, 'member', 1, 8 ],
	member_cut => [ 3, 'member', 1, 10 ],
	link_cut => [ 4, 'link', 1, 9 ],
	link_reset => [ 3, 'link', 0, 0 ],
	worker_pause => [ 5, 'process', 2, 10 ],
	cluster_pause => [ 3, 'process', 2, 9 ],
	backend_kill => [ 3, 'process', 0, 0 ],
	clean_restart => [ 2, 'process', 0, 0 ],
	hosts_reload => [ 2, 'process', 3, 15 ],
	# the cluster restarted with its clocks running 3-10 % fast or slow
	# (libfaketime), within the 10 % failure-semantics.md assumes; in the
	# background: other faults go on beside it
	clock_rate => [ 2, 'clock', 10, 40 ],
	# the commit window: a holder of the cluster passes zk_lock's commit
	# check, then its remote commit to the store sleeps while the cluster's
	# link is cut, past its session's end and the next holder's grant
	commit_pause => [ 3, 'link', 9, 15 ]);

sub new
{
	my ($class, %opt) = @_;
	my $self = bless { topo => $opt{topo}, log => $opt{log}, active => [], n => 0, max_active => 2 }, $class;
	open $self->{fh}, '>>', $opt{log} or die "$opt{log}: $!";
	$self->{fh}->autoflush(1);
	return $self;
}

# Run faults until $until (epoch s), then heal everything.
sub run
{
	my ($self, $until) = @_;
	while (time() < $until)
	{
		usleep(1e6 * (0.5 + rand(3)));
		$self->heal_due(time());
		$self->reap;
		next if (grep { $_->{scope} ne 'clock' } @{ $self->{active} }) >= $self->{max_active};
		my $f = $self->draw or next;
		$self->apply($f);
	}
	$self->heal_due(9e99);
	$self->reap_all;
}

# Pick a kind and a target that no active fault occupies.
sub draw
{
	my ($self) = @_;
	my $topo = $self->{topo};
	my @kinds = sort keys %KINDS;
	my $total = 0;
	$total += $KINDS{$_}[0] for @kinds;
	my $r = rand($total);
	my $kind;
	for (@kinds) { $kind = $_; last if ($r -= $KINDS{$_}[0]) < 0; }
	my ($w, $scope, $lo, $hi) = @{ $KINDS{$kind} };
	my $target = $scope eq 'member' ? 1 + int(rand(3)) : 1 + int(rand($topo->{nclusters}));
	my $aim_leader = $scope eq 'member' && rand() < 0.5;
	my $aim_inside = $kind eq 'worker_pause' && rand() < 0.7;
	my $duration = $hi ? $lo + rand($hi - $lo) : 0;
	my $rate = sprintf('%.3f', (rand() < 0.5 ? 0.90 : 1.03) + rand(0.07));
	# draws above are made whatever happens next, so a seed's schedule stays
	# the same however the run goes
	for my $a (@{ $self->{active} })
	{
		return undef if $a->{scope} eq $scope && ($scope eq 'member' || $a->{target} == $target);
	}
	# a member fault waits until the last one's member serves again: two
	# members down at once would only stop everything
	return undef if $scope eq 'member' && grep { $topo->member_mode($_) eq '' } 1 .. 3;
	if ($aim_leader)
	{
		my $l = $topo->leader;
		$target = $l if $l;
	}
	if ($aim_inside)
	{
		# the pause that breaks lease-based locks: a backend runs on inside its
		# critical section while its cluster's session expires
		my @busy = map { $_->{target} } grep { $_->{scope} eq 'process' } @{ $self->{active} };
		my $best = 0;
		for my $c (1 .. $topo->{nclusters})
		{
			next if grep { $_ == $c } @busy;
			my $level = $topo->inside_section($c);
			($target, $best) = ($c, $level) if $level > $best;
		}
	}
	my %f = (kind => $kind, scope => $scope, target => $target, duration => $duration);
	$f{rate} = $rate if $kind eq 'clock_rate';
	return \%f;
}

sub apply
{
	my ($self, $f) = @_;
	my $topo = $self->{topo};
	my ($kind, $t) = @$f{qw(kind target)};
	$f->{start} = time();
	$f->{id} = ++$self->{n};
	if ($kind eq 'member_kill') { $topo->member_kill($t); }
	elsif ($kind eq 'member_pause') { $topo->member_signal($t, 'STOP'); }
	elsif ($kind eq 'member_cut') { $topo->member_cut($t, 'blackhole'); }
	elsif ($kind eq 'link_cut') { $topo->cluster_link($t, 'blackhole'); }
	elsif ($kind eq 'link_reset') { $topo->cluster_link($t, 'reset'); }
	elsif ($kind eq 'commit_pause')
	{
		$f->{landed} = $topo->commit_pause($t, $f->{duration});
		$topo->cluster_link($t, 'blackhole') if $f->{landed};
		$f->{start} = time();    # the cut, as the sleep begins
		$f->{duration} = 0 unless $f->{landed};
	}
	elsif ($kind eq 'worker_pause')
	{
		my $pid = $topo->worker_pid($t) or return;
		$f->{pids} = [$pid];
		kill 'STOP', $pid;
	}
	elsif ($kind eq 'cluster_pause')
	{
		$f->{pids} = [ $topo->cluster_pids($t) ];
		kill 'STOP', @{ $f->{pids} };
	}
	elsif ($kind eq 'backend_kill')
	{
		my $pid = $topo->soak_backend($t) or return;
		kill 'KILL', $pid;
	}
	elsif ($kind eq 'clean_restart')
	{
		# in a child: the nemesis keeps its schedule while the cluster restarts
		$f->{child} = $self->spawn(sub { $topo->restart_cluster($t) });
	}
	elsif ($kind eq 'clock_rate')
	{
		$topo->{rate}{$t} = $f->{rate};
		$f->{child} = $self->spawn(sub { $topo->restart_cluster($t) });
	}
	elsif ($kind eq 'hosts_reload')
	{
		my @m = shuffle(1 .. 3);
		pop @m if rand() < 0.5;
		$f->{hosts} = join('', @m);
		$self->sql($t, "ALTER SYSTEM SET zk_lock.hosts = '" . $topo->hosts_of($t, @m) . "'");
	}
	$f->{heal_at} = $f->{start} + $f->{duration};
	push @{ $self->{active} }, $f;
}

sub heal
{
	my ($self, $f) = @_;
	my $topo = $self->{topo};
	my ($kind, $t) = @$f{qw(kind target)};
	if ($kind eq 'member_kill') { $f->{child2} = $self->spawn(sub { $topo->member_start($t) }); }
	elsif ($kind eq 'member_pause') { $topo->member_signal($t, 'CONT'); }
	elsif ($kind eq 'member_cut') { $topo->member_cut($t, 'pass'); }
	elsif ($kind eq 'link_cut' || $kind eq 'commit_pause') { $topo->cluster_link($t, 'pass'); }
	elsif ($kind eq 'worker_pause' || $kind eq 'cluster_pause') { kill 'CONT', @{ $f->{pids} }; }
	elsif ($kind eq 'hosts_reload')
	{
		$self->sql($t, 'ALTER SYSTEM RESET zk_lock.hosts');
	}
	elsif ($kind eq 'clock_rate')
	{
		# evidence that the rate took: how far the cluster's clock went off
		my ($out, $err) = ('', '');
		$topo->{cluster}{$t}->psql('postgres', 'SELECT extract(epoch FROM clock_timestamp())',
			stdout => \$out, stderr => \$err, timeout => 5, timed_out => \my $timed_out);
		$f->{skew} = sprintf('%.2f', $out - time()) if $out =~ /^[\d.]+$/;
		delete $topo->{rate}{$t};
		$f->{child2} = $self->spawn(sub { $topo->restart_cluster($t) });
	}
	$f->{end} = time();
	my $what = join(' ', map { "$_=$f->{$_}" } grep { defined $f->{$_} } qw(hosts rate skew landed));
	print { $self->{fh} } join("\t", $f->{id}, $kind, $t, $f->{start}, $f->{end}, $what), "\n";
}

# A setting of cluster $t, then a reload; bounded, as the cluster may be
# restarting.
sub sql
{
	my ($self, $t, $sql) = @_;
	my ($out, $err) = ('', '');
	$self->{topo}{cluster}{$t}->psql('postgres', "$sql; SELECT pg_reload_conf()",
		stdout => \$out, stderr => \$err, timeout => 10, timed_out => \my $timed_out);
}

sub heal_due
{
	my ($self, $now) = @_;
	my @keep;
	for my $f (@{ $self->{active} })
	{
		if ($f->{heal_at} <= $now) { $self->heal($f); }
		else { push @keep, $f; }
	}
	$self->{active} = \@keep;
}

sub spawn
{
	my ($self, $code) = @_;
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		eval { $code->(); };
		POSIX::_exit(0);
	}
	push @{ $self->{children} }, $pid;
	return $pid;
}

sub reap
{
	my ($self) = @_;
	$self->{children} = [ grep { waitpid($_, POSIX::WNOHANG()) == 0 } @{ $self->{children} // [] } ];
}

sub reap_all
{
	my ($self) = @_;
	waitpid($_, 0) for @{ $self->{children} // [] };
	$self->{children} = [];
}

1;
