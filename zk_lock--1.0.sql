/* zk_lock--1.0.sql */

\echo Use "CREATE EXTENSION zk_lock" to load this file. \quit

-- Exclusive, transaction-bound locks.  Not STRICT: a NULL key is an error, not NULL.
-- The C functions tell text from bigint keys by the argument's type.

CREATE FUNCTION zk_lock(key text) RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock(key bigint) RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock(key text, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_ms_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock(key bigint, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_ms_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_unlock(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_unlock(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Shared (read) locks: readers share, a writer excludes everyone, FIFO.

CREATE FUNCTION zk_lock_shared(key text) RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock_shared_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_shared(key bigint) RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock_shared_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock_shared(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_shared_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock_shared(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_shared_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock_shared(key text, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_shared_ms_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock_shared(key bigint, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock_shared_ms_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_unlock_shared(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock_shared_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_unlock_shared(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock_shared_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Fencing token of a held lock (the lock node's czxid): greater for every later holder.

CREATE FUNCTION zk_lock_token(key text) RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_lock_token_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_token(key bigint) RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_lock_token_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Release every lock of this session, both modes.

CREATE FUNCTION zk_unlock_all() RETURNS void
AS 'MODULE_PATHNAME', 'zk_unlock_all' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Introspection of this cluster.

CREATE FUNCTION zk_lock_requests(
    OUT pid integer, OUT key text, OUT key_type text, OUT mode text, OUT state text,
    OUT node text, OUT token bigint, OUT wait_start timestamptz, OUT granted_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_requests' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Like pg_locks, for zk_lock: one row per request (waiting, granted, releasing, lost).
-- Readable by every role, as pg_locks: no secret in it.  (A view's user needs
-- EXECUTE on the functions it calls, so zk_lock_requests() stays public too.)
CREATE VIEW zk_locks AS SELECT * FROM zk_lock_requests();
GRANT SELECT ON zk_locks TO PUBLIC;

CREATE FUNCTION zk_lock_status(
    OUT worker_pid integer, OUT state text, OUT session_id text, OUT server text,
    OUT session_timeout_ms integer, OUT in_state_for interval, OUT max_locks integer,
    OUT requests bigint, OUT grants bigint, OUT releases bigint, OUT lost bigint,
    OUT connects bigint, OUT expirations bigint, OUT recovered bigint,
    OUT delete_retries bigint, OUT batched bigint, OUT rolled_back bigint,
    OUT hosts text, OUT auth text)
RETURNS record
AS 'MODULE_PATHNAME', 'zk_lock_status' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Every cluster's contenders for one key, read live from ZooKeeper by the
-- worker: queue position, mode, granted or waiting, and who asked.

CREATE FUNCTION zk_lock_queue_raw(key text,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT node text, OUT data text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_queue_raw_text' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock_queue_raw(key bigint,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT node text, OUT data text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_lock_queue_raw_int8' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Who asked, from a lock node's data (JSON written by zk_lock; other data gives NULLs).
CREATE FUNCTION zk_lock_holder(data text,
    OUT cluster text, OUT sysid text, OUT pid integer, OUT database text,
    OUT xid bigint, OUT since timestamptz)
RETURNS record LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT d->>'cluster', d->>'sysid', (d->>'pid')::integer, d->>'db',
         nullif((d->>'xid')::bigint, 0), (d->>'since')::timestamptz
  FROM (SELECT CASE WHEN data LIKE '{%' THEN data::jsonb END AS d) j
$$;

CREATE FUNCTION zk_lock_queue(key text,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT cluster text,
    OUT sysid text, OUT pid integer, OUT database text, OUT xid bigint,
    OUT since timestamptz, OUT node text)
RETURNS SETOF record LANGUAGE sql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT q.position, q.mode, q.granted, h.*, q.node
  FROM @extschema@.zk_lock_queue_raw(key) q, @extschema@.zk_lock_holder(q.data) h
  ORDER BY q.position
$$;

CREATE FUNCTION zk_lock_queue(key bigint,
    OUT "position" integer, OUT mode text, OUT granted boolean, OUT cluster text,
    OUT sysid text, OUT pid integer, OUT database text, OUT xid bigint,
    OUT since timestamptz, OUT node text)
RETURNS SETOF record LANGUAGE sql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT q.position, q.mode, q.granted, h.*, q.node
  FROM @extschema@.zk_lock_queue_raw(key) q, @extschema@.zk_lock_holder(q.data) h
  ORDER BY q.position
$$;

-- zk_lock_queue() reads through these as its owner; nobody else needs them.
REVOKE EXECUTE ON FUNCTION zk_lock_queue_raw(text), zk_lock_queue_raw(bigint),
    zk_lock_holder(text) FROM PUBLIC;

-- What \df+ and \dv+ say of each object.
COMMENT ON FUNCTION zk_lock(text) IS 'exclusive lock shared by every cluster on the ZooKeeper ensemble, until the transaction ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_lock(bigint) IS 'exclusive lock shared by every cluster on the ZooKeeper ensemble, until the transaction ends; waits (lock_timeout applies)';
COMMENT ON FUNCTION zk_try_lock(text) IS 'exclusive lock if no other holder has it, else false; never queues';
COMMENT ON FUNCTION zk_try_lock(bigint) IS 'exclusive lock if no other holder has it, else false; never queues';
COMMENT ON FUNCTION zk_try_lock(text, integer) IS 'exclusive lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_try_lock(bigint, integer) IS 'exclusive lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_unlock(text) IS 'release one exclusive acquisition early; warning and false if not held';
COMMENT ON FUNCTION zk_unlock(bigint) IS 'release one exclusive acquisition early; warning and false if not held';
COMMENT ON FUNCTION zk_lock_shared(text) IS 'shared (read) lock across clusters until the transaction ends; waits for writers';
COMMENT ON FUNCTION zk_lock_shared(bigint) IS 'shared (read) lock across clusters until the transaction ends; waits for writers';
COMMENT ON FUNCTION zk_try_lock_shared(text) IS 'shared lock if no writer holds or waits before it, else false; never queues';
COMMENT ON FUNCTION zk_try_lock_shared(bigint) IS 'shared lock if no writer holds or waits before it, else false; never queues';
COMMENT ON FUNCTION zk_try_lock_shared(text, integer) IS 'shared lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_try_lock_shared(bigint, integer) IS 'shared lock, waiting at most timeout_ms (0: no wait); false on timeout';
COMMENT ON FUNCTION zk_unlock_shared(text) IS 'release one shared acquisition early; warning and false if not held';
COMMENT ON FUNCTION zk_unlock_shared(bigint) IS 'release one shared acquisition early; warning and false if not held';
COMMENT ON FUNCTION zk_lock_token(text) IS 'fencing token of a lock this transaction holds: grows from one holder of the key to the next';
COMMENT ON FUNCTION zk_lock_token(bigint) IS 'fencing token of a lock this transaction holds: grows from one holder of the key to the next';
COMMENT ON FUNCTION zk_unlock_all() IS 'release every zk_lock lock of this session, both modes';
COMMENT ON FUNCTION zk_lock_requests() IS 'the rows of the zk_locks view: this cluster''s lock requests';
COMMENT ON VIEW zk_locks IS 'this cluster''s zk_lock requests, like pg_locks: key, mode, state, node, fencing token, times';
COMMENT ON FUNCTION zk_lock_status() IS 'the zk_lock worker: connection state, session, server, timeouts, counters, hosts, identity';
COMMENT ON FUNCTION zk_lock_queue(text) IS 'every cluster''s holders and waiters for a key, in queue order, read live from ZooKeeper';
COMMENT ON FUNCTION zk_lock_queue(bigint) IS 'every cluster''s holders and waiters for a key, in queue order, read live from ZooKeeper';
COMMENT ON FUNCTION zk_lock_queue_raw(text) IS 'internal: the raw queue behind zk_lock_queue()';
COMMENT ON FUNCTION zk_lock_queue_raw(bigint) IS 'internal: the raw queue behind zk_lock_queue()';
COMMENT ON FUNCTION zk_lock_holder(text) IS 'internal: who asked, from a lock node''s data';
