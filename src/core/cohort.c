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
 * (zc_recipe_fencing_token).  The new holder is an ordinary holder of the same
 * session: a lost session, the commit proof and lock-delay apply unchanged.
 *
 * Why it is fair enough.  Before its first hand-over a holder reads the
 * key's queue with a child watch (zc_cohort_listing_watches; only holders set
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
 *
 * This file: hand-over and linger; readers riding a node are in
 * cohort_ride.c, the plan and the news in cohort_plan.c.
 */
#include "cohort_int.h"
#include "invariant.h"

/*
 * A request that may take part, hand-over on: a lock of one key whose node
 * is its own (a node is handed over in exclusive mode, joined in shared).
 */
bool
zc_cohort_eligible(const ZklCohort *c, const ZklSlot *s)
{
	return c->handover && zc_kind_local(s->req.mode) != ZKL_LOCAL_NONE && s->req.group == 0 && !s->zk.rides;
}

/* One whose node passes from holder to holder (an exclusive one: zc_kind_hands_over). */
bool
zc_cohort_eligible_x(const ZklCohort *c, const ZklSlot *s)
{
	return zc_cohort_eligible(c, s) && zc_kind_hands_over(s->req.mode);
}

/* A writer's node and a reader's own node (not a ride) linger alike. */
bool
zc_cohort_marks_linger(const ZklCohort *c, const ZklSlot *s)
{
	return c->linger_ms > 0 && zc_cohort_eligible(c, s);
}

bool
zc_cohort_listing_watches(const ZklCohort *c, const ZklSlot *s)
{
	/*
	 * A reader's own listings too (the one behind its create first): a
	 * node granted by one is ready to be joined at once, before a short
	 * transaction is over.  One event per cluster and change, at most.
	 */
	return zc_kind_counted(s->req.mode) ||
		((s->zstate == ZKS_HELD || s->zstate == ZKS_LINGER ||
		  (s->zstate == ZKS_QUEUED && s->coh.peek == COH_PEEK_ASKED) ||
		  (zc_kind_rides(s->req.mode) && (s->zstate == ZKS_CREATING || s->zstate == ZKS_QUEUED))) &&
		 zc_cohort_eligible(c, s));
}

bool
zc_cohort_same_key(const ZklSlot *a, const ZklSlot *b)
{
	return strcmp(a->key, b->key) == 0;
}

/*
 * s's node will not linger now (a node of another request is behind it, or
 * linger is off): its data loses the mark, so that a try-lock behind it
 * answers false at once instead of waiting for it to go.
 */
void
zc_cohort_unmark(ZklSlot *s)
{
	if (s->coh.may_linger && (s->zstate == ZKS_HELD || s->zstate == ZKS_QUEUED))
	{
		s->coh.may_linger = false;
		s->zk.todo |= ZKT_UNMARK;
	}
}

bool
zc_cohort_carries(const ZklCohort *c, const ZklSlot *o)
{
	return (o->zstate == ZKS_HELD || o->zstate == ZKS_LINGER) && zc_cohort_eligible_x(c, o);
}

/*
 * The cluster's request for s's key that local waiters queue behind: one
 * that holds (or lingers with) a node, or one on its way into ZooKeeper's
 * queue (lock cohorting: one request per cluster queues there, the others
 * wait here).
 */
ZklSlot *
zc_cohort_carrier_of(ZklCohort *c, const ZklSlot *s)
{
	ZklSlot    *coming = NULL;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o == s || !zc_cohort_eligible_x(c, o) || !zc_cohort_same_key(o, s))
			continue;
		/* one with a node first, wherever it sits in the table: new requests join it */
		if (zc_cohort_carries(c, o))
			return o;
		if (coming == NULL && !o->own.abandoned && !o->req.nowait &&
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
 * rule: a request not sent yet has decided nothing (it decides once sent,
 * and o may still be there then: a released node kept for its listing),
 * and one waiting here for a hand-over decides nothing.
 */
bool
zc_cohort_owner_other(const ZklCohort *c, const ZklSlot *o, bool decided)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *s = &c->t->slots[i];

		if (s == o || s->zstate == ZKS_FREE || s->own.abandoned || s->req.owner_pid != o->req.owner_pid ||
			s->req.owner_procno != o->req.owner_procno || !zc_cohort_same_key(s, o))
			continue;
		if (!decided ||
			(s->zstate != ZKS_NEW && s->zstate != ZKS_COHORT && s->zstate != ZKS_GONE))
			return true;
	}
	return false;
}

/*
 * A local request for o's key that conflicts with it (an exclusive one, o
 * being a reader's) and is not done, in any state:
 * readers must not join past it (it would wait for ever), nor beside it
 * (a backend's exclusive lock granted past its own shared node).
 */
bool
zc_cohort_writer_here(const ZklCohort *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *w = &c->t->slots[i];

		if (zc_kind_conflict(w->req.mode, o->req.mode) && !w->own.abandoned && w->zstate != ZKS_FREE &&
			w->zstate != ZKS_GONE && zc_cohort_same_key(w, o))
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

		if (h != o && h->zstate == ZKS_HELD && !h->own.abandoned && zc_cohort_same_key(h, o))
			return true;
	}
	return false;
}

/* Hand-overs left before a waiter seen behind the node gets its turn. */
static bool
budget_left(const ZklCohort *c, const ZklSlot *o)
{
	return o->coh.node_handed + 1 < ZKL_HANDOVER_MAX &&
		(!o->coh.foreign || o->coh.since_foreign < c->handover_limit);
}

/*
 * o's node stands where nothing conflicts ahead of it: a writer's at the
 * very head, a reader's with no writer ahead (`clear`; no writer can come
 * ahead of a node that exists, and an upgrade placed ahead waits for it).
 */
bool
zc_cohort_heads(const ZklSlot *o)
{
	return zc_kind_rides(o->req.mode) ? o->zk.clear : o->zk.first;
}

/* Everything but the child watch allows o's node to pass. */
bool
zc_cohort_may_pass_but_peek(const ZklCohort *c, const ZklSlot *o, bool connected, int64_t mono)
{
	/*
	 * The releasing backend's other live request on the key may have decided
	 * with this node as its own: it must not become another backend's while
	 * that decision stands.  A writer's node passes while no other local
	 * request holds the key; a reader's while no local writer asks it
	 * (other readers may hold it beside, on nodes of their own).
	 */
	return connected && zc_cohort_heads(o) && o->ans.session_id == c->t->session_tag && budget_left(c, o) &&
		(zc_kind_rides(o->req.mode) ? !zc_cohort_writer_here(c, o) : !other_holder(c, o)) &&
		!zc_cohort_owner_other(c, o, true) &&
		!c->host->grants_paused(c->host->arg, mono);
}

bool
zc_cohort_may_pass(const ZklCohort *c, const ZklSlot *o, bool connected, int64_t mono)
{
	return o->coh.peek == COH_PEEK_ARMED && zc_cohort_may_pass_but_peek(c, o, connected, mono);
}

/* The local waiter first in line for o's node. */
ZklSlot *
zc_cohort_first_waiter(ZklCohort *c, const ZklSlot *o)
{
	ZklSlot    *first = NULL;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w->zstate == ZKS_COHORT && !w->own.abandoned && zc_kind_hands_over(w->req.mode) &&
			zc_cohort_same_key(w, o) &&
			(first == NULL || w->req.ticket < first->req.ticket))
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
	to->zk.czxid = from->zk.czxid;
	to->zk.root_id = from->zk.root_id;
	to->coh.foreign = from->coh.foreign;
	to->coh.may_linger = from->coh.may_linger;
	to->coh.kept = false;
	to->watch[0] = '\0';
	to->zk.watch_sole = false;
	to->zk.delayed_until = 0;
	zc_cohort_barrier_passes(from, to);
	zc_slot_move(to, ZKS_QUEUED);
	zc_slot_move(from, ZKS_GONE);
	zc_table_free(c->t, from);
}

/*
 * `from` read its own node behind its blocker's delete and the answer is
 * not back: once `from` is freed the answer finds no slot, so `to`, which
 * holds through the node now, looks at it itself (a node deleted from
 * outside meanwhile is a lost lock: zc_core_stat_reply).
 */
void
zc_cohort_barrier_passes(const ZklSlot *from, ZklSlot *to)
{
	if (from->zk.barrier_out)
		to->zk.todo |= ZKT_STAT;
}

/* The node of `from` (done with it) becomes `to`'s, granted at once. */
static void refuse(ZklCohort *c, ZklSlot *s);

static void
pass(ZklCohort *c, ZklSlot *from, ZklSlot *to)
{
	int			i;

	/*
	 * one key, one mode (a writer's node, or a lingering reader's), and a
	 * token that still fits (zc_recipe_fencing_token)
	 */
	ZC_ASSERT(zc_cohort_same_key(from, to) && to->req.mode == from->req.mode &&
			  (zc_kind_hands_over(to->req.mode) || from->zstate == ZKS_LINGER));
	ZC_ASSERT(from->coh.node_handed + 1 < ZKL_HANDOVER_MAX);
	to->zk.handed = from->coh.node_handed + 1;
	to->coh.node_handed = to->zk.handed;
	to->coh.since_foreign = from->coh.since_foreign + (from->coh.foreign ? 1 : 0);
	to->coh.peek = from->coh.peek;
	/* a writer's node is at the head; a reader's keeps what was known of its place */
	to->zk.at_head = zc_kind_rides(to->req.mode) ? from->zk.at_head : true;
	to->zk.first = zc_kind_rides(to->req.mode) ? from->zk.first : true;
	to->zk.clear = zc_kind_rides(to->req.mode) ? from->zk.clear : to->zk.clear;
	to->coh.linger_until = 0;
	to->zk.todo = from->zk.todo & ZKT_UNMARK;	/* owed for the node */
	take_node(c, from, to);		/* QUEUED until the grant, as after a listing */
	c->t->counters.handovers++;
	c->host->grant(c->host->arg, to);
	/* a try-lock that joined to be next is not: the key is held here again */
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w->zstate == ZKS_COHORT && w->req.nowait && !w->own.abandoned && zc_cohort_same_key(w, to))
			refuse(c, w);
	}
}

/*
 * A listing with a child watch for holder o: ZKT_CHILDREN, which goes out as
 * one (zc_cohort_listing_planned).  Asked again if that read was dropped unsent
 * (a grant clears a waiter's owed reads).
 */
void
zc_cohort_ask_peek(ZklSlot *o, bool connected)
{
	if (connected && (o->coh.peek == COH_PEEK_NONE ||
					  (o->coh.peek == COH_PEEK_WANTED && !(o->zk.todo & ZKT_CHILDREN))))
	{
		o->coh.peek = COH_PEEK_WANTED;
		o->zk.todo |= ZKT_CHILDREN;
	}
}

void
zc_cohort_new_node(ZklSlot *s)
{
	s->zk.handed = 0;
	s->coh.node_handed = 0;
	s->zk.rides = false;
	if (!zc_kind_rides(s->req.mode))
	{
		/* a reader's count is its key's (share_bound): it stays */
		s->coh.foreign = false;
		s->coh.since_foreign = 0;
	}
	s->coh.peek = COH_PEEK_NONE;
	s->coh.kept = false;
	s->coh.linger_until = 0;
}

void
zc_cohort_listing_planned(ZklSlot *s)
{
	if (s->coh.peek == COH_PEEK_WANTED)
		s->coh.peek = COH_PEEK_ASKED;
}

/*
 * A queued node whose owner gave up goes on waiting for the local waiter
 * first in line: its place in ZooKeeper's queue is the cohort's.  What the
 * old owner made of that place is void (its own other nodes did not block
 * it, and they do block the new owner), so the new owner reads the queue
 * again before anything else; replies and events for the old slot are
 * stale now.  What was seen queued behind the node stays true.
 */
void
zc_cohort_move_place(ZklCohort *c, ZklSlot *from, ZklSlot *to)
{
	to->zk.at_head = false;
	to->zk.first = false;
	to->zk.checked_at = from->zk.checked_at;
	to->zk.handed = 0;
	to->coh.node_handed = 0;
	to->coh.since_foreign = from->coh.since_foreign;
	to->coh.peek = COH_PEEK_NONE;
	/* an adopted node is checked first; the mark's removal is owed for the node */
	to->zk.todo = ZKT_CHILDREN | (from->zk.todo & (ZKT_STAT | ZKT_UNMARK));
	take_node(c, from, to);
}

void
zc_cohort_end_linger(ZklSlot *o)
{
	zc_slot_move(o, ZKS_DELETING);
	o->zk.todo = ZKT_DELETE;
}

void
zc_cohort_stop_lingering(ZklCohort *c)
{
	int			i;

	c->linger_ms = 0;
	c->t->cohort.linger_ms = 0;	/* nor does a backend let one linger (take_here.c) */
	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].zstate == ZKS_LINGER)
			zc_cohort_end_linger(&c->t->slots[i]);
}

/* Hand-over turned off (a reload): everything waiting for one goes back to the recipe. */
void
zc_cohort_turn_off(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		zc_cohort_unmark(s);				/* no node lingers now */
		s->coh.peek = COH_PEEK_NONE;	/* a listing out now comes back unasked for */
		if (s->zstate == ZKS_COHORT && s->own.abandoned)
			zc_table_free(c->t, s);
		else if (s->zstate == ZKS_COHORT)
			c->host->requeue(c->host->arg, s);
		else if (s->zstate == ZKS_LINGER)
			zc_cohort_end_linger(s);
	}
}

/*
 * Whether a new writer for o's node that asked before s (its ticket) also
 * joins this turn: the lingering node is its, in the order they asked,
 * not in the order of the table.
 */
bool
zc_cohort_older_joiner(ZklCohort *c, const ZklSlot *s, ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w != s && w->zstate == ZKS_NEW && !w->own.abandoned && w->req.ticket < s->req.ticket &&
			zc_cohort_eligible_x(c, w) && zc_cohort_same_key(w, o) && !zc_cohort_owner_other(c, w, false))
			return true;
	}
	return false;
}

/* A try-lock the cluster answers itself: the key is held or waited for here. */
static void
refuse(ZklCohort *c, ZklSlot *s)
{
	s->ans.result = ZKL_RESULT_NOT_GRANTED;
	zc_slot_move(s, ZKS_GONE);
	c->host->wake(c->host->arg, s);
}

/* s waits here behind o: in o's root once o has one (gwait_doc.c counts the wait there) */
static void
wait_behind(ZklSlot *s, const ZklSlot *o)
{
	zc_slot_move(s, ZKS_COHORT);
	if (o->zstate != ZKS_NEW)
		s->zk.root_id = o->zk.root_id;
}

/* A new request: take a lingering node, wait for a local holder's, or queue in ZooKeeper. */
void
zc_cohort_join(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono)
{
	ZklSlot    *o = zc_cohort_carrier_of(c, s);

	if (o == NULL || zc_cohort_owner_other(c, s, false))
		return;					/* its own node, behind whoever waits in ZooKeeper */
	if (o->zstate == ZKS_LINGER)
	{
		if (!zc_cohort_may_pass(c, o, connected, mono))
			return;
		if (!zc_cohort_older_joiner(c, s, o))
			pass(c, o, s);
		else if (s->req.nowait)
			refuse(c, s);		/* the one that asked first takes it: the key is held here */
		else
			wait_behind(s, o);	/* behind the one that asked first */
		return;
	}
	/*
	 * A try-lock is refused without asking ZooKeeper while the key is held
	 * here or waited for; once the holder is done with it (a COMMIT that has
	 * returned) and nobody here waits, it is next in line like any request.
	 */
	if (s->req.nowait && !(o->zstate == ZKS_HELD && o->own.abandoned && zc_cohort_first_waiter(c, o) == NULL))
	{
		refuse(c, s);
		return;
	}
	wait_behind(s, o);
}

/*
 * Whether new request s may take lingering node o now, as its own: one
 * mode, the mark and no other cluster's node seen behind it (a node
 * lingers only so: release, listed), its time not over, and the rules of
 * any hand-over.
 */
bool
zc_cohort_may_take(ZklCohort *c, const ZklSlot *s, const ZklSlot *o, bool connected, int64_t mono)
{
	ZC_ASSERT(o->zstate != ZKS_LINGER || (o->coh.may_linger && !o->coh.foreign));
	return o->zstate == ZKS_LINGER && zc_cohort_eligible(c, o) && o->req.mode == s->req.mode &&
		o->coh.may_linger && !o->coh.foreign && mono < o->coh.linger_until &&
		zc_cohort_may_pass(c, o, connected, mono);
}

/* s takes lingering node o (zc_cohort_may_take): granted through c's host. */
void
zc_cohort_take(ZklCohort *c, ZklSlot *o, ZklSlot *s)
{
	pass(c, o, s);
}

bool
zc_cohort_take_here(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono)
{
	ZklSlot    *o = NULL;
	int			i;

	if (c->linger_ms <= 0 || s->zstate != ZKS_NEW || s->own.abandoned || !zc_cohort_eligible(c, s))
		return false;
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *x = &c->t->slots[i];

		if (x == s || x->zstate == ZKS_FREE || !zc_cohort_same_key(x, s))
			continue;
		if (x->zstate != ZKS_LINGER || o != NULL)
			return false;		/* anything else of the key: the worker decides */
		o = x;
	}
	if (o == NULL || !zc_cohort_may_take(c, s, o, connected, mono))
		return false;
	pass(c, o, s);
	return true;
}

/* Released, with no local waiter: o's node stays for the cluster's next request. */
static void
linger(ZklCohort *c, ZklSlot *o, int64_t mono)
{
	zc_slot_move(o, ZKS_LINGER);
	c->t->counters.lingers++;
	o->coh.linger_until = mono + (int64_t) c->linger_ms * 1000;
	o->req.owner_procno = -1;	/* nobody's: no backend counts it as its own */
	o->req.owner_pid = 0;
}

/*
 * o, just released, may linger now, but for the child watch: what any
 * release asks (zc_cohort_release), and no call owed for it but a listing.
 */
static bool
may_linger_but_peek(ZklCohort *c, const ZklSlot *o, bool connected, int64_t mono)
{
	return c->linger_ms > 0 && o->zstate == ZKS_HELD && o->own.abandoned && zc_cohort_eligible(c, o) &&
		o->coh.may_linger && !o->coh.foreign && !o->coh.kept && (o->zk.todo & ~ZKT_CHILDREN) == 0 &&
		zc_cohort_may_pass_but_peek(c, o, connected, mono);
}

static bool
may_linger_now(ZklCohort *c, const ZklSlot *o, bool connected, int64_t mono)
{
	return may_linger_but_peek(c, o, connected, mono) && o->zk.todo == 0 && o->coh.peek == COH_PEEK_ARMED;
}

bool
zc_cohort_linger_here(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *x = &c->t->slots[i];

		if (x != o && x->zstate != ZKS_FREE && zc_cohort_same_key(x, o))
			return false;		/* anything else of the key: the worker decides */
	}
	if (!may_linger_now(c, o, connected, mono))
		return false;
	linger(c, o, mono);
	return true;
}

/*
 * Another node of this cluster for o's key, made, on its way or going: a
 * node lingers only alone, so that another cluster's try-lock, which waits
 * for one lingering node ahead of it (core_grant.c), is not refused for two.
 */
bool
zc_cohort_other_node(const ZklCohort *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *x = &c->t->slots[i];

		if (x != o && !x->zk.rides && zc_cohort_same_key(x, o) &&
			(x->zstate == ZKS_HELD || x->zstate == ZKS_QUEUED || x->zstate == ZKS_CREATING ||
			 x->zstate == ZKS_RECOVER || x->zstate == ZKS_RECOVERING || x->zstate == ZKS_LINGER ||
			 x->zstate == ZKS_DELETING))
			return true;
	}
	return false;
}

/*
 * The worker's release of a reader's node with no rider (other readers of
 * the key may be here, with no node of their own): it lingers; or, with
 * only the child watch missing, it is kept for the listing that arms it
 * (zc_cohort_keeps), as a writer's is, and lingers then (or a local reader
 * waiting takes it).
 * Beside another node of the key it lingers only for a reader waiting,
 * who takes it in this turn's plan (the plan ends it otherwise): a
 * reader let go there would queue a node of its own.
 */
void
zc_cohort_linger_reader(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono, bool reader_waits)
{
	if (!zc_kind_rides(o->req.mode) || o->zk.rides)
		return;
	o->coh.kept = false;
	if (!may_linger_but_peek(c, o, connected, mono) || (!reader_waits && zc_cohort_other_node(c, o)))
		return;
	if (may_linger_now(c, o, connected, mono))
		linger(c, o, mono);
	else
	{
		/* a reader waiting takes it then; else it lingers then (zc_cohort_release) */
		zc_cohort_ask_peek(o, connected);
		o->coh.kept = true;
	}
}

ZklSlot *
zc_cohort_pass_here(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono)
{
	ZklSlot    *w;

	if (o->zstate != ZKS_HELD || !o->own.abandoned || !zc_cohort_eligible_x(c, o) || o->coh.kept ||
		o->zk.todo != 0)
		return NULL;
	/* zc_cohort_release's first rule: the first local waiter behind this very node */
	w = zc_cohort_first_waiter(c, o);
	/* an older writer of the key back among the new (a failed create keeps its ticket): the worker places it */
	if (w == NULL || zc_cohort_carrier_of(c, w) != o || !zc_cohort_may_pass(c, o, connected, mono) ||
		zc_cohort_older_joiner(c, w, o))
		return NULL;
	pass(c, o, w);
	return w;
}

/* o's node may linger once its owner is done: linger on, its mark, no other cluster's node seen */
static bool
lingerable(const ZklCohort *c, const ZklSlot *o)
{
	return c->linger_ms > 0 && o->coh.may_linger && !o->coh.foreign;
}

/* A released holder's node: pass it, keep it for a moment, or let it go. */
void
zc_cohort_release(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono)
{
	ZklSlot    *w = zc_cohort_first_waiter(c, o);

	/* only a waiter behind this request (another local node of the key may have its own) */
	if (w != NULL && zc_cohort_carrier_of(c, w) != o)
		w = NULL;
	o->coh.kept = false;
	if (zc_cohort_may_pass(c, o, connected, mono))
	{
		if (w != NULL)
			pass(c, o, w);
		else if (lingerable(c, o))
			linger(c, o, mono);
		return;
	}
	/*
	 * Only the child watch missing: the waiter gets the node once the
	 * listing is back, or it lingers then.  A node made for a short
	 * transaction is released before its first watched listing returns;
	 * let go there, every next request would make a node of its own, and
	 * race its listing again (bench/README.md).
	 */
	if ((w != NULL || lingerable(c, o)) && zc_cohort_may_pass_but_peek(c, o, connected, mono))
	{
		zc_cohort_ask_peek(o, connected);
		o->coh.kept = true;
		return;
	}
	/*
	 * The node goes (core.c deletes it: zc_cohort_keeps is false now).  The first
	 * waiter queues in ZooKeeper, behind whoever came meanwhile; the others
	 * wait behind its request.
	 */
	if (w != NULL)
		c->host->requeue(c->host->arg, w);
}

/* ---- shared locks: local readers ride one node ---- */

/* r holds shared through o's node (o: the slot that owns the node). */
