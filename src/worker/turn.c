/*
 * turn.c — one turn of the worker's loop between two waits, and one of a
 * clean stop's: the session, the presence list, then plan and send what
 * core.c decided, the looks, deadlock detection and the live reads; and
 * what the worker does when session.c says its session ended, came back
 * or got a new handle.
 * worker.c owns the process (signals, settings, the wait itself); the
 * simulator calls these as they are, between the replies it delivers.
 * Part of the worker: runs in its process only.
 */
#include "postgres.h"

#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "turn.h"
#include "shmem.h"
#include "zk_client.h"
#include "left_session.h"
#include "orphans.h"
#include "gwaits.h"
#include "queue_read.h"
#include "once_io.h"
#include "session.h"
#include "requests.h"

ZklCore    *zw_turn_core = NULL;

/* ---- session events (session.c) ---- */

/*
 * Connected again (the same session, perhaps through another server).
 * Caller holds the lock.
 */
static void
session_reconnected(void)
{
	zc_core_reconnected(zw_turn_core);
	zw_presence_reconnected();
}

/*
 * The session that held our nodes is gone (expired, or closed by us): every
 * node is gone with it, and nothing it proved counts any more.
 */
static void
session_lost(void)
{
	zkl_proof_forget();
	zw_left_forget();			/* a later worker must not mistake it for a crash's leftover */
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_session_lost(zw_turn_core);
	zkl_shared->state_since = GetCurrentTimestamp();
	LWLockRelease(zkl_shared->lock);
}

/* A new handle has nothing in flight.  Caller holds the lock. */
static void
session_new_handle(void)
{
	zc_core_new_handle(zw_turn_core);
	zw_presence_reset();
	zw_gwaits_reset();
}

const ZklSessionEvents zw_session_events = {
	.lost = session_lost,
	.reconnected = session_reconnected,
	.new_handle = session_new_handle,
};

/* ---- a turn ---- */

static long
sooner(long a, long b)
{
	if (b < 0)
		return a;
	return (a < 0) ? b : Min(a, b);
}

/*
 * The session, the presence list, then plan and send.  Returns how long
 * the worker may wait for news (ms, -1: until a request comes).  While
 * draining for a clean stop, settings stay as they are and no deadlock
 * round starts; otherwise take_settings (if any) copies them into core
 * once the session's turn has read a reload.
 */
long
zw_turn(ZklCore *core, bool draining, void (*take_settings) (ZklCore *core))
{
	long		wait_ms;

	zw_session_tend();
	if (!draining && take_settings != NULL)
		take_settings(core);
	zw_presence_tend();
	zw_left_tend();
	zkl_flush_wakes();			/* owners the session's turn woke */

	wait_ms = zw_requests_plan();
	if (core->nops > 1)
	{
		zw_client_hold_sends(true);
		zw_requests_send();
		zw_client_hold_sends(false);
	}
	else
		zw_requests_send();
	if (core->proof_due)
		zw_requests_send_proof();
	wait_ms = sooner(wait_ms, zw_send_looks());
	if (!draining)
		wait_ms = sooner(wait_ms, zw_gwaits_tend(core));
	zw_query_send();
	zw_once_send();
	return zw_session_wait_ms(wait_ms);
}

/* Whether no slot is in use: every request ended, every node of ours deleted and answered. */
static bool
table_empty(void)
{
	bool		empty = true;
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	for (i = 0; i < zkl_shared->t.nused && empty; i++)
		empty = zkl_shared->t.slots[i].zstate == ZKS_FREE;
	LWLockRelease(zkl_shared->lock);
	return empty;
}

/*
 * A clean stop begins (the postmaster shuts down; its backends exit
 * meanwhile and give their locks up): no node lingers any more, and it
 * lasts bound_ms at most.
 */
void
zw_stop_begin(ZwStop *st, ZklCore *core, int bound_ms)
{
	st->deadline = zkl_mono_now() + (int64) bound_ms * 1000;
	st->tag = zkl_shared->t.session_tag;
	st->mark = ZKL_MARK_PENDING;
	st->marking = false;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_cohort_stop_lingering(&core->cohort);
	LWLockRelease(zkl_shared->lock);
}

/*
 * The stop's next steps (clean_stop.c decides them) up to one the caller
 * must wait for: ZKL_STOP_SERVE (a turn, then a short wait), ZKL_STOP_ASK
 * (the tombstone's answer is on its way), or ZKL_STOP_END.
 */
ZklStopStep
zw_stop_turn(ZwStop *st)
{
	for (;;)
	{
		/* the session, not a new one a turn might open once it is lost */
		bool		session_on = zw_client_handle() != NULL && st->tag != 0 &&
			zkl_shared->t.session_tag == st->tag && zkl_shared->t.conn_state == ZKC_CONNECTED;
		ZklStopStep step = zc_stop_step(zkl_mono_now() < st->deadline, session_on,
										st->mark != ZKL_MARK_PENDING, st->marking,
										!st->marking && table_empty());

		if (step == ZKL_STOP_END || step == ZKL_STOP_SERVE)
			return step;
		if (step == ZKL_STOP_BEGIN)
		{
			/*
			 * Nothing is planned from here on: a request that came since
			 * would get a node after the tombstone, and a holder it denies.
			 * Nor is the session resumed (a worker that dies now is started
			 * again if the stop is a smart one): it is over.
			 */
			st->marking = true;
			LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
			zkl_shared->closing_tag = st->tag;
			LWLockRelease(zkl_shared->lock);
		}
		st->mark = zw_presence_mark_closed();
		if (st->mark == ZKL_MARK_PENDING)
			return ZKL_STOP_ASK;
	}
}

/* What the stop achieved, in the log. */
void
zw_stop_report(const ZwStop *st)
{
	if (zkl_shared->t.session_id == 0)
		return;					/* no session to close */
	if (st->mark == ZKL_MARK_DONE)
		ereport(LOG, (errmsg("zk_lock: every lock of session 0x%llx given back; other clusters need no lock-delay for its end",
							 (unsigned long long) zkl_shared->t.session_id)));
	else
		ereport(LOG, (errmsg("zk_lock: could not give every lock of session 0x%llx back before the stop; other clusters wait zk_lock.lock_delay after its end",
							 (unsigned long long) zkl_shared->t.session_id)));
}
