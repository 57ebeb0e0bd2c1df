-- Transaction binding, as core pg_advisory_xact_lock: stacking, savepoints,
-- commit and abort release, PREPARE refused.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS zk_lock;
RESET client_min_messages;

-- repeated requests stack; each unlock undoes one
BEGIN;
SELECT zk_lock('stack');
SELECT zk_lock('stack');
SELECT zk_try_lock('stack');
SELECT zk_unlock('stack'), zk_unlock('stack'), zk_unlock('stack');
SELECT zk_unlock('stack');
COMMIT;

-- commit releases: the next transaction holds nothing
BEGIN;
SELECT zk_lock('c');
COMMIT;
SELECT zk_unlock('c');

-- abort releases too
BEGIN;
SELECT zk_lock('r');
ROLLBACK;
SELECT zk_unlock('r');

-- an error aborts the transaction and releases its locks
BEGIN;
SELECT zk_lock('e');
SELECT 1/0;
ROLLBACK;
SELECT zk_unlock('e');

-- a rolled-back savepoint releases what was taken inside it
BEGIN;
SAVEPOINT s1;
SELECT zk_lock('sp');
ROLLBACK TO SAVEPOINT s1;
SELECT zk_unlock('sp');
COMMIT;

-- ... but not what was taken before it, even when taken again inside
BEGIN;
SELECT zk_lock('outer');
SAVEPOINT s1;
SELECT zk_lock('outer');
SAVEPOINT s2;
SELECT zk_lock('outer');
ROLLBACK TO SAVEPOINT s1;
SELECT zk_unlock('outer');
SELECT zk_unlock('outer');
COMMIT;

-- a released savepoint hands its locks to the parent
BEGIN;
SAVEPOINT s1;
SELECT zk_lock('rel');
SAVEPOINT s2;
SELECT zk_lock('rel');
RELEASE SAVEPOINT s2;
RELEASE SAVEPOINT s1;
SELECT zk_unlock('rel'), zk_unlock('rel');
SELECT zk_unlock('rel');
COMMIT;

-- ... and a later rollback of the outer savepoint releases them
BEGIN;
SAVEPOINT s1;
SAVEPOINT s2;
SELECT zk_lock('nested');
RELEASE SAVEPOINT s2;
ROLLBACK TO SAVEPOINT s1;
SELECT zk_unlock('nested');
COMMIT;

-- an exception block is a subtransaction: its locks go with its rollback
DO $$
BEGIN
  BEGIN
    PERFORM zk_lock('plpgsql');
    RAISE EXCEPTION 'boom';
  EXCEPTION WHEN OTHERS THEN
    NULL;
  END;
  IF zk_unlock('plpgsql') THEN
    RAISE EXCEPTION 'lock survived its subtransaction';
  END IF;
END $$;

-- zk_unlock_all releases every lock at once
BEGIN;
SELECT zk_lock('all1'), zk_lock('all2'), zk_lock(3);
SELECT zk_unlock_all();
SELECT zk_unlock('all1');
COMMIT;

-- outside an explicit transaction a lock lasts for its statement, with a
-- WARNING from every function that takes a lock (also inside a DO block)
SELECT zk_lock('auto');
SELECT zk_unlock('auto');
SELECT zk_try_lock(7);
SELECT zk_lock_shared('auto');
SELECT zk_try_lock_shared('auto', 5000);
DO $$BEGIN PERFORM zk_lock('auto'); END$$;
-- no WARNING inside a transaction block, explicit or implicit (one query
-- string), nor from the unlock functions
BEGIN;
SELECT zk_lock('auto');
COMMIT;
SELECT 1 AS one \; SELECT zk_lock('auto') \; SELECT zk_unlock('auto');

-- PREPARE TRANSACTION while holding a lock is an error; the transaction rolls back
BEGIN;
SELECT zk_lock('prep');
PREPARE TRANSACTION 'zk_lock_prep';
SELECT count(*) FROM pg_prepared_xacts;
SELECT zk_unlock('prep');

-- once released, PREPARE works
BEGIN;
SELECT zk_lock('prep2');
SELECT zk_unlock_all();
PREPARE TRANSACTION 'zk_lock_prep2';
COMMIT PREPARED 'zk_lock_prep2';
