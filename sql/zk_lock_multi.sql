-- 1.1: multi-key locks, all or nothing, queued in one ZooKeeper multi.
BEGIN;
SELECT zk_lock(array['a', 'b', 'a']);          -- a duplicate counts once
SELECT key, mode, state FROM zk_locks WHERE state <> 'releasing' ORDER BY key;
SELECT zk_lock(array[7, 8]::bigint[]);
SELECT zk_lock_shared(array['s1', 's2']);
SELECT key, key_type, mode FROM zk_locks WHERE key IN ('7', '8', 's1', 's2') ORDER BY key;
-- each key is an ordinary hold: unlocked one by one, and a request that
-- names a held key stacks on it (two unlocks then)
SELECT zk_lock(array['a', 'c']);
SELECT zk_unlock('a'), zk_unlock('a'), zk_unlock('a');
SELECT zk_unlock('b'), zk_unlock('c');
COMMIT;

-- try forms: all free, so true; with a timeout too; shared
BEGIN;
SELECT zk_try_lock(array['t1', 't2']);
SELECT zk_try_lock(array['t3', 't4'], 5000);
SELECT zk_try_lock(array[11, 12]::bigint[], 0);
SELECT zk_try_lock_shared(array['t5']);
SELECT zk_try_lock_shared(array[13, 14]::bigint[], 5000);
SELECT count(*) FROM zk_locks WHERE state = 'granted';
COMMIT;
SELECT count(*) AS left_over FROM zk_locks WHERE state <> 'releasing';

-- session level: held across COMMIT
SELECT zk_session_lock(array['m1', 'm2']);
SELECT zk_session_lock_shared(array[21]::bigint[]);
SELECT zk_session_try_lock(array['m3']), zk_session_try_lock(array['m4'], 5000),
       zk_session_try_lock_shared(array['m5']), zk_session_try_lock_shared(array['m6'], 0);
SELECT key, mode, scope FROM zk_locks WHERE state = 'granted' ORDER BY key;
SELECT zk_session_unlock_all();
SELECT count(*) AS left_over FROM zk_locks WHERE state <> 'releasing';

-- a text literal is still one text key, as in 1.0
BEGIN;
SELECT zk_lock('{a,b}');
SELECT key FROM zk_locks WHERE state <> 'releasing';
COMMIT;

-- bad input: nothing is taken
SELECT zk_lock(NULL::text[]);
SELECT zk_lock(array[]::text[]);
SELECT zk_lock(array['a', NULL]);
SELECT zk_lock(array['a', '']);
SELECT zk_lock(array[repeat('x', 257)]);
SELECT zk_try_lock(array['a'], -1);
SELECT zk_try_lock(array['a'], NULL);
SELECT zk_lock(array(SELECT 'k' || i FROM generate_series(1, 33) i));
SELECT zk_lock(array(SELECT i FROM generate_series(1, 33) i)::bigint[]);
SELECT count(*) AS left_over FROM zk_locks WHERE state <> 'releasing';
-- at most 32 distinct keys: 33 with a duplicate is fine
BEGIN;
SELECT zk_lock(array(SELECT 'k' || (i % 32) FROM generate_series(0, 32) i));
SELECT count(*) FROM zk_locks WHERE state = 'granted';
COMMIT;

-- outside a transaction block: a warning, and gone after the statement
SELECT zk_lock(array['auto1', 'auto2']);
SELECT count(*) FROM zk_locks WHERE key LIKE 'auto%' AND state = 'granted';
