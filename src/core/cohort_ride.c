/*
 * cohort_ride.c — readers riding a reader's node (cohort.h): who may
 * join, what a node's riders learn, and its passing to a rider when its
 * owner is done.
 */
#include "cohort_int.h"
#include "cohort_ride.h"

static bool
rides_on(const ZklSlot *r, const ZklSlot *o)
{
	return r != o && r->zk.rides && r->zstate == ZKS_HELD && r->zk.root_id == o->zk.root_id &&
		zc_cohort_same_key(r, o) && strcmp(r->node, o->node) == 0;
}

/* A live local reader rides o's node (the first one found), or NULL. */
static ZklSlot *
rider_of(ZklCohort *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *r = &c->t->slots[i];

		if (rides_on(r, o) && !r->own.abandoned)
			return r;
	}
	return NULL;
}

/* A shared node of this cluster on s's key, made or on its way (its owner's slot). */
static bool
reader_node(const ZklCohort *c, const ZklSlot *o, const ZklSlot *s)
{
	return (o->zstate == ZKS_HELD || o->zstate == ZKS_QUEUED || o->zstate == ZKS_CREATING ||
			o->zstate == ZKS_RECOVER || o->zstate == ZKS_RECOVERING) &&
		zc_kind_rides(o->req.mode) && zc_cohort_eligible(c, o) && zc_cohort_same_key(o, s);
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

		if (reader_node(c, o, s) && o->coh.foreign)
		{
			*foreign = true;
			since = o->coh.since_foreign > since ? o->coh.since_foreign : since;
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
			o->coh.foreign = true;
			o->coh.since_foreign = since;
		}
	}
}

/*
 * A listing for reader slot s: a writer behind its node counts for every
 * shared node of the key here; no writer in the key's queue at all means
 * none waits for the readers any more (listings come in order, from a
 * server never older than the last), so the count starts again.
 */
void
zc_cohort_readers_learn(ZklCohort *c, ZklSlot *s, const ZkrChild *kids, int n)
{
	bool		foreign;
	bool		writer = false;
	int			i;

	for (i = 0; i < n && !writer; i++)
		writer = zc_kind_conflict(kids[i].mode, s->req.mode);
	if (!writer)
	{
		for (i = 0; i < c->t->nused; i++)
		{
			ZklSlot    *o = &c->t->slots[i];

			if (reader_node(c, o, s))
			{
				o->coh.foreign = false;
				o->coh.since_foreign = 0;
			}
		}
	}
	else if (s->coh.foreign)
		share_bound(c, s, key_since_foreign(c, s, &foreign));
}

/* Whether a reader may join a local reader's node now, whichever: the key's bound and state. */
static bool
ride_may(ZklCohort *c, const ZklSlot *s, bool connected, int64_t mono)
{
	bool		foreign;
	uint16_t	since = key_since_foreign(c, s, &foreign);

	return connected && !zc_cohort_writer_here(c, s) && !c->host->grants_paused(c->host->arg, mono) &&
		!(foreign && since >= c->handover_limit);
}

/*
 * o's node a reader of s's key could join, but for the child watch and the
 * key's bound: granted with no exclusive node ahead at all (`clear`: so
 * nothing it holds beside conflicts), in this session, with hand-overs left.
 */
static bool
joinable(const ZklCohort *c, const ZklSlot *o, const ZklSlot *s)
{
	return reader_node(c, o, s) && o->zstate == ZKS_HELD && !o->own.abandoned && o->zk.clear &&
		o->ans.session_id == c->t->session_tag && o->coh.node_handed + 1 < ZKL_HANDOVER_MAX;
}

/*
 * The cluster's shared holder of s's key whose node a reader could join,
 * but for the child watch (an armed one first), with no local writer for
 * the key and within the key's bound.
 */
static ZklSlot *
ride_host(ZklCohort *c, const ZklSlot *s, bool connected, int64_t mono)
{
	ZklSlot    *first = NULL;
	int			i;

	if (!ride_may(c, s, connected, mono))
		return NULL;
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (!joinable(c, o, s))
			continue;
		if (o->coh.peek == COH_PEEK_ARMED)
			return o;			/* one that can be joined now, before one that waits for a listing */
		if (first == NULL)
			first = o;
	}
	return first;
}

/* w: a live reader's request for o's key, new or parked (not granted yet), not a try */
static bool
reader_asking(const ZklCohort *c, const ZklSlot *w, const ZklSlot *o)
{
	return (w->zstate == ZKS_NEW || w->zstate == ZKS_COHORT) && !w->own.abandoned && !w->req.nowait &&
		zc_kind_rides(w->req.mode) && zc_cohort_eligible(c, w) && zc_cohort_same_key(w, o);
}

/*
 * A new reader of s's key that this plan places before s or has placed
 * (one that asked before s, or any while s waits already): it queues a
 * node unless it joins one too, so readers that come together queue one
 * node, not one each.  Each node's coming and going would end the others'
 * child watches, and so the readers after them would queue nodes of their
 * own again, and so on.
 */
static const ZklSlot *
reader_queueing(const ZklCohort *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o != s && o->zstate == ZKS_NEW && reader_asking(c, o, s) &&
			(s->zstate != ZKS_NEW || o->req.ticket < s->req.ticket))
			return o;
	}
	return NULL;
}

/*
 * With no local reader's node to join, the one on its way into ZooKeeper's
 * queue (its owner's slot), or one kept to linger, or a new reader's about
 * to be (reader_queueing): a reader waits for it to be granted (or to
 * linger) rather than queue a node of its own beside it (one node per
 * cluster, as for writers), and waits for what that node waits for
 * (deadlock.c).
 */
const ZklSlot *
zc_cohort_reader_coming(ZklCohort *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o != s && joinable(c, o, s))
			return NULL;		/* one to join: s waits for its listing, not for a grant */
	}
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		/* one being made, or one released and kept for the listing that lets it linger */
		if (o != s && reader_node(c, o, s) &&
			((o->zstate != ZKS_HELD && !o->own.abandoned && !o->req.nowait &&
			  o->ans.result == ZKL_RESULT_PENDING) ||
			 (o->zstate == ZKS_HELD && o->own.abandoned && o->coh.kept)))
			return o;
	}
	return reader_queueing(c, s);
}

/*
 * A reader parked behind o (a node to join, or one on its way): in o's
 * root once o has one, as a writer (gwait_doc.c counts the wait there).
 */
static void
park(ZklSlot *s, const ZklSlot *o)
{
	if (s->zstate == ZKS_NEW)
		zc_slot_move(s, ZKS_COHORT);
	if (o->zstate != ZKS_NEW)
		s->zk.root_id = o->zk.root_id;
}

/*
 * Another reader of s's key, parked or new, that asked before s: when the
 * child watch of the node they wait to join went off, the first of them
 * queues a node of its own (it waited a listing for nothing; it keeps its
 * ticket, so that the others see it so in the same plan), the others wait
 * for that node.  Only the first: new readers, who come later, never hold
 * it back.
 */
static bool
older_reader(const ZklCohort *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o != s && reader_asking(c, o, s) && o->req.ticket < s->req.ticket)
			return true;
	}
	return false;
}

const ZklSlot *
zc_cohort_waits_behind(ZklCohort *c, const ZklSlot *s)
{
	if (s->zstate != ZKS_COHORT)
		return NULL;
	return zc_kind_hands_over(s->req.mode) ? zc_cohort_carrier_of(c, s) : zc_cohort_reader_coming(c, s);
}

/* s rides o's node: granted at once, no node of its own.  False: grants paused after all. */
static bool
ride(ZklCohort *c, ZklSlot *s, ZklSlot *o)
{
	bool		foreign;
	uint16_t	since;

	s->req.attempt = ++c->t->next_attempt;	/* replies for its own queue place are stale */
	s->zk.rides = true;
	s->zk.handed = o->coh.node_handed + 1;
	s->zk.czxid = o->zk.czxid;
	s->zk.root_id = o->zk.root_id;
	memcpy(s->node, o->node, sizeof(s->node));
	s->zk.first = o->zk.first;
	s->zk.at_head = o->zk.at_head;
	s->zk.clear = true;
	s->zk.todo = 0;
	zc_slot_move(s, ZKS_QUEUED); /* until the grant */
	c->host->grant(c->host->arg, s);
	if (s->zstate != ZKS_HELD)
		return false;
	o->coh.node_handed = s->zk.handed;
	since = key_since_foreign(c, o, &foreign);
	if (foreign)
		share_bound(c, o, since + 1);
	c->t->counters.handovers++;
	return true;
}

/*
 * A reader's node lingering for s's key that s may take now (cohort.c's
 * rules), with no local writer for the key: it would wait behind it.
 */
static ZklSlot *
lingering_reader(ZklCohort *c, const ZklSlot *s, bool connected, int64_t mono)
{
	int			i;

	if (zc_cohort_writer_here(c, s))
		return NULL;
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o->zstate == ZKS_LINGER && zc_cohort_same_key(o, s) && zc_cohort_may_take(c, s, o, connected, mono))
			return o;
	}
	return NULL;
}

/*
 * A shared request takes a reader's node lingering here, or joins a local
 * shared holder's node: granted at once, no node of its own.  Only once
 * that holder's child watch is armed (it knows who queues behind its
 * node); until then the request waits here for the one listing that arms
 * it, and if that does not, queues in ZooKeeper as usual.  A try-lock does
 * not wait for it.
 */
void
zc_cohort_ride(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono)
{
	ZklSlot    *o = lingering_reader(c, s, connected, mono);
	const ZklSlot *q;

	if (o != NULL)
	{
		zc_cohort_take(c, o, s);
		return;
	}
	o = ride_host(c, s, connected, mono);
	if (o != NULL && o->coh.peek == COH_PEEK_ARMED)
	{
		if (!ride(c, s, o))
			c->host->requeue(c->host->arg, s); /* no node to wait on: queue as usual */
	}
	else if (o == NULL && !s->req.nowait && ride_may(c, s, connected, mono) &&
			 (q = zc_cohort_reader_coming(c, s)) != NULL)
		park(s, q);				/* it joins that node once granted (its listing arms it) */
	else if (s->zstate == ZKS_COHORT && (o == NULL || (o->coh.peek == COH_PEEK_NONE && !older_reader(c, s))))
	{
		uint64_t	ticket = s->req.ticket;

		c->host->requeue(c->host->arg, s);	/* that listing did not arm it */
		s->req.ticket = ticket;
		if (o != NULL)
			zc_cohort_ask_peek(o, connected);	/* for the readers after it */
	}
	else if (o != NULL && !(s->zstate == ZKS_NEW && s->req.nowait))
	{
		/*
		 * again if that read was dropped unsent; but a watch gone off is
		 * the first reader's to see (it queues a node, and asks then), so
		 * that a younger one placed before it does not hide that
		 */
		if (o->coh.peek != COH_PEEK_NONE || !older_reader(c, s))
			zc_cohort_ask_peek(o, connected);
		park(s, o);
	}
	else if (o != NULL)
		zc_cohort_ask_peek(o, connected);	/* for the readers after it */
}

bool
zc_cohort_ride_here(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono)
{
	ZklSlot    *o;

	if (s->zstate != ZKS_NEW || s->own.abandoned || !zc_kind_rides(s->req.mode) || !zc_cohort_eligible(c, s))
		return false;
	o = ride_host(c, s, connected, mono);
	return o != NULL && o->coh.peek == COH_PEEK_ARMED && ride(c, s, o);
}

/*
 * Who uses a shared node changed (a rider left, or the node passed to one):
 * a local request for the key may now count the node as its backend's own
 * (an upgrade waits for the other readers only), and with it the waiters
 * queued behind it (core's same-backend rule), whichever node it watches.
 * So every local waiter on the key reads its queue again: a change of
 * users is rare next to the grants it saves.
 */
static int
users_changed(ZklCohort *c, const ZklSlot *o)
{
	int			told = 0;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w->zstate == ZKS_QUEUED && !w->own.abandoned && w->zk.root_id == o->zk.root_id &&
			zc_cohort_same_key(w, o))
		{
			w->zk.todo |= ZKT_CHILDREN;
			told++;
		}
	}
	return told;
}

/*
 * The owner of shared node `from` is done with it while readers ride it:
 * the node becomes rider `to`'s, already granted, with what is known of
 * its place; what was asked of it in flight is stale.
 */
static int
pass_to_rider(ZklCohort *c, ZklSlot *from, ZklSlot *to)
{
	memcpy(to->uuid, from->uuid, sizeof(to->uuid));
	if (from->zk.czxid != 0)
		to->zk.czxid = from->zk.czxid;
	to->zk.rides = false;
	to->coh.node_handed = from->coh.node_handed;
	to->coh.foreign = from->coh.foreign;
	to->coh.since_foreign = from->coh.since_foreign;
	to->coh.may_linger = from->coh.may_linger;	/* the node's data: its mark */
	to->zk.todo |= from->zk.todo & ZKT_UNMARK;	/* and its removal, if owed */
	to->coh.peek = from->coh.peek == COH_PEEK_ARMED ? COH_PEEK_ARMED : COH_PEEK_NONE;
	to->coh.kept = false;
	zc_cohort_barrier_passes(from, to);
	zc_slot_move(from, ZKS_GONE);
	zc_table_free(c->t, from);
	return users_changed(c, to) + (to->zk.todo != 0);	/* the mark's removal may be owed */
}

/* Rider r is done: it goes (its node is not its own). */
static int
rider_leaves(ZklCohort *c, ZklSlot *r)
{
	int			told = users_changed(c, r);

	zc_slot_move(r, ZKS_GONE);
	zc_table_free(c->t, r);
	return told;
}

/*
 * Riders first, whatever the settings (a reload may just have turned
 * hand-over off): one that is done goes, and a node whose owner is done
 * passes to a rider instead of being deleted under it.
 */
void
zc_cohort_tend_riders(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *r = &c->t->slots[i];

		if (r->zk.rides && r->zstate == ZKS_HELD && r->own.abandoned)
			(void) rider_leaves(c, r);
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		ZklSlot    *r;

		if (o->zstate == ZKS_HELD && o->own.abandoned && !o->zk.rides && zc_kind_rides(o->req.mode) &&
			(r = rider_of(c, o)) != NULL)
			(void) pass_to_rider(c, o, r);
	}
}

/* A local reader not yet granted waits for o's key (it would join a node). */
static bool
reader_waits(const ZklCohort *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *w = &c->t->slots[i];

		if (reader_asking(c, w, o))
			return true;
	}
	return false;
}

/*
 * A reader's node whose owner is done, with no rider: it lingers
 * (zk_lock.linger), as a backend's release lets it (zc_cohort_linger_here),
 * unless a local writer would wait behind it; the worker's pass, before new
 * requests are placed, so that a reader asking meanwhile takes it.
 */
void
zc_cohort_linger_readers(ZklCohort *c, bool connected, int64_t mono)
{
	int			i;

	/* (every turn, linger on or off: a node kept for it is let go once it is off) */
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o->zstate == ZKS_HELD && o->own.abandoned)
			zc_cohort_linger_reader(c, o, connected, mono, reader_waits(c, o));
	}
}

/*
 * A reader's queued node whose owner gave up, with local readers parked
 * behind it (zc_cohort_reader_coming): its place in ZooKeeper's queue goes
 * to the one that asked first, as a writer's does (zc_cohort_move_place).
 */
void
zc_cohort_readers_keep_place(ZklCohort *c)
{
	int			i;
	int			j;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		ZklSlot    *first = NULL;

		if (o->zstate != ZKS_QUEUED || !o->own.abandoned || o->zk.rides || !zc_kind_rides(o->req.mode) ||
			!zc_cohort_eligible(c, o) || zc_cohort_owner_other(c, o, false))
			continue;
		for (j = 0; j < c->t->nused; j++)
		{
			ZklSlot    *w = &c->t->slots[j];

			if (w->zstate == ZKS_COHORT && !w->own.abandoned && zc_kind_rides(w->req.mode) &&
				zc_cohort_same_key(w, o) && (first == NULL || w->req.ticket < first->req.ticket))
				first = w;
		}
		if (first != NULL)
			zc_cohort_move_place(c, o, first);
	}
}

bool
zc_cohort_riders_release_here(ZklCohort *c, ZklSlot *s, bool *told)
{
	ZklSlot    *r;

	*told = false;
	if (s->zstate != ZKS_HELD || !s->own.abandoned || !zc_kind_rides(s->req.mode))
		return false;
	if (s->zk.rides)
		*told = rider_leaves(c, s) > 0;
	else if ((r = rider_of(c, s)) != NULL)
		*told = pass_to_rider(c, s, r) > 0;
	else
		return false;
	return true;
}

bool
zc_cohort_ridden_by_others(const ZklCohort *c, const ZklSlot *o, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused && zc_kind_rides(o->req.mode); i++)
	{
		const ZklSlot *r = &c->t->slots[i];

		if (rides_on(r, o) && !r->own.abandoned &&
			(r->req.owner_pid != s->req.owner_pid || r->req.owner_procno != s->req.owner_procno))
			return true;
	}
	return false;
}

