# The soak's servers: a three-member ZooKeeper ensemble whose every link runs
# through the project's TCP proxy (member to member, quorum and election, in
# each direction; and each cluster to each member), three PostgreSQL clusters
# with zk_lock, and a fourth, plain PostgreSQL server, the store, which holds
# the data the locks protect.  Each fault of the nemesis is one call here.
package SoakTopology;

use strict;
use warnings;

use File::Basename qw(dirname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time usleep);
use ZkLockTest qw(start_proxy proxy_do new_zk_cluster);

my $zk_script = dirname(__FILE__) . '/../zk.sh';

# Settings every soak cluster runs with: a short session timeout, so that
# faults outlast it often; the rest as shipped.
our $session_timeout_s = 4;
our $lock_delay_s = 2;

sub new
{
	my ($class, %opt) = @_;
	my $self = bless { name => $opt{name} // 'soak', nclusters => $opt{clusters} // 3 }, $class;
	$self->start_members;
	$self->start_store;
	$self->start_clusters;
	return $self;
}

# Members reach each other only through proxies: member j's zoo.cfg names
# member i (i != j) by the ports of the proxies j->i.
sub start_members
{
	my ($self) = @_;
	my $dir = "$ZkLockTest::scratch/zk_$self->{name}";
	$self->{zkdir} = $dir;
	my %m;
	for (split /\n/, `bash $zk_script prepare $dir 3`)
	{
		my ($i, $client, $quorum, $election) = split ' ';
		$m{$i} = { client => $client, quorum => $quorum, election => $election };
	}
	die "could not configure an ensemble in $dir" if $? != 0 || keys %m != 3;
	for my $j (1 .. 3)
	{
		my $cfg = slurp_file("$dir/$j/zoo.cfg");
		for my $i (grep { $_ != $j } 1 .. 3)
		{
			for my $kind (qw(quorum election))
			{
				$self->{peer}{$j}{$i}{$kind} = start_proxy("$self->{name}_${j}to${i}_$kind", $m{$i}{$kind});
			}
			my ($q, $e) = map { $self->{peer}{$j}{$i}{$_}{port} } qw(quorum election);
			$cfg =~ s/^server\.$i=.*$/server.$i=127.0.0.1:$q:$e/m;
		}
		open my $fh, '>', "$dir/$j/zoo.cfg" or die "$dir/$j/zoo.cfg: $!";
		print $fh $cfg;
		close $fh;
	}
	$self->{members} = \%m;
	ZkLockTest::adopt_zookeeper($dir);
	system("bash $zk_script start-all $dir >/dev/null") == 0 or die "could not start the ensemble in $dir";
}

sub member_dir { my ($self, $i) = @_; return "$self->{zkdir}/$i"; }

sub member_pid
{
	my ($self, $i) = @_;
	my $f = $self->member_dir($i) . '/zk.pid';
	return undef unless -f $f;
	my $pid = slurp_file($f);
	chomp $pid;
	return $pid;
}

sub member_mode
{
	my ($self, $i) = @_;
	my $mode = `bash $zk_script mode @{[ $self->member_dir($i) ]}`;
	chomp $mode;
	return $mode;
}

# The member that leads now, or undef.
sub leader
{
	my ($self) = @_;
	for my $i (1 .. 3) { return $i if $self->member_mode($i) eq 'leader'; }
	return undef;
}

sub member_kill
{
	my ($self, $i) = @_;
	my $pid = $self->member_pid($i) or return;
	kill 'KILL', $pid;
	waitpid($pid, 0);    # not our child: returns at once
	unlink($self->member_dir($i) . '/zk.pid');
}

# Start a killed member again without waiting for it to serve (it may not
# find a quorum while another fault lasts).
sub member_start
{
	my ($self, $i) = @_;
	return if $self->member_pid($i);
	system("bash $zk_script launch @{[ $self->member_dir($i) ]}") == 0 or die "could not launch member $i";
}

sub member_signal
{
	my ($self, $i, $sig) = @_;
	my $pid = $self->member_pid($i) or return;
	kill $sig, $pid;
}

# Cut member $i off from the other two (both directions, both ports); its
# clients stay connected to it.
sub member_cut
{
	my ($self, $i, $what) = @_;
	for my $j (grep { $_ != $i } 1 .. 3)
	{
		for my $kind (qw(quorum election))
		{
			proxy_do($self->{peer}{$j}{$i}{$kind}, $what);
			proxy_do($self->{peer}{$i}{$j}{$kind}, $what);
		}
	}
}

sub start_store
{
	my ($self) = @_;
	my $store = PostgreSQL::Test::Cluster->new("$self->{name}_store");
	$store->init;
	$store->append_conf('postgresql.conf', "max_connections = 80\n");
	$store->start;
	$store->safe_psql('postgres', <<'SQL');
-- Lists written under exclusive locks; the fence refuses a write whose token
-- is below the greatest the store has accepted for that key (ZF001), and one
-- made from a list read before another writer's commit (ZF002): a holder
-- that commits after the next one read is the commit window, and must show
-- as a refusal, never as a lost element.
CREATE TABLE lists (key text PRIMARY KEY, elems bigint[] NOT NULL DEFAULT '{}',
                    max_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0);
CREATE FUNCTION fence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.max_token < OLD.max_token THEN
    RAISE EXCEPTION 'fenced: token % below %', NEW.max_token, OLD.max_token USING ERRCODE = 'ZF001';
  END IF;
  IF NEW.version <> OLD.version + 1 THEN
    RAISE EXCEPTION 'stale read: version % written over %', NEW.version, OLD.version USING ERRCODE = 'ZF002';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER fence BEFORE UPDATE ON lists FOR EACH ROW EXECUTE FUNCTION fence();
-- The nemesis's commit pause: a row armed for cluster c makes the next
-- remote commit of a list write from c (postgres_fdw commits after
-- zk_lock's commit check) sleep, once.
CREATE TABLE commit_pause (cluster int NOT NULL, seconds float8 NOT NULL);
CREATE FUNCTION commit_pause() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  s float8;
BEGIN
  -- the nemesis may take back a row that did not land at this very moment: under
  -- the remote transaction's repeatable read that is a serialization failure of
  -- the nemesis's own table, not of the write (no pause, then)
  BEGIN
    DELETE FROM public.commit_pause WHERE ctid = (SELECT ctid FROM public.commit_pause
        WHERE cluster::text = substring(current_setting('application_name') FROM '^soak-c([0-9]+)$')
        LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING seconds INTO s;
  EXCEPTION WHEN serialization_failure THEN
    s := NULL;
  END;
  IF s IS NOT NULL THEN
    PERFORM pg_sleep(s);
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER commit_pause AFTER UPDATE ON lists DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION commit_pause();
-- A pair a writer changes in two steps, each committed at once, under an
-- exclusive lock; readers under a shared lock must never see it half-done.
CREATE TABLE pair (key text PRIMARY KEY, a bigint NOT NULL DEFAULT 0, b bigint NOT NULL DEFAULT 0,
                   writer_a bigint NOT NULL DEFAULT 0, writer_b bigint NOT NULL DEFAULT 0);
-- Every holder's interval on the store's clock: from after its grant to
-- before its commit.
CREATE TABLE intervals (op bigint NOT NULL, key text NOT NULL, kind text NOT NULL,
                        t1 timestamptz NOT NULL, t2 timestamptz NOT NULL, PRIMARY KEY (op, key));
INSERT INTO lists (key) VALUES ('L0'), ('L1'), ('L2'), ('S1'), ('S2'), ('S3'), ('S4'), ('S5');
INSERT INTO pair (key) VALUES ('P');
SQL
	$self->{store} = $store;
}

# Settings of zk_lock cluster $c; the hosts line is each one's own.  Odd
# clusters keep released nodes for 1 s (zk_lock.linger): their backends take and
# release those nodes themselves, without the worker, under the faults too.
sub cluster_conf
{
	my ($c) = @_;
	return join("\n",
		"zk_lock.linger = '" . ($c % 2 ? 1000 : 0) . "ms'",
		"zk_lock.session_timeout = '${session_timeout_s}s'",
		"zk_lock.lock_delay = '${lock_delay_s}s'",
		"zk_lock.connect_timeout = '30s'",
		"max_connections = 40",
		"restart_after_crash = on",    # a backend killed by the nemesis restarts the cluster
		"log_min_messages = error",
		"log_line_prefix = '%m [%p] '") . "\n";
}

sub start_clusters
{
	my ($self) = @_;
	my ($store_host, $store_port) = ($self->{store}->host, $self->{store}->port);
	for my $c (1 .. $self->{nclusters})
	{
		my $name = "$self->{name}_c$c";
		my @links = map { start_proxy("${name}_to$_", $self->{members}{$_}{client}) } 1 .. 3;
		$self->{links}{$c} = \@links;
		my $node = new_zk_cluster($name, undef, hosts => $self->hosts_of($c, 1 .. 3), conf => cluster_conf($c));
		$node->safe_psql('postgres', <<"SQL");
CREATE EXTENSION postgres_fdw;
CREATE SERVER store FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '$store_host', port '$store_port', dbname 'postgres', application_name 'soak-c$c');
CREATE USER MAPPING FOR CURRENT_USER SERVER store;
IMPORT FOREIGN SCHEMA public LIMIT TO (lists, intervals) FROM SERVER store INTO public;
SQL
		$self->{cluster}{$c} = $node;
	}
}

sub clusters { my ($self) = @_; return map { $self->{cluster}{$_} } 1 .. $self->{nclusters}; }

# zk_lock.hosts for cluster $c through its proxies to the given members.
sub hosts_of
{
	my ($self, $c, @members) = @_;
	return join(',', map { "127.0.0.1:$self->{links}{$c}[$_ - 1]{port}" } @members);
}

# blackhole | reset | pass on every link of cluster $c
sub cluster_link
{
	my ($self, $c, $what) = @_;
	proxy_do($_, $what) for @{ $self->{links}{$c} };
}

sub postmaster_pid
{
	my ($self, $c) = @_;
	my $node = $self->{cluster}{$c};
	my $f = $node->data_dir . '/postmaster.pid';
	return undef unless -f $f;
	my ($pid) = split /\n/, slurp_file($f);
	return $pid;
}

# The cluster's processes: the postmaster and its children.
sub cluster_pids
{
	my ($self, $c) = @_;
	my $pm = $self->postmaster_pid($c) or return ();
	return ($pm, map { /(\d+)/ ? $1 : () } `ps -o pid= --ppid $pm`);
}

sub worker_pid
{
	my ($self, $c) = @_;
	my $pm = $self->postmaster_pid($c) or return undef;
	my ($line) = grep { /zk_lock worker/ } `ps -o pid=,args= --ppid $pm`;
	return $line && $line =~ /^\s*(\d+)/ ? $1 : undef;
}

# Arm the store's commit pause for cluster $c and wait (at most 5 s) until a
# list write's remote commit from $c sleeps in it: 1 if one did.  A pause
# that did not land is taken back (unless one takes it at that moment:
# then it is only a slow commit).
sub commit_pause
{
	my ($self, $c, $seconds) = @_;
	my $store = $self->{store};
	my $sql = sub {
		my ($out, $err) = ('', '');
		$store->psql('postgres', $_[0], stdout => \$out, stderr => \$err, timeout => 5, timed_out => \my $timed_out);
		return $out;
	};
	$sql->("INSERT INTO commit_pause VALUES ($c, $seconds)");
	my $until = time() + 5;
	while (time() < $until)
	{
		return 1 if $sql->("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'soak-c$c' "
			  . "AND wait_event = 'PgSleep'") =~ /^[1-9]/;
		usleep(50_000);
	}
	$sql->("DELETE FROM commit_pause WHERE ctid IN (SELECT ctid FROM commit_pause WHERE cluster = $c "
		  . "FOR UPDATE SKIP LOCKED)");
	return 0;
}

# Is a backend of cluster $c inside a critical section now?  2: a long one
# (see SoakWorkload::in_section), 1: a short one, 0: none.
sub inside_section
{
	my ($self, $c) = @_;
	my ($out, $err) = ('', '');
	$self->{cluster}{$c}->psql('postgres',
		"SELECT coalesce(max(CASE WHEN application_name LIKE '%:in:long' THEN 2 ELSE 1 END), 0) "
		  . "FROM pg_stat_activity WHERE application_name LIKE 'soak%:in%'",
		stdout => \$out, stderr => \$err, timeout => 5, timed_out => \my $timed_out);
	return $out =~ /^(\d+)$/ ? $1 : 0;
}

# A client backend of the soak's workloads in cluster $c, preferring one
# inside a critical section ('in' in its application_name), or undef.
sub soak_backend
{
	my ($self, $c, $inside) = @_;
	my $node = $self->{cluster}{$c};
	my ($out, $err) = ('', '');
	$node->psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'soak%' "
		  . "ORDER BY (application_name LIKE '%:in%') DESC, random() LIMIT 1",
		stdout => \$out, stderr => \$err, timeout => 10, timed_out => \my $timed_out);
	return $out =~ /^(\d+)$/ ? $1 : undef;
}

# A clean restart (pg_ctl's fast mode), run by the nemesis in a child
# process: nothing here may end the test.  The postmaster and all it forks
# keep the clock rate the cluster has now (a clock_rate fault's), if any.
sub restart_cluster
{
	my ($self, $c) = @_;
	my $node = $self->{cluster}{$c};
	local %ENV = (%ENV, $self->clock_env($c));
	system('pg_ctl', '-w', '-s', '-D', $node->data_dir, '-l', $node->logfile, '-m', 'fast', 'restart');
}

# libfaketime's settings for cluster $c's clock rate: its wall clock and
# monotonic clocks (boot-time included) run at that rate from the start.
sub clock_env
{
	my ($self, $c) = @_;
	my $rate = $self->{rate}{$c} or return ();
	my ($lib) = glob('/usr/lib/*/faketime/libfaketimeMT.so.1') or die 'libfaketime is not installed';
	return (LD_PRELOAD => $lib,
		FAKETIME => "+0 x$rate", FAKETIME_DONT_RESET => 1);
}

# Start again every cluster a fault left down (a crash, a failed restart).
sub revive
{
	my ($self) = @_;
	for my $c (1 .. $self->{nclusters})
	{
		my $pid = $self->postmaster_pid($c);
		next if $pid && kill(0, $pid);
		local %ENV = (%ENV, $self->clock_env($c));
		$self->{cluster}{$c}->start(fail_ok => 1);
	}
}

sub stop_all
{
	my ($self) = @_;
	for my $c (1 .. $self->{nclusters})
	{
		kill 'CONT', $self->cluster_pids($c);
		$self->{cluster}{$c}->stop('immediate', fail_ok => 1);
	}
	$self->{store}->stop('fast', fail_ok => 1);
	for my $i (1 .. 3) { $self->member_signal($i, 'CONT'); }
}

1;
