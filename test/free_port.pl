# free_port.pl [N]: print N (default 1) free TCP ports on 127.0.0.1, one a line,
# for servers the tests start a moment later.
#
# Why not a port the kernel picks (bind to port 0): those come from the
# ephemeral range, the same range every outgoing connection takes its local
# port from, so between this check and the server's bind a client connection
# of a test running beside may take it (seen: a ZooKeeper member refused its
# client port, "Address already in use").  Ports here are drawn below that
# range, and each is reserved for a while by a file, so that two tests picking
# at the same moment do not get the same one.
use strict;
use warnings;
use Fcntl qw(O_CREAT O_EXCL O_WRONLY);
use IO::Socket::INET;

my $count = $ARGV[0] // 1;
my $reserve_s = 900;    # longer than any test keeps a port unbound
my $dir = ($ENV{TMPDIR} // '/tmp') . "/zk_lock-ports-$<";
mkdir $dir, 0700;
-d $dir && -O $dir or die "free_port.pl: $dir is not ours\n";

my $low = 10000;
my $high = 32767;
if (open my $fh, '<', '/proc/sys/net/ipv4/ip_local_port_range')
{
	my ($first) = split ' ', scalar <$fh>;
	$high = $first - 1 if defined $first && $first - 1 < $high && $first - 1 > $low + 1000;
}

sub reserve
{
	my ($port) = @_;
	my $f = "$dir/$port";
	my @st = stat $f;
	return 0 if @st && time - $st[9] < $reserve_s;
	unlink $f if @st;
	sysopen(my $fh, $f, O_CREAT | O_EXCL | O_WRONLY) or return 0;
	close $fh;
	return 1;
}

sub bindable
{
	my ($port) = @_;
	my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port, Listen => 1, ReuseAddr => 1)
	  or return 0;
	close $s;
	return 1;
}

my @got;
for (1 .. 10_000)    # bounded: gives up rather than spins
{
	last if @got == $count;
	my $port = $low + int(rand($high - $low + 1));
	next if grep { $_ == $port } @got;
	push @got, $port if bindable($port) && reserve($port);
}
die "free_port.pl: found only " . scalar(@got) . " of $count free ports\n" if @got < $count;
print "$_\n" for @got;
