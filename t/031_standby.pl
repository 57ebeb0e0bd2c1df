# A hot standby made with pg_basebackup shares the locks of its primary and
# of every other cluster: its worker keeps a ZooKeeper session of its own,
# read-only transactions there take exclusive, shared and session-level
# locks that exclude the primary and others, and promotion keeps the worker,
# its session and every lock it holds.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('standby');
my $p = new_zk_cluster('sbp', $zk, init => { allows_streaming => 1 });
my $o = new_zk_cluster('sbo', $zk);    # another cluster
$p->backup('base');
my $s = PostgreSQL::Test::Cluster->new('sbs');
$s->init_from_backup($p, 'base', has_streaming => 1);
$s->append_conf('postgresql.conf', "cluster_name = 'sbs'\n");
$s->start;

sub can_take
{
	my ($node, $key, $fn) = @_;
	$fn //= 'zk_try_lock';
	return $node->safe_psql('postgres', "BEGIN; SELECT $fn('$key'); COMMIT");
}

# A release is asynchronous (its node is deleted after the COMMIT returns):
# a key just released is free within a moment, so the try waits up to 5 s.
sub gets
{
	my ($node, $key) = @_;
	return $node->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('$key', 5000); COMMIT");
}
for my $n ($p, $o, $s)
{
	ok(wait_for(sub { can_take($n, 'warm') eq 't' }, 30), $n->name . ' grants');
}
is($s->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');
my $s_session = zk_status($s, 'session_id');
isnt($s_session, zk_status($p, 'session_id'), 'its worker has a ZooKeeper session of its own');
is(zk_status($s, 'state'), 'connected', 'and is connected');

# read-only transactions on the standby, locks of each kind
my $h = $s->background_psql('postgres', on_error_stop => 0);
$h->query_safe("SELECT zk_session_lock('sb-session')");
$h->query_safe("BEGIN READ ONLY; SELECT zk_lock('sb-x'); SELECT zk_lock_shared('sb-r')");
is(can_take($p, 'sb-x'), 'f', 'an exclusive lock taken on the standby excludes the primary');
is(can_take($o, 'sb-x'), 'f', 'and another cluster');
is(can_take($p, 'sb-r', 'zk_try_lock_shared'), 't', 'a shared one admits the primary\'s readers');
is(can_take($p, 'sb-r'), 'f', 'not its writers');
is(can_take($p, 'sb-session'), 'f', 'a session-level lock excludes the primary too');
is(can_take($s, 'sb-x'), 'f', 'and other backends of the standby itself');

# and the other way round
my $hp = $p->background_psql('postgres', on_error_stop => 0);
$hp->query_safe("BEGIN; SELECT zk_lock('p-x')");
is(can_take($s, 'p-x'), 'f', 'the primary\'s lock excludes the standby');
$hp->query_safe('COMMIT');
is(gets($s, 'p-x'), 't', 'until the primary commits');

# promotion with locks held
$s->promote;
ok(wait_for(sub { $s->safe_psql('postgres', 'SELECT pg_is_in_recovery()') eq 'f' }, 30), 'the standby is promoted');
is(zk_status($s, 'session_id'), $s_session, 'its worker keeps its session');
is(can_take($p, 'sb-x'), 'f', 'and the transaction-level lock stays held');
is(can_take($o, 'sb-session'), 'f', 'and the session-level one');
$h->query_safe('COMMIT');
is($h->{stderr}, '', 'the read-only transaction that took them commits');
is(gets($p, 'sb-x'), 't', 'releasing its transaction-level locks');
is(can_take($p, 'sb-session'), 'f', 'not the session-level one');
$h->query_safe("SELECT zk_session_unlock('sb-session')");
is(gets($p, 'sb-session'), 't', 'until it is unlocked');

$_->quit for ($h, $hp);
ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 15), 'no lock node left')
  or diag(join("\n", zk_lock_nodes($zk)));
$s->stop;
$p->stop;
$o->stop;
done_testing();
