/*
 * xact.c — binds this backend's locks (held.c) to its transactions: the
 * transaction callback as one switch (the commit check at pre-commit and
 * pre-prepare, commit.c; zk_once's periods recorded at commit, once.c;
 * every transaction-level lock released at the end),
 * savepoints, backend exit, and keeping the commit check first among the
 * transaction callbacks.
 */
#include "postgres.h"

#include "access/xact.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"

#include "xact.h"
#include "book.h"
#include "commit.h"
#include "held.h"
#include "once_seal.h"
#include "shmem.h"

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			zb_commit_check();
			ConditionVariableCancelSleep();	/* on error, the abort does it */
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (zb_once_any())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that does a zk_once period"),
						 errhint("A period is recorded when its transaction commits: do the job in a transaction that commits.")));
			if (zc_book_holds_xact_locks(zb_held_book()))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that holds zk_lock locks"),
						 errhint("Release them with zk_unlock_all() first.")));
			/* released early: the same proof as a commit, now, for what was held */
			zb_commit_check();
			ConditionVariableCancelSleep();
			break;
		case XACT_EVENT_COMMIT:
			/* zk_once's periods are recorded while their claims are still held */
			zb_once_at_commit();
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			zb_once_forget();
			(void) zb_held_committing(false);
			zc_book_xact_end(zb_held_book());
			break;
		default:
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	/* a savepoint rolled back gives up what was taken in it; a released one passes it up */
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		zc_book_subxact_abort(zb_held_book(), mySubid);
		zb_once_subxact_abort();	/* a zk_once claim given up with it: its period too */
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		zc_book_subxact_commit(zb_held_book(), mySubid, parentSubid);
}

static void
exit_callback(int code, Datum arg)
{
	if (zkl_shared != NULL)
		zc_book_release_level(zb_held_book(), true);
}

void
zb_xact_init(void)
{
	if (zb_held_init(false))
		return;
	(void) zb_held_init(true);

	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
	before_shmem_exit(exit_callback, (Datum) 0);
}

/*
 * After each statement of a backend that has used zk_lock: put the commit
 * check back at the head of the transaction callbacks.  PostgreSQL calls
 * them last-registered first, and one registered after ours (say
 * postgres_fdw's, on the session's first use of a foreign server) would
 * commit a remote transaction before our check could refuse the local one.
 * Every statement's end comes before the pre-commit callbacks run (portals
 * and deferred triggers are done first), so ours leads when they start.
 *
 * Two entries run xact_callback, whose work is idempotent: the one
 * zb_xact_init registered, never moved, and this moving one.  A move made
 * while the callbacks run (another one's SPI statement ends) may make the
 * walk miss the moving entry, never the fixed one.
 */
void
zb_xact_check_first(void)
{
	static uintptr_t mover = 0; /* the arg of the moving entry: 1 or 2, 0 before the first */
	uintptr_t	next = mover == 1 ? 2 : 1;

	if (!zb_held_init(false))
		return;
	/* the new entry first: if that fails, the old one is still there */
	RegisterXactCallback(xact_callback, (void *) next);
	if (mover != 0)
		UnregisterXactCallback(xact_callback, (void *) mover);
	mover = next;
}
