/*
 * xact.c — binds locks to transactions, as core does for
 * pg_advisory_xact_lock: repeated requests stack, a rolled-back savepoint
 * releases what was taken inside it, commit and abort release everything,
 * PREPARE TRANSACTION is refused while locks are held, and backend exit
 * releases whatever is left (including a request still waiting).
 *
 * Releasing only marks the slots abandoned and wakes the worker, which
 * deletes the nodes: the commit path never waits for ZooKeeper.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/elog.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "zk_lock.h"

typedef struct ZklHold
{
	SubTransactionId subid;
	int			count;
} ZklHold;

/* One granted lock of this backend (one slot, one node). */
typedef struct ZklLocal
{
	int			slot;
	char		mode;
	char	   *key;
	int			nholds;			/* total stacked acquisitions */
	int			ndepth;
	int			maxdepth;
	ZklHold    *depth;			/* acquisitions by subtransaction, innermost last */
} ZklLocal;

static MemoryContext local_cxt = NULL;
static ZklLocal *locals = NULL;
static int	nlocals = 0;
static int	maxlocals = 0;
static int	pending_slot = -1;	/* request being waited for, if any */
static emit_log_hook_type prev_emit_log_hook = NULL;

#define LOST_MSG	"zk_lock lock on key \"%s\" was lost"
#define LOST_DETAIL	"The ZooKeeper session that granted it ended."
#define LOST_HINT	"Retry the transaction."

static void
push_hold(ZklLocal *l)
{
	SubTransactionId cur = GetCurrentSubTransactionId();

	l->nholds++;
	if (l->ndepth > 0 && l->depth[l->ndepth - 1].subid == cur)
	{
		l->depth[l->ndepth - 1].count++;
		return;
	}
	if (l->ndepth == l->maxdepth)
	{
		l->maxdepth *= 2;
		l->depth = repalloc(l->depth, l->maxdepth * sizeof(ZklHold));
	}
	l->depth[l->ndepth].subid = cur;
	l->depth[l->ndepth].count = 1;
	l->ndepth++;
}

static ZklLocal *
find_local(const char *key, char mode)
{
	int			i;

	for (i = 0; i < nlocals; i++)
		if (locals[i].mode == mode && strcmp(locals[i].key, key) == 0)
			return &locals[i];
	return NULL;
}

/* Drop entries whose holds are all gone, abandoning their slots at once. */
static void
release_empty(void)
{
	int		   *slots = palloc(Max(nlocals, 1) * sizeof(int));
	int			nrel = 0;
	int			keep = 0;
	int			i;

	for (i = 0; i < nlocals; i++)
	{
		if (locals[i].nholds > 0)
			locals[keep++] = locals[i];
		else
		{
			slots[nrel++] = locals[i].slot;
			pfree(locals[i].key);
			pfree(locals[i].depth);
		}
	}
	nlocals = keep;
	if (nrel > 0)
		zkl_abandon_slots(slots, nrel);
	pfree(slots);
}

static void
abandon_pending(void)
{
	if (pending_slot >= 0)
	{
		int			idx = pending_slot;

		pending_slot = -1;
		zkl_abandon_slot(idx);
	}
}

static void
release_all(void)
{
	int			i;

	abandon_pending();
	for (i = 0; i < nlocals; i++)
		locals[i].nholds = 0;
	release_empty();
}

bool
zkl_local_stack(const char *key, char mode)
{
	ZklLocal   *l = find_local(key, mode);

	if (l == NULL)
		return false;
	push_hold(l);
	return true;
}

void
zkl_local_add(int slot, const char *key, char mode)
{
	MemoryContext old = MemoryContextSwitchTo(local_cxt);
	ZklLocal   *l;

	if (nlocals == maxlocals)
	{
		maxlocals = Max(8, maxlocals * 2);
		locals = locals ? repalloc(locals, maxlocals * sizeof(ZklLocal))
			: palloc(maxlocals * sizeof(ZklLocal));
	}
	l = &locals[nlocals++];
	l->slot = slot;
	l->mode = mode;
	l->key = pstrdup(key);
	l->nholds = 0;
	l->ndepth = 0;
	l->maxdepth = 4;
	l->depth = palloc(l->maxdepth * sizeof(ZklHold));
	push_hold(l);
	MemoryContextSwitchTo(old);
}

bool
zkl_local_unlock(const char *key, char mode)
{
	ZklLocal   *l = find_local(key, mode);
	ZklHold    *top;

	if (l == NULL)
		return false;
	top = &l->depth[l->ndepth - 1];
	if (--top->count == 0)
		l->ndepth--;
	if (--l->nholds == 0)
		release_empty();
	return true;
}

void
zkl_local_unlock_all(void)
{
	release_all();
}

/* The slot of a lock this transaction holds, or -1. */
int
zkl_local_slot(const char *key, char mode)
{
	ZklLocal   *l = find_local(key, mode);

	return l ? l->slot : -1;
}

void
zkl_set_pending(int slot)
{
	pending_slot = slot;
}

/*
 * Key of a granted lock of ours whose session ended, or NULL.  Caller holds
 * the lock, or has just issued a read barrier: a result is one word that
 * only the worker changes while the slot is ours.
 */
static const char *
lost_key(void)
{
	int			i;

	for (i = 0; i < nlocals; i++)
		if (zkl_shared->slots[locals[i].slot].result == ZKR_LOST)
			return locals[i].key;
	return NULL;
}

/* 40001, so that applications retry as they do after a serialization failure. */
void
zkl_lost_error(const char *key)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg(LOST_MSG, zkl_display_key(key)),
			 errdetail(LOST_DETAIL),
			 errhint(LOST_HINT)));
}

/*
 * The worker cancels the running statement of a backend whose lock is lost
 * (zkl_lose_slot), which arrives here as a plain query cancel: say what
 * happened instead, with the error a commit would get.  No query cancel is
 * raised while an LWLock is held, so taking ours here cannot self-deadlock.
 */
static void
explain_lost_cancel(ErrorData *edata)
{
	if (edata->elevel == ERROR && edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
		nlocals > 0 && zkl_shared != NULL)
	{
		const char *key;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		key = lost_key();
		LWLockRelease(zkl_shared->lock);
		if (key != NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(ErrorContext);

			edata->sqlerrcode = ERRCODE_T_R_SERIALIZATION_FAILURE;
			edata->message = psprintf(LOST_MSG, zkl_display_key(key));
			edata->detail = pstrdup(LOST_DETAIL " The running statement was cancelled.");
			edata->hint = pstrdup(LOST_HINT);
			MemoryContextSwitchTo(old);
		}
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/*
 * At pre-commit: a transaction whose lock was lost must not commit, and one
 * whose worker is disconnected cannot know yet, so it waits (bounded) until
 * the worker is connected again or has declared the session lost.  With
 * zk_lock.verify_on_commit, each lock's node is also proven alive through
 * the ZooKeeper leader before the commit goes on.
 */
static void
check_not_lost(void)
{
	TimestampTz deadline;
	bool		asked = false;
	bool		verify = zkl_verify_on_commit;

	if (nlocals == 0)
		return;
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   zkl_session_timeout + zkl_connect_timeout + WORKER_GRACE_MS);
	for (;;)
	{
		const char *lost = NULL;
		bool		connected;
		bool		verified = true;
		bool		wake = false;
		long		left;
		int			i;

		/*
		 * Locked only to ask for verification.  Most commits just read words
		 * the worker writes, which needs no lock: every committing backend
		 * taking it, even shared, contended with the worker under load.
		 */
		if (verify)
			LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		else
			pg_read_barrier();
		lost = lost_key();
		connected = zkl_shared->conn_state == ZKC_CONNECTED;
		if (lost == NULL && verify)
		{
			for (i = 0; i < nlocals; i++)
			{
				ZklSlot    *slot = &zkl_shared->slots[locals[i].slot];

				if (!asked)
				{
					slot->verify = ZKV_ASKED;
					slot->todo |= ZKT_VERIFY;
					wake = true;
				}
				verified &= slot->verify == ZKV_OK;
			}
			asked = true;
		}
		if (verify)
			LWLockRelease(zkl_shared->lock);
		if (wake)
			zkl_wake_worker();

		if (lost != NULL)
			zkl_lost_error(lost);
		if (connected && verified)
			return;

		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (left <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not confirm zk_lock locks before commit: no answer from ZooKeeper")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			check_not_lost();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (nlocals > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that holds zk_lock locks"),
						 errhint("Release them with zk_unlock_all() first.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			release_all();
			locals = NULL;
			maxlocals = 0;
			MemoryContextReset(local_cxt);
			break;
		default:
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	int			i;

	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		abandon_pending();
		for (i = 0; i < nlocals; i++)
		{
			ZklLocal   *l = &locals[i];

			while (l->ndepth > 0 && l->depth[l->ndepth - 1].subid == mySubid)
				l->nholds -= l->depth[--l->ndepth].count;
		}
		release_empty();
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		/* what the subtransaction took now belongs to its parent */
		for (i = 0; i < nlocals; i++)
		{
			ZklLocal   *l = &locals[i];
			ZklHold    *top;

			if (l->ndepth == 0 || l->depth[l->ndepth - 1].subid != mySubid)
				continue;
			top = &l->depth[l->ndepth - 1];
			if (l->ndepth > 1 && l->depth[l->ndepth - 2].subid == parentSubid)
			{
				l->depth[l->ndepth - 2].count += top->count;
				l->ndepth--;
			}
			else
				top->subid = parentSubid;
		}
	}
}

static void
exit_callback(int code, Datum arg)
{
	if (zkl_shared != NULL)
		release_all();
}

void
zkl_xact_init(void)
{
	if (local_cxt != NULL)
		return;
	local_cxt = AllocSetContextCreate(TopMemoryContext, "zk_lock locks",
									  ALLOCSET_SMALL_SIZES);
	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
	before_shmem_exit(exit_callback, (Datum) 0);
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = explain_lost_cancel;
}
