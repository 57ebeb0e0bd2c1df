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

-- Every job's record, read live from ZooKeeper (<root>/.once), and the
-- queue of a job's claim: the rows of the zk_once_jobs view.
CREATE FUNCTION zk_once_records(
    OUT name text, OUT period interval, OUT anchor timestamptz, OUT first_period timestamptz,
    OUT last_done timestamptz, OUT skipped bigint, OUT done_by_cluster text,
    OUT done_by_pid integer, OUT done_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_once_records' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_once_claim_raw(name text,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT node text, OUT data text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_once_claim_raw' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Readable by every role, as zk_lock_waits: no secret in it.
CREATE VIEW zk_once_jobs AS
  SELECT r.*, h.d->>'cluster' AS running_cluster, (h.d->>'pid')::integer AS running_pid,
         (h.d->>'since')::timestamptz AS running_since
  FROM zk_once_records() r
  LEFT JOIN LATERAL (SELECT CASE WHEN q.data LIKE '{%' THEN q.data::jsonb END AS d
                     FROM zk_once_claim_raw(r.name) q WHERE q.granted LIMIT 1) h ON true;
GRANT SELECT ON zk_once_jobs TO PUBLIC;

COMMENT ON FUNCTION zk_once_records() IS 'the rows of the zk_once_jobs view: every job''s record';
COMMENT ON FUNCTION zk_once_claim_raw(text) IS 'the queue of a zk_once job''s claim (position, mode, granted, node, data)';
COMMENT ON VIEW zk_once_jobs IS 'every zk_once job: its period, the last period done, by which cluster and when, and who runs one now';

-- Where an administrator restricted zk_lock_queue (README, "Security"), the
-- view of every job gets the same readers.
DO $$
DECLARE
  acl aclitem[] := (SELECT proacl FROM pg_proc WHERE oid = 'zk_lock_queue(text)'::regprocedure);
  g record;
BEGIN
  IF acl IS NULL OR EXISTS (SELECT FROM aclexplode(acl) WHERE grantee = 0 AND privilege_type = 'EXECUTE') THEN
    RETURN;
  END IF;
  REVOKE SELECT ON zk_once_jobs FROM PUBLIC;
  REVOKE EXECUTE ON FUNCTION zk_once_records(), zk_once_claim_raw(text) FROM PUBLIC;
  FOR g IN SELECT grantee FROM aclexplode(acl) WHERE privilege_type = 'EXECUTE' AND grantee <> 0
  LOOP
    EXECUTE format('GRANT SELECT ON zk_once_jobs TO %s', g.grantee::regrole);
    EXECUTE format('GRANT EXECUTE ON FUNCTION zk_once_records(), zk_once_claim_raw(text) TO %s',
                   g.grantee::regrole);
  END LOOP;
END $$;
