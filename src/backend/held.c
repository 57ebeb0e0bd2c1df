/*
 * held.c — this backend's locks, bound to its transactions as core does for
 * pg_advisory_xact_lock: repeated requests stack, a rolled-back savepoint
 * releases what was taken inside it, commit and abort release everything,
 * PREPARE TRANSACTION is refused while locks are held, and backend exit
 * releases whatever is left (including a request still waiting).
 *
 * Session-level locks (zk_session_lock) stack on the same entries with a
 * count of their own, which only zk_session_unlock, DISCARD ALL and backend
 * exit lower.  While any is held, every commit of the session must pass the
 * same proof as a transaction that took a lock.  A session-level lock that
 * was lost stays counted until the application acknowledges the loss
 * (holds.h): till then every commit and every zk_* call fails.
 *
 * Releasing only marks the slots abandoned and wakes the worker, which
 * deletes the nodes (or lets a node linger itself, zk_lock.linger, and wakes
 * nobody: take_here.c): the commit path never waits for ZooKeeper.
 *
 * This file: the book of held locks (book.c, pure) and its host, and the
 * errors of a lost lock.  The transaction callbacks are xact.c's, the
 * commit check commit.c's.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/elog.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "held.h"
#include "settings.h"
#include "shmem.h"
#include "key_text.h"
#include "book.h"
#include "table.h"

/*
 * The book of this backend's locks (book.c): its memory lives as long as
 * the backend (session-level locks).
 */
static MemoryContext local_cxt = NULL;

#define LOST_MSG	"zk_lock lock on key \"%s\" was lost"
/* a lock is lost with its session, or with its node (or the earlier node of its backend it leaned on) */
#define LOST_DETAIL	"The ZooKeeper session that granted it ended, or its node was deleted."
#define SESSION_LOST_MSG	"zk_lock session-level lock on key \"%s\" was lost"
#define SESSION_LOST_DETAIL	"The ZooKeeper session that granted it ended, or its node was deleted: another cluster may hold the key now."

/* ---- the book's host: memory, and the slot table ---- */

static void *
book_alloc(void *arg, size_t size)
{
	return MemoryContextAlloc(local_cxt, size);
}

static void *
book_grow(void *arg, void *p, size_t size)
{
	return repalloc(p, size);
}

static void
book_release(void *arg, void *p)
{
	pfree(p);
}

/*
 * Whether the slot's session ended after granting it.  The result is one
 * word that only the worker changes while the slot is ours.
 */
static bool
book_lost(void *arg, int slot)
{
	pg_read_barrier();
	return zkl_shared->t.slots[slot].ans.result == ZKL_RESULT_LOST;
}

/* Tell the slot's readers (zk_locks) at which levels it is held. */
static void
book_scope(void *arg, int slot, uint8_t scope)
{
	if (zkl_shared->t.slots[slot].own.scope == scope)
		return;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->t.slots[slot].own.scope = scope;
	LWLockRelease(zkl_shared->lock);
}

static void
book_abandon(void *arg, const int *slots, int n)
{
	zkl_abandon_slots(slots, n);
}

/* Node names are the worker's to write: read under the lock. */
static bool
book_node_before(void *arg, int a, int b)
{
	bool		before;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	before = zc_table_node_before(&zkl_shared->t, a, b);
	LWLockRelease(zkl_shared->lock);
	return before;
}

static const ZkbHost book_host = {
	NULL, book_alloc, book_grow, book_release, book_lost, book_scope, book_abandon,
	book_node_before
};
static ZklBook book = {&book_host};

/*
 * Whether a request on key in this mode would stack; one held but lost
 * fails (stacking onto it would not make it held again).
 */
bool
zb_local_held(const char *key, char mode)
{
	int			i = zc_book_find(&book, key, mode);

	if (i >= 0 && book_lost(NULL, book.h[i].slot))
		zb_lost_error(book.h[i].key);
	return i >= 0;
}

/* A further request on a key held in this mode stacks, as core does. */
bool
zb_local_stack(const char *key, char mode, bool session)
{
	if (!zb_local_held(key, mode))
		return false;
	zc_book_stack(&book, zc_book_find(&book, key, mode), session, GetCurrentSubTransactionId());
	return true;
}

/*
 * The worker granted slot (by `session`): it is this transaction's now.
 * The book allocates before the slot stops being the pending one, so that
 * an error there leaves it pending, given up at abort: no grant is ever
 * orphaned, nor abandoned twice.
 */
void
zb_local_add(int slot, const char *key, char mode, int64 session, bool session_level)
{
	zc_book_add(&book, slot, key, mode, session, session_level, GetCurrentSubTransactionId());
}

bool
zb_local_unlock(const char *key, char mode, bool session)
{
	return zc_book_unlock(&book, key, mode, session);
}

void
zb_local_unlock_all(bool session)
{
	zc_book_unlock_all(&book, session);
}

/*
 * 40001 for a lost session-level lock: retrying the transaction is no use,
 * taking the lock again is.  `acknowledged`: this very call acknowledged it.
 */
void
zb_session_lost_error(const char *key, bool acknowledged)
{
	const char *shown = zb_display_key(key);

	if (acknowledged)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg(SESSION_LOST_MSG, shown),
				 errdetail(SESSION_LOST_DETAIL " The loss is acknowledged now; this transaction ran under the lost lock and cannot commit."),
				 errhint("Take the lock again before doing the work it protects.")));
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg(SESSION_LOST_MSG, shown),
			 errdetail(SESSION_LOST_DETAIL " No transaction of this session commits until the loss is acknowledged."),
			 errhint("Acknowledge it with zk_session_unlock() of the key or zk_session_unlock_all(), then take the lock again.")));
}

/*
 * Before every zk_* call but the acknowledgements: a lost session-level
 * lock fails it, until acknowledged (holds.h).
 */
void
zb_check_losses(void)
{
	int			i = zc_book_unacknowledged_loss(&book);

	if (i >= 0)
		zb_session_lost_error(book.h[i].key, false);
}

/*
 * zk_session_unlock of key in mode: acknowledge a loss of that lock; or
 * key NULL, zk_session_unlock_all: acknowledge every loss and give up every
 * session-level lock.  The acknowledgement is not transactional, as core's
 * unlock; the call then fails, naming a lost key.  Returns when none was
 * lost.
 */
void
zb_acknowledge_losses(const char *key, char mode)
{
	char		first[ZKL_KEY_BUFLEN];

	if (zc_book_acknowledge(&book, key, mode, first))
		zb_session_lost_error(first, true);
}

/*
 * DISCARD ALL gives up every lock of the session, as it does core's: lost
 * ones too (it acknowledges them).  It cannot run in a transaction block,
 * so its transaction ran nothing under them, and its commit goes through.
 * A pipeline of the extended protocol may still have run statements before
 * it in the same transaction: then a loss it acknowledged fails the commit.
 */
void
zb_discard_all(void)
{
	bool		alone = GetCurrentStatementStartTimestamp() == GetCurrentTransactionStartTimestamp() &&
		!TransactionIdIsValid(GetTopTransactionIdIfAny());

	if (local_cxt == NULL)
		return;
	zc_book_discard_all(&book, alone);
}

/*
 * The slots of every lock of this transaction on the key, held or kept for
 * its other mode (at most max); returns how many.
 */
int
zb_local_key_slots(const char *key, int *out, int max)
{
	int			n = 0;
	int			i;

	for (i = 0; i < book.n && n < max; i++)
		if (strcmp(book.h[i].key, key) == 0)
			out[n++] = book.h[i].slot;
	return n;
}

/* The slot of a lock this transaction holds, or -1. */
int
zb_local_slot(const char *key, char mode)
{
	int			i = zc_book_find_held(&book, key, mode);

	return i >= 0 ? book.h[i].slot : -1;
}

void
zb_set_pending(const int *slots, int n)
{
	Assert(n <= ZKL_MULTI_KEYS);
	zc_book_set_pending(&book, slots, n);
}

/*
 * Key of a granted lock of ours whose session ended, or NULL; *session_level
 * tells whether it is an unacknowledged session-level loss (those come
 * first).  Caller has just issued a read barrier: a result is one word that
 * only the worker changes while the slot is ours.
 */
const char *
zb_lost_key(bool *session_level)
{
	static char pending_key[ZKL_KEY_BUFLEN];
	int			i = zc_book_unacknowledged_loss(&book);

	*session_level = i >= 0;
	if (i >= 0)
		return book.h[i].key;
	for (i = 0; i < book.n; i++)
		if (book_lost(NULL, book.h[i].slot))
			return book.h[i].key;
	/* a multi-key request still waiting for others of its keys */
	for (i = 0; i < book.npending; i++)
	{
		if (book_lost(NULL, book.pending[i]))
		{
			strlcpy(pending_key, zkl_shared->t.slots[book.pending[i]].key, sizeof(pending_key));
			return pending_key;
		}
	}
	return NULL;
}

/*
 * Mark this backend's slots past the commit check (on), or no longer (off,
 * at the transaction's end).  Set under the table's lock, as the worker
 * marks a loss: a loss either comes first, and false is returned with
 * nothing marked (the check must look again), or finds the mark and
 * cancels nothing (core.c).
 */
static bool marked = false;		/* zb_held_committing's mark is on */

bool
zb_held_committing(bool on)
{
	bool		kept = false;
	bool		wake = false;
	int			i;

	if (!on && !marked)
		return true;
	/* at the end only session-level slots stay ours: the others are given up unread */
	for (i = 0; !on && i < book.n; i++)
		kept |= book.h[i].nsession > 0;
	if (!on && !kept)
	{
		marked = false;
		return true;
	}
	/* shared is enough: only we write our slots' mark, the worker reads it under exclusive */
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	for (i = 0; on && i < book.n; i++)
	{
		if (book_lost(NULL, book.h[i].slot))
		{
			LWLockRelease(zkl_shared->lock);
			return false;
		}
	}
	for (i = 0; i < book.n; i++)
	{
		zkl_shared->t.slots[book.h[i].slot].own.committing = on;
		wake |= zkl_shared->t.slots[book.h[i].slot].zk.lose_after_commit;
	}
	marked = on;
	LWLockRelease(zkl_shared->lock);
	/* a lock the commit kept from a loss is lost now (core_plan.c) */
	if (wake && !on)
		zkl_wake_worker();
	return true;
}

/* Whether this transaction's commit check has passed already. */
bool
zb_held_past_check(void)
{
	return marked;
}

/*
 * A transaction-level lock on key was lost: 40001, so that applications
 * retry as they do after a serialization failure (the retry takes the lock
 * again).
 */
void
zb_lost_error(const char *key)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg(LOST_MSG, zb_display_key(key)),
			 errdetail(LOST_DETAIL),
			 errhint(ZKL_LOST_HINT)));
}

/*
 * The worker cancels the running statement of a backend whose lock is lost
 * (core.c's lose_slot), which raises a plain query cancel.  Called in a
 * PG_CATCH wherever one may unwind (the statement hooks of stmt.c, our own
 * waits): a cancel that a lost lock explains becomes that loss's error,
 * whatever the log settings; otherwise this returns, changing nothing, and
 * the caller re-throws.  cxt: the memory context the PG_TRY began in.
 */
void
zb_explain_cancel(MemoryContext cxt)
{
	const char *key;
	bool		session_level;

	if (geterrcode() != ERRCODE_QUERY_CANCELED || zkl_shared == NULL ||
		(book.n == 0 && book.npending == 0))
		return;
	pg_read_barrier();
	key = zb_lost_key(&session_level);
	if (key == NULL)
		return;
	MemoryContextSwitchTo(cxt);
	FlushErrorState();
	if (session_level)
		zb_session_lost_error(key, false);
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg(LOST_MSG, zb_display_key(key)),
			 errdetail(LOST_DETAIL " The running statement was cancelled."),
			 errhint(ZKL_LOST_HINT)));
}

/*
 * Run fn(arg), which may process interrupts, so that a cancel a lost lock
 * explains fails with that loss's error (zb_explain_cancel).
 */
void
zb_run_explained(void (*fn) (void *arg), void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		fn(arg);
	}
	PG_CATCH();
	{
		zb_explain_cancel(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

static void
process_interrupts(void *arg)
{
	CHECK_FOR_INTERRUPTS();
}

/* CHECK_FOR_INTERRUPTS in our own waits: a fast-path call runs no statement hook. */
void
zb_check_for_interrupts(void)
{
	zb_run_explained(process_interrupts, NULL);
}

/* The book of this backend's locks, its memory made on first use (xact.c). */
ZklBook *
zb_held_book(void)
{
	return &book;
}

/* Whether this backend has used zk_lock yet; make the book's memory if asked. */
bool
zb_held_init(bool make)
{
	if (local_cxt == NULL && make)
		local_cxt = AllocSetContextCreate(TopMemoryContext, "zk_lock locks",
										  ALLOCSET_SMALL_SIZES);
	return local_cxt != NULL;
}
