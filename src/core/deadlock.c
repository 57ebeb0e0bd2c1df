/*
 * deadlock.c — deadlocks among the backends of one cluster (deadlock.h).
 *
 * One search builds the wait-for graph once (each waiting request's
 * blockers, from the slot table) and walks it depth-first with colours, so
 * its cost is the table times the waiters, once per deadlock_timeout.
 */
#include "deadlock.h"

#include <stdio.h>
#include <string.h>

#include "gwait.h"
#include "recipe.h"
#include "table.h"

#define ZDL_MAX_WAITS	512		/* waiting requests looked at in one search */
#define ZDL_MAX_EDGES	4096	/* blockers noted, over all of them */

#define WHITE	0
#define GREY	1				/* on the current path */
#define BLACK	2				/* explored: no circle through it */

typedef struct Graph
{
	int			nw;
	int			wslot[ZDL_MAX_WAITS];	/* a waiting request's slot */
	int			first[ZDL_MAX_WAITS + 1];	/* its blockers: to[first[i] .. first[i + 1]) */
	int			to[ZDL_MAX_EDGES];	/* pids */
	int			nto;
	int			npid;			/* backends met, with their colours */
	int			pid[ZDL_MAX_WAITS + ZDL_MAX_EDGES];
	char		colour[ZDL_MAX_WAITS + ZDL_MAX_EDGES];
	int			path[ZDL_MAX_CYCLE];	/* waits on the current path */
	int			depth;
	int			cycle_from;		/* where on the path the circle begins (-1: none) */
} Graph;

/* A request that waits: granted by nothing yet, still wanted, not a try-lock (its answer comes soon). */
static bool
waiting(const ZklSlot *s)
{
	return (s->zstate == ZKS_QUEUED || s->zstate == ZKS_COHORT) && s->ans.result == ZKL_RESULT_PENDING &&
		!s->own.abandoned && !s->req.nowait && s->req.owner_pid != 0 && !zc_kind_counted(s->req.mode);
}

/* Whether slot o's node is on s's key, ahead of position seq. */
static bool
ahead(const ZklSlot *o, const ZklSlot *s, int32_t seq)
{
	ZkrChild	k;

	return o->zk.root_id == s->zk.root_id && strcmp(o->key, s->key) == 0 &&
		zc_recipe_parse_child(o->node, &k) && zc_recipe_seq_cmp(k.seq, seq) < 0;
}

/*
 * Whether queued request s waits for slot o's node: o is another backend's,
 * held or queued, on the same key, ahead of s in ZooKeeper's queue, and in
 * a mode s cannot share (readers riding a node count as its holders), and
 * the recipe does not let s past it (zc_recipe_passes: a node behind one
 * s's backend holds that waits for s's backend: every local request not
 * granted does).
 */
static bool
blocks(const ZklTable *t, const ZklSlot *o, const ZklSlot *s, int32_t seq)
{
	ZkrChild	k;
	bool		waits = o->zstate == ZKS_QUEUED;
	int			i;

	if (o == s || o->req.owner_pid == s->req.owner_pid || o->req.owner_pid == 0 || o->own.abandoned ||
		(o->zstate != ZKS_HELD && o->zstate != ZKS_QUEUED) || zc_kind_counted(o->req.mode) ||
		!zc_kind_conflict(s->req.mode, o->req.mode) || !ahead(o, s, seq))
		return false;
	if (zc_recipe_parse_child(o->node, &k))
		for (i = 0; i < t->nused; i++)
		{
			const ZklSlot *m = &t->slots[i];

			if (m->req.owner_pid == s->req.owner_pid && m->zstate == ZKS_HELD && !m->own.abandoned &&
				ahead(m, o, k.seq) && zc_recipe_passes(m->req.mode, o->req.mode, waits))
				return false;
		}
	return true;
}

bool
zc_deadlock_waiting(const ZklSlot *s)
{
	return waiting(s);
}

bool
zc_deadlock_sem_waiting(const ZklSlot *s)
{
	return zc_kind_counted(s->req.mode) && s->zstate == ZKS_QUEUED &&
		s->ans.result == ZKL_RESULT_PENDING && !s->own.abandoned && !s->req.nowait && s->req.owner_pid != 0;
}

/* Add pid to pids[0 .. *n) unless there (max at most). */
static void
add_pid(int *pids, int *n, int max, int pid)
{
	int			i;

	for (i = 0; i < *n; i++)
		if (pids[i] == pid)
			return;
	if (*n < max)
		pids[(*n)++] = pid;
}

int
zc_deadlock_blockers(ZklCohort *coh, const ZklSlot *s, int *pids, int max)
{
	const ZklTable *t = coh->t;
	ZkrChild	own;
	int			n = 0;
	int			j;

	if (s->zstate == ZKS_COHORT)
	{
		const ZklSlot *o = zc_cohort_waits_behind(coh, s);

		if (o != NULL && !o->own.abandoned && o->req.owner_pid != s->req.owner_pid && o->req.owner_pid != 0)
			add_pid(pids, &n, max, o->req.owner_pid);
	}
	else if (zc_recipe_parse_child(s->node, &own))
	{
		for (j = 0; j < t->nused; j++)
			if (blocks(t, &t->slots[j], s, own.seq))
				add_pid(pids, &n, max, t->slots[j].req.owner_pid);
		/* a local holder of a conflicting mode, wherever its node stands: no grant beside it (core.c) */
		for (j = 0; (j = zc_table_conflicting_holder(t, s, j)) >= 0; j++)
			add_pid(pids, &n, max, t->slots[j].req.owner_pid);
	}
	return n;
}

/* Each waiting request and the backends it waits for. */
static void
build(Graph *g, ZklCohort *coh)
{
	const ZklTable *t = coh->t;
	int			i;

	g->nw = 0;
	g->nto = 0;
	for (i = 0; i < t->nused && g->nw < ZDL_MAX_WAITS; i++)
	{
		const ZklSlot *s = &t->slots[i];

		if (!waiting(s))
			continue;
		g->first[g->nw] = g->nto;
		g->nto += zc_deadlock_blockers(coh, s, g->to + g->nto, ZDL_MAX_EDGES - g->nto);
		g->wslot[g->nw++] = i;
	}
	g->first[g->nw] = g->nto;
	g->npid = 0;
}

static char *
colour_of(Graph *g, int pid)
{
	int			i;

	for (i = 0; i < g->npid; i++)
		if (g->pid[i] == pid)
			return &g->colour[i];
	g->pid[g->npid] = pid;
	g->colour[g->npid] = WHITE;
	return &g->colour[g->npid++];
}

/* Depth-first from backend pid: true once a circle is on the path (cycle_from). */
static bool
visit(Graph *g, ZklCohort *coh, int pid)
{
	const ZklTable *t = coh->t;
	int			i;
	int			e;

	*colour_of(g, pid) = GREY;
	for (i = 0; i < g->nw; i++)
	{
		if (t->slots[g->wslot[i]].req.owner_pid != pid)
			continue;
		if (g->depth == ZDL_MAX_CYCLE)
			break;
		g->path[g->depth++] = g->wslot[i];
		for (e = g->first[i]; e < g->first[i + 1]; e++)
		{
			char	   *c = colour_of(g, g->to[e]);

			if (*c == GREY)
			{
				/* the circle: from that backend's wait on the path to here */
				for (g->cycle_from = 0; g->cycle_from < g->depth; g->cycle_from++)
					if (t->slots[g->path[g->cycle_from]].req.owner_pid == g->to[e])
						return true;
			}
			else if (*c == WHITE && visit(g, coh, g->to[e]))
				return true;
		}
		g->depth--;
	}
	*colour_of(g, pid) = BLACK;
	return false;
}

int64_t
zc_deadlock_oldest_due(const ZklTable *t, int timeout_ms,
					   bool (*counts) (const ZklTable *t, const ZklSlot *s))
{
	int64_t		oldest = 0;
	int			i;

	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *s = &t->slots[i];

		if (counts(t, s) && (oldest == 0 || s->req.requested_at < oldest))
			oldest = s->req.requested_at;
	}
	return oldest == 0 ? 0 : oldest + (int64_t) timeout_ms * 1000;
}

static bool
counts_here(const ZklTable *t, const ZklSlot *s)
{
	return waiting(s);
}

int64_t
zc_deadlock_next_due(const ZklTable *t, int timeout_ms)
{
	return zc_deadlock_oldest_due(t, timeout_ms, counts_here);
}

/*
 * The circle on the path, a line per step for the victim's DETAIL (as
 * core's), from the victim's wait (at path[from]) round: each wait's
 * backend, key and mode, and the backend it waits for, whose wait is the
 * next on the circle.
 */
static void
describe(const Graph *g, const ZklTable *t, int from, char *detail, size_t len)
{
	int			m = g->depth - g->cycle_from;
	size_t		n = 0;
	int			i;

	detail[0] = '\0';
	for (i = 0; i < m; i++)
	{
		const ZklSlot *s = &t->slots[g->path[g->cycle_from + (from - g->cycle_from + i) % m]];
		const ZklSlot *next = &t->slots[g->path[g->cycle_from + (from - g->cycle_from + i + 1) % m]];

		zc_gwait_put_step(detail, len, &n, s->req.owner_pid, "", s->req.mode, s->key,
						  next->req.owner_pid, "");
	}
}

int
zc_deadlock_find_victim(ZklCohort *coh, int64_t now, int timeout_ms, char *msg, size_t len,
						char *detail, size_t dlen)
{
	static Graph g;				/* 30 kB: not on the stack */
	const ZklTable *t = coh->t;
	int			i;

	build(&g, coh);
	for (i = 0; i < g.nw; i++)
	{
		int			start = t->slots[g.wslot[i]].req.owner_pid;
		int			victim;
		int			at;				/* its place on the path */
		int64_t		oldest;
		size_t		n;
		int			k;

		if (*colour_of(&g, start) != WHITE)
			continue;
		g.depth = 0;
		g.cycle_from = -1;
		if (!visit(&g, coh, start))
			continue;
		/* the youngest request of the circle gives way, once one of them waited long enough */
		at = g.cycle_from;
		victim = g.path[at];
		oldest = t->slots[victim].req.requested_at;
		for (k = g.cycle_from + 1; k < g.depth; k++)
		{
			const ZklSlot *s = &t->slots[g.path[k]];

			if (s->req.requested_at > t->slots[victim].req.requested_at)
			{
				at = k;
				victim = g.path[k];
			}
			if (s->req.requested_at < oldest)
				oldest = s->req.requested_at;
		}
		if (now - oldest < (int64_t) timeout_ms * 1000)
			return -1;			/* a young circle: the next search sees it */
		n = (size_t) snprintf(msg, len, "deadlock detected: processes");
		for (k = g.cycle_from; k < g.depth && n < len; k++)
			n += (size_t) snprintf(msg + n, len - n, "%s %d", k > g.cycle_from ? "," : "",
								   t->slots[g.path[k]].req.owner_pid);
		if (n < len)
			snprintf(msg + n, len - n, " wait for each other's zk_lock locks");
		describe(&g, t, at, detail, dlen);
		return victim;
	}
	return -1;
}
