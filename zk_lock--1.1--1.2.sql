/* zk_lock--1.1--1.2.sql: what 1.2 adds to 1.1 */

\echo Use "ALTER EXTENSION zk_lock UPDATE TO '1.2'" to load this file. \quit

-- Every counter the worker keeps, one a row with what it counts; the
-- counters zk_lock_status() shows and those it has no column for.
CREATE FUNCTION zk_lock_counters(OUT counter text, OUT value bigint, OUT meaning text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_counters' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Readable by every role, as zk_locks: no secret in it.
CREATE VIEW zk_lock_counters AS SELECT * FROM zk_lock_counters();
GRANT SELECT ON zk_lock_counters TO PUBLIC;

COMMENT ON FUNCTION zk_lock_counters() IS 'the rows of the zk_lock_counters view';
COMMENT ON VIEW zk_lock_counters IS 'every counter of this cluster''s zk_lock worker, one a row, with what it counts';

-- Who waits for whom, in every cluster: the waits each cluster publishes in
-- ZooKeeper once one of its backends has waited deadlock_timeout (deadlock
-- detection across clusters), read live by the worker.
CREATE FUNCTION zk_lock_wait_rows(
    OUT waiting_cluster text, OUT waiting_session text, OUT waiting_pid integer,
    OUT waiting_key text, OUT waiting_mode text, OUT waiting_since timestamptz,
    OUT blocking_cluster text, OUT blocking_session text, OUT blocking_pid integer,
    OUT blocking_key text, OUT blocking_mode text, OUT blocking_node text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_wait_rows' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Readable by every role, as zk_lock_queue: no secret in it.
CREATE VIEW zk_lock_waits AS SELECT * FROM zk_lock_wait_rows();
GRANT SELECT ON zk_lock_waits TO PUBLIC;

-- Where an administrator restricted zk_lock_queue (README, "Security"), the
-- view of every cluster's waits gets the same readers.
DO $$
DECLARE
  acl aclitem[] := (SELECT proacl FROM pg_proc WHERE oid = 'zk_lock_queue(text)'::regprocedure);
  g record;
BEGIN
  IF acl IS NULL OR EXISTS (SELECT FROM aclexplode(acl) WHERE grantee = 0 AND privilege_type = 'EXECUTE') THEN
    RETURN;                        -- readable by every role, as zk_lock_queue
  END IF;
  -- a view's reader needs EXECUTE on the function it calls as well
  REVOKE SELECT ON zk_lock_waits FROM PUBLIC;
  REVOKE EXECUTE ON FUNCTION zk_lock_wait_rows() FROM PUBLIC;
  FOR g IN SELECT grantee FROM aclexplode(acl) WHERE privilege_type = 'EXECUTE'
  LOOP
    -- (regrole's text is quoted already)
    EXECUTE format('GRANT SELECT ON zk_lock_waits TO %s', g.grantee::regrole);
    EXECUTE format('GRANT EXECUTE ON FUNCTION zk_lock_wait_rows() TO %s', g.grantee::regrole);
  END LOOP;
END $$;

COMMENT ON FUNCTION zk_lock_wait_rows() IS 'the rows of the zk_lock_waits view';
COMMENT ON VIEW zk_lock_waits IS 'one row per wait edge of every cluster: who waits (deadlock_timeout or longer) for whom, read live from ZooKeeper';
