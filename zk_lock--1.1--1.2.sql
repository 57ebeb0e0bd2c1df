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
