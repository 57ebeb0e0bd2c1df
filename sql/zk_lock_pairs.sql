-- 1.1: (key1 int, key2 int) keys, a key space of their own.
SELECT extversion FROM pg_extension WHERE extname = 'zk_lock';

BEGIN;
SELECT zk_lock(1, 2);
SELECT zk_lock(4294967298);          -- (1 << 32) + 2 as a bigint: another lock
SELECT zk_lock('1,2');               -- and as text: a third
SELECT key, key_type, mode, state FROM zk_locks ORDER BY key_type, key;
SELECT zk_lock_token(1, 2) > 0 AS has_token;
SELECT position, mode, granted FROM zk_lock_queue(1, 2);
SELECT zk_unlock(1, 2);
SELECT zk_unlock(1, 2);              -- not held any more: WARNING and false
SELECT zk_lock_token(1, 2);          -- error: not held
ROLLBACK;

-- the extremes, stacking, shared mode
BEGIN;
SELECT zk_lock(-2147483648, 2147483647);
SELECT zk_lock(-2147483648, 2147483647);
SELECT key FROM zk_locks;
SELECT zk_unlock(-2147483648, 2147483647), zk_unlock(-2147483648, 2147483647);
SELECT zk_lock_shared(3, 4);
SELECT zk_try_lock_shared(3, 4, 0);
SELECT zk_try_lock(5, 6, 5000);
SELECT key, mode FROM zk_locks ORDER BY key, mode;
SELECT zk_unlock_shared(3, 4), zk_unlock_shared(3, 4), zk_unlock(5, 6);
COMMIT;

-- two integers to a try function still mean a key and a timeout, as in 1.0
BEGIN;
SELECT zk_try_lock(42, 1000);
SELECT zk_try_lock_shared(43, 0);
SELECT key, key_type FROM zk_locks ORDER BY key;
COMMIT;

-- bad input
SELECT zk_lock(NULL::integer, 1);
SELECT zk_lock(1, NULL);
SELECT zk_unlock_shared(NULL, 1);
SELECT zk_try_lock(1, 2, NULL);
SELECT zk_try_lock(1, 2, -1);
SELECT zk_lock(1, 2, 3, 4);
