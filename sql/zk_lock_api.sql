-- zk_lock SQL API: shapes, errors with their SQLSTATEs, key spaces.
CREATE EXTENSION zk_lock;

-- A worker grants nothing for zk_lock.lock_delay after its session starts;
-- one blocking lock first, so the short try-locks below are not timed against it.
BEGIN;
SELECT zk_lock('warm-up');
COMMIT;

-- Runs a statement and reports its SQLSTATE and message instead of failing.
CREATE FUNCTION outcome(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- every lock function is PARALLEL UNSAFE (only the JSON helper zk_lock_holder is safe),
-- and none is STRICT (a NULL key is an error, not NULL)
SELECT p.oid::regprocedure AS function, p.proparallel, p.proisstrict
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'zk_lock'
ORDER BY 1::text;

-- bad input
SELECT outcome($$SELECT zk_lock(NULL::text)$$);
SELECT outcome($$SELECT zk_lock(NULL::bigint)$$);
SELECT outcome($$SELECT zk_try_lock(NULL::text)$$);
SELECT outcome($$SELECT zk_unlock(NULL::text)$$);
SELECT outcome($$SELECT zk_lock('')$$);
SELECT outcome($$SELECT zk_try_lock('', 10)$$);
SELECT outcome($$SELECT zk_lock(repeat('x', 257))$$);
SELECT outcome($$SELECT zk_lock(repeat('é', 129))$$);   -- 258 bytes in UTF-8
SELECT outcome($$SELECT zk_try_lock('k', -1)$$);
SELECT outcome($$SELECT zk_try_lock('k', NULL)$$);

-- the longest key, every byte escaped in ZooKeeper, works
BEGIN;
SELECT zk_lock(repeat('/', 256));
SELECT zk_unlock(repeat('/', 256));
COMMIT;

-- awkward keys: separators, escapes, unicode, case, bigint extremes
BEGIN;
SELECT zk_lock('a/b'), zk_lock('a%2Fb'), zk_lock('A/B'), zk_lock('ключ 🔒'),
       zk_lock('.'), zk_lock('..'), zk_lock(E'tab\there');
SELECT zk_lock(-9223372036854775808), zk_lock(9223372036854775807), zk_lock(0);
SELECT zk_unlock('a/b'), zk_unlock('a%2Fb'), zk_unlock('A/B'), zk_unlock('ключ 🔒'),
       zk_unlock('.'), zk_unlock('..'), zk_unlock(E'tab\there');
SELECT zk_unlock(-9223372036854775808), zk_unlock(9223372036854775807), zk_unlock(0);
COMMIT;

-- every class of UTF-8 character (controls, C1, Latin, combining, CJK,
-- 4-byte, private use, ZooKeeper's refused specials, the last code point),
-- maximum lengths, and keys equal but for '/', '%' or case: each is its own
-- lock (equal keys would stack into one row) and reads back exactly
BEGIN;
CREATE TEMP TABLE odd_keys (key text) ON COMMIT DROP;
INSERT INTO odd_keys VALUES
  (' ~!@#$^&*()_+-=[]{};:''",.<>?\|`'), (E'\x01\x09\x0A\x1F\x7F'),
  (U&'\0085\00A0'), ('é'), (U&'e\0301'), ('漢字かな'), ('🔒'), (U&'\D7FF\E000\F8FF'),
  (U&'\FFF0\FFFE\FFFF'), (U&'\+10FFFF'), (U&'\200B\200E\202E\FEFF'),
  ('a/b'), ('a%b'), ('a%2Fb'), ('a%2fb'), ('A/B'), ('a/B'), ('A%B'),
  ('.'), ('..'), ('/'), ('%'), ('zookeeper'), ('/zookeeper'),
  (repeat('%', 256)), (repeat('🔒', 64)), (repeat('é', 128)), (repeat('k', 256));
SELECT count(*) AS keys, count(zk_lock(key)) AS locked FROM odd_keys;
SELECT count(*) AS rows, count(DISTINCT key) AS distinct_keys
  FROM zk_locks WHERE pid = pg_backend_pid() AND key_type = 'text' AND state = 'granted';
SELECT key AS not_read_back FROM odd_keys
EXCEPT SELECT key FROM zk_locks WHERE pid = pg_backend_pid() AND state = 'granted';
COMMIT;

-- text and bigint keys are separate key spaces: unlocking one leaves the other
BEGIN;
SELECT zk_lock('7'), zk_lock(7);
SELECT zk_unlock(7);
SELECT zk_unlock(7);
SELECT zk_unlock('7');
COMMIT;

-- unlock of a key not held: WARNING and false, as pg_advisory_unlock
SELECT zk_unlock('never-taken');
SELECT zk_unlock(12345);

-- try-lock forms on a free key
BEGIN;
SELECT zk_try_lock('free'), zk_try_lock(99), zk_try_lock('free2', 0), zk_try_lock(98, 5000);
SELECT zk_unlock_all();
SELECT zk_unlock('free');
COMMIT;

-- zk_locks: this cluster's requests, like pg_locks (earlier transactions' nodes
-- may still be 'releasing': deletion is asynchronous)
SELECT count(*) FROM zk_locks WHERE state <> 'releasing';
BEGIN;
SELECT zk_lock('view-key'), zk_lock(77), zk_lock('view-key');
SELECT key, key_type, mode, state, node LIKE 'x-%' AS has_node, token > 0 AS has_token,
       pid = pg_backend_pid() AS mine, granted_at >= wait_start AS ordered
FROM zk_locks ORDER BY key;
COMMIT;

-- zk_lock_status: the worker's session (values that vary are only checked for presence)
SELECT worker_pid > 0 AS worker, state, session_id ~ '^0x[0-9a-f]+$' AS session,
       server IS NOT NULL AS server, session_timeout_ms > 0 AS timeout,
       max_locks, requests >= grants AS counted, hosts <> '' AS hosts
FROM zk_lock_status();

-- zk_lock_counters: every counter, one a row (the values vary: only their presence)
SELECT counter, value >= 0 AS counted, meaning <> '' AS explained FROM zk_lock_counters;
SELECT s.requests = c.value AS same FROM zk_lock_status() s, zk_lock_counters c WHERE c.counter = 'requests';

-- zk_lock_waits: nobody waits, so no cluster published a wait
SELECT count(*) FROM zk_lock_waits;

-- shared mode: stacks apart from exclusive; the wrong unlock warns
SELECT outcome($$SELECT zk_lock_shared(NULL::text)$$);
SELECT outcome($$SELECT zk_try_lock_shared('', 5)$$);
BEGIN;
SELECT zk_lock_shared('rw'), zk_lock_shared('rw'), zk_try_lock_shared(5), zk_try_lock_shared('rw2', 5000);
SELECT zk_unlock('rw');
SELECT key, key_type, mode, state FROM zk_locks
WHERE pid = pg_backend_pid() AND state <> 'releasing' ORDER BY key;
SELECT zk_unlock_shared('rw'), zk_unlock_shared('rw');
SELECT zk_unlock_shared('rw');
-- alone on the key, a reader may also take it exclusive
SELECT zk_lock('rw2');
SELECT key, mode FROM zk_locks WHERE pid = pg_backend_pid() AND state = 'granted' ORDER BY key, mode;
SELECT zk_unlock_all();
SELECT zk_unlock_shared(5);
COMMIT;

-- zk_lock_queue: the key's contenders read live from ZooKeeper (all clusters)
SELECT count(*) FROM zk_lock_queue('nobody-here');
SELECT outcome($$SELECT * FROM zk_lock_queue(NULL::text)$$);
BEGIN;
SELECT txid_current() > 0 AS has_xid;
SELECT zk_lock_shared('q'), zk_lock('q');
SELECT position, mode, granted, pid = pg_backend_pid() AS mine, database = current_database() AS db,
       xid = txid_current() AS xid, sysid = (SELECT system_identifier::text FROM pg_control_system()) AS sysid,
       since BETWEEN clock_timestamp() - interval '1 minute' AND clock_timestamp() AS since,
       left(node, 2) = CASE mode WHEN 'shared' THEN 's-' ELSE 'x-' END AS node
FROM zk_lock_queue('q');
COMMIT;

-- zk_lock_token: the fencing token of a held lock (its node's czxid)
SELECT outcome($$SELECT zk_lock_token('not-held')$$);
SELECT outcome($$SELECT zk_lock_token(NULL::bigint)$$);
BEGIN;
SELECT zk_lock('fenced'), zk_lock_shared(11);
SELECT zk_lock_token('fenced') > 0 AS positive,
       zk_lock_token('fenced') = (SELECT token FROM zk_locks WHERE key = 'fenced' AND state = 'granted') AS same_as_view,
       zk_lock_token(11) <> zk_lock_token('fenced') AS per_lock;
COMMIT;
-- an upgrade keeps the token of the transaction's oldest node on the key
BEGIN;
SELECT zk_lock_shared('fenced');
CREATE TEMP TABLE shared_token AS SELECT zk_lock_token('fenced') AS t;
SELECT zk_lock('fenced');
SELECT zk_lock_token('fenced') = (SELECT t FROM shared_token) AS oldest_node,
       (SELECT min(token) FROM zk_locks WHERE key = 'fenced' AND state = 'granted') = zk_lock_token('fenced') AS min_of_view,
       (SELECT count(*) FROM zk_locks WHERE key = 'fenced' AND state = 'granted') AS nodes;
COMMIT;
