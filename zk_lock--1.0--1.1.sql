/* zk_lock--1.0--1.1.sql: what 1.1 adds to 1.0 */

\echo Use "ALTER EXTENSION zk_lock UPDATE TO '1.1'" to load this file. \quit

-- (key1 int, key2 int) keys: a key space of their own, as core's
-- pg_advisory_xact_lock(int, int).  The try functions take a pair only with a
-- timeout: zk_try_lock(42, 1000) keeps meaning key 42 with a one-second wait.

CREATE FUNCTION zk_lock(key1 integer, key2 integer) RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock(key1 integer, key2 integer, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_ms_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_unlock(key1 integer, key2 integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_shared(key1 integer, key2 integer) RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock_shared_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock_shared(key1 integer, key2 integer, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_shared_ms_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_unlock_shared(key1 integer, key2 integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock_shared_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_token(key1 integer, key2 integer) RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_lock_token_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_queue_raw(key1 integer, key2 integer,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT node text, OUT data text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_queue_raw_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;


REVOKE EXECUTE ON FUNCTION zk_lock_queue_raw(integer, integer) FROM PUBLIC;

COMMENT ON FUNCTION zk_lock(integer, integer) IS 'exclusive lock on an (int, int) key, shared by every cluster, until the transaction ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_try_lock(integer, integer, integer) IS 'exclusive lock on an (int, int) key, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_unlock(integer, integer) IS 'release one exclusive acquisition of an (int, int) key early; warning and false if not held';
COMMENT ON FUNCTION zk_lock_shared(integer, integer) IS 'shared (read) lock on an (int, int) key across clusters until the transaction ends; waits for writers';
COMMENT ON FUNCTION zk_try_lock_shared(integer, integer, integer) IS 'shared lock on an (int, int) key, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_unlock_shared(integer, integer) IS 'release one shared acquisition of an (int, int) key early; warning and false if not held';
COMMENT ON FUNCTION zk_lock_token(integer, integer) IS 'fencing token of a lock on an (int, int) key this transaction holds';
COMMENT ON FUNCTION zk_lock_queue_raw(integer, integer) IS 'internal: the raw queue behind zk_lock_queue()';

-- Session-level locks, as core's pg_advisory_lock: held until unlocked or the
-- session ends, never released by COMMIT or ROLLBACK; repeated requests stack.
CREATE FUNCTION zk_session_lock(key text) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_lock_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_lock(key bigint) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_lock_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_lock(key1 integer, key2 integer) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_lock_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock(key text, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_ms_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock(key bigint, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_ms_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock(key1 integer, key2 integer, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_ms_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_unlock(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_unlock_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_unlock(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_unlock_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_unlock(key1 integer, key2 integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_unlock_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_lock_shared(key text) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_lock_shared_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_lock_shared(key bigint) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_lock_shared_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_lock_shared(key1 integer, key2 integer) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_lock_shared_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock_shared(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_shared_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock_shared(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_shared_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock_shared(key text, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_shared_ms_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock_shared(key bigint, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_shared_ms_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock_shared(key1 integer, key2 integer, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_lock_shared_ms_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_unlock_shared(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_unlock_shared_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_unlock_shared(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_unlock_shared_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_unlock_shared(key1 integer, key2 integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_unlock_shared_int4_int4' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_unlock_all() RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_unlock_all' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Multi-key locks: every key of a text[] or bigint[], all or nothing.  The
-- keys of one request are queued in one ZooKeeper multi, so two multi-key
-- requests stand in one order on every key they share and never deadlock.
CREATE FUNCTION zk_lock(keys text[]) RETURNS void
AS 'MODULE_PATHNAME', 'zk_locks_array_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_lock(keys bigint[]) RETURNS void
AS 'MODULE_PATHNAME', 'zk_locks_array_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_lock(keys text[]) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_locks_array_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_lock(keys bigint[]) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_locks_array_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_lock(keys text[], timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_locks_array_ms_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_lock(keys bigint[], timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_locks_array_ms_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_lock_shared(keys text[]) RETURNS void
AS 'MODULE_PATHNAME', 'zk_locks_shared_array_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_lock_shared(keys bigint[]) RETURNS void
AS 'MODULE_PATHNAME', 'zk_locks_shared_array_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_lock_shared(keys text[]) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_locks_shared_array_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_lock_shared(keys bigint[]) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_locks_shared_array_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_lock_shared(keys text[], timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_locks_shared_array_ms_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_lock_shared(keys bigint[], timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_locks_shared_array_ms_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_lock(keys text[]) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_locks_array_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_lock(keys bigint[]) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_locks_array_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock(keys text[]) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_locks_array_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock(keys bigint[]) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_locks_array_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock(keys text[], timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_locks_array_ms_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock(keys bigint[], timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_locks_array_ms_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_lock_shared(keys text[]) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_locks_shared_array_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_lock_shared(keys bigint[]) RETURNS void
AS 'MODULE_PATHNAME', 'zk_session_locks_shared_array_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock_shared(keys text[]) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_locks_shared_array_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock_shared(keys bigint[]) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_locks_shared_array_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock_shared(keys text[], timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_locks_shared_array_ms_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_session_try_lock_shared(keys bigint[], timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_session_try_locks_shared_array_ms_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Counting semaphores, transaction-bound: at most `holders` transactions of
-- all clusters hold one key at once, admitted in FIFO order.  Their keys are a
-- key space of their own; every request must give the key's holders.
CREATE FUNCTION zk_semaphore(key text, holders integer) RETURNS void
AS 'MODULE_PATHNAME', 'zk_semaphore_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_semaphore(key bigint, holders integer) RETURNS void
AS 'MODULE_PATHNAME', 'zk_semaphore_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_semaphore(key text, holders integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_semaphore_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_semaphore(key bigint, holders integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_semaphore_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_semaphore(key text, holders integer, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_semaphore_ms_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_try_semaphore(key bigint, holders integer, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_semaphore_ms_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_unlock_semaphore(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock_semaphore_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_unlock_semaphore(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock_semaphore_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_semaphore_queue_raw(key text,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT node text, OUT data text,
    OUT holders integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_semaphore_queue_raw_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION zk_semaphore_queue_raw(key bigint,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT node text, OUT data text,
    OUT holders integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_semaphore_queue_raw_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION zk_semaphore_queue_raw(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION zk_semaphore_queue_raw(bigint) FROM PUBLIC;

-- Introspection: each request's scope (transaction, session, both, or kept).
-- The view is replaced in place, so views of users' own on zk_locks survive,
-- and 1.0's zk_lock_requests() stays for any built on it.  The queue
-- functions are recreated with the scope each node was asked at, as their
-- last column.

CREATE FUNCTION zk_lock_request_rows(
    OUT pid integer, OUT key text, OUT key_type text, OUT mode text, OUT state text,
    OUT node text, OUT token bigint, OUT wait_start timestamptz, OUT granted_at timestamptz,
    OUT scope text, OUT kind text, OUT holders integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_requests' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE OR REPLACE VIEW zk_locks AS SELECT * FROM zk_lock_request_rows();

DROP FUNCTION zk_lock_queue(text);
DROP FUNCTION zk_lock_queue(bigint);
DROP FUNCTION zk_lock_holder(text);

CREATE FUNCTION zk_lock_holder(data text,
    OUT cluster text, OUT sysid text, OUT pid integer, OUT database text,
    OUT xid bigint, OUT since timestamptz, OUT scope text)
RETURNS record LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT d->>'cluster', d->>'sysid', (d->>'pid')::integer, d->>'db',
         nullif((d->>'xid')::bigint, 0), (d->>'since')::timestamptz,
         CASE WHEN d IS NOT NULL THEN coalesce(d->>'scope', 'transaction') END
  FROM (SELECT CASE WHEN data LIKE '{%' THEN data::jsonb END AS d) j
$$;

CREATE FUNCTION zk_lock_queue(key text,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT cluster text,
    OUT sysid text, OUT pid integer, OUT database text, OUT xid bigint,
    OUT since timestamptz, OUT node text, OUT scope text, OUT kind text, OUT holders integer)
RETURNS SETOF record LANGUAGE sql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT * FROM (
    SELECT q.position, q.mode, q.granted, h.cluster, h.sysid, h.pid, h.database, h.xid,
           h.since, q.node, h.scope, 'lock'::text AS kind, NULL::integer AS holders
    FROM @extschema@.zk_lock_queue_raw(key) q, @extschema@.zk_lock_holder(q.data) h
    UNION ALL
    SELECT q.position, q.mode, q.granted, h.cluster, h.sysid, h.pid, h.database, h.xid,
           h.since, q.node, h.scope, 'semaphore', q.holders
    FROM @extschema@.zk_semaphore_queue_raw(key) q, @extschema@.zk_lock_holder(q.data) h
  ) u ORDER BY u.kind, u.position
$$;

CREATE FUNCTION zk_lock_queue(key bigint,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT cluster text,
    OUT sysid text, OUT pid integer, OUT database text, OUT xid bigint,
    OUT since timestamptz, OUT node text, OUT scope text, OUT kind text, OUT holders integer)
RETURNS SETOF record LANGUAGE sql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT * FROM (
    SELECT q.position, q.mode, q.granted, h.cluster, h.sysid, h.pid, h.database, h.xid,
           h.since, q.node, h.scope, 'lock'::text AS kind, NULL::integer AS holders
    FROM @extschema@.zk_lock_queue_raw(key) q, @extschema@.zk_lock_holder(q.data) h
    UNION ALL
    SELECT q.position, q.mode, q.granted, h.cluster, h.sysid, h.pid, h.database, h.xid,
           h.since, q.node, h.scope, 'semaphore', q.holders
    FROM @extschema@.zk_semaphore_queue_raw(key) q, @extschema@.zk_lock_holder(q.data) h
  ) u ORDER BY u.kind, u.position
$$;

CREATE FUNCTION zk_lock_queue(key1 integer, key2 integer,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT cluster text,
    OUT sysid text, OUT pid integer, OUT database text, OUT xid bigint,
    OUT since timestamptz, OUT node text, OUT scope text, OUT kind text, OUT holders integer)
RETURNS SETOF record LANGUAGE sql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT q.position, q.mode, q.granted, h.cluster, h.sysid, h.pid, h.database, h.xid,
         h.since, q.node, h.scope, 'lock'::text, NULL::integer
  FROM @extschema@.zk_lock_queue_raw(key1, key2) q, @extschema@.zk_lock_holder(q.data) h
  ORDER BY q.position
$$;

REVOKE EXECUTE ON FUNCTION zk_lock_holder(text) FROM PUBLIC;

-- Where an administrator restricted who may lock (README, "Security"), the
-- new lock functions get the same privileges as zk_lock(text) has.
DO $$
DECLARE
  acl aclitem[] := (SELECT proacl FROM pg_proc WHERE oid = 'zk_lock(text)'::regprocedure);
  f regprocedure;
  g record;
BEGIN
  IF acl IS NULL THEN
    RETURN;                        -- never restricted: default privileges
  END IF;
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
           JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
           JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'zk_lock'
           WHERE p.proname ~ '^zk_((session_)?(try_)?lock(_shared)?|(try_)?semaphore)$'
             AND p.proacl IS NULL
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    FOR g IN SELECT grantee FROM aclexplode(acl) WHERE privilege_type = 'EXECUTE' AND grantee <> 0
    LOOP
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', f, g.grantee::regrole);  -- (regrole is quoted already)
    END LOOP;
  END LOOP;
END $$;

COMMENT ON FUNCTION zk_session_lock(text) IS 'session-level exclusive lock across clusters, held until zk_session_unlock or the session ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_session_lock(bigint) IS 'session-level exclusive lock across clusters, held until zk_session_unlock or the session ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_session_lock(integer, integer) IS 'session-level exclusive lock across clusters, held until zk_session_unlock or the session ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_session_try_lock(text) IS 'session-level exclusive lock if free, else false; never queues';
COMMENT ON FUNCTION zk_session_try_lock(bigint) IS 'session-level exclusive lock if free, else false; never queues';
COMMENT ON FUNCTION zk_session_try_lock(text, integer) IS 'session-level exclusive lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_session_try_lock(bigint, integer) IS 'session-level exclusive lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_session_try_lock(integer, integer, integer) IS 'session-level exclusive lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_session_unlock(text) IS 'release one session-level exclusive acquisition; warning and false if not held';
COMMENT ON FUNCTION zk_session_unlock(bigint) IS 'release one session-level exclusive acquisition; warning and false if not held';
COMMENT ON FUNCTION zk_session_unlock(integer, integer) IS 'release one session-level exclusive acquisition; warning and false if not held';
COMMENT ON FUNCTION zk_session_lock_shared(text) IS 'session-level shared lock across clusters, held until zk_session_unlock_shared or the session ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_session_lock_shared(bigint) IS 'session-level shared lock across clusters, held until zk_session_unlock_shared or the session ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_session_lock_shared(integer, integer) IS 'session-level shared lock across clusters, held until zk_session_unlock_shared or the session ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_session_try_lock_shared(text) IS 'session-level shared lock if free, else false; never queues';
COMMENT ON FUNCTION zk_session_try_lock_shared(bigint) IS 'session-level shared lock if free, else false; never queues';
COMMENT ON FUNCTION zk_session_try_lock_shared(text, integer) IS 'session-level shared lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_session_try_lock_shared(bigint, integer) IS 'session-level shared lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_session_try_lock_shared(integer, integer, integer) IS 'session-level shared lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_session_unlock_shared(text) IS 'release one session-level shared acquisition; warning and false if not held';
COMMENT ON FUNCTION zk_session_unlock_shared(bigint) IS 'release one session-level shared acquisition; warning and false if not held';
COMMENT ON FUNCTION zk_session_unlock_shared(integer, integer) IS 'release one session-level shared acquisition; warning and false if not held';
COMMENT ON FUNCTION zk_lock(text[]) IS 'exclusive locks on every key of the array, all or none, until the transaction ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_lock(bigint[]) IS 'exclusive locks on every key of the array, all or none, until the transaction ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_try_lock(text[]) IS 'exclusive locks on every key of the array if all are free, else false, holding and queueing none';
COMMENT ON FUNCTION zk_try_lock(bigint[]) IS 'exclusive locks on every key of the array if all are free, else false, holding and queueing none';
COMMENT ON FUNCTION zk_try_lock(text[], integer) IS 'exclusive locks on every key of the array, waiting at most timeout_ms (0: no wait); false on timeout, holding none';
COMMENT ON FUNCTION zk_try_lock(bigint[], integer) IS 'exclusive locks on every key of the array, waiting at most timeout_ms (0: no wait); false on timeout, holding none';
COMMENT ON FUNCTION zk_lock_shared(text[]) IS 'shared locks on every key of the array, all or none, until the transaction ends; waits';
COMMENT ON FUNCTION zk_lock_shared(bigint[]) IS 'shared locks on every key of the array, all or none, until the transaction ends; waits';
COMMENT ON FUNCTION zk_try_lock_shared(text[]) IS 'shared locks on every key of the array if all are free of writers, else false, holding none';
COMMENT ON FUNCTION zk_try_lock_shared(bigint[]) IS 'shared locks on every key of the array if all are free of writers, else false, holding none';
COMMENT ON FUNCTION zk_try_lock_shared(text[], integer) IS 'shared locks on every key of the array, waiting at most timeout_ms (0: no wait); false on timeout, holding none';
COMMENT ON FUNCTION zk_try_lock_shared(bigint[], integer) IS 'shared locks on every key of the array, waiting at most timeout_ms (0: no wait); false on timeout, holding none';
COMMENT ON FUNCTION zk_session_lock(text[]) IS 'session-level exclusive locks on every key of the array, all or none; waits';
COMMENT ON FUNCTION zk_session_lock(bigint[]) IS 'session-level exclusive locks on every key of the array, all or none; waits';
COMMENT ON FUNCTION zk_session_try_lock(text[]) IS 'session-level exclusive locks on every key of the array if all are free, else false, holding none';
COMMENT ON FUNCTION zk_session_try_lock(bigint[]) IS 'session-level exclusive locks on every key of the array if all are free, else false, holding none';
COMMENT ON FUNCTION zk_session_try_lock(text[], integer) IS 'session-level exclusive locks on every key of the array, waiting at most timeout_ms (0: no wait)';
COMMENT ON FUNCTION zk_session_try_lock(bigint[], integer) IS 'session-level exclusive locks on every key of the array, waiting at most timeout_ms (0: no wait)';
COMMENT ON FUNCTION zk_session_lock_shared(text[]) IS 'session-level shared locks on every key of the array, all or none; waits';
COMMENT ON FUNCTION zk_session_lock_shared(bigint[]) IS 'session-level shared locks on every key of the array, all or none; waits';
COMMENT ON FUNCTION zk_session_try_lock_shared(text[]) IS 'session-level shared locks on every key of the array if all are free of writers, else false';
COMMENT ON FUNCTION zk_session_try_lock_shared(bigint[]) IS 'session-level shared locks on every key of the array if all are free of writers, else false';
COMMENT ON FUNCTION zk_session_try_lock_shared(text[], integer) IS 'session-level shared locks on every key of the array, waiting at most timeout_ms (0: no wait)';
COMMENT ON FUNCTION zk_session_try_lock_shared(bigint[], integer) IS 'session-level shared locks on every key of the array, waiting at most timeout_ms (0: no wait)';
COMMENT ON FUNCTION zk_semaphore(text, integer) IS 'counting semaphore across clusters: waits (FIFO) until this transaction is one of at most holders holders; held until the transaction ends';
COMMENT ON FUNCTION zk_semaphore(bigint, integer) IS 'counting semaphore across clusters: waits (FIFO) until this transaction is one of at most holders holders; held until the transaction ends';
COMMENT ON FUNCTION zk_try_semaphore(text, integer) IS 'counting semaphore if a place is free, else false; never queues';
COMMENT ON FUNCTION zk_try_semaphore(bigint, integer) IS 'counting semaphore if a place is free, else false; never queues';
COMMENT ON FUNCTION zk_try_semaphore(text, integer, integer) IS 'counting semaphore, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_try_semaphore(bigint, integer, integer) IS 'counting semaphore, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_unlock_semaphore(text) IS 'release one acquisition of a semaphore early; warning and false if not held';
COMMENT ON FUNCTION zk_unlock_semaphore(bigint) IS 'release one acquisition of a semaphore early; warning and false if not held';
COMMENT ON FUNCTION zk_session_unlock_all() IS 'release every session-level zk_lock lock of this session, both modes';
COMMENT ON FUNCTION zk_unlock_all() IS 'release every transaction-level zk_lock lock of this transaction, both modes';
COMMENT ON FUNCTION zk_lock_request_rows() IS 'the rows of the zk_locks view: this cluster''s lock requests';
COMMENT ON FUNCTION zk_lock_requests() IS 'the rows of 1.0''s zk_locks view, without scope; kept for views built on it';
COMMENT ON VIEW zk_locks IS 'this cluster''s zk_lock requests, like pg_locks: key, mode, state, node, fencing token, times, scope, kind, holders';
COMMENT ON FUNCTION zk_lock_holder(text) IS 'internal: who asked, from a lock node''s data';
COMMENT ON FUNCTION zk_lock_queue(text) IS 'every cluster''s holders and waiters for a key, lock then semaphore, in queue order, read live from ZooKeeper';
COMMENT ON FUNCTION zk_lock_queue(bigint) IS 'every cluster''s holders and waiters for a key, lock then semaphore, in queue order, read live from ZooKeeper';
COMMENT ON FUNCTION zk_semaphore_queue_raw(text) IS 'internal: the raw semaphore queue behind zk_lock_queue()';
COMMENT ON FUNCTION zk_semaphore_queue_raw(bigint) IS 'internal: the raw semaphore queue behind zk_lock_queue()';
COMMENT ON FUNCTION zk_lock_queue(integer, integer) IS 'every cluster''s holders and waiters for an (int, int) key, in queue order, read live from ZooKeeper';
