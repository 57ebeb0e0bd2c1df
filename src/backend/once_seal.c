/*
 * once_seal.c — the periods a transaction does (zk_once, once.c), and their
 * record at its commit.
 *
 * After the local commit, before the claim goes, the backend records the
 * period with one multi through the worker: written only while the claim's
 * node is there and the record is the version read.  So the next holder of
 * the claim, here or in another cluster, reads the new record.  A record
 * that does not land (the server crashes, the session ends, ZooKeeper does
 * not answer in time) leaves the committed period owed, and another call
 * does it again: at least once, never lost (docs/failure-semantics.md).
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "once.h"
#include "once_call.h"
#include "once_seal.h"
#include "held.h"
#include "settings.h"
#include "shmem.h"

static List *pending = NIL;		/* in TopMemoryContext */

OncePending *
zb_once_pending(const char *name)
{
	ListCell   *lc;

	foreach(lc, pending)
	{
		OncePending *p = lfirst(lc);

		if (strcmp(p->name, name) == 0)
			return p;
	}
	return NULL;
}

static void
free_pending(OncePending *p)
{
	pfree(p->shown);
	pfree(p);
}

void
zb_once_remember(const OncePending *p)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	OncePending *copy = palloc(sizeof(OncePending));

	*copy = *p;
	copy->shown = pstrdup(p->shown);
	pending = lappend(pending, copy);
	MemoryContextSwitchTo(old);
}

/* The record names this very commit as the one that did p's period. */
static bool
names_us(const OncePending *p, int slot, const ZkoBy *by, int64 deadline)
{
	ZklOnceCall call;
	ZkoRecord	r;

	zb_once_call(ZKL_ONCE_READ, p->name, slot, 0, NULL, 0, false, deadline, &call);
	return call.result == ZKL_ONCE_OK && call.len > 0 &&
		zc_once_parse(call.data, call.len, &r) == ZKO_PARSE_OK && r.has_done && r.done == p->start &&
		r.has_by && r.by.sysid == by->sysid && r.by.pid == by->pid && r.by.at == by->at;
}

/* Seal p's period; never raises an error (the transaction has committed). */
static void
seal(const OncePending *p)
{
	ZklOnceCall call;
	ZkoBy		by;
	ZkoRecord	done;
	char		text[ZKO_RECORD_LEN];
	int			len;
	int			slot = zb_local_slot(p->claim, ZKL_MODE_EXCLUSIVE);
	int64		deadline;

	memset(&by, 0, sizeof(by));
	by.sysid = GetSystemIdentifier();
	by.pid = MyProcPid;
	by.xid = GetTopTransactionIdIfAny();
	strlcpy(by.cluster, cluster_name ? cluster_name : "", sizeof(by.cluster));
	by.at = GetCurrentTimestamp() + UNIX_TO_PG_US;
	if (zkl_test_seal_delay_ms > 0)
		pg_usleep((long) zkl_test_seal_delay_ms * 1000L);
	/* one bound for the whole of it: the commit waits no longer */
	deadline = zb_once_deadline(true);
	if (slot >= 0)
	{
		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		strlcpy(by.uuid, zkl_shared->t.slots[slot].uuid, sizeof(by.uuid));
		LWLockRelease(zkl_shared->lock);
	}
	if (slot < 0 || !zc_once_sealed(&p->rec, p->start, p->skipped, &by, &done) ||
		(len = zc_once_format(&done, text, sizeof(text))) < 0)
	{
		memset(&call, 0, sizeof(call));
		call.result = ZKL_ONCE_FAILED;
		strlcpy(call.errmsg, "its claim is not held", sizeof(call.errmsg));
	}
	else
	{
		zb_once_call(ZKL_ONCE_SEAL, p->name, slot, p->version, text, len, false, deadline, &call);

		/*
		 * Refused, or no answer: a try whose answer was lost may have landed
		 * (a repeat is then refused as changed, or finds the claim gone once
		 * the session ended).  The record says whether it names this commit.
		 */
		if (call.result != ZKL_ONCE_OK && !ProcDiePending && names_us(p, slot, &by, deadline))
			call.result = ZKL_ONCE_OK;
	}
	if (call.result == ZKL_ONCE_OK)
	{
		ereport(DEBUG1, (errmsg_internal("zk_once job \"%s\": period %s recorded", p->shown,
										  timestamptz_to_str(p->start - UNIX_TO_PG_US))));
		return;
	}
	ereport(LOG,
			(errmsg("zk_once job \"%s\": period %s was done here but could not be recorded in ZooKeeper: %s",
					p->shown, timestamptz_to_str(p->start - UNIX_TO_PG_US),
					call.claim_gone ? "the claim was lost" :
					call.result == ZKL_ONCE_BADVERSION ? "the record changed" : call.errmsg),
			 errdetail("Another call may do this period again."),
			 errhint("Key the job's effects on the period start it was given, so that a repeat does no harm.")));
}

void
zb_once_at_commit(void)
{
	ListCell   *lc;

	if (pending == NIL)
		return;
	/* committed: nothing may raise an error now, and a cancel waits */
	HOLD_INTERRUPTS();
	foreach(lc, pending)
		seal(lfirst(lc));
	RESUME_INTERRUPTS();
	zb_once_forget();
}

bool
zb_once_any(void)
{
	return pending != NIL;
}

void
zb_once_forget(void)
{
	ListCell   *lc;

	foreach(lc, pending)
		free_pending(lfirst(lc));
	list_free(pending);
	pending = NIL;
}

void
zb_once_subxact_abort(void)
{
	ListCell   *lc;

	/* a period whose claim went with the savepoint is no longer this transaction's */
	foreach(lc, pending)
	{
		OncePending *p = lfirst(lc);

		if (zb_local_slot(p->claim, ZKL_MODE_EXCLUSIVE) < 0)
		{
			pending = foreach_delete_current(pending, lc);
			free_pending(p);
		}
	}
}
