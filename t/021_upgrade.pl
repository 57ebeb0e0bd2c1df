# ALTER EXTENSION zk_lock UPDATE from 1.0 (to 1.3, through 1.1 and 1.2) while
# a lock is held keeps it held and working, adds the (int, int) functions, the
# counters view and zk_once, and leaves the same objects, comments and privileges as a
# fresh install.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use Test::More;
use ZkLockTest;

my $zk = start_zookeeper('upgrade');
my $a = new_zk_cluster('ua', $zk);
my $b = new_zk_cluster('ub', $zk);

$a->safe_psql('postgres', "DROP EXTENSION zk_lock; CREATE EXTENSION zk_lock VERSION '1.0'");
is($a->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'zk_lock'"), '1.0',
	'A runs version 1.0 of the extension');
is($b->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'zk_lock'"), '1.3',
	'a fresh install is 1.3');
my ($ret) = $a->psql('postgres', 'BEGIN; SELECT zk_lock(1, 2)');
isnt($ret, 0, 'the (int, int) functions do not exist in 1.0');

my $h = $a->background_psql('postgres');
$h->query_safe("BEGIN; SELECT zk_lock('upgrade-key')");
my $token = $h->query_safe("SELECT zk_lock_token('upgrade-key')");
is($b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('upgrade-key', 0); COMMIT"), 'f', 'A holds upgrade-key');
# (read from another session: a transaction that read zk_locks would hold the
# view's lock and make ALTER EXTENSION UPDATE, which replaces the view, wait)
is($a->safe_psql('postgres', "SELECT key || ' ' || state FROM zk_locks"), 'upgrade-key granted',
	'the 1.0 zk_locks works with the 1.1 library (it takes the columns it has)');
is($a->safe_psql('postgres', "SELECT string_agg(cluster || ':' || granted, ',') FROM zk_lock_queue('upgrade-key')"),
	'ua:true', 'and so does the 1.0 zk_lock_queue');

$a->safe_psql('postgres', 'ALTER EXTENSION zk_lock UPDATE', timeout => 60);
is($a->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'zk_lock'"), '1.3',
	'ALTER EXTENSION zk_lock UPDATE brings A to 1.3, through 1.1 and 1.2');
is($b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('upgrade-key', 0); COMMIT"), 'f',
	'the lock taken under 1.0 is still held');
is($h->query_safe("SELECT zk_lock_token('upgrade-key')"), $token, 'its token is unchanged');
is($h->query_safe("SELECT key || ' ' || state FROM zk_locks"), 'upgrade-key granted', 'zk_locks shows it');
is($h->query_safe("SELECT value > 0 FROM zk_lock_counters WHERE counter = 'grants'"), 't',
	'zk_lock_counters counts its grant');
$h->query_safe('COMMIT');
is($b->safe_psql('postgres', "BEGIN; SELECT zk_try_lock('upgrade-key', 10000); COMMIT"), 't',
	'A commits normally, and B gets the key after it');

# the new functions, across clusters
$h->query_safe('BEGIN; SELECT zk_lock(1, 2)');
is($b->safe_psql('postgres', 'BEGIN; SELECT zk_try_lock(1, 2, 0); COMMIT'), 'f',
	'an (int, int) lock taken in the upgraded A blocks B');
is($b->safe_psql('postgres', 'BEGIN; SELECT zk_try_lock((1::bigint << 32) + 2, 0); COMMIT'), 't',
	'but not the bigint key with the same bits: a key space of its own');
is($b->safe_psql('postgres', "SELECT string_agg(cluster || ':' || granted, ',') FROM zk_lock_queue(1, 2)"),
	'ua:true', 'B sees A holding it in the queue');
$h->query_safe('COMMIT');
is($b->safe_psql('postgres', 'BEGIN; SELECT zk_try_lock(1, 2, 10000); COMMIT'), 't', 'and gets it after A commits');
$h->quit;

# an upgraded 1.0 and a fresh install have the same objects, comments and privileges
my $catalog = q{
	SELECT string_agg(format('%s %s %s %s', d.objid::regprocedure, p.prosrc, p.proacl,
							 obj_description(d.objid, 'pg_proc')), E'\n' ORDER BY d.objid::regprocedure::text)
	FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'zk_lock'
	JOIN pg_proc p ON p.oid = d.objid
	WHERE d.deptype = 'e' AND d.classid = 'pg_proc'::regclass};
is($a->safe_psql('postgres', $catalog), $b->safe_psql('postgres', $catalog),
	'upgraded and fresh installs define the same functions');
my $views = q{SELECT string_agg(c.relname || ' ' || c.relacl::text || ' ' || obj_description(c.oid, 'pg_class'), ',')
	FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.deptype = 'e'
	JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'zk_lock'};
is($a->safe_psql('postgres', $views), $b->safe_psql('postgres', $views), 'and the same views');

# privileges restricted under 1.0 (docs/security.md) carry over to the new lock functions
$a->safe_psql('postgres', q{
	CREATE DATABASE restricted;
	CREATE ROLE lockers NOLOGIN;
	CREATE ROLE member LOGIN IN ROLE lockers;
	CREATE ROLE outsider LOGIN;});
$a->safe_psql('restricted', q{
	CREATE EXTENSION zk_lock VERSION '1.0';
	REVOKE EXECUTE ON FUNCTION zk_lock(text), zk_try_lock(text) FROM PUBLIC;
	GRANT EXECUTE ON FUNCTION zk_lock(text), zk_try_lock(text) TO lockers;
	ALTER EXTENSION zk_lock UPDATE;});
my $privs = q{SELECT string_agg(format('%s:%s', f, has_function_privilege('ROLE', f::regprocedure, 'EXECUTE')), ' ' ORDER BY f)
	FROM unnest(ARRAY['zk_session_lock(text)', 'zk_session_try_lock_shared(integer,integer,integer)',
					  'zk_lock(integer,integer)', 'zk_session_unlock(text)',
					  'zk_once(text,interval,timestamptz,boolean)']) f};
is($a->safe_psql('restricted', $privs =~ s/ROLE/outsider/r),
	'zk_lock(integer,integer):f zk_once(text,interval,timestamptz,boolean):f zk_session_lock(text):f zk_session_try_lock_shared(integer,integer,integer):f zk_session_unlock(text):t',
	'after the update, a role outside the granted ones cannot call the new lock functions nor zk_once (unlocking stays open)');
is($a->safe_psql('restricted', $privs =~ s/ROLE/member/r),
	'zk_lock(integer,integer):t zk_once(text,interval,timestamptz,boolean):t zk_session_lock(text):t zk_session_try_lock_shared(integer,integer,integer):t zk_session_unlock(text):t',
	'a member of the granted role can');

ok(wait_for(sub { scalar(zk_lock_nodes($zk)) == 0 }, 10), 'no lock node left');
$a->stop;
$b->stop;
done_testing();
