/*
 * shmem.c — the shared-memory slot table: sizing, initialisation, claiming
 * and abandoning slots, and latch wake-ups in both directions.
 */
#include "postgres.h"

#include <signal.h>
#include <time.h>

#include "common/pg_prng.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shmem.h"
#include "settings.h"
#include "holds.h"
#include "table.h"
#include "take_here.h"

ZklShared  *zkl_shared = NULL;
ZklQuery   *zkl_query = NULL;
ZklOnceArea *zkl_once = NULL;

static Size
zkl_shmem_size(void)
{
	return add_size(offsetof(ZklShared, slot_array),
					mul_size(sizeof(ZklSlot), zkl_max_locks));
}

void
zkl_shmem_request(void)
{
	RequestAddinShmemSpace(add_size(add_size(zkl_shmem_size(), sizeof(ZklQuery)), sizeof(ZklOnceArea)));
	RequestNamedLWLockTranche("zk_lock", 1);
}

void
zkl_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	zkl_shared = ShmemInitStruct("zk_lock", zkl_shmem_size(), &found);
	if (!found)
	{
		memset(zkl_shared, 0, zkl_shmem_size());
		zkl_shared->lock = &(GetNamedLWLockTranche("zk_lock"))->lock;
		zkl_shared->worker_procno = -1;
		zkl_shared->t.conn_state = ZKC_STOPPED;
		zkl_shared->t.nslots = zkl_max_locks;
		zkl_shared->t.slots = zkl_shared->slot_array;
		pg_atomic_init_u64(&zkl_shared->proof_at, 0);
		ConditionVariableInit(&zkl_shared->proof_cv);
	}
	zkl_query = ShmemInitStruct("zk_lock query", sizeof(ZklQuery), &found);
	if (!found)
	{
		memset(zkl_query, 0, sizeof(ZklQuery));
		ConditionVariableInit(&zkl_query->cv);
	}
	zkl_once = ShmemInitStruct("zk_lock once", sizeof(ZklOnceArea), &found);
	if (!found)
	{
		memset(zkl_once, 0, sizeof(ZklOnceArea));
		ConditionVariableInit(&zkl_once->cv);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
zkl_require_shared(void)
{
	if (zkl_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zk_lock is not loaded"),
				 errhint("Add zk_lock to shared_preload_libraries and restart the server.")));
}

/*
 * A fresh request id.  It must be unique, not secret: node names also carry
 * the system identifier and the pid, and every process's generator is seeded
 * from a strong source when it starts.  A strong random draw per lock cost
 * more CPU than the rest of claiming a slot.
 */
void
zkl_new_uuid(char out[ZKL_UUID_LEN + 1])
{
	uint64		rnd[2];

	rnd[0] = pg_prng_uint64(&pg_global_prng_state);
	rnd[1] = pg_prng_uint64(&pg_global_prng_state);
	zc_recipe_format_uuid((const unsigned char *) rnd, out);
}

void
zkl_wake_worker(void)
{
	int			procno = zkl_shared->worker_procno;

	if (procno >= 0)
		SetLatch(&GetPGProcByNumber(procno)->procLatch);
}

/*
 * Owners to wake once the slot-table lock is let go.  Setting another
 * process's latch signals it, and that system call (an interrupt to another
 * core, in a VM an exit to the host) need not lengthen the lock's hold for
 * every backend queued on it.  Only the worker defers (it answers many
 * slots per lock hold); a deferred wake is never lost, as the worker
 * flushes them after every reply and before it sleeps or exits.
 */
static int *wake_procnos = NULL;
static int	wake_count = 0;

void
zkl_defer_wakes(void)
{
	if (wake_procnos == NULL)
		wake_procnos = MemoryContextAlloc(TopMemoryContext,
										  zkl_shared->t.nslots * sizeof(int));
}

void
zkl_flush_wakes(void)
{
	int			i;

	for (i = 0; i < wake_count; i++)
		SetLatch(&GetPGProcByNumber(wake_procnos[i])->procLatch);
	wake_count = 0;
}

void
zkl_wake_owner(ZklSlot *slot)
{
	if (slot->own.abandoned || slot->req.owner_procno < 0)
		return;
	if (wake_procnos != NULL && wake_count < zkl_shared->t.nslots)
		wake_procnos[wake_count++] = slot->req.owner_procno;
	else
		SetLatch(&GetPGProcByNumber(slot->req.owner_procno)->procLatch);
}

/*
 * Claim a free slot for each of n keys (one request; n > 1: a multi-key one,
 * whose slots share a group and are created in one multi) and wake the
 * worker.  All or none: errors out when the table is full, before anything
 * was sent to ZooKeeper.  The slots' indexes go to idx[].
 */
void
zkl_claim_slots(const char *const *keys, int n, char mode, int holders, bool nowait,
				bool session, const char *data, int *idx)
{
	ZklRequest	r;
	char		uuids[ZKL_MULTI_KEYS][ZKL_UUID_LEN + 1];
	int64		mono = zkl_mono_now();	/* may fail: before the lock */
	bool		wake;
	bool		join_wake;
	int			i;

	Assert(n >= 1 && n <= ZKL_MULTI_KEYS);
	for (i = 0; i < n; i++)
		zkl_new_uuid(uuids[i]);	/* may fail: before the lock */
	r.mode = mode;
	r.holders = holders;
	r.nowait = nowait;
	r.scope = session ? ZKL_SCOPE_SESSION : ZKL_SCOPE_XACT;
	r.data = data;
	r.procno = MyProc->pgprocno;
	r.pid = MyProcPid;
	r.now = GetCurrentTimestamp();

	/* the worker plans under this lock: it sees the whole group or none of it */
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	r.group = n > 1 ? ++zkl_shared->t.next_attempt : 0;
	for (i = 0; i < n; i++)
	{
		idx[i] = zc_table_find_free(&zkl_shared->t);
		if (idx[i] < 0)
		{
			while (--i >= 0)
				zc_table_free(&zkl_shared->t, &zkl_shared->t.slots[idx[i]]);
			LWLockRelease(zkl_shared->lock);
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),	/* 53200, as core's full lock table */
					 errmsg("out of zk_lock slots"),
					 errdetail("All %d slots of the zk_lock request table are in use.",
							   zkl_shared->t.nslots),
					 errhint("Raise zk_lock.max_locks and restart the server.")));
		}
		r.uuid = uuids[i];
		r.key = keys[i];
		zc_table_claim(&zkl_shared->t, idx[i], &r);
	}
	wake = !zkl_shared->t.writes_held;
	/* a node kept here for the key (zk_lock.linger) is taken at once, with no worker turn */
	if (n == 1 && zc_take_here(&zkl_shared->t, &zkl_shared->t.slots[idx[0]], mono, r.now))
		wake = zkl_shared->t.slots[idx[0]].zk.todo != 0;	/* a call still owed for the node */
	/* or it waits behind this cluster's holder of the key, with no worker turn */
	else if (n == 1 && zc_join_here(&zkl_shared->t, &zkl_shared->t.slots[idx[0]], mono, r.now, &join_wake))
		wake = wake && join_wake;
	LWLockRelease(zkl_shared->lock);

	if (wake)
		zkl_wake_worker();
}

static int64 mono_read(void);

static bool
abandon_locked(ZklSlot *slot, int64 mono)
{
	/*
	 * A released node passes to the next local waiter, or lingers
	 * (zk_lock.linger), here when the worker's release would: the worker is
	 * woken only if it must be.  Without a clock (mono 0: a release at
	 * commit or abort must not fail) the worker decides.
	 */
	if (mono == 0)
		return zc_table_abandon(&zkl_shared->t, slot);
	return zc_release_here(&zkl_shared->t, slot, mono, GetCurrentTimestamp(), zkl_wake_owner);
}

/*
 * The owner is done with a slot (released, gave up, or failed).  Returns the
 * result it had at that moment, so a waiter that times out just as it is
 * granted can tell.  Never blocks on ZooKeeper.
 */
ZklResult
zkl_abandon_slot(int idx)
{
	ZklSlot    *slot = &zkl_shared->t.slots[idx];
	int64		mono = mono_read();
	ZklResult	result;
	bool		wake;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	result = slot->ans.result;
	wake = abandon_locked(slot, mono);
	LWLockRelease(zkl_shared->lock);
	if (wake)
		zkl_wake_worker();
	return result;
}

/* Abandon several slots under one lock acquisition (end of transaction). */
void
zkl_abandon_slots(const int *idx, int n)
{
	int64		mono = mono_read();
	bool		wake = false;
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < n; i++)
		wake |= abandon_locked(&zkl_shared->t.slots[idx[i]], mono);
	LWLockRelease(zkl_shared->lock);
	if (wake)
		zkl_wake_worker();
}

/*
 * Give up a request (its n slots) unless all of it was granted, atomically:
 * a grant that lands just as a waiter times out is taken rather than thrown
 * away, and the worker never sees part of a multi-key request given up.
 * Returns whether all was granted (then nothing is given up).
 */
bool
zkl_cancel_slots(const int *idx, int n)
{
	int64		mono = mono_read();
	bool		all = true;
	bool		wake = false;
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < n; i++)
		all &= zkl_shared->t.slots[idx[i]].ans.result == ZKL_RESULT_GRANTED;
	for (i = 0; i < n && !all; i++)
		wake |= abandon_locked(&zkl_shared->t.slots[idx[i]], mono);
	LWLockRelease(zkl_shared->lock);
	if (wake)
		zkl_wake_worker();
	return all;
}

/*
 * Microseconds of a clock that only moves forward, at the same rate as real
 * time, and is the same in every process of the machine: the safety rules
 * compare elapsed times, which a step of the wall clock must not change.
 * CLOCK_BOOTTIME also counts time the machine spent suspended, which
 * CLOCK_MONOTONIC skips: a proof must age while the host sleeps.
 */
/* The clock of zkl_mono_now, or 0 if there is none (a release must not fail on it). */
static int64
mono_read(void)
{
	struct timespec ts;

	/* a kernel without CLOCK_BOOTTIME says EINVAL: the monotonic clock then (an unset ts is no time) */
#ifdef CLOCK_BOOTTIME
	if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
		return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
#endif
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64
zkl_mono_now(void)
{
	int64		now = mono_read();

	if (now == 0)
		elog(ERROR, "zk_lock: no monotonic clock: %m");
	return now;
}

/*
 * lock_delay as applied: it must exceed the commit proof's bound (of every
 * cluster; this one's at least), so never less than twice this cluster's.
 */
int
zkl_effective_lock_delay(void)
{
	return zc_table_lock_delay_ms(zkl_lock_delay, zkl_proof_bound);
}

/*
 * The worker records that the leader answered, for `session`, a request
 * sent at `sent_at` (zkl_mono_now).  proof_at is zeroed around the change of session so
 * that a reader never pairs one session's time with another session.
 * Worker only; the lock is not needed.
 */
void
zkl_proof_note(int64 sent_at, int64 session)
{
	bool		wanted;

	switch (zc_holds_proof_step((int64) pg_atomic_read_u64(&zkl_shared->proof_at),
						   zkl_shared->proof_session, sent_at, session))
	{
		case ZKH_PROOF_KEEP:
			return;
		case ZKH_PROOF_NEW_SESSION:
			pg_atomic_write_u64(&zkl_shared->proof_at, 0);
			pg_write_barrier();
			zkl_shared->proof_session = session;
			pg_write_barrier();
			break;
		case ZKH_PROOF_ADVANCE:
			break;
	}
	pg_atomic_write_u64(&zkl_shared->proof_at, (uint64) sent_at);
	pg_memory_barrier();
	wanted = zkl_shared->t.proof_wanted;
	if (wanted)
	{
		zkl_shared->t.proof_wanted = false;
		ConditionVariableBroadcast(&zkl_shared->proof_cv);
	}
}

/* The session ended: nothing it proved counts any more.  Worker only. */
void
zkl_proof_forget(void)
{
	pg_atomic_write_u64(&zkl_shared->proof_at, 0);
	pg_write_barrier();
	zkl_shared->proof_session = 0;
	ConditionVariableBroadcast(&zkl_shared->proof_cv);
}

/* The proof's send time (0: none) and its session, read consistently. */
int64
zkl_proof_read(int64 *session)
{
	for (;;)
	{
		uint64		a = pg_atomic_read_u64(&zkl_shared->proof_at);
		uint64		b;

		pg_read_barrier();
		*session = zkl_shared->proof_session;
		pg_read_barrier();
		b = pg_atomic_read_u64(&zkl_shared->proof_at);
		if (a == b)
			return (int64) a;
	}
}
