# One soak run: servers (SoakTopology), clients (SoakWorkload), faults
# (SoakNemesis), then the checker (SoakChecker) and a picture.  Called by
# test/soak/soak.pl (make soak) and by t/039_soak.pl (a short run in
# make test).  Options: seconds, seed (replays a schedule of faults), out
# (where the histories, the summary and the picture go).
package Soak;

use strict;
use warnings;

use File::Path qw(make_path);
use JSON::PP;
use List::Util qw(max);
use POSIX ();
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZkLockTest;
use SoakChecker;
use SoakNemesis;
use SoakTopology;
use SoakWorkload;

my @ROLES = qw(list list rw rw sem);

sub run
{
	my (%opt) = @_;
	my $seconds = $opt{seconds};
	my $seed = $opt{seed} // int(rand(1_000_000));
	my $out = $opt{out} // "$ZkLockTest::scratch/out";
	make_path($out);
	diag("soak seed $seed, $seconds s (SOAK_SEED=$seed replays this schedule of faults)");
	srand($seed);

	my $topo = SoakTopology->new(name => 'soak');
	for my $node ($topo->clusters)
	{
		wait_for(sub { zk_status($node, 'state') eq 'connected' }, 60)
		  or BAIL_OUT($node->name . ' did not connect to the ensemble');
	}
	my $t_start = time();
	my $deadline = $t_start + $seconds;
	my $quiet = $seconds < 80 ? 10 : 20;    # the last seconds see no fault
	my @hist;
	my @clients;
	for my $c (1 .. $topo->{nclusters})
	{
		my $node = $topo->{cluster}{$c};
		for my $i (1 .. @ROLES)
		{
			my $h = "$out/hist_c${c}_$i.tsv";
			unlink $h;
			push @hist, $h;
			push @clients, SoakWorkload::start(
				cluster => $c, client => $i, role => $ROLES[ $i - 1 ],
				dsn => 'dbi:Pg:host=' . $node->host . ';port=' . $node->port . ';dbname=postgres',
				store_dsn => 'dbi:Pg:host=' . $topo->{store}->host . ';port=' . $topo->{store}->port . ';dbname=postgres',
				deadline => $deadline, history => $h, seed => $seed * 100 + $c * 10 + $i);
		}
	}
	my $faults = "$out/faults.tsv";
	unlink $faults;
	SoakNemesis->new(topo => $topo, log => $faults)->run($deadline - $quiet);
	# clients end at the deadline; a statement may still run to its timeout
	my $bound = time() + $quiet + 120;
	for my $pid (@clients)
	{
		until (waitpid($pid, POSIX::WNOHANG()) != 0)
		{
			kill 'KILL', $pid if time() > $bound;
			usleep(100_000);
		}
	}

	# after the last heal: every worker serves again, and nothing stays behind
	$topo->revive;
	for my $node ($topo->clusters)
	{
		wait_for(sub { zk_status($node, 'state') eq 'connected' }, 60);
	}
	my %left;
	wait_for(sub { %left = leftovers($topo); !grep { $_ } values %left }, 30);
	my $sum = SoakChecker::check(
		histories => \@hist, faults => $faults, store => $topo->{store}, nclusters => $topo->{nclusters},
		t_start => $t_start,
		grace => $SoakTopology::session_timeout_s + $SoakTopology::lock_delay_s + 1,
		leftover_nodes => $left{nodes_list}, leftover_slots => $left{slots}, leftover_waiters => $left{waiters});
	$sum->{seed} = $seed;
	$sum->{seconds} = $seconds;
	$sum->{figures}{progress_gap_s} = progress_gaps(\@hist);
	# hand-overs, lingers, nodes a backend took itself (odd clusters linger) and writers that joined a local holder at their claim,
	# since each cluster's last restart
	$sum->{figures}{lingering} = {
		map {
			($_->name => $_->safe_psql('postgres', "SELECT string_agg(counter || ' ' || value, ', ' ORDER BY counter) "
				  . "FROM zk_lock_counters WHERE counter IN ('handovers', 'lingers', 'taken_here', 'joined_here')"))
		} $topo->clusters };

	for my $line (sort keys %{ $sum->{violations} })
	{
		is($sum->{violations}{$line}, 0, "soak: $line");
	}
	my $f = $sum->{figures};
	note(JSON::PP->new->canonical->pretty->encode($f));
	ok($f->{faults_total} > 0, "soak: $f->{faults_total} faults injected");
	for my $kind (qw(list multi session writer reader sem))
	{
		ok(($f->{outcomes}{$kind}{ok} // 0) > 0, "soak: $kind operations succeed");
	}
	open my $js, '>', "$out/soak-$seed.json" or die;
	print $js JSON::PP->new->canonical->pretty->encode($sum);
	close $js;
	plot($out, $seed, $t_start, \@hist, $faults, $seconds > 300 ? 10 : 1);
	$topo->stop_all;
	return $sum;
}

# What a run left behind: lock nodes in ZooKeeper (asked of the leader),
# busy slots and waiting backends in every cluster.
sub leftovers
{
	my ($topo) = @_;
	my %left = (slots => 0, waiters => 0, nodes_list => []);
	my $l = $topo->leader;
	if ($l)
	{
		my $port = $topo->{members}{$l}{client};
		$left{nodes_list} = [ eval { zk_lock_nodes($port) } ];
	}
	$left{nodes} = scalar @{ $left{nodes_list} };
	for my $node ($topo->clusters)
	{
		$left{slots} += $node->safe_psql('postgres', 'SELECT count(*) FROM zk_locks');
		$left{waiters} += waiting_count($node);
	}
	return %left;
}

# The longest time each workload went without a success, in seconds.
sub progress_gaps
{
	my ($hist) = @_;
	my %t;
	for my $path (@$hist)
	{
		for my $o (SoakChecker::read_tsv($path, @SoakWorkload::FIELDS))
		{
			push @{ $t{ $o->{kind} } }, $o->{t1} if $o->{status} eq 'ok';
		}
	}
	my %gap;
	for my $k (keys %t)
	{
		my @s = sort { $a <=> $b } @{ $t{$k} };
		$gap{$k} = sprintf('%.1f', max(0, map { $s[$_] - $s[ $_ - 1 ] } 1 .. $#s));
	}
	return \%gap;
}

# Grants per second per cluster, with a band for every fault.
sub plot
{
	my ($out, $seed, $t0, $hist, $faults) = @_;
	return unless system('command -v gnuplot >/dev/null 2>&1') == 0;
	my (%rate, $last);
	my $bucket = $_[5] // 1;    # seconds per point: long runs are drawn by 10 s
	for my $path (@$hist)
	{
		for my $o (SoakChecker::read_tsv($path, @SoakWorkload::FIELDS))
		{
			next unless $o->{status} eq 'ok';
			my $s = $bucket * int(($o->{t1} - $t0) / $bucket);
			$rate{$s}{ $o->{cluster} }++;
			$last = $s if !defined $last || $s > $last;
		}
	}
	open my $d, '>', "$out/rate.dat" or die;
	for (my $s = 0; $s <= ($last // 0); $s += $bucket)
	{
		print $d join(' ', $s, map { ($rate{$s}{$_} // 0) / $bucket } 1 .. 3), "\n";
	}
	close $d;
	my %color = (member => '#d62728', link => '#1f77b4', process => '#2ca02c', clock => '#9467bd');
	my ($objs, $n) = ('', 0);
	for my $f (SoakChecker::read_tsv($faults, qw(id kind target start end what)))
	{
		my $scope = $SoakNemesis::KINDS{ $f->{kind} }[1];
		my ($x1, $x2) = map { sprintf('%.2f', $_ - $t0) } $f->{start}, $f->{end};
		$n++;
		$objs .= $x2 > $x1
		  ? "set object $n rect from $x1, graph 0 to $x2, graph 1 fc rgb '$color{$scope}' fs transparent solid 0.12 noborder behind\n"
		  : "set arrow $n from $x1, graph 0 to $x1, graph 1 nohead lc rgb '$color{$scope}' lw 0.5\n";
	}
	open my $gp, '|-', 'gnuplot' or return;
	print $gp <<"PLOT";
set terminal pngcairo size 1400,500
set output '$out/soak-$seed.png'
set title 'zk_lock soak, seed $seed: operations that succeeded per second (mean over $bucket s); bands and lines are faults' noenhanced
set xlabel 'seconds'
set ylabel 'successes / s'
set key outside right noenhanced
$objs
plot '$out/rate.dat' using 1:2 with lines title 'cluster 1', '' using 1:3 with lines title 'cluster 2', \\
     '' using 1:4 with lines title 'cluster 3', \\
     NaN with boxes fs solid 0.3 fc rgb '$color{member}' title 'ZooKeeper member', \\
     NaN with boxes fs solid 0.3 fc rgb '$color{link}' title 'cluster link', \\
     NaN with boxes fs solid 0.3 fc rgb '$color{process}' title 'cluster process / settings', \\
     NaN with boxes fs solid 0.3 fc rgb '$color{clock}' title 'cluster clock rate'
PLOT
	close $gp;
}

1;
