# zk_lock behind PgBouncer (Debian's package, started here on 127.0.0.1 with
# one server connection per pool):
#  - transaction pooling with transaction-level locks: a lock is held until
#    its COMMIT, whichever client shares the server connection next;
#  - session pooling with the default reset query (DISCARD ALL): a client
#    that leaves without unlocking its session-level lock leaks nothing to
#    the next client of the same server connection, and the key is free;
#  - DISCARD ALL releases session-level locks, DISCARD PLANS and the like
#    keep them (as core's advisory locks).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('poolers');
my $a = new_zk_cluster('pla', $zk);
my $b = new_zk_cluster('plb', $zk);
for my $n ($a, $b)
{
	ok(wait_for(sub { $n->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' }, 30),
		$n->name . ' grants');
}

sub b_can_take
{
	my ($key) = @_;
	return $b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('$key'); COMMIT");
}

# A release is asynchronous (its node is deleted after the COMMIT returns):
# a key just released is free within a moment, so B's try waits up to 5 s.
sub b_gets
{
	my ($key) = @_;
	return $b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('$key', 5000); COMMIT");
}

# --- PgBouncer in front of A: one server connection per pool ---
my $dir = "${ZkLockTest::scratch}/pgbouncer";
mkdir $dir;
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $user = getpwuid($<);
my $server = "host=" . $a->host . " port=" . $a->port . " dbname=postgres user=$user pool_size=1";
PostgreSQL::Test::Utils::append_to_file("$dir/pgbouncer.ini", <<"INI");
[databases]
txn = $server pool_mode=transaction
sess = $server pool_mode=session

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = any
server_reset_query = DISCARD ALL
default_pool_size = 1
max_client_conn = 20
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
my $bouncer = IPC::Run::start([ 'pgbouncer', "$dir/pgbouncer.ini" ], '>', "$dir/out", '2>', "$dir/err");
END { $bouncer->kill_kill if $bouncer; }

sub via
{
	my ($db) = @_;
	return "host=127.0.0.1 port=$port dbname=$db user=$user";
}

sub through
{
	my ($db, $sql) = @_;
	my ($ret, $out, $err) = $a->psql('postgres', $sql, connstr => via($db));
	return wantarray ? ($out, $err) : $out;
}
ok(wait_for(sub { (through('txn', 'SELECT 1'))[0] eq '1' }, 20), 'PgBouncer serves A');

# --- transaction pooling, transaction-level locks ---
my $c1 = $a->background_psql('postgres', on_error_stop => 0, extra_params => [ '-d', via('txn') ]);
my $pid1 = $c1->query_safe("BEGIN; SELECT zk_lock('t-key'); SELECT pg_backend_pid()");
$pid1 =~ s/.*\n//s;
is(b_can_take('t-key'), 'f', 'transaction pooling: the lock is held inside the transaction');
$c1->query_safe('COMMIT');
is(b_gets('t-key'), 't', 'and released at COMMIT');
my $c2 = $a->background_psql('postgres', on_error_stop => 0, extra_params => [ '-d', via('txn') ]);
is($c2->query_safe("SELECT pg_backend_pid()"), $pid1, 'the next client gets the same server connection');
is($c2->query_safe("SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid()"), '0', 'holding nothing');
$c2->query_safe("BEGIN; SELECT zk_lock('t-key')");
is(b_can_take('t-key'), 'f', 'and takes the key in its own transaction');
$c2->query_safe('ROLLBACK');
is(b_gets('t-key'), 't', 'until its ROLLBACK');
$_->quit for ($c1, $c2);

# --- session pooling, DISCARD ALL as the reset query ---
my $s1 = $a->background_psql('postgres', on_error_stop => 0, extra_params => [ '-d', via('sess') ]);
my $spid = $s1->query_safe("SELECT zk_session_lock('s-key'); SELECT pg_backend_pid()");
$spid =~ s/.*\n//s;
is(b_can_take('s-key'), 'f', 'session pooling: a client holds a session-level lock');
$s1->quit;
ok(wait_for(sub { b_can_take('s-key') eq 't' }, 10),
	'it left without unlocking: the reset query (DISCARD ALL) released it');
my ($next) = through('sess',
	"SELECT pg_backend_pid(), (SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid())");
is($next, "$spid|0", 'the next client, on the same server connection, inherits no lock');
my (undef, $err) = through('sess', "SELECT zk_session_unlock('s-key')");
like($err, qr/WARNING:  you don't own a zk_lock session-level exclusive lock on key "s-key"/,
	'and cannot unlock the former client\'s');

# --- which DISCARD releases them, directly on A ---
for my $what ('PLANS', 'SEQUENCES', 'TEMP')
{
	my $key = "discard-" . lc($what);
	is(
		$a->safe_psql('postgres',
			"SELECT zk_session_lock('$key'); DISCARD $what; SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid()"),
		"\n1", "DISCARD $what keeps session-level locks");
}
is(
	$a->safe_psql('postgres',
		"SELECT zk_session_lock('discard-all'); DISCARD ALL; SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid() AND state <> 'releasing'"),
	"\n0", 'DISCARD ALL releases them');
ok(wait_for(sub { b_can_take('discard-all') eq 't' }, 10), 'the key is free for another cluster');

$bouncer->kill_kill;
$bouncer = undef;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));
$a->stop;
$b->stop;
done_testing();
