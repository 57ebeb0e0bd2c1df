/*
 * take_here.c — zk_lock.linger without a worker turn: a backend's new
 * request takes the node its cluster keeps for the key, under the
 * slot-table lock, with the worker's rules (cohort.c) run on the copy the
 * worker keeps in the table of what they read: its settings, its session
 * and connection, and lock-delay's pause.  The worker still sends every
 * ZooKeeper call.  It reads the slots of its planned calls without the lock
 * while it sends them: none is a lingering one (core_plan.c checks), and a
 * take frees only that one and fills a slot that was free.
 */
#include "take_here.h"

#include "cohort.h"
#include "table.h"
#include "invariant.h"

typedef struct Here
{
	ZklTable   *t;
	int64_t		wall;
} Here;

static void
here_grant(void *arg, ZklSlot *s)
{
	Here	   *h = arg;

	(void) zc_table_grant(h->t, s, h->wall);
}

/* The owner is the caller, and nobody else asks for the key here: nobody to wake. */
static void
here_wake(void *arg, ZklSlot *s)
{
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

bool
zc_take_here(ZklTable *t, ZklSlot *s, int64_t mono, int64_t wall)
{
	Here		h;
	ZklCohortHost host;
	ZklCohort	c;

	h.t = t;
	h.wall = wall;
	host.arg = &h;
	host.grant = here_grant;
	host.lose = here_never;
	host.requeue = here_never;
	host.wake = here_wake;
	host.grants_paused = here_paused;
	c.handover = t->cohort.handover;
	c.handover_limit = t->cohort.handover_limit;
	c.linger_ms = t->cohort.linger_ms;
	c.t = t;
	c.host = &host;
	if (!zc_cohort_take_here(&c, s, t->conn_state == ZKC_CONNECTED, mono))
		return false;
	t->counters.taken_here++;
	return true;
}
