/*
 * cohort.c — local hand-over of locks: lock cohorting (Dice,
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
 * at once; a child event ends that.  Only a node created with the linger
 * mark in its data lingers (may_linger), so that another cluster's try-lock
 * can tell that the node ahead of it may have no holder and wait for it to
 * go (core.c, linger_wait); once a node queued behind a held one is seen, the
 * mark is taken off (ZKT_UNMARK), and such a try answers false.
 *
 * Readers (ride): a shared request joins a local reader's granted node that
 * has no exclusive node ahead (`clear`), while no local exclusive request
 * for the key is live, within the same bound (counted for the key: only a
 * writer behind waits for readers): granted at once, `rides`, no node of
 * its own.  Safe for the same reasons: the node stays while any of
 * its readers holds (it passes to a rider when its owner is done), every
 * reader is a holder of the same session, and a node lost loses them all.
 */
#include "cohort.h"
#include "slot_state.h"

#include <stdio.h>
#include <string.h>

#include "zk_result.h"		/* ZooKeeper's result codes, not its library */

#include "table.h"

/*
 * A request that may take part, hand-over on: a lock of one key whose node
 * is its own (a node is handed over in exclusive mode, joined in shared).
 */
static bool
eligible(const ZklCohort *c, const ZklSlot *s)
{
	return c->handover && s->mode != ZKL_MODE_SEMAPHORE && s->group == 0 && !s->rides;
}

/* An exclusive one: its node passes from holder to holder. */
static bool
eligible_x(const ZklCohort *c, const ZklSlot *s)
{
	return eligible(c, s) && s->mode == ZKL_MODE_EXCLUSIVE;
}

bool
zcoh_marks_linger(const ZklCohort *c, const ZklSlot *s)
{
	return c->linger_ms > 0 && eligible_x(c, s);
}

bool
zcoh_listing_watches(const ZklCohort *c, const ZklSlot *s)
{
	/*
	 * A reader's own listings too (the one behind its create first): a
	 * node granted by one is ready to be joined at once, before a short
	 * transaction is over.  One event per cluster and change, at most.
	 */
	return s->mode == ZKL_MODE_SEMAPHORE ||
		((s->zstate == ZKS_HELD || s->zstate == ZKS_LINGER ||
		  (s->zstate == ZKS_QUEUED && s->peek == COH_PEEK_ASKED) ||
		  (s->mode == ZKL_MODE_SHARED && (s->zstate == ZKS_CREATING || s->zstate == ZKS_QUEUED))) &&
		 eligible(c, s));
}

static bool
same_key(const ZklSlot *a, const ZklSlot *b)
{
	return strcmp(a->key, b->key) == 0;
}

/*
 * s's node will not linger now (a node of another request is behind it, or
 * linger is off): its data loses the mark, so that a try-lock behind it
 * answers false at once instead of waiting for it to go.
 */
static void
unmark(ZklSlot *s)
{
	if (s->may_linger && (s->zstate == ZKS_HELD || s->zstate == ZKS_QUEUED))
	{
		s->may_linger = false;
		s->todo |= ZKT_UNMARK;
	}
}

static bool
carries(const ZklCohort *c, const ZklSlot *o)
{
	return (o->zstate == ZKS_HELD || o->zstate == ZKS_LINGER) && eligible_x(c, o);
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
	ZklSlot    *coming = NULL;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o == s || !eligible_x(c, o) || !same_key(o, s))
			continue;
		/* one with a node first, wherever it sits in the table: new requests join it */
		if (carries(c, o))
			return o;
		if (coming == NULL && !o->abandoned && !o->nowait &&
			(o->zstate == ZKS_NEW || o->zstate == ZKS_CREATING || o->zstate == ZKS_RECOVER ||
			 o->zstate == ZKS_RECOVERING || o->zstate == ZKS_QUEUED))
			coming = o;
	}
	return coming;
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
	return o->node_handed + 1 < ZKL_HANDOVER_MAX &&
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

		if (w->zstate == ZKS_COHORT && !w->abandoned && w->mode == ZKL_MODE_EXCLUSIVE &&
			same_key(w, o) &&
			(first == NULL || w->ticket < first->ticket))
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
	to->may_linger = from->may_linger;
	to->kept = false;
	to->watch[0] = '\0';
	to->watch_sole = false;
	to->delayed_until = 0;
	zks_move(to, ZKS_QUEUED);
	zks_move(from, ZKS_GONE);
	zkt_free(c->t, from);
}

/* The node of `from` (done with it) becomes `to`'s, granted at once. */
static void refuse(ZklCohort *c, ZklSlot *s);

static void
pass(ZklCohort *c, ZklSlot *from, ZklSlot *to)
{
	int			i;

	to->handed = from->node_handed + 1;
	to->node_handed = to->handed;
	to->since_foreign = from->since_foreign + (from->foreign ? 1 : 0);
	to->peek = from->peek;
	to->at_head = true;
	to->first = true;
	to->linger_until = 0;
	to->todo = from->todo & ZKT_UNMARK;	/* owed for the node */
	take_node(c, from, to);		/* QUEUED until the grant, as after a listing */
	c->t->counters.handovers++;
	c->host->grant(c->host->arg, to);
	/* a try-lock that joined to be next is not: the key is held here again */
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w->zstate == ZKS_COHORT && w->nowait && !w->abandoned && same_key(w, to))
			refuse(c, w);
	}
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
	s->node_handed = 0;
	s->rides = false;
	if (s->mode != ZKL_MODE_SHARED)
	{
		/* a reader's count is its key's (share_bound): it stays */
		s->foreign = false;
		s->since_foreign = 0;
	}
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
	to->node_handed = 0;
	to->since_foreign = from->since_foreign;
	to->peek = COH_PEEK_NONE;
	/* an adopted node is checked first; the mark's removal is owed for the node */
	to->todo = ZKT_CHILDREN | (from->todo & (ZKT_STAT | ZKT_UNMARK));
	take_node(c, from, to);
}

static void
end_linger(ZklSlot *o)
{
	zks_move(o, ZKS_DELETING);
	o->todo = ZKT_DELETE;
}

void
zcoh_stop_lingering(ZklCohort *c)
{
	int			i;

	c->linger_ms = 0;
	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].zstate == ZKS_LINGER)
			end_linger(&c->t->slots[i]);
}

/* Hand-over turned off (a reload): everything waiting for one goes back to the recipe. */
static void
turn_off(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		unmark(s);				/* no node lingers now */
		s->peek = COH_PEEK_NONE;	/* a listing out now comes back unasked for */
		if (s->zstate == ZKS_COHORT && s->abandoned)
			zkt_free(c->t, s);
		else if (s->zstate == ZKS_COHORT)
			c->host->requeue(c->host->arg, s);
		else if (s->zstate == ZKS_LINGER)
			end_linger(s);
	}
}

const ZklSlot *
zcoh_waits_behind(ZklCohort *c, const ZklSlot *s)
{
	return s->zstate == ZKS_COHORT && s->mode == ZKL_MODE_EXCLUSIVE ? carrier_of(c, s) : NULL;
}

/*
 * Whether a new writer for o's node that asked before s (its ticket) also
 * joins this turn: the lingering node is its, in the order they asked,
 * not in the order of the table.
 */
static bool
older_joiner(ZklCohort *c, const ZklSlot *s, ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w != s && w->zstate == ZKS_NEW && !w->abandoned && w->ticket < s->ticket &&
			eligible_x(c, w) && same_key(w, o) && !owner_other(c, w, false))
			return true;
	}
	return false;
}

/* A try-lock the cluster answers itself: the key is held or waited for here. */
static void
refuse(ZklCohort *c, ZklSlot *s)
{
	s->result = ZKR_NOT_GRANTED;
	zks_move(s, ZKS_GONE);
	c->host->wake(c->host->arg, s);
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
		if (!may_pass(c, o, connected, mono))
			return;
		if (!older_joiner(c, s, o))
			pass(c, o, s);
		else if (s->nowait)
			refuse(c, s);		/* the one that asked first takes it: the key is held here */
		else
			zks_move(s, ZKS_COHORT); /* it waits behind the one that asked first */
		return;
	}
	/*
	 * A try-lock is refused without asking ZooKeeper while the key is held
	 * here or waited for; once the holder is done with it (a COMMIT that has
	 * returned) and nobody here waits, it is next in line like any request.
	 */
	if (s->nowait && !(o->zstate == ZKS_HELD && o->abandoned && first_waiter(c, o) == NULL))
	{
		refuse(c, s);
		return;
	}
	zks_move(s, ZKS_COHORT);
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
		else if (c->linger_ms > 0 && o->may_linger && !o->foreign)
		{
			zks_move(o, ZKS_LINGER);
			c->t->counters.lingers++;
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

/* ---- shared locks: local readers ride one node ---- */

/* r holds shared through o's node (o: the slot that owns the node). */
static bool
rides_on(const ZklSlot *r, const ZklSlot *o)
{
	return r != o && r->rides && r->zstate == ZKS_HELD && r->root_id == o->root_id &&
		same_key(r, o) && strcmp(r->node, o->node) == 0;
}

/* A live local reader rides o's node (the first one found), or NULL. */
static ZklSlot *
rider_of(ZklCohort *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *r = &c->t->slots[i];

		if (rides_on(r, o) && !r->abandoned)
			return r;
	}
	return NULL;
}

/*
 * A local exclusive request for o's key that is not done, in any state:
 * readers must not join past it (it would wait for ever), nor beside it
 * (a backend's exclusive lock granted past its own shared node).
 */
static bool
writer_here(const ZklCohort *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *w = &c->t->slots[i];

		if (w->mode == ZKL_MODE_EXCLUSIVE && !w->abandoned && w->zstate != ZKS_FREE &&
			w->zstate != ZKS_GONE && same_key(w, o))
			return true;
	}
	return false;
}

/* A shared node of this cluster on s's key, made or on its way (its owner's slot). */
static bool
reader_node(const ZklCohort *c, const ZklSlot *o, const ZklSlot *s)
{
	return (o->zstate == ZKS_HELD || o->zstate == ZKS_QUEUED || o->zstate == ZKS_CREATING ||
			o->zstate == ZKS_RECOVER || o->zstate == ZKS_RECOVERING) &&
		o->mode == ZKL_MODE_SHARED && eligible(c, o) && same_key(o, s);
}

/*
 * The readers' bound is the key's, not one node's: readers may ride several
 * shared nodes of this cluster on a key (made while none could be ridden),
 * and a request seen queued behind one of them waits for them all, granted
 * or not yet.  So what one of them learns, all know (share_bound; a new
 * node of a reader keeps it), and a join counts for all: returns the joins
 * since, and whether one was seen.
 */
static uint16_t
key_since_foreign(const ZklCohort *c, const ZklSlot *s, bool *foreign)
{
	uint16_t	since = 0;
	int			i;

	*foreign = false;
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (reader_node(c, o, s) && o->foreign)
		{
			*foreign = true;
			since = o->since_foreign > since ? o->since_foreign : since;
		}
	}
	return since;
}

static void
share_bound(ZklCohort *c, const ZklSlot *s, uint16_t since)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (reader_node(c, o, s))
		{
			o->foreign = true;
			o->since_foreign = since;
		}
	}
}

/*
 * A listing for reader slot s: a writer behind its node counts for every
 * shared node of the key here; no writer in the key's queue at all means
 * none waits for the readers any more (listings come in order, from a
 * server never older than the last), so the count starts again.
 */
static void
readers_learn(ZklCohort *c, ZklSlot *s, const ZkrChild *kids, int n)
{
	bool		foreign;
	bool		writer = false;
	int			i;

	for (i = 0; i < n && !writer; i++)
		writer = kids[i].mode == ZKL_MODE_EXCLUSIVE;
	if (!writer)
	{
		for (i = 0; i < c->t->nused; i++)
		{
			ZklSlot    *o = &c->t->slots[i];

			if (reader_node(c, o, s))
			{
				o->foreign = false;
				o->since_foreign = 0;
			}
		}
	}
	else if (s->foreign)
		share_bound(c, s, key_since_foreign(c, s, &foreign));
}

/*
 * The cluster's shared holder of s's key whose node a reader could join,
 * but for the child watch: granted with no exclusive node ahead at all
 * (`clear`: so nothing it holds beside conflicts), in this session, within
 * the bound, and with no local writer for the key.
 */
static ZklSlot *
ride_host(ZklCohort *c, const ZklSlot *s, bool connected, int64_t mono)
{
	bool		foreign;
	uint16_t	since = key_since_foreign(c, s, &foreign);
	int			i;

	if (!connected || writer_here(c, s) || c->host->grants_paused(c->host->arg, mono) ||
		(foreign && since >= c->handover_limit))
		return NULL;
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (reader_node(c, o, s) && o->zstate == ZKS_HELD && !o->abandoned && o->clear &&
			o->session_id == c->t->session_id && o->node_handed + 1 < ZKL_HANDOVER_MAX)
			return o;
	}
	return NULL;
}

/*
 * A shared request joins a local shared holder's node: granted at once, no
 * node of its own.  Only once that holder's child watch is armed (it knows
 * who queues behind its node); until then the request waits here for the
 * one listing that arms it, and if that does not, queues in ZooKeeper as
 * usual.  A try-lock does not wait for it.
 */
static void
ride(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono)
{
	ZklSlot    *o = ride_host(c, s, connected, mono);
	bool		foreign;
	uint16_t	since;

	if (o != NULL && o->peek == COH_PEEK_ARMED)
	{
		s->attempt = ++c->t->next_attempt;	/* replies for its own queue place are stale */
		s->rides = true;
		s->handed = o->node_handed + 1;
		s->czxid = o->czxid;
		s->root_id = o->root_id;
		memcpy(s->node, o->node, sizeof(s->node));
		s->first = o->first;
		s->at_head = o->at_head;
		s->clear = true;
		s->todo = 0;
		zks_move(s, ZKS_QUEUED); /* until the grant */
		c->host->grant(c->host->arg, s);
		if (s->zstate != ZKS_HELD)
		{
			/* grants paused after all: no node to wait on, so queue as usual */
			c->host->requeue(c->host->arg, s);
			return;
		}
		o->node_handed = s->handed;
		since = key_since_foreign(c, o, &foreign);
		if (foreign)
			share_bound(c, o, since + 1);
		c->t->counters.handovers++;
	}
	else if (s->zstate == ZKS_COHORT && (o == NULL || o->peek == COH_PEEK_NONE))
		c->host->requeue(c->host->arg, s);	/* that listing did not arm it */
	else if (o != NULL && !(s->zstate == ZKS_NEW && s->nowait))
	{
		ask_peek(o, connected);	/* again if that read was dropped unsent */
		zks_move(s, ZKS_COHORT);
	}
	else if (o != NULL)
		ask_peek(o, connected);	/* for the readers after it */
}

/*
 * Who uses a shared node changed (a rider left, or the node passed to one):
 * a local request for the key may now count the node as its backend's own
 * (an upgrade waits for the other readers only), and with it the waiters
 * queued behind it (core's same-backend rule), whichever node it watches.
 * So every local waiter on the key reads its queue again: a change of
 * users is rare next to the grants it saves.
 */
static void
users_changed(ZklCohort *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w->zstate == ZKS_QUEUED && !w->abandoned && w->root_id == o->root_id &&
			same_key(w, o))
			w->todo |= ZKT_CHILDREN;
	}
}

/*
 * The owner of shared node `from` is done with it while readers ride it:
 * the node becomes rider `to`'s, already granted, with what is known of
 * its place; what was asked of it in flight is stale.
 */
static void
pass_to_rider(ZklCohort *c, ZklSlot *from, ZklSlot *to)
{
	memcpy(to->uuid, from->uuid, sizeof(to->uuid));
	if (from->czxid != 0)
		to->czxid = from->czxid;
	to->rides = false;
	to->node_handed = from->node_handed;
	to->foreign = from->foreign;
	to->since_foreign = from->since_foreign;
	to->peek = from->peek == COH_PEEK_ARMED ? COH_PEEK_ARMED : COH_PEEK_NONE;
	to->kept = false;
	zks_move(from, ZKS_GONE);
	zkt_free(c->t, from);
	users_changed(c, to);
}

/*
 * Riders first, whatever the settings (a reload may just have turned
 * hand-over off): one that is done goes, and a node whose owner is done
 * passes to a rider instead of being deleted under it.
 */
static void
tend_riders(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *r = &c->t->slots[i];

		if (r->rides && r->zstate == ZKS_HELD && r->abandoned)
		{
			users_changed(c, r);
			zks_move(r, ZKS_GONE);
			zkt_free(c->t, r);
		}
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		ZklSlot    *r;

		if (o->zstate == ZKS_HELD && o->abandoned && !o->rides && o->mode == ZKL_MODE_SHARED &&
			(r = rider_of(c, o)) != NULL)
			pass_to_rider(c, o, r);
	}
}

bool
zcoh_ridden_by_others(const ZklCohort *c, const ZklSlot *o, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused && o->mode == ZKL_MODE_SHARED; i++)
	{
		const ZklSlot *r = &c->t->slots[i];

		if (rides_on(r, o) && !r->abandoned &&
			(r->owner_pid != s->owner_pid || r->owner_procno != s->owner_procno))
			return true;
	}
	return false;
}

void
zcoh_node_lost(ZklCohort *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o != s && o->zstate == ZKS_HELD && o->root_id == s->root_id && same_key(o, s) &&
			strcmp(o->node, s->node) == 0)
			c->host->lose(c->host->arg, o);
	}
}

long
zcoh_plan(ZklCohort *c, bool connected, int64_t now, int64_t mono)
{
	long		next_ms = -1;
	int			i;

	tend_riders(c);
	if (!c->handover)
	{
		turn_off(c);
		return -1;
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		if (c->linger_ms == 0)
			unmark(s);			/* linger turned off by a reload */
		if (s->zstate == ZKS_NEW && !s->abandoned && eligible_x(c, s))
			join(c, s, connected, mono);
		else if ((s->zstate == ZKS_NEW || s->zstate == ZKS_COHORT) && !s->abandoned &&
				 s->mode == ZKL_MODE_SHARED && eligible(c, s))
			ride(c, s, connected, mono);
	}
	/* before waiters look for their request: a queued node whose owner gave up stays theirs */
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		ZklSlot    *w;

		if (o->zstate == ZKS_QUEUED && o->abandoned && eligible_x(c, o) &&
			(w = first_waiter(c, o)) != NULL && !owner_other(c, o, false))
			move_place(c, o, w);
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];
		ZklSlot    *o;

		/* a waiter with no request of its cluster to wait behind (gone, lost, given up) */
		if (s->zstate == ZKS_COHORT && s->mode == ZKL_MODE_EXCLUSIVE &&
			(o = carrier_of(c, s)) == NULL)
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

		if (!carries(c, o) && !(o->zstate == ZKS_QUEUED && eligible_x(c, o) && !o->abandoned))
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
	/* release() decided so just now, in this turn's zcoh_plan(); a rider's node is not its own */
	return (s->kept && s->zstate == ZKS_HELD && carries(c, s)) || (s->rides && s->zstate == ZKS_HELD);
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
			zks_move(s, ZKS_GONE);
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
	/* behind a shared node only a writer waits for it (readers there hold already) */
	for (i = own + 1; i < n && !s->foreign; i++)
		s->foreign = s->mode != ZKL_MODE_SHARED || kids[i].mode == ZKL_MODE_EXCLUSIVE;
	if (s->mode == ZKL_MODE_SHARED)
		readers_learn(c, s, kids, n);
	if (s->foreign && s->zstate == ZKS_LINGER)
		end_linger(s);			/* another request waits: no lingering for it */
	else if (s->foreign)
		unmark(s);				/* nor will it linger later: a try-lock behind it is told */
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
zcoh_disarm(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].peek == COH_PEEK_ARMED)
			c->t->slots[i].peek = COH_PEEK_NONE;
}

void
zcoh_forget_watches(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		c->t->slots[i].peek = COH_PEEK_NONE;
}
