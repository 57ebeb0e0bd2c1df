#!/usr/bin/perl
# A TCP proxy on 127.0.0.1 for fault tests: clients connect to it instead of
# ZooKeeper, and the test changes its behaviour with signals.
#
#   zk_proxy.pl PORTFILE UPSTREAM_PORT...
#     writes its listening port to PORTFILE, then forwards each connection to
#     the first upstream port that accepts it.
#   SIGUSR1  blackhole: forward nothing, accept nothing; peers see silence
#   SIGUSR2  reset every open connection (RST), then keep forwarding
#   SIGHUP   forward again after a blackhole
#   SIGTERM  exit
use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;
use Socket qw(SOL_SOCKET SO_LINGER);

my ($portfile, @upstreams) = @ARGV;
die "usage: zk_proxy.pl PORTFILE UPSTREAM_PORT...\n" unless $portfile && @upstreams;

my $listen = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => 0,
	Listen => 64,
	ReuseAddr => 1) or die "listen: $!";

my %peer;    # fileno -> the other socket of its pair
my %sock;    # fileno -> socket
my $blackhole = 0;
my $reset = 0;
my $quit = 0;
$SIG{USR1} = sub { $blackhole = 1 };
$SIG{USR2} = sub { $reset = 1 };
$SIG{HUP} = sub { $blackhole = 0 };
$SIG{TERM} = $SIG{INT} = sub { $quit = 1 };
$SIG{PIPE} = 'IGNORE';    # a peer reset while we write must not kill us

# Publish the port only once we listen, through a rename so readers never see half.
open my $fh, '>', "$portfile.tmp" or die "$portfile.tmp: $!";
print $fh $listen->sockport, "\n";
close $fh;
rename "$portfile.tmp", $portfile or die "rename: $!";

sub add_pair
{
	my ($a, $b) = @_;
	$peer{ fileno $a } = $b;
	$peer{ fileno $b } = $a;
	$sock{ fileno $a } = $a;
	$sock{ fileno $b } = $b;
}

sub drop
{
	my ($s, $rst) = @_;
	my $fd = fileno $s;
	return unless defined $fd && $sock{$fd};
	my $other = delete $peer{$fd};
	delete $sock{$fd};
	# linger 0: close sends RST, as a broken network path would look
	setsockopt($s, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0)) if $rst;
	close $s;
	drop($other, $rst) if $other;
}

sub connect_upstream
{
	for my $port (@upstreams)
	{
		my $u = IO::Socket::INET->new(
			PeerAddr => '127.0.0.1',
			PeerPort => $port,
			Timeout => 2);
		return $u if $u;
	}
	return undef;
}

until ($quit)
{
	if ($reset)
	{
		$reset = 0;
		my @all = values %sock;    # drop() changes %sock
		drop($_, 1) for @all;
	}
	my $sel = IO::Select->new();
	$sel->add($listen) unless $blackhole;
	$sel->add(values %sock) unless $blackhole;
	my @ready = $sel->can_read($blackhole ? 0.1 : 0.5);
	next if $blackhole;    # a signal may have come while we waited
	for my $s (@ready)
	{
		if ($s == $listen)
		{
			my $c = $listen->accept or next;
			my $u = connect_upstream();
			if ($u) { add_pair($c, $u); }
			else { drop($c, 1); }
			next;
		}
		next unless $sock{ fileno($s) // -1 };
		my $buf;
		my $n = sysread($s, $buf, 65536);
		if (!$n)
		{
			drop($s, 0);
			next;
		}
		my $out = $peer{ fileno $s };
		my $off = 0;
		while ($off < $n)
		{
			my $w = syswrite($out, $buf, $n - $off, $off);
			if (!defined $w)
			{
				drop($s, 1);
				last;
			}
			$off += $w;
		}
	}
}
my @all = values %sock;
drop($_, 0) for @all;
unlink $portfile;
