# Lock nodes no request owns.
#  - One of this cluster's own session, as a create applied after its lookup
#    by uuid leaves behind (zk_lock.test_orphan makes one ahead of each
#    request): a waiter blocked by it checks the owner and deletes it within
#    about half a session timeout, instead of waiting for ever.
#  - One with this cluster's name pattern but another session's (a promoted
#    standby shares the system identifier): never deleted; the waiter waits
#    until that session ends, then gets the lock.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZkLockTest;

my $zk = start_zookeeper('orphans');
# 2 s: waiters re-read their queue every second
my $a = new_zk_cluster('oa', $zk, conf => "zk_lock.session_timeout = '2s'\n");

sub waiting
{
	return $a->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND backend_type = 'client backend'");
}

# --- our own session's orphan ahead of a request ---
$a->append_conf('postgresql.conf', "zk_lock.test_orphan = on\n");
$a->reload;
sleep 1;    # the worker rereads its configuration on the signal
my $t0 = time();
$a->safe_psql('postgres', "BEGIN; SELECT zk_lock('behind an orphan'); COMMIT;", timeout => 30);
my $took = time() - $t0;
like(slurp_file($a->logfile), qr/deleting lock node .*tbehind an orphan.*: no request of this cluster owns it/,
	'the orphan ahead of the request was found and deleted');
cmp_ok($took, '<', 10, sprintf('so the request was granted (after %.1f s)', $took));
$a->append_conf('postgresql.conf', "zk_lock.test_orphan = off\n");
$a->reload;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));

# --- another session's node that looks like ours ---
my $sysid = $a->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
my $foreign = "/zk_lock/tforeign/x-00000000-0000-4000-8000-000000000000-$sysid-1-0000000000";
my ($in, $out) = ('', '');
my $cli = IPC::Run::start([ '/usr/share/zookeeper/bin/zkCli.sh', '-server', "127.0.0.1:$zk" ],
	'<', \$in, '>', \$out, '2>&1', IPC::Run::timeout(60));
$in .= "create /zk_lock/tforeign\ncreate -e $foreign x\n";
$cli->pump until $out =~ /Created \Q$foreign\E/;
pass('another ZooKeeper session holds a node named like ours');

my $w = $a->background_psql('postgres');
$w->query_until(qr/asked/, "\\echo asked\nBEGIN;\nSELECT zk_lock('foreign');\n\\echo granted\n");
ok(wait_for(sub { waiting() == 1 }, 10), 'a request queues behind it');
sleep 3;    # three rechecks of the queue
is(waiting(), 1, 'and keeps waiting');
ok(scalar(grep { $_ eq $foreign } zk_lock_nodes($zk)), 'the other session\'s node was not touched');

$in .= "quit\n";
$cli->finish;
like($w->query_until(qr/granted/, ''), qr/granted/, 'once that session ends, the request is granted');
$w->query_safe('COMMIT');
$w->quit;
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');

$a->stop;
done_testing();
