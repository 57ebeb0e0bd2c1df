-- 1.1: counting semaphores, transaction-bound, a key space of their own.
BEGIN;
SELECT zk_semaphore('pool', 3);
SELECT zk_semaphore('pool', 3);      -- stacks, as locks do
SELECT zk_semaphore(42, 1);          -- bigint keys too
SELECT zk_lock('pool');              -- the lock key space is another
SELECT key, key_type, kind, mode, holders, state FROM zk_locks WHERE state <> 'releasing' ORDER BY kind, key_type, key;
SELECT zk_lock_token('pool') > 0 AS has_token, zk_lock_token(42) > 0 AS bigint_token;
-- the key's queue shows its lock and its semaphore, read live from ZooKeeper
SELECT kind, position, mode, granted, holders, pid = pg_backend_pid() AS mine FROM zk_lock_queue('pool');
SELECT kind, mode, granted, holders FROM zk_lock_queue(42);
SELECT zk_semaphore('pool', 4);      -- error: this transaction holds it with 3
ROLLBACK;

BEGIN;
SELECT zk_try_semaphore('pool', 2);
SELECT zk_try_semaphore(7, 1, 0);
SELECT zk_try_semaphore('pool', 2, 5000);   -- stacks
SELECT zk_unlock_semaphore('pool'), zk_unlock_semaphore('pool');
SELECT zk_unlock_semaphore('pool');  -- not held any more: WARNING and false
SELECT zk_unlock_semaphore(7);
SELECT zk_lock_token(7);             -- error: not held
COMMIT;
SELECT count(*) AS left_over FROM zk_locks WHERE state <> 'releasing';

-- the longest key, every byte escaped, works as a semaphore's too
BEGIN;
SELECT zk_semaphore(repeat('/', 256), 1000000);
SELECT zk_unlock_semaphore(repeat('/', 256));
COMMIT;

-- bad input
SELECT zk_semaphore('pool', 0);
SELECT zk_semaphore('pool', -1);
SELECT zk_semaphore('pool', 1000001);
SELECT zk_semaphore('pool', NULL);
SELECT zk_semaphore(NULL::text, 2);
SELECT zk_semaphore('', 2);
SELECT zk_try_semaphore('pool', 2, -1);
SELECT zk_try_semaphore('pool', 2, NULL);
SELECT zk_unlock_semaphore(NULL::bigint);

-- outside a transaction block: held until the statement ends, with a warning
SELECT zk_semaphore('auto', 1);
SELECT count(*) FROM zk_locks WHERE key = 'auto' AND state = 'granted';

-- PREPARE TRANSACTION refuses transaction-level semaphores, as locks
BEGIN;
SELECT zk_semaphore('prep', 1);
PREPARE TRANSACTION 'zk_sem';
