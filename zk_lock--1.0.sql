/* zk_lock--1.0.sql */

\echo Use "CREATE EXTENSION zk_lock" to load this file. \quit

-- Exclusive, transaction-bound locks.  Not STRICT: a NULL key is an error, not NULL.
-- The C functions tell text from bigint keys by the argument's type.

CREATE FUNCTION zk_lock(key text) RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_lock(key bigint) RETURNS void
AS 'MODULE_PATHNAME', 'zk_lock' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock(key text, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_try_lock(key bigint, timeout_ms integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_try_lock' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_unlock(key text) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_unlock(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_unlock' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_unlock_all() RETURNS void
AS 'MODULE_PATHNAME', 'zk_unlock_all' LANGUAGE C VOLATILE PARALLEL UNSAFE;
