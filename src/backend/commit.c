/*
 * commit.c — the commit check of a backend that held zk_locks: a lost lock
 * fails the commit, and the commit never outlives the proof that the
 * granting session is alive (zk_lock.proof_bound; the worker keeps the
 * proof in shared memory, holds.c decides), nor, with
 * zk_lock.verify_on_commit, a check of each held node through the leader.
 * xact.c runs it at pre-commit and pre-prepare.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/proc.h"
#include "utils/timestamp.h"

#include "commit.h"
#include "held.h"
#include "key_text.h"
#include "settings.h"
#include "shmem.h"
#include "table.h"

/* A commit's wait for a proof runs outside any statement: explained here. */
static void
proof_sleep(void *arg)
{
	ConditionVariableTimedSleep(&zkl_shared->proof_cv, *(long *) arg, PG_WAIT_EXTENSION);
}

/*
 * A session-level failure of the commit: the session that granted this
 * transaction's locks cannot be shown alive, so another cluster may hold
 * them.  40001, as for a lost lock: the application retries.
 */
static void
unproven_error(const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not prove the zk_lock session alive before commit"),
			 errdetail("%s", why),
			 errhint(ZKL_LOST_HINT)));
}

/*
 * Whether the commit may go ahead as far as the session goes (holds.h):
 * errors out if it never may, returns false while the proof is too old.
 */
static bool
proof_fresh(void)
{
	int64		session;
	int64		at = zkl_proof_read(&session);
	bool		session_level;
	const char *lost = zb_lost_key(&session_level);

	switch (zc_holds_commit_verdict(&zb_held_book()->proof, session_level, lost != NULL, at, session,
							   zkl_shared->t.session_tag, zkl_mono_now(), zkl_proof_bound))
	{
		case ZKH_COMMIT:
			return true;
		case ZKH_WAIT:
			return false;
		case ZKH_SESSION_LOST:
			zb_session_lost_error(lost, false);
			break;
		case ZKH_LOST:
			zb_lost_error(lost ? lost : zb_held_book()->proof.lost_key);
			break;
		case ZKH_TWO_SESSIONS:
			unproven_error("Its locks were granted by two ZooKeeper sessions: the first one ended.");
			break;
		case ZKH_ENDED:
			unproven_error("The ZooKeeper session that granted the locks has ended.");
			break;
	}
	return false;
}

/*
 * The check's second run, after the callbacks registered since: a lock lost
 * in between (the commit window) does not stop the commit, which the first
 * run decided.  Say so, once a transaction, and count it: another cluster
 * may be granted the key before this commit lands.
 */
static void
note_loss_past_check(void)
{
	static LocalTransactionId noted = InvalidLocalTransactionId;
	bool		session_level;
	const char *key = zb_lost_key(&session_level);

	if (key == NULL || noted == MyProc->lxid)
		return;
	noted = MyProc->lxid;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->t.counters.committed_past_loss++;
	LWLockRelease(zkl_shared->lock);
	ereport(WARNING,
			(errmsg("zk_lock lock on key \"%s\" was lost while this transaction committed",
					zb_display_key(key)),
			 errdetail("The loss came after the commit check had passed: the commit goes on, and another cluster may be granted the key before it ends."),
			 errhint("Guard writes to other systems with fencing tokens (zk_lock_token).")));
}

/*
 * Ask each held lock's node to be proven alive through the leader
 * (zk_lock.verify_on_commit); true once all are.
 */
static bool
verify_nodes(bool ask)
{
	bool		verified = true;
	bool		wake = false;
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < zb_held_book()->n; i++)
	{
		ZklSlot    *slot = &zkl_shared->t.slots[zb_held_book()->h[i].slot];

		if (ask)
			wake |= zc_table_ask_verify(slot);
		verified &= slot->own.verify == ZKV_OK;
	}
	LWLockRelease(zkl_shared->lock);
	if (wake)
		zkl_wake_worker();
	return verified;
}

/*
 * At pre-commit, for a transaction that held zk_locks at any point:
 *   - a lock that was lost fails the commit, even if unlocked since;
 *   - the commit never outlives the proof that the granting session is
 *     alive: if the worker's proof is older than zk_lock.proof_bound, wait
 *     (bounded) for a fresh one.  A stalled worker, or one whose server is
 *     cut off from the leader, gets none, so such commits fail.
 * The proof bound is below zk_lock.lock_delay, which other clusters wait
 * after a holder's session dies before they grant its lock to anyone else:
 * so our last possible commit comes before their grant.  With
 * zk_lock.verify_on_commit, each held node is also checked via the leader.
 */
void
zb_commit_check(void)
{
	TimestampTz deadline = 0;	/* set once a wait begins: most commits need none */
	bool		verify = zkl_verify_on_commit && zb_held_book()->n > 0;
	bool		asked = false;
	bool		verified = !verify;
	bool		session_level;

	/*
	 * xact.c runs us twice, before and after the callbacks registered since
	 * (postgres_fdw's remote commits): once passed, the check stands.  A
	 * loss in between is the commit window; refusing now would leave the
	 * remote commits done and the local one not.
	 */
	if (zb_held_past_check())
	{
		note_loss_past_check();
		return;
	}
	zc_book_at_commit(zb_held_book());
	pg_read_barrier();
	if (zb_held_book()->proof.session == 0 && zb_held_book()->proof.lost_key == NULL && zb_lost_key(&session_level) == NULL)
		return;					/* no lock, no loss: nothing to prove */
	for (;;)
	{
		bool		fresh;
		long		left;

		pg_read_barrier();
		fresh = proof_fresh();
		if (verify)
			verified = verify_nodes(!asked);
		asked = true;
		/* past this point a loss cancels nothing (held.c): the check decided */
		if (fresh && verified && zb_held_committing(true))
			return;

		if (deadline == 0)
			deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												   zkl_session_timeout + WORKER_GRACE_MS);
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (left <= 0)
			unproven_error("No proof from the ZooKeeper leader arrived in time.");
		if (!fresh)
		{
			zkl_shared->t.proof_wanted = true;
			pg_memory_barrier();
			zkl_wake_worker();
		}
		/*
		 * The worker broadcasts each new proof.  A lost lock or a verified
		 * node only sets our latch, which does not end this sleep: the
		 * 100 ms cap makes us look again.
		 */
		left = Min(left, 100);
		zb_run_explained(proof_sleep, &left);
	}
}
