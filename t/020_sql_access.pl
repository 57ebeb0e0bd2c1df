# Who may use zk_lock from SQL, and from which schema.
#  - The extension installed in a schema that is not on search_path works
#    with qualified names (zk_lock_queue included, whose helpers it calls).
#  - Every role may read zk_locks, zk_lock_status() and zk_lock_queue(), as
#    pg_locks; the internal helpers behind zk_lock_queue() are not public.
#  - docs/security.md's block restricting who may take locks does what it says.
#  - Every object of the extension has a comment (\df+, \dv+).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('access');
my $node = new_zk_cluster('acc', $zk);

$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', 'CREATE SCHEMA zk; CREATE EXTENSION zk_lock SCHEMA zk');
$node->safe_psql('postgres', 'CREATE ROLE app_user LOGIN; CREATE ROLE locker LOGIN');
$node->safe_psql('app', 'GRANT USAGE ON SCHEMA zk TO app_user, locker');

# as ROLE, in database app, with zk off search_path; returns (sqlstate or 'ok', output, stderr)
sub as_role
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('app', "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', $role ]);
	my ($code) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($code // 'ok', $out, $err);
}

is(($node->psql('app', 'SHOW search_path'))[1], '"$user", public', 'zk is not on search_path');
my ($code, $out, $err) = as_role('app_user',
	"BEGIN; SELECT zk.zk_lock('shelf'); SELECT count(*) FROM zk.zk_locks WHERE key = 'shelf';"
	  . " SELECT position, mode, granted FROM zk.zk_lock_queue('shelf'); COMMIT;");
is($code, 'ok', 'a plain role locks and reads zk_locks and zk_lock_queue() off search_path')
  or diag($err);
like($out, qr/^1\n1\|exclusive\|t$/m, 'seeing its own lock in both');
($code, $out) = as_role('app_user', 'SELECT state FROM zk.zk_lock_status()');
is($out, 'connected', 'and the worker\'s status');
($code) = as_role('app_user', "SELECT * FROM zk.zk_lock_queue_raw('shelf')");
is($code, '42501', 'zk_lock_queue_raw() is not public');
($code) = as_role('app_user', "SELECT zk.zk_lock_holder('{}')");
is($code, '42501', 'nor zk_lock_holder()');

# docs/security.md: the block that restricts who may take locks, as written there
my ($block) = slurp_file("$FindBin::RealBin/../docs/security.md") =~
  /```sql\n(\s*-- restrict who may take zk_locks.*?)```/s;
ok(defined $block, 'docs/security.md has the block');
# run off search_path: the block must not depend on where the extension lives
$node->safe_psql('app', "$block\nGRANT zk_lock_users TO locker;");
for my $call ("zk_try_lock('shelf')", "zk_lock_shared('shelf')", 'zk_lock(1, 2)',
	'zk_try_lock_shared(1, 2, 0)', "zk_session_lock('shelf')", 'zk_session_try_lock_shared(7, 0)',
	"zk_try_semaphore('shelf', 2)", "zk_semaphore(7, 1)", "zk_try_lock(array['shelf', 'rack'])",
	'zk_session_lock_shared(array[7, 8]::bigint[])', "zk_once('shelf', interval '1 hour')")
{
	($code) = as_role('app_user', "SELECT zk.$call");
	is($code, '42501', "after it, a role outside zk_lock_users cannot call $call");
}
($code) = as_role('app_user', "SELECT zk.zk_session_unlock('shelf')");
is($code, 'ok', 'unlocking stays open: it only ever touches one\'s own locks');
($code) = as_role('app_user', "SELECT zk.zk_unlock_semaphore('shelf')");
is($code, 'ok', 'semaphores\' too');
($code, $out, $err) = as_role('locker', "SELECT zk.zk_try_lock('shelf', 1000)");
is("$code $out", 'ok t', 'a member of zk_lock_users can') or diag($err);
($code, $out) = as_role('app_user', 'SELECT count(*) FROM zk.zk_locks');
is($code, 'ok', 'and everyone can still read zk_locks');

# autocommit: the lock ends with the statement, and the caller is told so
($code, $out, $err) = $node->psql('app', "SELECT zk.zk_lock('auto')");
like($err, qr/WARNING:  zk_lock\(\) outside a transaction block holds the lock only until the statement ends/,
	'a lock taken in autocommit warns that it ends with the statement');
like($err, qr/HINT:  Call it after BEGIN/, 'with a hint');
# (its row may still show it 'releasing' until the worker has deleted the node, or
# 'lingering', nobody's: zk_lock.linger keeps it for this cluster's next request)
is($node->safe_psql('app',
	"SELECT count(*) FROM zk.zk_locks WHERE key = 'auto' AND state NOT IN ('releasing', 'lingering')"), '0',
	'and it is gone once the statement ended');
($code, $out, $err) = $node->psql('app', "BEGIN; SELECT zk.zk_lock('auto'); SELECT zk.zk_try_lock_shared('auto'); COMMIT;");
is($err, '', 'inside a transaction block: no warning');

# \df+ and \dv+ describe every object of the extension
is($node->safe_psql('app', q{
	SELECT string_agg(d.objid::regprocedure::text, ', ')
	FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'zk_lock'
	WHERE d.deptype = 'e' AND d.classid = 'pg_proc'::regclass
	  AND obj_description(d.objid, 'pg_proc') IS NULL}), '', 'every function has a comment');
isnt($node->safe_psql('app', "SELECT obj_description('zk.zk_locks'::regclass, 'pg_class')"), '',
	'so has the view');

ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');
$node->stop;
done_testing();
