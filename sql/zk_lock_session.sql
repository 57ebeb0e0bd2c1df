-- 1.1: session-level locks, as core's pg_advisory_lock: held until unlocked
-- or the session ends, whatever the transactions do; repeated requests stack.

SELECT zk_session_lock('s1');                -- no warning outside a transaction
SELECT key, key_type, mode, state, scope FROM zk_locks WHERE state <> 'releasing';
SELECT position, mode, granted, scope FROM zk_lock_queue('s1');
BEGIN;
SELECT zk_session_lock('s1');                -- stacks
ROLLBACK;                                    -- and stays: not transactional
SELECT key, scope FROM zk_locks WHERE state <> 'releasing';
SELECT zk_session_unlock('s1');              -- one of two
SELECT zk_session_unlock('s1');
SELECT zk_session_unlock('s1');              -- WARNING, false
SELECT count(*) FROM zk_locks WHERE state <> 'releasing';

-- both levels on one key: one request, one node, released when both are
BEGIN;
SELECT zk_lock('both'), zk_session_lock('both');
SELECT key, scope FROM zk_locks WHERE state <> 'releasing';
COMMIT;
SELECT key, scope FROM zk_locks WHERE state <> 'releasing';
SELECT zk_unlock('both');                    -- WARNING: not held at transaction level
SELECT zk_session_unlock('both');
SELECT count(*) FROM zk_locks WHERE state <> 'releasing';

-- every form: try, timeout, shared, bigint, (int, int)
SELECT zk_session_try_lock('t1'), zk_session_try_lock(11), zk_session_try_lock('t2', 5000),
       zk_session_try_lock(1, 2, 5000), zk_session_lock(3, 4);
SELECT zk_session_lock_shared('r'), zk_session_try_lock_shared('r'), zk_session_try_lock_shared('r', 0),
       zk_session_try_lock_shared(5, 6, 0), zk_session_lock_shared(12), zk_session_try_lock_shared(13, 5000);
SELECT key, key_type, mode, scope FROM zk_locks WHERE state <> 'releasing' ORDER BY key_type, key, mode;
SELECT zk_session_unlock_shared('r'), zk_session_unlock_shared(5, 6), zk_session_unlock(3, 4);
SELECT zk_session_unlock_all();
SELECT count(*) FROM zk_locks WHERE state <> 'releasing';

-- two integers to a session try are a key and a timeout, as for zk_try_lock
SELECT zk_session_try_lock(21, 0);
SELECT key, key_type FROM zk_locks WHERE state <> 'releasing';
SELECT zk_session_unlock(21);

-- zk_unlock_all() ends transaction-level locks only, zk_session_unlock_all() session-level ones
BEGIN;
SELECT zk_lock('x1'), zk_session_lock('s2');
SELECT zk_unlock_all();
SELECT key, scope FROM zk_locks WHERE state <> 'releasing';
SELECT zk_lock('x1');
SELECT zk_session_unlock_all();
SELECT key, scope FROM zk_locks WHERE state <> 'releasing';
COMMIT;

-- a rolled-back savepoint leaves session-level locks alone
BEGIN;
SAVEPOINT a;
SELECT zk_session_lock('sp');
ROLLBACK TO a;
SELECT key, scope FROM zk_locks WHERE state <> 'releasing';
COMMIT;
SELECT zk_session_unlock('sp');

-- PREPARE TRANSACTION is allowed while only session-level locks are held
SELECT zk_session_lock('prep');
BEGIN;
SELECT 1 AS one;
PREPARE TRANSACTION 'zk_session_prep';
COMMIT PREPARED 'zk_session_prep';
SELECT key, scope FROM zk_locks WHERE state <> 'releasing';
BEGIN;
SELECT zk_lock('prep2');
PREPARE TRANSACTION 'zk_session_prep2';      -- ERROR: a transaction-level lock is held
SELECT key, scope FROM zk_locks WHERE state <> 'releasing';
SELECT zk_session_unlock('prep');

-- exclusive in a transaction on a key the session holds shared: a downgrade,
-- the exclusive node goes at the commit (the shared one came first)
SELECT zk_session_lock_shared('kp');
BEGIN;
SELECT zk_lock('kp');
COMMIT;
SELECT key, mode, scope FROM zk_locks WHERE state <> 'releasing' ORDER BY mode;
SELECT zk_session_unlock_shared('kp');
-- the other order: a shared lock taken after the exclusive one keeps the
-- exclusive node until the shared hold goes (it may stand past a writer)
SELECT zk_session_lock('kp');
BEGIN;
SELECT zk_lock_shared('kp');
SELECT zk_session_unlock('kp');
SELECT key, mode, scope FROM zk_locks WHERE state <> 'releasing' ORDER BY mode;
COMMIT;
SELECT count(*) AS left FROM zk_locks WHERE key = 'kp' AND state <> 'releasing';
SELECT count(*) FROM zk_locks WHERE state <> 'releasing';

-- a fencing token for a session-level lock
SELECT zk_session_lock('tok');
SELECT zk_lock_token('tok') > 0 AS has_token;
SELECT zk_session_unlock('tok');

-- bad input
SELECT zk_session_lock(NULL::text);
SELECT zk_session_lock(1, NULL);
SELECT zk_session_try_lock('', 5);
SELECT zk_session_try_lock('k', -1);
SELECT zk_session_try_lock('k', NULL);
SELECT count(*) FROM zk_locks WHERE state <> 'releasing';
