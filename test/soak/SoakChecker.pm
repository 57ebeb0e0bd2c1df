# The soak's checker: after the last heal, read the store and the clients'
# histories and answer one question per promise.  Each violation count must
# be 0; the rest (outcomes, refusals inside a fault, recovery times) are
# figures.
package SoakChecker;

use strict;
use warnings;

use List::Util qw(max sum0);
use Time::HiRes qw(time);

sub read_tsv
{
	my ($path, @fields) = @_;
	my @rows;
	open my $fh, '<', $path or return ();
	while (my $line = <$fh>)
	{
		chomp $line;
		my %r;
		@r{@fields} = split /\t/, $line, -1;
		push @rows, \%r;
	}
	return @rows;
}

# Did a fault that can stale cluster $c's view cover [t0, t1]?  A fault
# reaches past its heal by the session timeout plus the lock-delay.
sub fault_near
{
	my ($faults, $c, $t0, $t1, $grace) = @_;
	for my $f (@$faults)
	{
		next unless $f->{kind} =~ /^member_/ || $f->{target} == $c;
		return 1 if $f->{start} <= $t1 && $f->{end} + $grace >= $t0;
	}
	return 0;
}

# The time each cluster took to grant again after each heal; apart, the heals
# after which no other fault touched the cluster (a member, or the cluster
# itself, clock rates aside) until that success: long waits otherwise are
# faults back to back.
sub regrant
{
	my ($fig, $faults, $ops, $nclusters) = @_;
	my (%rec, @quiet);
	for my $f (grep { $_->{end} > $_->{start} } @$faults)
	{
		for my $c (1 .. $nclusters)
		{
			my @after = sort { $a <=> $b } map { $_->{t1} } grep { $_->{cluster} == $c && $_->{status} eq 'ok' && $_->{t1} >= $f->{end} } @$ops;
			next unless @after;
			push @{ $rec{$c} }, $after[0] - $f->{end};
			push @quiet, $after[0] - $f->{end}
			  unless grep { $_ != $f && $_->{kind} ne 'clock_rate' && ($_->{kind} =~ /^member_/ || $_->{target} == $c)
				  && $_->{start} < $after[0] && $_->{end} > $f->{end} } @$faults;
		}
	}
	for my $c (sort keys %rec)
	{
		$fig->{regrant_s}{"c$c"} = { median => sprintf('%.2f', median(@{ $rec{$c} })), max => sprintf('%.2f', max(@{ $rec{$c} })) };
	}
	$fig->{regrant_quiet_s} = { heals => scalar @quiet, median => sprintf('%.2f', median(@quiet)), max => sprintf('%.2f', max(@quiet)) }
	  if @quiet;
}

# Greatest number of intervals open at one time, and when it was reached.
sub max_overlap
{
	my (@iv) = @_;
	my @ev = sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } map { ([ $_->[0], 1 ], [ $_->[1], -1 ]) } @iv;
	my ($open, $most, $at) = (0, 0, undef);
	for (@ev)
	{
		$open += $_->[1];
		($most, $at) = ($open, $_->[0]) if $open > $most;
	}
	return ($most, $at);
}

# Pairs of intervals (sorted by start) where one starts before an earlier
# one ends, and the first such start.
sub overlaps
{
	my (@iv) = sort { $a->[0] <=> $b->[0] } @_;
	my ($n, $end, $at) = (0, undef, undef);
	for (@iv)
	{
		if (defined $end && $_->[0] < $end) { $n++; $at //= $_->[0]; }
		$end = $_->[1] if !defined $end || $_->[1] > $end;
	}
	return ($n, $at);
}

# Intervals of @$r that overlap one of @$w, and the first one's start.
sub inside
{
	my ($r, $w) = @_;
	my ($n, $at) = (0, undef);
	for my $x (@$r)
	{
		next unless grep { $x->[0] < $_->[1] && $_->[0] < $x->[1] } @$w;
		$n++;
		$at = $x->[0] if !defined $at || $x->[0] < $at;
	}
	return ($n, $at);
}

sub median
{
	my @v = sort { $a <=> $b } @_;
	return @v ? $v[ int($#v / 2) ] : undef;
}

# A list write refused because another cluster's holder committed after this
# one read (the store's version fence, or its serialization failure while
# that commit was under way): the commit window.  Only a process pause of
# another cluster, at the time, may explain it: the nemesis's commit pause,
# or the whole cluster stopped.
sub commit_overlap
{
	my ($o) = @_;
	return $o->{sqlstate} eq 'ZF002'
	  || ($o->{sqlstate} eq '40001' && $o->{extra} =~ /could not serialize access/);
}

sub pause_near
{
	my ($faults, $c, $t0, $t1, $grace) = @_;
	for my $f (@$faults)
	{
		# a paused commit of the refused holder's own cluster counts too: once that
		# cluster's session is gone, its next local holder queues anew in ZooKeeper
		next unless ($f->{target} != $c && $f->{kind} eq 'cluster_pause')
		  || ($f->{kind} eq 'commit_pause' && $f->{what} =~ /landed=1/);
		return 1 if $f->{start} <= $t1 && $f->{end} + $grace >= $t0;
	}
	return 0;
}

# Returns the summary: { violations => {...}, figures => {...} }.
sub check
{
	my (%in) = @_;
	my @ops = map { read_tsv($_, @SoakWorkload::FIELDS) } @{ $in{histories} };
	my @faults = read_tsv($in{faults}, qw(id kind target start end what));
	my $store = $in{store};
	my $grace = $in{grace};
	my %v = map { $_ => 0 } qw(lost_elements failed_commit_written overlapping_exclusive semaphore_overflow
	  half_done_seen refusal_outside_fault commit_overlap_outside_pause ack_after_lost leftover_nodes leftover_slots leftover_waiters);
	my %fig;
	my %first;    # seconds into the run of each kind of violation's first sighting
	my $seen = sub {
		my ($line, $at) = @_;
		$first{$line} = $at - $in{t_start} if !defined $first{$line} || $at - $in{t_start} < $first{$line};
	};

	# the final lists, straight from the store
	my %in_list;
	for (split /\n/, $store->safe_psql('postgres', 'SELECT key, unnest(elems) FROM lists'))
	{
		my ($k, $e) = split /\|/;
		$in_list{"$k:$e"}++;
	}
	my %status = map { $_->{op} => $_->{status} } @ops;
	for my $o (@ops)
	{
		my @keys = split /\+/, $o->{keys};
		$fig{outcomes}{ $o->{kind} }{ $o->{status} }++;
		if ($o->{kind} =~ /^(list|multi|session)$/)
		{
			for my $k (@keys)
			{
				my $n = $in_list{"$k:$o->{op}"} // 0;
				if ($o->{status} eq 'ok' && $n != 1) { $v{lost_elements}++; $seen->('lost_elements', $o->{t0}); }
				if ($o->{status} eq 'fail' && $n) { $v{failed_commit_written}++; $seen->('failed_commit_written', $o->{t0}); }
			}
			$fig{fenced}{ fault_near(\@faults, $o->{cluster}, $o->{t0}, $o->{t1}, $grace) ? 'inside' : 'outside' }++
			  if $o->{sqlstate} eq 'ZF001';
			if (commit_overlap($o))
			{
				my $tied = pause_near(\@faults, $o->{cluster}, $o->{t0}, $o->{t1}, $grace);
				$fig{commit_window_refusals}{ $tied ? 'tied_to_pause' : 'untied' }++;
				if (!$tied) { $v{commit_overlap_outside_pause}++; $seen->('commit_overlap_outside_pause', $o->{t0}); }
			}
		}
		$v{ack_after_lost}++ if $o->{extra} =~ /ack_after_lost/;
		$fig{half_states_read}++ if $o->{kind} eq 'reader' && $o->{status} eq 'ok' && $o->{extra} =~ /half=/;
	}
	$v{refusal_outside_fault} = $fig{fenced}{outside} // 0;

	# holders' intervals on the store's clock (committed ones only are there)
	my %iv;
	for (split /\n/, $store->safe_psql('postgres', 'SELECT key, kind, extract(epoch FROM t1), extract(epoch FROM t2) FROM intervals'))
	{
		my ($k, $kind, $t1, $t2) = split /\|/;
		push @{ $iv{"$kind:$k"} }, [ $t1, $t2 ];
	}
	for my $kk (sort keys %iv)
	{
		if ($kk =~ /^r:/)
		{
			my ($n, $at) = inside(\@{ $iv{$kk} }, $iv{ 'w:' . substr($kk, 2) } // []);
			$v{half_done_seen} += $n;
			$seen->('half_done_seen', $at) if $n;
		}
		elsif ($kk =~ /^[xw]:/)
		{
			my ($n, $at) = overlaps(@{ $iv{$kk} });
			$v{overlapping_exclusive} += $n;
			$seen->('overlapping_exclusive', $at) if $n;
		}
		else
		{
			my ($m, $at) = max_overlap(@{ $iv{$kk} });
			$v{semaphore_overflow} += $m > 2 ? 1 : 0;
			$seen->('semaphore_overflow', $at) if $m > 2;
			$fig{semaphore_max_holders} = $m;
		}
	}

	regrant(\%fig, \@faults, \@ops, $in{nclusters});
	$fig{first_violation_s}{$_} = sprintf('%.1f', $first{$_}) for keys %first;
	$fig{faults}{ $_->{kind} }++ for @faults;
	$fig{commit_pauses_landed} = scalar grep { $_->{kind} eq 'commit_pause' && $_->{what} =~ /landed=1/ } @faults;
	$fig{faults_total} = scalar @faults;
	$fig{operations} = scalar @ops;
	$fig{ok} = scalar grep { $_->{status} eq 'ok' } @ops;

	# nothing left behind
	$v{leftover_nodes} = scalar @{ $in{leftover_nodes} // [] };
	$v{leftover_slots} = $in{leftover_slots} // 0;
	$v{leftover_waiters} = $in{leftover_waiters} // 0;
	return { violations => \%v, figures => \%fig };
}

1;
