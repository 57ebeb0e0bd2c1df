/*
 * cohort.c — local hand-over of exclusive locks: lock cohorting (Dice,
 * Marathe and Shavit, PPoPP 2012) with a cluster in place of a NUMA node.
 * While this cluster holds a key's node, a request of another local backend
 * for the key waits in shared memory (ZKS_COHORT) instead of queueing in
 * ZooKeeper, and the holder's release passes the node to it: a grant with
 * no round trip.  Pure like core.c, which calls it under the slot-table lock.
 *
 * Why it is safe.  The node passes only while it stands at the head of the
 * key's queue (`first`: no node at all ahead), only from a
 * holder whose owner is done with it (abandoned: committed or rolled back),
 * to exactly one waiter, and only while no other local request holds the
 * key in any mode.  So no other cluster can be granted meanwhile, and one
 * slot owns the node at any moment.  Fencing tokens count the hand-overs
 * (zkr_fencing_token).  The new holder is an ordinary holder of the same
 * session: a lost session, the commit proof and lock-delay apply unchanged.
 *
 * Why it is fair enough.  Before its first hand-over a holder reads the
 * key's queue with a child watch (zcoh_listing_watches; only holders set
 * one, so waiters of other clusters get no events from it: no herd).  A node
 * queued behind ours is seen by that listing, or by the one that follows the
 * next child event; nothing passes while such a listing is out.  Once one
 * is seen, at most
 * zk_lock.local_handover_limit more hand-overs happen; then the node goes,
 * and the local waiters queue in ZooKeeper behind the ones that came first.
 *
 * Linger (zk_lock.linger): with no local waiter, a released node may stay
 * for a while under no owner (ZKS_LINGER), so that a repeat request takes it
 * at once; a child event ends that.
 */
#include "cohort.h"

#include <stdio.h>
#include <string.h>

#include <zookeeper/zookeeper.h>	/* result codes only */

#include "table.h"

/* A request that may take part: an exclusive lock of one key, hand-over on. */
static bool
eligible(const ZklCohort *c, const ZklSlot *s)
{
	return c->handover && s->mode == ZKL_MODE_EXCLUSIVE && s->group == 0;
}

bool
zcoh_listing_watches(const ZklCohort *c, const ZklSlot *s)
{
	return s->mode == ZKL_MODE_SEMAPHORE ||
		((s->zstate == ZKS_HELD || s->zstate == ZKS_LINGER ||
		  (s->zstate == ZKS_QUEUED && s->peek == COH_PEEK_ASKED)) && eligible(c, s));
}

static bool
same_key(const ZklSlot *a, const ZklSlot *b)
{
	return strcmp(a->key, b->key) == 0;
}

static bool
carries(const ZklCohort *c, const ZklSlot *o)
{
	return (o->zstate == ZKS_HELD || o->zstate == ZKS_LINGER) && eligible(c, o);
}

/*
 * The cluster's request for s's key that local waiters queue behind: one
 * that holds (or lingers with) a node, or one on its way into ZooKeeper's
 * queue (lock cohorting: one request per cluster queues there, the others
 * wait here).
 */
static ZklSlot *
carrier_of(ZklCohort *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o == s || !eligible(c, o) || !same_key(o, s))
			continue;
		if (carries(c, o) ||
			(!o->abandoned && !o->nowait &&
			 (o->zstate == ZKS_NEW || o->zstate == ZKS_CREATING || o->zstate == ZKS_RECOVER ||
			  o->zstate == ZKS_RECOVERING || o->zstate == ZKS_QUEUED)))
			return o;
	}
	return NULL;
}

/*
 * Another live request of o's backend on o's key (one it has given up, its
 * last transaction's being released, does not count: the backend no longer
 * holds it).  With `decided`, only one that has decided (or will, on a
 * reply under way) with o's node counted as its own, by core's same-backend
 * rule: a request not sent yet decides only once o is gone, and one
 * waiting here for a hand-over decides nothing.
 */
static bool
owner_other(const ZklCohort *c, const ZklSlot *o, bool decided)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *s = &c->t->slots[i];

		if (s == o || s->zstate == ZKS_FREE || s->abandoned || s->owner_pid != o->owner_pid ||
			s->owner_procno != o->owner_procno || !same_key(s, o))
			continue;
		if (!decided ||
			(s->zstate != ZKS_NEW && s->zstate != ZKS_COHORT && s->zstate != ZKS_GONE))
			return true;
	}
	return false;
}

/* A local request other than o holds o's key (in either mode) and is not done with it. */
static bool
other_holder(const ZklCohort *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *h = &c->t->slots[i];

		if (h != o && h->zstate == ZKS_HELD && !h->abandoned && same_key(h, o))
			return true;
	}
	return false;
}

/* Hand-overs left before a waiter seen behind the node gets its turn. */
static bool
budget_left(const ZklCohort *c, const ZklSlot *o)
{
	return o->handed + 1 < ZKL_HANDOVER_MAX &&
		(!o->foreign || o->since_foreign < c->handover_limit);
}

/* Everything but the child watch allows o's node to pass. */
static bool
may_pass_but_peek(const ZklCohort *c, const ZklSlot *o, bool connected, int64_t mono)
{
	/*
	 * The releasing backend's other live request on the key may have decided
	 * with this node as its own: it must not become another backend's while
	 * that decision stands.
	 */
	return connected && o->first && o->session_id == c->t->session_id &&
		budget_left(c, o) && !other_holder(c, o) && !owner_other(c, o, true) &&
		!c->host->grants_paused(c->host->arg, mono);
}

static bool
may_pass(const ZklCohort *c, const ZklSlot *o, bool connected, int64_t mono)
{
	return o->peek == COH_PEEK_ARMED && may_pass_but_peek(c, o, connected, mono);
}

/* The local waiter first in line for o's node. */
static ZklSlot *
first_waiter(ZklCohort *c, const ZklSlot *o)
{
	ZklSlot    *first = NULL;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w->zstate == ZKS_COHORT && !w->abandoned && same_key(w, o) &&
			(first == NULL || w->queued_at < first->queued_at))
			first = w;
	}
	return first;
}

/*
 * `to` takes the node of `from` (given up: freed here), with what was seen
 * queued behind it; what `from` made of its place is not taken.  The caller
 * reads what else of `from` it needs first.
 */
static void
take_node(ZklCohort *c, ZklSlot *from, ZklSlot *to)
{
	memcpy(to->node, from->node, sizeof(to->node));
	memcpy(to->uuid, from->uuid, sizeof(to->uuid));
	to->czxid = from->czxid;
	to->root_id = from->root_id;
	to->foreign = from->foreign;
	to->kept = false;
	to->watch[0] = '\0';
	to->watch_sole = false;
	to->delayed_until = 0;
	to->zstate = ZKS_QUEUED;
	from->zstate = ZKS_GONE;
	zkt_free(c->t, from);
}

/* The node of `from` (done with it) becomes `to`'s, granted at once. */
static void
pass(ZklCohort *c, ZklSlot *from, ZklSlot *to)
{
	to->handed = from->handed + 1;
	to->since_foreign = from->since_foreign + (from->foreign ? 1 : 0);
	to->peek = from->peek;
	to->at_head = true;
	to->first = true;
	to->linger_until = 0;
	to->todo = 0;
	take_node(c, from, to);		/* QUEUED until the grant, as after a listing */
	c->t->counters.handovers++;
	c->host->grant(c->host->arg, to);
}

/*
 * A listing with a child watch for holder o: ZKT_CHILDREN, which goes out as
 * one (zcoh_listing_planned).  Asked again if that read was dropped unsent
 * (a grant clears a waiter's owed reads).
 */
static void
ask_peek(ZklSlot *o, bool connected)
{
	if (connected && (o->peek == COH_PEEK_NONE ||
					  (o->peek == COH_PEEK_WANTED && !(o->todo & ZKT_CHILDREN))))
	{
		o->peek = COH_PEEK_WANTED;
		o->todo |= ZKT_CHILDREN;
	}
}

void
zcoh_new_node(ZklSlot *s)
{
	s->handed = 0;
	s->foreign = false;
	s->since_foreign = 0;
	s->peek = COH_PEEK_NONE;
	s->kept = false;
	s->linger_until = 0;
}

void
zcoh_listing_planned(ZklSlot *s)
{
	if (s->peek == COH_PEEK_WANTED)
		s->peek = COH_PEEK_ASKED;
}

/*
 * A queued node whose owner gave up goes on waiting for the local waiter
 * first in line: its place in ZooKeeper's queue is the cohort's.  What the
 * old owner made of that place is void (its own other nodes did not block
 * it, and they do block the new owner), so the new owner reads the queue
 * again before anything else; replies and events for the old slot are
 * stale now.  What was seen queued behind the node stays true.
 */
static void
move_place(ZklCohort *c, ZklSlot *from, ZklSlot *to)
{
	to->at_head = false;
	to->first = false;
	to->checked_at = from->checked_at;
	to->handed = 0;
	to->since_foreign = from->since_foreign;
	to->peek = COH_PEEK_NONE;
	to->todo = ZKT_CHILDREN | (from->todo & ZKT_STAT);	/* an adopted node is checked first */
	take_node(c, from, to);
}

static void
end_linger(ZklSlot *o)
{
	o->zstate = ZKS_DELETING;
	o->todo = ZKT_DELETE;
}

/* Hand-over turned off (a reload): everything waiting for one goes back to the recipe. */
static void
turn_off(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		s->peek = COH_PEEK_NONE;	/* a listing out now comes back unasked for */
		if (s->zstate == ZKS_COHORT && s->abandoned)
			zkt_free(c->t, s);
		else if (s->zstate == ZKS_COHORT)
			c->host->requeue(c->host->arg, s);
		else if (s->zstate == ZKS_LINGER)
			end_linger(s);
	}
}

/* A new request: take a lingering node, wait for a local holder's, or queue in ZooKeeper. */
static void
join(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono)
{
	ZklSlot    *o = carrier_of(c, s);

	if (o == NULL || owner_other(c, s, false))
		return;					/* its own node, behind whoever waits in ZooKeeper */
	if (o->zstate == ZKS_LINGER)
	{
		if (may_pass(c, o, connected, mono))
			pass(c, o, s);
		return;
	}
	/*
	 * A try-lock is refused without asking ZooKeeper while the key is held
	 * here or waited for; once the holder is done with it (a COMMIT that has
	 * returned) and nobody here waits, it is next in line like any request.
	 */
	if (s->nowait && !(o->zstate == ZKS_HELD && o->abandoned && first_waiter(c, o) == NULL))
	{
		s->result = ZKR_NOT_GRANTED;
		s->zstate = ZKS_GONE;
		c->host->wake(c->host->arg, s);
		return;
	}
	s->zstate = ZKS_COHORT;
}

/* A released holder's node: pass it, keep it for a moment, or let it go. */
static void
release(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono)
{
	ZklSlot    *w = first_waiter(c, o);

	/* only a waiter behind this request (another local node of the key may have its own) */
	if (w != NULL && carrier_of(c, w) != o)
		w = NULL;
	o->kept = false;
	if (may_pass(c, o, connected, mono))
	{
		if (w != NULL)
			pass(c, o, w);
		else if (c->linger_ms > 0 && !o->foreign)
		{
			o->zstate = ZKS_LINGER;
			o->linger_until = mono + (int64_t) c->linger_ms * 1000;
			o->owner_procno = -1;	/* nobody's: no backend counts it as its own */
			o->owner_pid = 0;
		}
		return;
	}
	if (w != NULL && may_pass_but_peek(c, o, connected, mono))
	{
		ask_peek(o, connected);	/* the waiter gets it once the listing is back */
		o->kept = true;
		return;
	}
	/*
	 * The node goes (core.c deletes it: zcoh_keeps is false now).  The first
	 * waiter queues in ZooKeeper, behind whoever came meanwhile; the others
	 * wait behind its request.
	 */
	if (w != NULL)
		c->host->requeue(c->host->arg, w);
}

long
zcoh_plan(ZklCohort *c, bool connected, int64_t now, int64_t mono)
{
	long		next_ms = -1;
	int			i;

	if (!c->handover)
	{
		turn_off(c);
		return -1;
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		if (s->zstate == ZKS_NEW && !s->abandoned && eligible(c, s))
			join(c, s, connected, mono);
	}
	/* before waiters look for their request: a queued node whose owner gave up stays theirs */
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		ZklSlot    *w;

		if (o->zstate == ZKS_QUEUED && o->abandoned && eligible(c, o) &&
			(w = first_waiter(c, o)) != NULL && !owner_other(c, o, false))
			move_place(c, o, w);
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];
		ZklSlot    *o;

		/* a waiter with no request of its cluster to wait behind (gone, lost, given up) */
		if (s->zstate == ZKS_COHORT && (o = carrier_of(c, s)) == NULL)
		{
			if (s->abandoned)
				zkt_free(c->t, s);
			else
				c->host->requeue(c->host->arg, s);
		}
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (!carries(c, o) && !(o->zstate == ZKS_QUEUED && eligible(c, o) && !o->abandoned))
			continue;
		if (o->zstate == ZKS_LINGER)
		{
			if (mono >= o->linger_until || o->foreign || !may_pass(c, o, connected, mono))
				end_linger(o);
			else
			{
				long		ms = (long) ((o->linger_until - mono + 999) / 1000);

				next_ms = (next_ms < 0 || ms < next_ms) ? ms : next_ms;
			}
		}
		else if (o->abandoned)
			release(c, o, connected, mono);
		else if (o->zstate == ZKS_QUEUED)
		{
			/*
			 * Its blocker went (a barrier read is due) and local waiters
			 * wait behind it: read the queue instead, with the child watch,
			 * so that one read both grants it and arms its hand-overs.
			 */
			if ((o->todo & ZKT_BARRIER) && o->peek == COH_PEEK_NONE && connected &&
				first_waiter(c, o) != NULL)
			{
				o->todo = (o->todo & ~ZKT_BARRIER) | ZKT_CHILDREN;
				o->peek = COH_PEEK_WANTED;
			}
		}
		else if (c->linger_ms > 0 || first_waiter(c, o) != NULL)
			ask_peek(o, connected);	/* ready before the release */
	}
	(void) now;
	return next_ms;
}

bool
zcoh_keeps(const ZklCohort *c, const ZklSlot *s)
{
	/* release() decided so just now, in this turn's zcoh_plan() */
	return s->kept && s->zstate == ZKS_HELD && carries(c, s);
}

void
zcoh_listed(ZklCohort *c, ZklSlot *s, const ZkrChild *kids, int n, bool watched)
{
	int			own = -1;
	int			i;

	if (!eligible(c, s))
		return;
	for (i = 0; i < n && own < 0; i++)
		if (zkr_name_has_uuid(kids[i].name, s->uuid))
			own = i;
	if (own < 0)
	{
		/* a holder's node is gone from under it (a waiter's: decide() sees it) */
		if (s->peek == COH_PEEK_ASKED)
			s->peek = COH_PEEK_NONE;
		if (s->zstate == ZKS_HELD)
			c->host->lose(c->host->arg, s);
		else if (s->zstate == ZKS_LINGER)
		{
			s->zstate = ZKS_GONE;
			zkt_free(c->t, s);
		}
		return;
	}
	/*
	 * A watched listing set the watch where it was read: later arrivals send
	 * an event (which comes after this reply).  Another listing set none,
	 * but what it shows is true all the same.
	 */
	if (watched)
		s->peek = COH_PEEK_ARMED;
	if (own < n - 1)
		s->foreign = true;
	if (s->foreign && s->zstate == ZKS_LINGER)
		end_linger(s);			/* another request waits: no lingering for it */
}

void
zcoh_listing_failed(ZklCohort *c, ZklSlot *s, int rc, bool transient)
{
	if (!eligible(c, s))
		return;
	if (rc == ZNONODE && s->zstate == ZKS_HELD)
		c->host->lose(c->host->arg, s);	/* the key node is gone: so is ours */
	else if (rc == ZNONODE && s->zstate == ZKS_LINGER)
		end_linger(s);
	else if (!transient)
	{
		/* a queue we cannot read (say, access refused): no more hand-overs of this node */
		s->foreign = true;
		s->since_foreign = UINT16_MAX;
	}
	if (s->peek == COH_PEEK_ASKED)
		s->peek = COH_PEEK_NONE;	/* asked again while needed */
}

bool
zcoh_event(ZklCohort *c, const char *path)
{
	bool		ours = false;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		char		key_path[ZKL_MAX_ROOT_LEN + ZKL_KEY_BUFLEN + 2];

		if (o->zstate == ZKS_FREE || o->zstate == ZKS_NEW || o->zstate == ZKS_COHORT ||
			o->zstate == ZKS_GONE || o->mode == ZKL_MODE_SEMAPHORE)
			continue;
		snprintf(key_path, sizeof(key_path), "%s/%s", c->t->roots[o->root_id], o->key);
		if (strcmp(key_path, path) != 0)
			continue;
		ours = true;
		if (!eligible(c, o))
			continue;
		/* someone came or went: nothing passes before the next listing says who */
		if (o->peek == COH_PEEK_ARMED)
			o->peek = COH_PEEK_NONE;
		if (o->zstate == ZKS_LINGER)
			end_linger(o);
	}
	return ours;
}

void
zcoh_forget_watches(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		c->t->slots[i].peek = COH_PEEK_NONE;
}
