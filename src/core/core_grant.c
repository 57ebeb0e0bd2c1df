/*
 * core_grant.c — the worker's decisions (core.h) on a queue it has read:
 * grant (core.c grants), wait behind the node that blocks, refuse a try,
 * or wait a bounded time for a lingering node; a semaphore's places; a
 * lingering node's mark.
 */
#include "core_int.h"
#include "core_grant.h"
#include "cohort_ride.h"
#include "gwait.h"
#include "table.h"

static void tell_upgrades(ZklCore *c, const ZklSlot *s);

static bool
same_owner(const ZklSlot *a, const ZklSlot *b)
{
	return a->req.owner_pid == b->req.owner_pid && a->req.owner_procno == b->req.owner_procno;
}

/*
 * Does the owner of s hold the key in a kind that others may hold beside it
 * and s's kind conflicts with?  (The upgrade case: shared, then exclusive.)
 */
static bool
holds_sharing(const ZklCore *c, const ZklSlot *s)
{
	return zc_table_upgraded(c->t, s) >= 0;
}

/*
 * Two backends of this cluster that both hold a key shared and both wait to
 * make it exclusive wait for each other forever.  Core would find that
 * deadlock; we find it when the second of them queues, and fail that one.
 * Returns the pid of the other backend, or 0.
 */
static int
upgrade_deadlock(const ZklCore *c, const ZklSlot *s)
{
	int			i;

	if (!holds_sharing(c, s))
		return 0;
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o != s && o->ans.result == ZKL_RESULT_PENDING &&
			!o->own.abandoned && !same_owner(o, s) && strcmp(o->key, s->key) == 0 &&
			holds_sharing(c, o))
			return o->req.owner_pid;
	}
	return 0;
}

/* How often a waiter with nothing in flight re-reads its queue. */
long
zc_core_recheck_ms(const ZklCore *c)
{
	return CORE_MAX(1000, c->t->negotiated_timeout / 2);
}



/* ---- the linger mark (cohort.c lingers; another cluster's try-lock waits) ---- */

/* Whether the owner's data can carry the mark: a JSON object with room for it. */
bool
zc_core_data_markable(const char *data)
{
	size_t		n = strlen(data);

	/* room for the mark within ZKL_DATA_LEN: readers keep no more (queue_read.c) */
	return n >= 2 && data[0] == '{' && data[n - 1] == '}' &&
		n + strlen(LINGER_MARK) < ZKL_DATA_LEN;
}

void
zc_core_node_data(const ZklSlot *s, char *out)
{
	size_t		n = strlen(s->data);

	if (s->coh.may_linger && zc_core_data_markable(s->data))
		snprintf(out, ZKL_NODE_DATA_LEN, "%.*s%s%s", (int) (n - 1), s->data,
				 n > 2 ? "," : "", LINGER_MARK);
	else
		snprintf(out, ZKL_NODE_DATA_LEN, "%s", s->data);
}

bool
zc_core_data_lingers(const char *data, int len)
{
	int			k = (int) strlen(LINGER_MARK);

	return data != NULL && len >= k && memcmp(data + len - k, LINGER_MARK, k) == 0;
}

/*
 * A try-lock whose only blocker is a node of another backend at the head
 * of the queue, a writer's or a reader's: that node may be lingering (no
 * holder).  Then it
 * waits, reading the node's data with a watch (wait_behind), until the node
 * goes (granted), its data says it is held (zc_core_watch_set_reply), or
 * try_until: LINGER_WAIT_RTTS of the round trip of the listing that found
 * it, within [LINGER_WAIT_MIN_MS, LINGER_WAIT_MAX_MS].  A member of a
 * multi-key try waits alike: the wait is bounded, so it holds its other
 * keys no longer than a single try would, and refusing it would not keep
 * the lingering node anyway (our create ends the linger).
 */
static bool
linger_wait(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n, int own, int watch, const ZkrBackend *b)
{
	int64_t		now = zc_core_mono(c);
	int64_t		rtt = CORE_MAX(zc_core_wall(c) - s->zk.checked_at, 0);

	/* (a reader's node lingers too: an exclusive try may have one ahead) */
	/*
	 * (an upgrade's place was passed to it, and what it passed may change,
	 * but with one node of another backend made before it, that node is
	 * the one it waits for: a reader's may linger)
	 */
	if (zc_kind_counted(s->req.mode) || !(zc_kind_alone(kids[watch].mode) || zc_kind_rides(kids[watch].mode)) ||
		!(kids[own].placed || zc_recipe_sole_blocker(kids, own, watch, b)) ||
		zc_recipe_foreign_ahead(kids, n, own, b) != 1)
		return false;
	if (s->zk.try_until == 0)
		s->zk.try_until = now + CORE_MIN(CORE_MAX(LINGER_WAIT_RTTS * rtt,
											   (int64_t) LINGER_WAIT_MIN_MS * 1000),
									  (int64_t) LINGER_WAIT_MAX_MS * 1000);
	return now < s->zk.try_until;
}


bool
zc_core_listing_watches(const ZklCore *c, const ZklSlot *s)
{
	return zc_cohort_listing_watches(&c->cohort, s);
}

static void edge_of_shared(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n);

/* Queue behind children[watch]: set the watch, unless it is an upgrade deadlock or a try. */
static void
wait_behind(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n, int own, int watch, const ZkrBackend *b)
{
	int			other;

	if (!s->req.nowait && (other = upgrade_deadlock(c, s)) != 0)
	{
		char		detail[ZKL_DETAIL_LEN] = "";
		size_t		dn = 0;

		/* the two steps, as every victim's DETAIL has them (deadlock.c) */
		zc_gwait_put_step(detail, sizeof(detail), &dn, s->req.owner_pid, "", s->req.mode, s->key, other, "");
		zc_gwait_put_step(detail, sizeof(detail), &dn, other, "", s->req.mode, s->key, s->req.owner_pid, "");
		zc_table_keep_deadlock(c->t, s, detail);
		/* give up our place; our owner's abort releases its shared lock too */
		zc_core_fail_slot(c, s, ERR_DEADLOCK, ZKS_DELETING,
				  "deadlock detected: processes %d and %d both hold a zk_lock shared and wait to make it exclusive",
				  s->req.owner_pid, other);
		s->zk.todo = ZKT_DELETE;
		return;
	}
	if (s->req.nowait && !linger_wait(c, s, kids, n, own, watch, b))
	{
		zc_core_refuse_try(c, s);
		return;
	}
	zc_core_copy_name(s->watch, sizeof(s->watch), kids[watch].name);
	/*
	 * A local waiter passed may be granted before us, and an upgrade may
	 * come to stand ahead of us: then read the queue again.
	 */
	s->zk.watch_sole = b->nwaits == 0 && zc_recipe_sole_blocker(kids, own, watch, b) &&
		!zc_recipe_upgrade_may_come(kids, own, watch, b);
	/* granted when the watched node goes: alone at the head only if it was the one other */
	s->zk.at_head = s->zk.watch_sole && zc_recipe_foreign_ahead(kids, n, own, b) == 1;
	s->zk.upgrade_falls = zc_recipe_upgrade_may_fall(kids, own, watch, b);
	s->zk.first = own == 1;		/* likewise, with the backend's own nodes counted */
	s->zk.clear = zc_recipe_alone_ahead(kids, n, own) == zc_kind_alone(kids[watch].mode);
	s->zk.todo |= ZKT_WATCH;
	tell_upgrades(c, s);
	if (zc_core_wall(c) - s->req.requested_at >= (int64_t) zc_core_recheck_ms(c) * 1000)
		c->env->suspect(c->env->arg, s, s->watch);
	edge_of_shared(c, s, kids, n);	/* (b's arrays are the core's: last) */
}

/*
 * Whether local request o waits, as its last reading of its queue decided:
 * it watches a node ahead, and no turn of its own is on its way (a grant
 * paused by lock-delay, a read after its watch fired, a try's answer).
 */
static bool
waits_in_queue(const ZklSlot *o)
{
	return o->zstate == ZKS_QUEUED && !o->own.abandoned && !o->zk.rides && !o->req.nowait &&
		o->node[0] != '\0' && o->watch[0] != '\0' && o->zk.delayed_until == 0 &&
		(o->zk.todo & (ZKT_CHILDREN | ZKT_BARRIER)) == 0;
}

/*
 * Local requests for s's key of other backends that wait: s's backend's
 * upgrade may pass their nodes (recipe.c), since nothing is granted beside
 * a conflicting local holder (zc_table_conflicting_holder).  Written after
 * the backend's own nodes in c->mine, which has room for a node of every
 * slot.
 */
static int
local_waits(ZklCore *c, const ZklSlot *s, int nmine)
{
	int			n = 0;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (waits_in_queue(o) && !same_owner(o, s) && o->zk.root_id == s->zk.root_id &&
			strcmp(o->key, s->key) == 0)
			c->mine[nmine + n++] = o->uuid;
	}
	return n;
}

/*
 * s now waits: a local upgrade that waits for s's node (its turn was not
 * known yet) may pass it now, so it reads its queue again.
 */
static void
tell_upgrades(ZklCore *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w != s && w->zstate == ZKS_QUEUED && !w->own.abandoned && strcmp(w->watch, s->node) == 0 &&
			w->zk.root_id == s->zk.root_id && strcmp(w->key, s->key) == 0 && holds_sharing(c, w))
			w->zk.todo |= ZKT_CHILDREN;
	}
}

/* The local slot whose request made node `name` (NULL: another cluster's, or gone). */
static const ZklSlot *
local_node(const ZklCore *c, const char *name)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o->zstate != ZKS_FREE && o->node[0] != '\0' && zc_recipe_name_has_uuid(name, o->uuid))
			return o;
	}
	return NULL;
}

bool
zc_core_local_node(const ZklCore *c, const char *name)
{
	return local_node(c, name) != NULL;
}

/* ZkrBackend.pending: the node is a request of this cluster not granted. */
static bool
local_pending(void *arg, const char *name)
{
	const ZklSlot *o = local_node(arg, name);

	return o != NULL && o->zstate != ZKS_HELD;
}

/*
 * The node that rider slot o rides: its owner's slot's request id, which
 * the node's name carries (NULL: none here).
 */
static const char *
ridden_uuid(const ZklCore *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *h = &c->t->slots[i];

		if (h != o && !h->zk.rides && h->zstate != ZKS_FREE && strcmp(h->node, o->node) == 0 &&
			strcmp(h->key, o->key) == 0)
			return h->uuid;
	}
	return NULL;
}

/*
 * s's backend's nodes on s's key, into b.  shared_own: a node other local
 * readers hold with it counts as its own too (edge_of_shared), as it never
 * does for a grant: nothing is granted past them.
 */
static void
backend_fill(ZklCore *c, const ZklSlot *s, ZkrBackend *b, bool shared_own)
{
	bool		holds = false;
	int			i;

	b->mine = c->mine;
	b->held = c->held;
	b->nmine = 0;
	b->waits = NULL;
	b->nwaits = 0;
	b->pending = local_pending;
	b->arg = c;

	/*
	 * This backend's other nodes on the key never block it: all of them,
	 * including ones being deleted, or one of its own could count as
	 * another backend's and be waited for for ever.
	 */
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];
		const char *uuid = o->uuid;

		if (!zc_core_same_key_owner(o, s))
			continue;
		/* a node local readers ride with (cohort.c) is not one backend's */
		if (!shared_own && zc_cohort_ridden_by_others(zc_core_cohort_of(c), o, s))
			continue;
		if (shared_own && o->zk.rides && (uuid = ridden_uuid(c, o)) == NULL)
			continue;
		/* one given up no longer holds (a node kept for a hand-over: cohort.c) */
		c->held[b->nmine] = o->zstate == ZKS_HELD && !o->own.abandoned;
		holds |= c->held[b->nmine];
		c->mine[b->nmine++] = uuid;
	}
	/*
	 * A try goes ahead of no waiter, as core's (a request that may not wait
	 * is refused when a waiter's mode conflicts with it, whatever its
	 * backend holds): what the backend holds passes nothing for it.
	 */
	if (s->req.nowait)
		b->held = NULL;
	else if (holds)
	{
		b->waits = c->mine + b->nmine;
		b->nwaits = local_waits(c, s, b->nmine);
	}
}

void
zc_core_backend_of(ZklCore *c, const ZklSlot *s, ZkrBackend *b)
{
	backend_fill(c, s, b, false);
}

/* Whether s's backend holds s's key through a node other local readers hold too. */
static bool
holds_shared_node(ZklCore *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (zc_core_same_key_owner(o, s) && o->zstate == ZKS_HELD && !o->own.abandoned &&
			(o->zk.rides || zc_cohort_ridden_by_others(zc_core_cohort_of(c), o, s)))
			return true;
	}
	return false;
}

/*
 * s waits, its backend holding the key through a node other local readers
 * hold too: the recipe gave it no anchor (that node is not its own), so
 * its watch may be a node that waits for ours (a reader behind a writer
 * behind it), and as an edge across clusters it would close a cycle that
 * is none.  Its wait across clusters is what the recipe watches were that
 * node its own: those readers it waits for are edges of deadlock.c's.
 */
static void
edge_of_shared(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n)
{
	ZkrBackend	b;
	int			own;
	int			watch;

	s->zk.edge_for = 0;
	if (s->req.nowait || !holds_shared_node(c, s))
		return;
	backend_fill(c, s, &b, true);
	s->zk.edge[0] = '\0';
	if (zc_recipe_decide(kids, n, s->uuid, &b, &own, &watch) == ZKR_WAIT)
		zc_core_copy_name(s->zk.edge, sizeof(s->zk.edge), kids[watch].name);
	s->zk.edge_for = zc_table_name_tag(s->watch);
}

/*
 * Whether a grant of kids[own] passed a node that stands ahead of it and
 * blocks it but for the local waits (b->waits) and the rule for upgrades
 * across clusters (recipe.c): one of this cluster (local) or of another.
 */
static bool
passed(const ZklCore *c, const ZkrChild *kids, int n, int own, const ZkrBackend *b, bool local)
{
	ZkrBackend	none = *b;
	int			i;

	/* only an upgrade passes other clusters' requests, and local ones besides it a holder's known waits */
	if (!kids[own].placed && (!local || b->nwaits == 0))
		return false;
	none.nwaits = 0;
	for (i = 0; i < n; i++)
		if (i != own && zc_recipe_ahead(kids, own, i) && zc_recipe_blocks(kids, n, i, kids[own].mode, &none) &&
			zc_core_local_node(c, kids[i].name) == local)
			return true;
	return false;
}

/*
 * A listing read after our held nodes' creates shows every one of them that
 * stands (a session never reads older than what it has seen).  One missing
 * was deleted behind our back: look it up, and lose it if it is gone, or its
 * phantom would hold the key here for ever while the queue moves on.  A
 * listing older than the node only costs a needless look.
 */
void
zc_core_look_up_unlisted(ZklCore *c, const ZklSlot *s, const ZkrChild *kids, int n)
{
	int			i;
	int			k;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o->zstate != ZKS_HELD || o->node[0] == '\0' ||
			o->zk.root_id != s->zk.root_id || strcmp(o->key, s->key) != 0)
			continue;
		for (k = 0; k < n && strcmp(kids[k].name, o->node) != 0; k++)
			;
		if (k == n)
			zc_table_ask_stat(o);
	}
}

/* Run the recipe on a children listing. */
void
zc_core_decide(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n)
{
	ZkrBackend	b;
	int			own;
	int			watch;

	zc_core_backend_of(c, s, &b);
	switch (zc_recipe_decide(kids, n, s->uuid, &b, &own, &watch))
	{
		case ZKR_ABSENT:
			/* our node was removed behind our back, or this server is behind */
			zc_core_node_not_seen(s);
			break;
		case ZKR_GRANT:
			if (passed(c, kids, n, own, &b, true))
				c->t->counters.upgrades_ahead++;
			if (passed(c, kids, n, own, &b, false))
				c->t->counters.upgrades_across++;
			s->zk.at_head = zc_recipe_foreign_ahead(kids, n, own, &b) == 0;
			s->zk.first = own == 0;	/* never an upgrade's: its shared node stands ahead */
			s->zk.clear = zc_recipe_alone_ahead(kids, n, own) == 0;
			zc_core_grant(c, s);
			break;
		case ZKR_WAIT:
			wait_behind(c, s, kids, n, own, watch, &b);
			break;
		case ZKR_MISMATCH:
			break;				/* semaphores only */
	}
}

/* ---- counting semaphores ---- */

/*
 * A semaphore waiter can be let in by the release of any node ahead of it,
 * so it cannot watch one node as a lock waiter does.  Instead every listing
 * of a semaphore key sets a child watch on the key node (worker.c), and the
 * cluster treats the key as one: a listing decides for all its local
 * waiters on the key, and a child event makes one of them read again.  A
 * release then costs one read per cluster with waiters, however many wait.
 */
static bool
sem_sibling(const ZklSlot *o, const ZklSlot *s)
{
	return o->zstate == ZKS_QUEUED && zc_kind_counted(o->req.mode) && !o->own.abandoned &&
		o->zk.root_id == s->zk.root_id && strcmp(o->key, s->key) == 0;
}

/* One waiter's part of a listing of its semaphore key. */
static void
sem_decide(ZklCore *c, ZklSlot *o, bool reader, const ZkrChild *kids, int n)
{
	int			own;
	int			other;
	int			i;

	switch (zc_recipe_decide_semaphore(kids, n, o->uuid, &own, &other))
	{
		case ZKR_ABSENT:
			/* the reader's node is gone; another's may postdate the read: it reads itself */
			if (reader)
				zc_core_start_over(c, o);
			else
				o->zk.todo |= ZKT_CHILDREN;
			break;
		case ZKR_MISMATCH:
			zc_core_fail_slot(c, o, ERR_BAD_PARAM, ZKS_DELETING,
					  "zk_semaphore holders %d differ from %d of a live request on the same key",
					  o->req.holders, other);
			o->zk.todo = ZKT_DELETE;
			break;
		case ZKR_GRANT:
			zc_core_grant(c, o);
			break;
		case ZKR_WAIT:
			if (o->req.nowait)
			{
				zc_core_refuse_try(c, o);
				break;
			}
			o->zk.todo &= ~ZKT_CHILDREN;	/* this listing is that read (see zc_core_sem_event) */
			/* a node of ours that no request owns would hold its place for the session's life */
			if (zc_core_wall(c) - o->req.requested_at >= (int64_t) zc_core_recheck_ms(c) * 1000)
				for (i = 0; i < own; i++)
					c->env->suspect(c->env->arg, o, kids[i].name);
			break;
	}
}

/*
 * A listing of s's semaphore key: decide for every local waiter on it.  A
 * waiter that asked for a read since got this one: a child event reaches the
 * client before the reply of any read the server answers after the change.
 */
void
zc_core_sem_listing(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n)
{
	int64_t		now = zc_core_wall(c);
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		/* an adopted node's Stat comes first (followups) */
		if ((o == s || sem_sibling(o, s)) && !(o->zk.todo & ZKT_STAT))
		{
			o->zk.checked_at = now;
			sem_decide(c, o, o == s, kids, n);
		}
	}
}

/*
 * One local waiter on s's semaphore key reads it again (its read sets the
 * watch again), unless one is due to already.  Returns whether one does.
 */
bool
zc_core_sem_reader(ZklCore *c, const ZklSlot *s)
{
	ZklSlot    *reader = NULL;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (!sem_sibling(o, s))
			continue;			/* s itself only if it waits too (not when being deleted) */
		if (o->zk.todo & ZKT_CHILDREN)
			return true;
		if (reader == NULL)
			reader = o;
	}
	if (reader != NULL)
		reader->zk.todo |= ZKT_CHILDREN;
	return reader != NULL;
}

/*
 * A child event on a key node: if it is a semaphore key of ours, a local
 * waiter reads it.  Returns whether the path was a semaphore key of ours.
 */
bool
zc_core_sem_event(ZklCore *c, const char *path)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		char		key_path[ZKL_PATH_LEN];

		if (o->zstate == ZKS_FREE || !zc_kind_counted(o->req.mode))
			continue;
		zc_core_key_path(c->t, o, key_path);
		if (strcmp(key_path, path) == 0)
		{
			(void) zc_core_sem_reader(c, o);
			return true;
		}
	}
	return false;
}

/*
 * A lock-delay ended for s's semaphore key: its local waiters were all
 * delayed by one listing, and one listing decides for them again.  s reads
 * (its turn is now) unless another waiter's read is due already.
 */
void
zc_core_sem_delay_over(ZklCore *c, ZklSlot *s)
{
	bool		due = false;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (sem_sibling(o, s))
		{
			o->zk.delayed_until = 0;
			due |= (o->zk.todo & ZKT_CHILDREN) != 0;
		}
	}
	s->zk.delayed_until = 0;
	if (!due)
		s->zk.todo |= ZKT_CHILDREN;
}

/* A semaphore waiter's periodic re-read, or another's read just planned, counts for all. */
void
zc_core_sem_checked(ZklCore *c, const ZklSlot *s, int64_t now)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		if (sem_sibling(&c->t->slots[i], s))
			c->t->slots[i].zk.checked_at = now;
}

