/*
 * cohort_plan.c — local hand-over each turn (cohort.h): the plan (and its
 * join of a new writer, as a backend applies it at its claim), and what a
 * listing, a failed one, a watch event or a lost node means.
 */
#include "cohort_int.h"
#include "cohort_plan.h"
#include "invariant.h"

void
zc_cohort_node_lost(ZklCohort *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o != s && o->zstate == ZKS_HELD && o->zk.root_id == s->zk.root_id && zc_cohort_same_key(o, s) &&
			strcmp(o->node, s->node) == 0)
			c->host->lose(c->host->arg, o);
	}
}

/*
 * New requests join a node of their cluster, or ride a reader's; a queued
 * node whose owner gave up passes to a waiter; a waiter left with nothing
 * to wait behind is queued again (or freed).
 */
/*
 * An upgrade's node (recipe.h) keeps no place for another request: its
 * place right behind the shared node it upgrades is its backend's, who
 * holds that node.
 */
static bool
names_upgrade(const ZklSlot *o)
{
	ZkrChild	k;

	return zc_recipe_parse_child(o->node, &k) && k.upgrade;
}

static void
place_requests(ZklCohort *c, bool connected, int64_t mono)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		if (c->linger_ms == 0)
			zc_cohort_unmark(s);			/* linger turned off by a reload */
		if (s->zstate == ZKS_NEW && !s->own.abandoned && zc_cohort_eligible_x(c, s))
			zc_cohort_join(c, s, connected, mono);
		else if ((s->zstate == ZKS_NEW || s->zstate == ZKS_COHORT) && !s->own.abandoned &&
				 zc_kind_rides(s->req.mode) && zc_cohort_eligible(c, s))
			zc_cohort_ride(c, s, connected, mono);
	}
	zc_cohort_readers_keep_place(c);
	/* before waiters look for their request: a queued node whose owner gave up stays theirs */
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		ZklSlot    *w;

		if (o->zstate == ZKS_QUEUED && o->own.abandoned && zc_cohort_eligible_x(c, o) &&
			!names_upgrade(o) && (w = zc_cohort_first_waiter(c, o)) != NULL &&
			!zc_cohort_owner_other(c, o, false))
			zc_cohort_move_place(c, o, w);
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		/* a waiter with no request of its cluster to wait behind (gone, lost, given up) */
		if (s->zstate == ZKS_COHORT && zc_kind_hands_over(s->req.mode) &&
			zc_cohort_carrier_of(c, s) == NULL)
		{
			if (s->own.abandoned)
				zc_table_free(c->t, s);
			else
				c->host->requeue(c->host->arg, s);
		}
	}
}

/* zc_cohort_join at a backend's claim (take_here.c): see cohort.h */
ZklSlot *
zc_cohort_join_here(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono)
{
	ZklSlot    *o;

	if (s->zstate != ZKS_NEW || s->own.abandoned || !zc_cohort_eligible_x(c, s))
		return NULL;
	o = zc_cohort_carrier_of(c, s);
	/*
	 * An older new writer of the key, not placed yet, goes first: it joins
	 * in the worker's plan, where tickets decide (a release passes only to
	 * a waiter already placed).
	 */
	if (o == NULL || o->zstate != ZKS_HELD || o->own.abandoned || zc_cohort_owner_other(c, s, false) ||
		zc_cohort_older_joiner(c, s, o))
		return NULL;
	zc_cohort_join(c, s, connected, mono);
	ZC_ASSERT(s->zstate == ZKS_COHORT || s->zstate == ZKS_GONE);
	return o;
}

/*
 * A node of this cluster that carries local waiters, or may: a lingering
 * one ends or waits (the ms until it ends, else -1), one given up is
 * released to a waiter, a queued one arms its hand-overs.
 */
static long
tend_carrier(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono)
{
	if (o->zstate == ZKS_LINGER)
	{
		/* (linger off: a backend's release may have begun it on the setting the table still had) */
		/*
		 * (a reader's: a local writer would wait behind it; or it lingered
		 * beside another node for a reader who did not take it)
		 */
		if (mono >= o->coh.linger_until || o->coh.foreign || c->linger_ms <= 0 ||
			!zc_cohort_may_pass(c, o, connected, mono) ||
			(zc_kind_rides(o->req.mode) && (zc_cohort_writer_here(c, o) || zc_cohort_other_node(c, o))))
			zc_cohort_end_linger(o);
		else
			return (long) ((o->coh.linger_until - mono + 999) / 1000);
	}
	else if (o->own.abandoned)
		zc_cohort_release(c, o, connected, mono);
	else if (o->zstate == ZKS_QUEUED)
	{
		/*
		 * Its blocker went (a barrier read is due) and local waiters wait
		 * behind it: read the queue instead, with the child watch, so that
		 * one read both grants it and arms its hand-overs.
		 */
		if ((o->zk.todo & ZKT_BARRIER) && o->coh.peek == COH_PEEK_NONE && connected &&
			zc_cohort_first_waiter(c, o) != NULL)
		{
			o->zk.todo = (o->zk.todo & ~ZKT_BARRIER) | ZKT_CHILDREN;
			o->coh.peek = COH_PEEK_WANTED;
		}
	}
	else if (c->linger_ms > 0 || zc_cohort_first_waiter(c, o) != NULL)
		zc_cohort_ask_peek(o, connected);	/* ready before the release */
	return -1;
}

long
zc_cohort_plan(ZklCohort *c, bool connected, int64_t now, int64_t mono)
{
	long		next_ms = -1;
	int			i;

	zc_cohort_tend_riders(c);
	if (!c->handover)
	{
		zc_cohort_turn_off(c);
		return -1;
	}
	zc_cohort_linger_readers(c, connected, mono);	/* before new readers are placed: they take them */
	place_requests(c, connected, mono);
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		long		ms;

		/*
		 * a reader's held node may linger later: its listing is kept
		 * fresh, so that the mark comes off once another cluster's
		 * writer queues behind it (a try-lock there is told at once)
		 */
		if (c->linger_ms > 0 && o->zstate == ZKS_HELD && !o->own.abandoned && !o->zk.rides &&
			o->coh.may_linger && zc_kind_rides(o->req.mode) && zc_cohort_eligible(c, o))
			zc_cohort_ask_peek(o, connected);
		if (!zc_cohort_carries(c, o) && !(o->zstate == ZKS_LINGER && zc_cohort_eligible(c, o)) &&
			!(o->zstate == ZKS_QUEUED && zc_cohort_eligible_x(c, o) && !o->own.abandoned))
			continue;
		ms = tend_carrier(c, o, connected, mono);
		if (ms >= 0 && (next_ms < 0 || ms < next_ms))
			next_ms = ms;
	}
	(void) now;
	return next_ms;
}

bool
zc_cohort_keeps(const ZklCohort *c, const ZklSlot *s)
{
	/*
	 * zc_cohort_release() or zc_cohort_linger_reader() decided so just now,
	 * in this turn's zc_cohort_plan(); a rider's node is not its own
	 */
	return (s->coh.kept && s->zstate == ZKS_HELD && (zc_cohort_carries(c, s) || zc_cohort_eligible(c, s))) ||
		(s->zk.rides && s->zstate == ZKS_HELD);
}

/* A holder's node is gone from under it: the lock is lost; a lingering node is simply gone. */
void
zc_cohort_node_gone(ZklCohort *c, ZklSlot *s)
{
	if (s->coh.peek == COH_PEEK_ASKED)
		s->coh.peek = COH_PEEK_NONE;
	if (s->zstate == ZKS_HELD)
		c->host->lose(c->host->arg, s);
	else if (s->zstate == ZKS_LINGER)
	{
		zc_slot_move(s, ZKS_GONE);
		zc_table_free(c->t, s);
	}
}

void
zc_cohort_listed(ZklCohort *c, ZklSlot *s, const ZkrChild *kids, int n, bool watched)
{
	int			own = -1;
	int			i;

	if (!zc_cohort_eligible(c, s))
		return;
	for (i = 0; i < n && own < 0; i++)
		if (zc_recipe_name_has_uuid(kids[i].name, s->uuid))
			own = i;
	if (own < 0)
	{
		zc_cohort_node_gone(c, s);	/* (a waiter's: decide() sees it) */
		return;
	}
	/*
	 * A watched listing set the watch where it was read: later arrivals send
	 * an event (which comes after this reply).  Another listing set none,
	 * but what it shows is true all the same.
	 */
	if (watched)
		s->coh.peek = COH_PEEK_ARMED;
	/*
	 * only a node that conflicts waits for it (behind a shared node, readers
	 * hold already); an upgrade placed ahead of it but made later waits too
	 */
	for (i = 0; i < n && !s->coh.foreign; i++)
		s->coh.foreign = i != own && zc_recipe_behind(kids, own, i) &&
			zc_kind_conflict(s->req.mode, kids[i].mode);
	if (zc_kind_rides(s->req.mode))
		zc_cohort_readers_learn(c, s, kids, n);
	if (s->coh.foreign && s->zstate == ZKS_LINGER)
		zc_cohort_end_linger(s);			/* another request waits: no lingering for it */
	else if (s->coh.foreign)
		zc_cohort_unmark(s);				/* nor will it linger later: a try-lock behind it is told */
}

void
zc_cohort_listing_failed(ZklCohort *c, ZklSlot *s, int rc, bool transient)
{
	if (!zc_cohort_eligible(c, s))
		return;
	if (rc == ZNONODE && s->zstate == ZKS_HELD)
		c->host->lose(c->host->arg, s);	/* the key node is gone: so is ours */
	else if (rc == ZNONODE && s->zstate == ZKS_LINGER)
		zc_cohort_end_linger(s);
	else if (!transient)
	{
		/* a queue we cannot read (say, access refused): no more hand-overs of this node */
		s->coh.foreign = true;
		s->coh.since_foreign = UINT16_MAX;
		if (s->zstate == ZKS_LINGER)
			zc_cohort_end_linger(s);	/* nor does it linger: nothing is known of who waits */
	}
	if (s->coh.peek == COH_PEEK_ASKED)
		s->coh.peek = COH_PEEK_NONE;	/* asked again while needed */
}

bool
zc_cohort_event(ZklCohort *c, const char *path)
{
	bool		ours = false;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		char		key_path[ZKL_MAX_ROOT_LEN + ZKL_KEY_BUFLEN + 2];

		if (o->zstate == ZKS_FREE || o->zstate == ZKS_NEW || o->zstate == ZKS_COHORT ||
			o->zstate == ZKS_GONE || zc_kind_counted(o->req.mode))
			continue;
		snprintf(key_path, sizeof(key_path), "%s/%s", c->t->roots[o->zk.root_id], o->key);
		if (strcmp(key_path, path) != 0)
			continue;
		ours = true;
		if (!zc_cohort_eligible(c, o))
			continue;
		/* someone came or went: nothing passes before the next listing says who */
		if (o->coh.peek == COH_PEEK_ARMED)
			o->coh.peek = COH_PEEK_NONE;
		if (o->zstate == ZKS_LINGER)
			zc_cohort_end_linger(o);
	}
	return ours;
}

void
zc_cohort_disarm(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].coh.peek == COH_PEEK_ARMED)
			c->t->slots[i].coh.peek = COH_PEEK_NONE;
}

void
zc_cohort_forget_watches(ZklCohort *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		c->t->slots[i].coh.peek = COH_PEEK_NONE;
}

