# An operator's ACL on a key node that refuses zk_lock for a while (here:
# create only, no read, no delete), on a real ZooKeeper:
#  - a held lock's release is refused: its node stays, and blocks the key,
#    until the delete goes through; it is sent again each re-check interval
#    (half the session timeout) and said once in the server log;
#  - a new request whose queue read is refused fails at once with 42501,
#    and its node too is deleted once that is allowed again;
#  - a waiter of another cluster keeps waiting meanwhile, and is granted
#    once the ACL is lifted, well within the session timeout; nothing is
#    left behind.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZkLockTest;

my $zk = start_zookeeper('acl');
my $conf = "zk_lock.session_timeout = '10s'\n";
my $a = new_zk_cluster('acla', $zk, conf => $conf);
my $b = new_zk_cluster('aclb', $zk, conf => $conf);
for my $n ($a, $b)
{
	ok(wait_for(sub { $n->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('warm', 0); COMMIT") eq 't' }, 30),
		$n->name . ' grants');
}

my $ha = $a->background_psql('postgres');
$ha->query_safe("BEGIN; SELECT zk_lock('refused')");
my $hb = $b->background_psql('postgres');
$hb->query_until(qr/waiting/, "\\echo waiting\nBEGIN;\nSELECT zk_lock('refused');\n");
ok(wait_for(sub { waiting_count($b) == 1 }, 10), 'B waits behind A');

my $key = '/zk_lock/trefused';
unlike(zk_cli($zk, 'setAcl', $key, 'world:anyone:ca'), qr/Insufficient|does not exist/,
	'the operator refuses read and delete');

my $retries0 = zk_status($a, 'delete_retries');
my $log_at = -s $a->logfile;
$ha->query_safe('COMMIT');
ok(wait_for(sub { zk_status($a, 'delete_retries') > $retries0 }, 10), "A's release is refused");
is(key_queue_len($zk, 'refused'), 2, "A's node stays, and B's behind it");
is(waiting_count($b), 1, 'B still waits');

# a new request: its create goes through, its queue read is refused
my ($ret, $out, $err) = $a->psql('postgres', "BEGIN; SELECT zk_lock('refused'); COMMIT", extra_params => ['-v', 'VERBOSITY=verbose']);
like($err, qr/ERROR:  42501: could not read the ZooKeeper lock queue of key node trefused/,
	'a request whose queue read is refused fails with 42501 at once');
is(key_queue_len($zk, 'refused'), 3, 'its node cannot be deleted yet either');

# a while later nothing has changed: A's node is not given up
usleep(6_000_000);
is(key_queue_len($zk, 'refused'), 3, 'while the ACL refuses, the nodes stay (they hold the key)');
is(waiting_count($b), 1, 'and B waits');

# the clock starts once the ACL is lifted: zk_cli starts a JVM, seconds on a slow machine
my $lift = zk_cli($zk, 'setAcl', $key, 'world:anyone:cdrwa');
my $lifted = time();
unlike($lift, qr/Insufficient|does not exist/, 'the operator lifts the ACL');
ok(wait_for(sub { waiting_count($b) == 0 }, 30), 'B is granted');
my $took = time() - $lifted;
cmp_ok($took, '<', 9, "within a re-check interval or so (5 s), well under the session timeout (10 s): ${took} s");
like($hb->query_safe("SELECT zk_lock_token('refused') > 0"), qr/t/, "B holds the lock");
ok(wait_for(sub { key_queue_len($zk, 'refused') == 1 }, 10), "the refused nodes are gone: only B's is left");
$hb->query_safe('COMMIT');
ok(wait_for(sub { key_queue_len($zk, 'refused') == 0 }, 10), 'nothing is left behind');

my $log = slurp_file($a->logfile, $log_at);
my %said;
$said{$1}++ while $log =~ /could not delete lock node (x-\S+): not authenticated; trying again/g;
is(scalar(keys %said), 2, 'each refused delete is said in the server log');
is(join(',', sort values %said), '1,1', 'once per node, not at every try');

$ha->quit;
$hb->quit;
$a->stop;
$b->stop;
stop_zookeeper($zk);
done_testing();
