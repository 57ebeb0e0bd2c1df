/*
 * take_here.c — local hand-over without a worker turn: a backend's new
 * request takes the node its cluster keeps for the key (zk_lock.linger),
 * or rides a local reader's node, or waits behind a local holder's node
 * (a try-lock is refused there), under the slot-table lock, with the
 * worker's rules (cohort.c, cohort_ride.c) run on the copy the worker
 * keeps in the table of what they read: its settings, its session and
 * connection, and lock-delay's pause; and a release lets a rider go,
 * passes the node to a rider or the next local writer, or lets it linger,
 * without the worker, which is woken only if it must act (a waiter owes a
 * listing) or would sleep past the linger's end or a waiter's deadlock
 * check.  The worker still sends every ZooKeeper call.  It reads the
 * slots of its planned calls without the lock while it sends them
 * (ZklTableCohort.sending): nothing is taken or lingers here meanwhile.
 */
#include "take_here.h"

#include "cohort.h"
#include "cohort_ride.h"
#include "table.h"
#include "invariant.h"

typedef struct Here
{
	ZklTable   *t;
	int64_t		wall;
	void		(*wake_owner) (ZklSlot *s);	/* NULL: the owner is the caller */
} Here;

static void
here_wake(void *arg, ZklSlot *s)
{
	Here	   *h = arg;

	if (h->wake_owner != NULL)
		h->wake_owner(s);
}

static void
here_grant(void *arg, ZklSlot *s)
{
	if (zc_table_grant(((Here *) arg)->t, s, ((Here *) arg)->wall))
		here_wake(arg, s);
}

/* A pass neither loses nor queues again. */
static void
here_never(void *arg, ZklSlot *s)
{
	ZC_ASSERT(false);
}

static bool
here_paused(void *arg, int64_t mono)
{
	int64_t		until;

	return zc_delay_pause_holds(&((Here *) arg)->t->pause, mono, &until);
}

/* The worker's rules (cohort.c) on the table's copy of what they read. */
static void
here_cohort(ZklTable *t, Here *h, ZklCohortHost *host, ZklCohort *c, int64_t wall,
			void (*wake_owner) (ZklSlot *s))
{
	h->t = t;
	h->wall = wall;
	h->wake_owner = wake_owner;
	host->arg = h;
	host->grant = here_grant;
	host->lose = here_never;
	host->requeue = here_never;
	host->wake = here_wake;
	host->grants_paused = here_paused;
	c->handover = t->cohort.handover;
	c->handover_limit = t->cohort.handover_limit;
	c->linger_ms = t->cohort.linger_ms;
	c->t = t;
	c->host = host;
}

bool
zc_take_here(ZklTable *t, ZklSlot *s, int64_t mono, int64_t wall)
{
	Here		h;
	ZklCohortHost host;
	ZklCohort	c;

	if (t->cohort.sending)
		return false;
	here_cohort(t, &h, &host, &c, wall, NULL);
	if (!zc_cohort_take_here(&c, s, t->conn_state == ZKC_CONNECTED, mono) &&
		!zc_cohort_ride_here(&c, s, t->conn_state == ZKC_CONNECTED, mono))
		return false;
	t->counters.taken_here++;
	return true;
}

bool
zc_join_here(ZklTable *t, ZklSlot *s, int64_t mono, int64_t wall, bool *wake)
{
	Here		h;
	ZklCohortHost host;
	ZklCohort	c;
	ZklSlot    *o;
	int64_t		check_by;

	/* no worker: the request stays unsent, and fails as one no worker serves (request.c) */
	if (t->conn_state == ZKC_STOPPED)
		return false;
	here_cohort(t, &h, &host, &c, wall, NULL);
	o = zc_cohort_join_here(&c, s, t->conn_state == ZKC_CONNECTED, mono);
	if (o == NULL)
		return false;
	t->counters.joined_here++;
	/*
	 * A waiter needs the holder's child watch armed before the release (the
	 * worker lists for it), and a deadlock check within deadlock_timeout:
	 * the worker's next turn must come by then (a sleep it began before
	 * this claim is published in worker_due; one it begins later sees s).
	 */
	check_by = mono + (int64_t) t->cohort.deadlock_ms * 1000;
	*wake = s->zstate == ZKS_COHORT &&
		(o->coh.peek != COH_PEEK_ARMED ||
		 (t->cohort.deadlock_ms > 0 && (t->worker_due == 0 || t->worker_due > check_by)));
	return true;
}

bool
zc_release_here(ZklTable *t, ZklSlot *s, int64_t mono, int64_t wall, void (*wake_owner) (ZklSlot *s))
{
	Here		h;
	ZklCohortHost host;
	ZklCohort	c;
	bool		connected = t->conn_state == ZKC_CONNECTED;
	bool		told;

	if (!zc_table_abandon(t, s))
		return false;
	if (t->cohort.sending)
		return true;
	here_cohort(t, &h, &host, &c, wall, wake_owner);
	if (zc_cohort_riders_release_here(&c, s, &told))
		return told;			/* a rider went, or the node passed to one */
	if (zc_cohort_pass_here(&c, s, connected, mono) != NULL)
	{
		t->counters.taken_here++;
		return false;			/* the waiter holds the node now: nothing is owed for it */
	}
	if (!zc_cohort_linger_here(&c, s, connected, mono))
		return true;
	/* the worker ends the linger: woken only if it would sleep past its end */
	return t->worker_due == 0 || s->coh.linger_until < t->worker_due;
}

long
zc_take_here_sleep(ZklTable *t, int64_t mono, long wait_ms)
{
	int			i;

	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *o = &t->slots[i];
		long		ms;

		if (o->zstate != ZKS_LINGER)
			continue;
		ms = o->coh.linger_until <= mono ? 0 : (long) ((o->coh.linger_until - mono + 999) / 1000);
		if (wait_ms < 0 || ms < wait_ms)
			wait_ms = ms;
	}
	/* a local waiter (one a backend joined at its claim since the plan too): its deadlock check in time */
	for (i = 0; i < t->nused && t->cohort.deadlock_ms > 0; i++)
		if (t->slots[i].zstate == ZKS_COHORT && !t->slots[i].own.abandoned &&
			(wait_ms < 0 || wait_ms > t->cohort.deadlock_ms))
			wait_ms = t->cohort.deadlock_ms;
	t->worker_due = wait_ms < 0 ? 0 : mono + (int64_t) wait_ms * 1000;
	return wait_ms;
}
