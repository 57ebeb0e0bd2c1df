/*
 * sim_aims_upgrade.c — aims at upgrades' rare moments: an upgrade that waits
 * over a node other local readers hold, and a reader handed the key by a
 * writer's delete reply while another cluster's reader upgrades between.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/*
 * Whether s, a lock's request that waits, is an upgrade over a shared node
 * its backend holds with other local readers (it rides, or others ride its
 * node): the recipe gives it no anchor, and other clusters' writers and
 * readers queued since that node may stand between (core_grant.c's
 * edge_of_shared).  Returns that node's slot, or -1.
 */
static int
ridden_read_of(const Cluster *c, const ZklSlot *s)
{
	int			i;

	if (s->zstate != ZKS_QUEUED || s->ans.result != ZKL_RESULT_PENDING || s->req.mode != ZKL_MODE_EXCLUSIVE)
		return -1;
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o == s || o->zstate != ZKS_HELD || o->req.mode != ZKL_MODE_SHARED ||
			o->req.owner_pid != s->req.owner_pid || strcmp(o->key, s->key) != 0)
			continue;
		if (o->zk.rides || ridden_by_other(c, o))
			return i;
	}
	return -1;
}

/*
 * In the seeds of a hot key, now and then, an upgrade that waits over a
 * node other local readers hold: those readers' transactions stay open a
 * while (longer than any cluster's deadlock_timeout), so that the
 * detectors look at the upgrade's wait while other clusters' writers and
 * readers stand between its read and it.  Its edge across clusters must be
 * the one its node would have were it its own, not the watch: a reader
 * behind a writer behind its node closes a circle that is none (bite 77).
 */
void
ridden_upgrade_tend(void)
{
	int64_t		now = zkm_now(S->m);
	int			i;
	int			j;
	int			k;

	if (S->quiet || now < S->aim.ridden_at)
		return;
	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].t->nused; j++)
		{
			Cluster    *c = &S->c[i];
			int			r = ridden_read_of(c, &c->t->slots[j]);

			if (r < 0)
				continue;
			S->aim.ridden_at = now + 1000000;
			if (!aside_chance(60))
				return;
			for (k = 0; k < c->t->nused; k++)
			{
				const ZklSlot *o = &c->t->slots[k];
				Backend    *b = owner_of(c, o);

				if (o->zstate == ZKS_HELD && strcmp(o->node, c->t->slots[r].node) == 0 && b != NULL &&
					o->req.owner_pid != c->t->slots[j].req.owner_pid)
				{
					b->stay_until = now + 1500000;
					trace("aim: c%d b%d keeps %s's shared node under b%d's upgrade", c->id, b->pid,
						  o->key, c->t->slots[j].req.owner_pid);
				}
			}
			return;
		}
}

/* Whether b's next lock (past pauses) asks key k exclusive: an upgrade of the read it holds. */
static bool
upgrades_next(const Backend *b, int k)
{
	int			i;

	for (i = b->next_act; i < b->nacts && (b->acts[i].pause || b->acts[i].sp != 0); i++)
		;
	return i < b->nacts && !b->acts[i].unlock && !b->acts[i].session && b->acts[i].nkeys == 0 &&
		b->acts[i].key == k && b->acts[i].mode == ZKL_MODE_EXCLUSIVE;
}

/* Another cluster's reader whose backend upgrades d's key next. */
static bool
foreign_upgrader(const Cluster *c, const ZkrChild *kid, const ZklSlot *d)
{
	int			ci;
	int			pid;
	int			slot;
	Backend    *b;

	return kid->mode == ZKL_MODE_SHARED && node_owner(kid->name, &ci, &pid, &slot) && ci != c->id &&
		(b = owner_of(&S->c[ci], &S->c[ci].t->slots[slot])) != NULL && upgrades_next(b, key_index(d->key));
}

/*
 * A local writer's delete on its way, a local reader W behind it whose
 * wait its reply may end (core_plan.c's zc_core_tell_successor), and
 * another cluster's reader queued between the two whose backend upgrades
 * next: the worker is descheduled a while before it reads that reply, so
 * that the reader, granted at the leader's delete, asks its upgrade, which
 * comes to stand ahead of W (recipe.h).  W must read its queue, not take
 * the reply's word (bite 47).  Drawn off the seed's stream; once a second
 * at most, in the seeds of a hot key.
 */
void
sole_reader_tend(void)
{
	int64_t		now = zkm_now(S->m);
	int			i;
	int			j;
	int			k;

	if (S->quiet || now < S->aim.sole_at)
		return;
	for (i = 0; i < S->ncl; i++)
	{
		Cluster    *c = &S->c[i];

		if (c->paused || c->stopping || c->client < 0)
			continue;
		for (j = 0; j < c->t->nused; j++)
		{
			const ZklSlot *d = &c->t->slots[j];

			if (d->zstate != ZKS_DELETING || d->ans.result != ZKL_RESULT_GRANTED ||
				d->req.mode != ZKL_MODE_EXCLUSIVE || d->node[0] == '\0')
				continue;
			for (k = 0; k < c->t->nused; k++)
			{
				const ZklSlot *w = &c->t->slots[k];

				if (w->zstate != ZKS_QUEUED || w->ans.result != ZKL_RESULT_PENDING ||
					w->req.mode != ZKL_MODE_SHARED || strcmp(w->watch, d->node) != 0 ||
					!leader_between(c, d, d->node, w->node, foreign_upgrader, d))
					continue;
				S->aim.sole_at = now + 1000000;
				if (!aside_chance(70))
					return;
				pause_worker(c, now + 1000000);
				trace("(aimed: c%d's delete of %s is out)", c->id, d->node);
				return;
			}
		}
	}
}
