# Helpers for zk_lock's TAP tests: a private ZooKeeper server per test file,
# PostgreSQL clusters preloaded with zk_lock, and reads of ZooKeeper's own
# counters (four-letter words) so tests check the server, not our word for it.
package ZkLockTest;

use strict;
use warnings;

use Exporter 'import';
use File::Basename qw(dirname);
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(start_zookeeper stop_zookeeper zk_cmd zk_mntr zk_lock_nodes
  new_zk_cluster wait_for);

my $zk_script = dirname(__FILE__) . '/../test/zk.sh';
my @zk_dirs;

# Start a standalone ZooKeeper on 127.0.0.1; returns its client port.
sub start_zookeeper
{
	my ($name) = @_;
	my $dir = "${PostgreSQL::Test::Utils::tmp_check}/zk_$name";
	my $port = `bash $zk_script start $dir`;
	die "could not start ZooKeeper in $dir" if $? != 0;
	chomp $port;
	push @zk_dirs, $dir;
	return $port;
}

sub stop_zookeeper
{
	system('bash', $zk_script, 'stop', $_) for @zk_dirs;
	@zk_dirs = ();
}

# Stop what we started even when a test dies.
END { stop_zookeeper(); }

# Send a four-letter word; returns the answer.
sub zk_cmd
{
	my ($port, $word) = @_;
	my $answer;
	# bounded: never let a silent server hang a test
	local $SIG{ALRM} = sub { die "ZooKeeper on $port did not answer '$word'\n" };
	alarm 10;
	my $s = IO::Socket::INET->new(
		PeerAddr => '127.0.0.1',
		PeerPort => $port,
		Timeout => 5) or die "cannot reach ZooKeeper on $port: $!";
	print $s $word;
	{
		local $/;
		$answer = <$s>;
	}
	close $s;
	alarm 0;
	return $answer // '';
}

# The server's `mntr` counters as a hash.
sub zk_mntr
{
	my ($port) = @_;
	my %m;
	for (split /\n/, zk_cmd($port, 'mntr'))
	{
		my ($k, $v) = split /\t/;
		$m{$k} = $v if defined $v;
	}
	return \%m;
}

# Ephemeral nodes under a root, from the server's `dump` (every lock node is ephemeral).
sub zk_lock_nodes
{
	my ($port, $root) = @_;
	$root //= '/zk_lock';
	return grep { m{^\s*\Q$root\E/} } map { s/^\s+//r } split /\n/, zk_cmd($port, 'dump');
}

# A started cluster with zk_lock preloaded, pointing at the given ZooKeeper port(s).
sub new_zk_cluster
{
	my ($name, $zk_port, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $hosts = $opt{hosts} // "127.0.0.1:$zk_port";
	$hosts = '' unless defined $opt{hosts} || defined $zk_port;
	my $preload = $opt{preload} // 1;
	$node->append_conf('postgresql.conf', join("\n",
		($preload ? "shared_preload_libraries = 'zk_lock'" : ()),
		"zk_lock.hosts = '$hosts'",
		"cluster_name = '$name'",
		"max_connections = 60",
		$opt{conf} // '') . "\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION zk_lock');
	return $node;
}

# Poll a condition every 50 ms for up to $timeout seconds; true when it held.
sub wait_for
{
	my ($cond, $timeout) = @_;
	my $deadline = time() + ($timeout // 30);
	while (time() < $deadline)
	{
		return 1 if $cond->();
		usleep(50_000);
	}
	return $cond->() ? 1 : 0;
}

1;
