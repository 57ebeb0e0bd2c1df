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

CREATE FUNCTION zk_lock_queue(key1 integer, key2 integer,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT cluster text,
    OUT sysid text, OUT pid integer, OUT database text, OUT xid bigint,
    OUT since timestamptz, OUT node text)
RETURNS SETOF record LANGUAGE sql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT q.position, q.mode, q.granted, h.*, q.node
  FROM @extschema@.zk_lock_queue_raw(key1, key2) q, @extschema@.zk_lock_holder(q.data) h
  ORDER BY q.position
$$;

REVOKE EXECUTE ON FUNCTION zk_lock_queue_raw(integer, integer) FROM PUBLIC;

COMMENT ON FUNCTION zk_lock(integer, integer) IS 'exclusive lock on an (int, int) key, shared by every cluster, until the transaction ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_try_lock(integer, integer, integer) IS 'exclusive lock on an (int, int) key, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_unlock(integer, integer) IS 'release one exclusive acquisition of an (int, int) key early; warning and false if not held';
COMMENT ON FUNCTION zk_lock_shared(integer, integer) IS 'shared (read) lock on an (int, int) key across clusters until the transaction ends; waits for writers';
COMMENT ON FUNCTION zk_try_lock_shared(integer, integer, integer) IS 'shared lock on an (int, int) key, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_unlock_shared(integer, integer) IS 'release one shared acquisition of an (int, int) key early; warning and false if not held';
COMMENT ON FUNCTION zk_lock_token(integer, integer) IS 'fencing token of a lock on an (int, int) key this transaction holds';
COMMENT ON FUNCTION zk_lock_queue(integer, integer) IS 'every cluster''s holders and waiters for an (int, int) key, in queue order, read live from ZooKeeper';
COMMENT ON FUNCTION zk_lock_queue_raw(integer, integer) IS 'internal: the raw queue behind zk_lock_queue()';
