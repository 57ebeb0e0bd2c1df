# Helpers for zk_lock's TAP tests: a private ZooKeeper server per test file,
# PostgreSQL clusters preloaded with zk_lock, and reads of ZooKeeper's own
# counters (four-letter words) so tests check the server, not our word for it.
package ZkLockTest;

use strict;
use warnings;

use Exporter 'import';
use File::Basename qw(basename dirname);
use File::Path qw(make_path);
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(start_zookeeper start_ensemble start_partitionable_ensemble stop_zookeeper zk_member
  zk_restart_member zk_cmd zk_mntr zk_lock_nodes zk_session_nodes key_queue_len new_zk_cluster wait_for
  start_proxy proxy_do install_counter run_counter_load start_commit_loop finish_commit_loop zk_status
  waiting_count resets_until counter_reached foreign_writer_rounds cohort_clusters token_node zk_cli);

my $zk_script = dirname(__FILE__) . '/../test/zk.sh';
my $proxy_script = dirname(__FILE__) . '/../test/zk_proxy.pl';
my @zk_dirs;
my @proxy_pids;
my $load_seq = 0;

# Each test file's own scratch directory: make test runs two test files at
# once (TAP_JOBS), and they share tmp_check.
# (tmp_check is set in PostgreSQL::Test::Utils' INIT block, which runs first)
our $scratch;
INIT
{
	$scratch = "${PostgreSQL::Test::Utils::tmp_check}/" . basename($0, '.pl');
	make_path($scratch);
}

# Start a standalone ZooKeeper on 127.0.0.1; returns its client port.
sub start_zookeeper
{
	my ($name) = @_;
	my $dir = "${scratch}/zk_$name";
	my $port = `bash $zk_script start $dir`;
	die "could not start ZooKeeper in $dir" if $? != 0;
	chomp $port;
	push @zk_dirs, $dir;
	return $port;
}

# Start an ensemble of $n members on 127.0.0.1; returns their client ports.
sub start_ensemble
{
	my ($name, $n) = @_;
	my $dir = "${scratch}/zk_$name";
	my $ports = `bash $zk_script ensemble $dir $n`;
	die "could not start a ZooKeeper ensemble in $dir" if $? != 0;
	chomp $ports;
	push @zk_dirs, $dir;
	return split /,/, $ports;
}

# A 3-member ensemble whose member 1 reaches the other two (their quorum and
# election ports) only through proxies, so that blackholing those proxies
# cuts member 1 off from the leader while its clients stay connected to it.
# $sync_limit (ticks of 500 ms) is how long member 1 then goes on serving
# them.  Returns (client ports, proxies).  Member 1 may still be elected
# leader: the caller checks.
sub start_partitionable_ensemble
{
	my ($name, $sync_limit) = @_;
	my $dir = "${scratch}/zk_$name";
	local $ENV{ZK_SYNC_LIMIT} = $sync_limit;
	my %m;
	for (split /\n/, `bash $zk_script prepare $dir 3`)
	{
		my ($i, $client, $quorum, $election) = split ' ';
		$m{$i} = { quorum => $quorum, election => $election };
	}
	die "could not configure an ensemble in $dir" if $? != 0 || keys %m != 3;
	my $cfg = PostgreSQL::Test::Utils::slurp_file("$dir/1/zoo.cfg");
	my @proxies;
	for my $i (2, 3)
	{
		my ($q, $e) = map { start_proxy("${name}_${i}_$_", $m{$i}{$_}) } qw(quorum election);
		push @proxies, $q, $e;
		$cfg =~ s/^server\.$i=.*$/server.$i=127.0.0.1:$q->{port}:$e->{port}/m;
	}
	open my $fh, '>', "$dir/1/zoo.cfg" or die;
	print $fh $cfg;
	close $fh;
	push @zk_dirs, $dir;
	my $ports = `bash $zk_script start-all $dir`;
	die "could not start the ensemble in $dir" if $? != 0;
	chomp $ports;
	return ([ split /,/, $ports ], \@proxies);
}

# Member $i (from 1) of an ensemble: its pid (undef when stopped), port and mode.
sub zk_member
{
	my ($name, $i) = @_;
	my $dir = "${scratch}/zk_$name/$i";
	my $pid = -f "$dir/zk.pid" ? PostgreSQL::Test::Utils::slurp_file("$dir/zk.pid") : undef;
	chomp $pid if defined $pid;
	my $mode = `bash $zk_script mode $dir`;
	chomp $mode;
	return { pid => $pid, port => 0 + PostgreSQL::Test::Utils::slurp_file("$dir/port"), mode => $mode };
}

# Start a member again after it was killed; returns once it serves.
sub zk_restart_member
{
	my ($name, $i) = @_;
	system('bash', $zk_script, 'restart', "${scratch}/zk_$name/$i") == 0
	  or die "could not restart member $i of $name";
}

# Stop the servers under $dir at the end, as those started here.
sub adopt_zookeeper { push @zk_dirs, $_[0]; }

sub stop_zookeeper
{
	system('bash', $zk_script, 'stop', $_) for @zk_dirs;
	@zk_dirs = ();
}

# A TCP proxy (test/zk_proxy.pl) in front of the given ZooKeeper ports;
# returns { port, pid }.  Drive it with proxy_do.
sub start_proxy
{
	my ($name, @upstream) = @_;
	my $portfile = "${scratch}/proxy_$name.port";
	unlink $portfile;
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		exec('perl', $proxy_script, $portfile, @upstream) or die "exec: $!";
	}
	push @proxy_pids, $pid;
	wait_for(sub { -s $portfile }, 10) or die "proxy $name did not start";
	my $port = PostgreSQL::Test::Utils::slurp_file($portfile);
	chomp $port;
	return { port => $port, pid => $pid };
}

# blackhole | reset | pass
sub proxy_do
{
	my ($proxy, $what) = @_;
	my %sig = (blackhole => 'USR1', reset => 'USR2', pass => 'HUP');
	kill $sig{$what} // die("unknown proxy action $what"), $proxy->{pid};
}

# Reset the proxy's connections every 300 ms until $done->() holds (at most
# 100 times: bounded); returns how many resets.
sub resets_until
{
	my ($proxy, $done) = @_;
	my $n = 0;
	for (1 .. 100)
	{
		last if $done->();
		proxy_do($proxy, 'reset');
		$n++;
		usleep(300_000);
	}
	return $n;
}

# The counter of install_counter reached $n (less a margin for the last in flight).
sub counter_reached
{
	my ($path, $n) = @_;
	my $v = PostgreSQL::Test::Utils::slurp_file($path) =~ s/\s+//gr;
	return $v ne '' && $v >= $n - 10;
}

# Stop what we started even when a test dies.
END
{
	local $?;    # waitpid and system would replace the test's exit status
	for my $pid (@proxy_pids)
	{
		kill 'TERM', $pid;
		waitpid($pid, 0);
	}
	stop_zookeeper();
}

# A counter in a file outside every cluster, and bump(path) in each node:
# read, dawdle, write, so that without mutual exclusion increments get lost.
sub install_counter
{
	my ($name, @nodes) = @_;
	my $path = "${scratch}/counter_$name";
	PostgreSQL::Test::Utils::append_to_file($path, "0\n");
	chmod 0666, $path;
	my $bump = q{
CREATE FUNCTION bump(path text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
  n := coalesce(nullif(btrim(pg_read_file(path), E' \n'), '')::int, 0);
  PERFORM pg_sleep(0.002);
  EXECUTE format('COPY (SELECT %s) TO %L', n + 1, path);
  RETURN n + 1;
END $$;
};
	$_->safe_psql('postgres', $bump) for @nodes;
	return $path;
}

# pgbench with a script on every node at once: $clients clients each run it
# $per_client times.  Returns one [exit code, stdout, stderr] per node.
sub run_counter_load
{
	my ($nodes, $clients, $per_client, $body, %opt) = @_;
	# one file per call: loads may run inside another's 'during'
	my $script = "${scratch}/load_" . ++$load_seq . '.sql';
	open my $fh, '>', $script or die;
	print $fh $body;
	close $fh;
	my @runs;
	for my $node (@$nodes)
	{
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(
			[ 'pgbench', '-n', '-c', $clients, '-j', $clients, '-t', $per_client,
			  @{ $opt{pgbench_args} // [] },
			  '-f', $script, '-h', $node->host, '-p', $node->port, 'postgres' ],
			'>', \$out, '2>', \$err,
			IPC::Run::timeout($opt{timeout} // 120));
		push @runs, [ $h, \$out, \$err ];
	}
	$opt{during}->() if $opt{during};
	my @results;
	for (@runs)
	{
		my ($h, $out, $err) = @$_;
		$h->finish;
		push @results, [ $h->result(0), $$out, $$err ];
	}
	return @results;
}

# One client on $node taking $key and committing, transaction after
# transaction, for up to $seconds (pgbench, logging when each one ended).
# Stop it with finish_commit_loop.
sub start_commit_loop
{
	my ($node, $key, $seconds) = @_;
	my $n = ++$load_seq;
	my $script = "${scratch}/loop_$n.sql";
	my $prefix = "${scratch}/loop_$n";
	PostgreSQL::Test::Utils::append_to_file($script, "BEGIN;\nSELECT zk_lock('$key');\nCOMMIT;\n");
	my $err = '';
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '1', '-T', $seconds, '-l', "--log-prefix=$prefix", '-f', $script,
		  '-h', $node->host, '-p', $node->port, 'postgres' ],
		'>', \my $out, '2>', \$err, IPC::Run::timeout($seconds + 60));
	return { run => $h, prefix => $prefix, err => \$err };
}

# Wait for such a loop to end; returns its exit code, its stderr and the end
# times (epoch seconds) of its committed transactions.
sub finish_commit_loop
{
	my ($loop) = @_;
	$loop->{run}->finish;
	# pgbench -l: client, transaction, latency, script, end (s), end (us)
	my @ends = map { my @f = split ' '; $f[4] + $f[5] / 1e6 }
	  map { split /\n/, PostgreSQL::Test::Utils::slurp_file($_) } glob("$loop->{prefix}.*");
	return ($loop->{run}->result(0), ${ $loop->{err} }, @ends);
}

# Two clusters for the local hand-over tests: A reaches a private ZooKeeper
# through a proxy (to cut its connection), B directly; hand-over limit
# $limit, session timeout $timeout_s, lock_timeout 60 s.  Returns the
# ZooKeeper port, the proxy and the two clusters (named <prefix>a, <prefix>b).
sub cohort_clusters
{
	my ($name, $prefix, $limit, $timeout_s) = @_;
	my $zk = start_zookeeper($name);
	my $proxy = start_proxy($name, $zk);
	my $conf = "zk_lock.local_handover_limit = $limit\nzk_lock.session_timeout = '${timeout_s}s'\n"
	  . "zk_lock.connect_timeout = '20s'\n";
	my $ca = new_zk_cluster("${prefix}a", undef, hosts => "127.0.0.1:$proxy->{port}", conf => $conf);
	my $cb = new_zk_cluster("${prefix}b", $zk, conf => $conf);
	ok(wait_for(sub { zk_status($ca, 'state') eq 'connected' }, 20), 'A connected through the proxy');
	$_->safe_psql('postgres', "ALTER SYSTEM SET lock_timeout = '60s'; SELECT pg_reload_conf()")
	  for ($ca, $cb);
	return ($zk, $proxy, $ca, $cb);
}

# The high part of a fencing token: its node's czxid (equal in a row: hand-overs).
sub token_node { return int($_[0] / 4096); }

# The local hand-over bound, seen from the other cluster: four clients of
# $busy loop on $key with $lock_fn (20 ms holds, 12 s) while a client of
# $other takes it exclusive, three rounds that count.  In each, once
# $busy's own read of the queue (zk_lock_queue, through its session) shows
# $other's node waiting, the grants of $busy that come before $other's
# (smaller tokens) are at most $limit plus $slack: requests of $busy
# already under way then (its worker has had the child event by that read,
# so every later hand-over waits for a listing that shows the node).  A
# round where no read saw the node wait (it was granted first) has no
# moment to count from: counting from the request would count the grants
# made before the node even existed.  Such a round is noted and another is
# run, up to eight in all.  Returns $busy's tokens in the order they were
# granted.
sub foreign_writer_rounds
{
	my ($busy, $other, $key, $lock_fn, $limit, $slack) = @_;
	my $script = "${scratch}/bound_$key.sql";
	$busy->safe_psql('postgres', "CREATE TABLE bound_$key(token bigint, at timestamptz)");
	append_to_file($script,
		"BEGIN;\nSELECT $lock_fn('$key');\n"
		  . "INSERT INTO bound_$key VALUES (zk_lock_token('$key'), clock_timestamp());\n"
		  . "SELECT pg_sleep(0.02);\nCOMMIT;\n");
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', 4, '-j', 4, '-T', 12, '-f', $script, '-h', $busy->host, '-p', $busy->port,
		  'postgres' ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(90));
	ok(wait_for(sub { $busy->safe_psql('postgres', "SELECT count(*) FROM bound_$key") >= 20 }, 30),
		"$key: four clients of one cluster take turns on the key");
	my $bs = $other->background_psql('postgres', on_error_stop => 0);
	# one session polls: a new psql per read would leave the node unseen for
	# the whole of a short wait
	my $reader = $busy->background_psql('postgres', on_error_stop => 0);
	my $name = $other->name;
	my @waits;
	my $measured = 0;
	for (my $round = 1; $round <= 8 && $measured < 3; $round++)
	{
		my $t0 = time();
		my $seen;
		$bs->query_until(qr/asked/, "BEGIN;\n\\echo asked\nSELECT zk_lock('$key');\n\\echo granted\n");
		my $granted = sub { $bs->{run}->pump_nb; return $bs->{stdout} =~ /granted/; };
		my $deadline = time() + 30;
		while (!defined $seen && !$granted->() && time() < $deadline)
		{
			($seen) = $reader->query_safe(
				"SELECT extract(epoch from clock_timestamp()) FROM zk_lock_queue('$key')"
				  . " WHERE cluster = '$name' AND NOT granted") =~ /([\d.]+)/;
			usleep(5_000) unless defined $seen;
		}
		ok(wait_for($granted, 30), "$key round $round: the other cluster is granted");
		push @waits, sprintf('%.0f ms', 1000 * (time() - $t0));
		my ($token) = $bs->query_safe("SELECT zk_lock_token('$key')") =~ /(\d+)\s*$/;
		$bs->query_safe('COMMIT');
		$bs->{stdout} = '';
		if (defined $seen)
		{
			$measured++;
			my $passed = $busy->safe_psql('postgres',
				"SELECT count(*) FROM bound_$key WHERE at > to_timestamp($seen) AND token < $token");
			cmp_ok($passed, '<=', $limit + $slack,
				"$key round $round: the other cluster was granted after $passed grants (limit $limit)")
			  or diag("ms after the read, node, hand-over of the busy cluster's grants (the other's token $token):\n"
				  . $busy->safe_psql('postgres',
					"SELECT round((extract(epoch from at) - $seen) * 1000) || ' ' || token / 4096 || ' ' || token % 4096"
					  . " FROM bound_$key WHERE at > to_timestamp($seen) - interval '50 ms' ORDER BY at LIMIT 30"));
		}
		else
		{
			note("$key round $round: granted before a read saw its node wait; not counted");
		}
		usleep(200_000);
	}
	is($measured, 3, "$key: three rounds counted from a read that saw the other cluster's node wait");
	$reader->quit;
	$bs->quit;
	note("$key: the other cluster waited " . join(', ', @waits) . ' while four clients looped');
	$h->finish;
	is($h->result(0), 0, "$key: the load ran without errors") or diag($err);
	return split /\n/, $busy->safe_psql('postgres', "SELECT token FROM bound_$key ORDER BY at");
}

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

# zkCli.sh from Debian's zookeeper package, with no identity, or one that
# first authenticates ($opt{auth}, user:password): its output and errors.
sub zk_cli
{
	my ($port, @command) = @_;
	my $auth = ref $command[0] eq 'HASH' ? shift(@command)->{auth} : undef;
	my @cmd = ('/usr/share/zookeeper/bin/zkCli.sh', '-server', "127.0.0.1:$port");
	my $in = (defined $auth ? "addauth digest $auth\n" : '') . join(' ', @command) . "\nquit\n";
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout(60));
	return $out . $err;
}

# Lock nodes under a root, from the server's `dump` (every lock node is
# ephemeral; so are the sessions' presence nodes, which are left out).
sub zk_lock_nodes
{
	my ($port, $root) = @_;
	$root //= '/zk_lock';
	return grep { m{^\s*\Q$root\E/} && !m{/\.sessions/} } map { s/^\s+//r } split /\n/, zk_cmd($port, 'dump');
}

# Presence nodes and tombstones of the sessions under a root (lock-delay).
sub zk_session_nodes
{
	my ($port, $root) = @_;
	$root //= '/zk_lock';
	return grep { m{^\Q$root\E/\.sessions/} } map { s/^\s+//r } split /\n/, zk_cmd($port, 'dump');
}

# How many lock nodes a key (text, under the default root) has in ZooKeeper.
sub key_queue_len
{
	my ($port, $key) = @_;
	return scalar grep { m{^/zk_lock/t\Q$key\E/} } zk_lock_nodes($port);
}

# A started cluster with zk_lock preloaded, pointing at the given ZooKeeper port(s).
sub new_zk_cluster
{
	my ($name, $zk_port, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opt{init} // {} });
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

# One column of a cluster's zk_lock_status().
sub zk_status
{
	my ($node, $col) = @_;
	return $node->safe_psql('postgres', "SELECT $col FROM zk_lock_status()");
}

# How many client backends of a node wait in zk_lock (an Extension wait event).
sub waiting_count
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND backend_type = 'client backend'");
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
