/* zk_lock--1.2--1.3.sql: what 1.3 adds to 1.2 */

\echo Use "ALTER EXTENSION zk_lock UPDATE TO '1.3'" to load this file. \quit

-- A job done once per period across clusters: the start of the period this
-- transaction must do, or NULL when none is owed or another call is doing
-- one.  The period counts as done only when the transaction commits.
CREATE FUNCTION zk_once(name text, period interval,
                        anchor timestamptz DEFAULT '1970-01-01 00:00:00+00',
                        latest boolean DEFAULT false)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'zk_once' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION zk_once(text, interval, timestamptz, boolean) IS
  'the start of the period of job name this transaction must do (earliest owed, or with latest the latest begun), or NULL; done once the transaction commits, in whichever cluster';

-- Where an administrator restricted who may lock (README, "Security"),
-- zk_once, which takes a lock of its own, gets the privileges zk_lock(text) has.
DO $$
DECLARE
  acl aclitem[] := (SELECT proacl FROM pg_proc WHERE oid = 'zk_lock(text)'::regprocedure);
  g record;
BEGIN
  IF acl IS NULL THEN
    RETURN;                        -- never restricted: default privileges
  END IF;
  REVOKE EXECUTE ON FUNCTION zk_once(text, interval, timestamptz, boolean) FROM PUBLIC;
  FOR g IN SELECT grantee FROM aclexplode(acl) WHERE privilege_type = 'EXECUTE' AND grantee <> 0
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION zk_once(text, interval, timestamptz, boolean) TO %s',
                   g.grantee::regrole);  -- (regrole is quoted already)
  END LOOP;
END $$;
