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

/*
 * A local request for o's key that conflicts with it (an exclusive one, o
 * being a reader's) and is not done, in any state:
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

		if (zc_kind_conflict(w->req.mode, o->req.mode) && !w->own.abandoned && w->zstate != ZKS_FREE &&
			w->zstate != ZKS_GONE && zc_cohort_same_key(w, o))
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

		if (reader_node(c, o, s) && o->zstate == ZKS_HELD && !o->own.abandoned && o->zk.clear &&
			o->ans.session_id == c->t->session_tag && o->coh.node_handed + 1 < ZKL_HANDOVER_MAX)
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
void
zc_cohort_ride(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono)
{
	ZklSlot    *o = ride_host(c, s, connected, mono);
	bool		foreign;
	uint16_t	since;

	if (o != NULL && o->coh.peek == COH_PEEK_ARMED)
	{
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
		{
			/* grants paused after all: no node to wait on, so queue as usual */
			c->host->requeue(c->host->arg, s);
			return;
		}
		o->coh.node_handed = s->zk.handed;
		since = key_since_foreign(c, o, &foreign);
		if (foreign)
			share_bound(c, o, since + 1);
		c->t->counters.handovers++;
	}
	else if (s->zstate == ZKS_COHORT && (o == NULL || o->coh.peek == COH_PEEK_NONE))
		c->host->requeue(c->host->arg, s);	/* that listing did not arm it */
	else if (o != NULL && !(s->zstate == ZKS_NEW && s->req.nowait))
	{
		zc_cohort_ask_peek(o, connected);	/* again if that read was dropped unsent */
		zc_slot_move(s, ZKS_COHORT);
	}
	else if (o != NULL)
		zc_cohort_ask_peek(o, connected);	/* for the readers after it */
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

		if (w->zstate == ZKS_QUEUED && !w->own.abandoned && w->zk.root_id == o->zk.root_id &&
			zc_cohort_same_key(w, o))
			w->zk.todo |= ZKT_CHILDREN;
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
	if (from->zk.czxid != 0)
		to->zk.czxid = from->zk.czxid;
	to->zk.rides = false;
	to->coh.node_handed = from->coh.node_handed;
	to->coh.foreign = from->coh.foreign;
	to->coh.since_foreign = from->coh.since_foreign;
	to->coh.peek = from->coh.peek == COH_PEEK_ARMED ? COH_PEEK_ARMED : COH_PEEK_NONE;
	to->coh.kept = false;
	zc_slot_move(from, ZKS_GONE);
	zc_table_free(c->t, from);
	users_changed(c, to);
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
		{
			users_changed(c, r);
			zc_slot_move(r, ZKS_GONE);
			zc_table_free(c->t, r);
		}
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		ZklSlot    *r;

		if (o->zstate == ZKS_HELD && o->own.abandoned && !o->zk.rides && zc_kind_rides(o->req.mode) &&
			(r = rider_of(c, o)) != NULL)
			pass_to_rider(c, o, r);
	}
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

