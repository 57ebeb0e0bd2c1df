/*
 * sim_truth.c — the ground truth of waits that can never end, from the leader's tree
 * and the backends as they are (the deadlock oracles judge by it).
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

int
backend_of_pid(const Cluster *c, int pid)
{
	int			i;

	for (i = 0; i < c->nb; i++)
		if (c->b[i].pid == pid)
			return i;
	return -1;
}

/* Every backend holding, riding or queued through node `name` of key `key`. */
void
truth_owners(const char *key, const char *name, TruthEntry *e)
{
	int			i;
	int			j;

	e->nowners = 0;
	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].t->nused; j++)
		{
			const ZklSlot *o = &S->c[i].t->slots[j];
			int			bi;

			if (o->zstate == ZKS_FREE || o->zstate == ZKS_LINGER || o->zstate == ZKS_GONE ||
				strcmp(o->key, key) != 0 ||
				!(zc_recipe_name_has_uuid(name, o->uuid) || strcmp(o->node, name) == 0))
				continue;
			bi = backend_of_pid(&S->c[i], o->req.owner_pid);
			if (bi >= 0 && e->nowners < TR_OWNERS)
			{
				e->oc[e->nowners] = (int8_t) i;
				e->ob[e->nowners++] = (int8_t) bi;
			}
		}
}

/* What pending request s of backend bi in cluster ci waits for; false: not judged. */
bool
truth_request(int ci, int bi, const ZklSlot *s, TruthReq *r)
{
	const Cluster *c = &S->c[ci];
	int			pid = c->b[bi].pid;
	int			i;

	r->ci = (int8_t) ci;
	r->bi = (int8_t) bi;
	r->need = s->req.mode == ZKL_MODE_SEMAPHORE ? s->req.holders : 1;
	r->nahead = 0;
	if (s->zstate == ZKS_COHORT)
	{
		/*
		 * A local hand-over: the holders of the key, and the request with
		 * the cluster's node; a parked reader also waits for a reader's node
		 * of its cluster that is not granted yet, the one it will join
		 * (cohort_ride.c: zc_cohort_reader_coming).
		 */
		for (i = 0; i < c->t->nused && r->nahead < TR_AHEAD; i++)
		{
			const ZklSlot *o = &c->t->slots[i];
			int			ob = backend_of_pid(c, o->req.owner_pid);
			bool		queued = o->zstate == ZKS_QUEUED && o->node[0] != '\0';
			bool		joins = queued && s->req.mode == ZKL_MODE_SHARED && o->req.mode == ZKL_MODE_SHARED;

			if (o->req.owner_pid == pid || ob < 0 || strcmp(o->key, s->key) != 0 ||
				!(o->zstate == ZKS_HELD || queued) ||
				(s->req.mode != ZKL_MODE_SEMAPHORE && !conflict(o->req.mode, s->req.mode) && !joins))
				continue;
			r->ahead[r->nahead].nowners = 1;
			r->ahead[r->nahead].oc[0] = (int8_t) ci;
			r->ahead[r->nahead++].ob[0] = (int8_t) ob;
		}
		return true;
	}
	else
	{
		char		key_path[ZKL_PATH_LEN];
		char	  **names;
		ZkrChild	kids[128];
		int			nn;
		int			n;
		int			own = -1;

		zc_core_key_path(c->t, s, key_path);
		nn = zkm_leader_children(S->m, key_path, &names);
		n = zc_recipe_collect((const char *const *) names, nn < 128 ? nn : 128, kids);
		bool		first_x = false;	/* the backend holds, alone, a node ahead: exclusive */
		int32_t		x_seq = 0;
		bool		first_s = false;	/* or shared */
		int32_t		s_seq = 0;

		for (i = 0; i < n; i++)
			if (zc_recipe_name_has_uuid(kids[i].name, s->uuid))
				own = i;
		/*
		 * The recipe's rules for a backend's own held nodes (recipe.c's
		 * blocks): nothing behind its exclusive node blocks it, and no
		 * writer behind its shared one (an upgrade passes them, as core's).
		 */
		for (i = 0; own >= 0 && i < n; i++)
		{
			TruthEntry	e;
			int			j;
			bool		held = false;

			bool		among = false;

			if (i == own || zc_recipe_seq_cmp(kids[i].seq, kids[own].seq) > 0)
				continue;
			truth_owners(s->key, kids[i].name, &e);
			for (j = 0; j < e.nowners; j++)
				among |= e.oc[j] == ci && e.ob[j] == bi;
			/* a shared node it holds with other local readers counts too (they block it: below) */
			if (!among || (e.nowners != 1 && kids[i].mode != ZKL_MODE_SHARED))
				continue;
			for (j = 0; j < c->t->nused; j++)
				held |= c->t->slots[j].zstate == ZKS_HELD && c->t->slots[j].req.owner_pid == pid &&
					(zc_recipe_name_has_uuid(kids[i].name, c->t->slots[j].uuid) ||
					 strcmp(c->t->slots[j].node, kids[i].name) == 0);
			if (held && kids[i].mode == ZKL_MODE_EXCLUSIVE &&
				(!first_x || zc_recipe_seq_cmp(kids[i].seq, x_seq) < 0))
			{
				first_x = true;
				x_seq = kids[i].seq;
			}
			if (held && kids[i].mode == ZKL_MODE_SHARED &&
				(!first_s || zc_recipe_seq_cmp(kids[i].seq, s_seq) < 0))
			{
				first_s = true;
				s_seq = kids[i].seq;
			}
		}
		for (i = 0; own >= 0 && i < n && r->nahead < TR_AHEAD; i++)
		{
			TruthEntry *e = &r->ahead[r->nahead];
			int			k;
			int			others = 0;
			bool		mine = false;

			if (i == own || (zc_recipe_seq_cmp(kids[i].seq, kids[own].seq) > 0 && !upgrade_ahead(c, kids, own, i)) ||
				(s->req.mode != ZKL_MODE_SEMAPHORE && !conflict(kids[i].mode, s->req.mode)) ||
				(s->req.mode != ZKL_MODE_SEMAPHORE && first_x && zc_recipe_seq_cmp(x_seq, kids[i].seq) < 0) ||
				(s->req.mode != ZKL_MODE_SEMAPHORE && first_s && zc_recipe_seq_cmp(s_seq, kids[i].seq) < 0 &&
				 (kids[i].mode == ZKL_MODE_EXCLUSIVE || local_waiter(c, kids[i].name) ||
				  behind_writer(kids, n, own, s_seq, i))))
				continue;
			truth_owners(s->key, kids[i].name, e);
			/*
			 * The backend's own nodes never block it (the recipe's
			 * same-backend rule), but one it rides with others blocks
			 * it until they go.
			 */
			for (k = 0; k < e->nowners; k++)
				if (e->oc[k] == ci && e->ob[k] == bi)
					mine = true;
				else
				{
					e->oc[others] = e->oc[k];
					e->ob[others++] = e->ob[k];
				}
			e->nowners = others;
			if (!mine || others > 0)
				r->nahead++;
		}
		zkm_names_free(names, nn);
		/* a local holder of a conflicting mode: an upgrade that went ahead of it (core.c) */
		for (i = 0; s->zstate == ZKS_QUEUED && (i = zc_table_conflicting_holder(c->t, s, i)) >= 0 &&
			 r->nahead < TR_AHEAD; i++)
		{
			r->ahead[r->nahead].nowners = 1;
			r->ahead[r->nahead].oc[0] = (int8_t) ci;
			r->ahead[r->nahead++].ob[0] = (int8_t) backend_of_pid(c, c->t->slots[i].req.owner_pid);
		}
		return own >= 0;
	}
}

/*
 * Whether reader kids[i], behind the shared node at s_seq that the backend
 * of kids[own] holds, waits behind a writer of someone else between them:
 * it is not granted while that writer waits for our node, so it holds up
 * nothing of ours (as core's upgrade goes before the waiters it holds up).
 * A writer named for the reader's own backend does not count: it may be
 * one it holds, then its reader is granted (recipe.c judges by names, and
 * a node handed over keeps its maker's).
 */
bool
behind_writer(const ZkrChild *kids, int n, int own, int32_t s_seq, int i)
{
	int			j;

	for (j = 0; j < n && kids[i].mode == ZKL_MODE_SHARED; j++)
		if (j != own && j != i && kids[j].mode == ZKL_MODE_EXCLUSIVE && !kids[j].placed &&
			zc_recipe_seq_cmp(s_seq, kids[j].seq) < 0 && zc_recipe_seq_cmp(kids[j].seq, kids[i].seq) < 0 &&
			!zc_recipe_same_owner(kids[j].name, kids[i].name))
			return true;
	return false;
}

/*
 * Whether kids[i], made after kids[own], is an upgrade placed ahead of it
 * (recipe.h) that it waits for: not one of its own cluster that is not
 * granted (ZkrBackend.pending), judged from the upgrade's slot.
 */
bool
upgrade_ahead(const Cluster *c, const ZkrChild *kids, int own, int i)
{
	int			ci;
	int			pid;
	int			slot;

	if (kids[own].placed || !kids[i].placed || !zc_recipe_ahead(kids, own, i))
		return false;
	return !(node_owner(kids[i].name, &ci, &pid, &slot) && ci == c->id &&
			 S->c[ci].t->slots[slot].zstate != ZKS_HELD);
}

/*
 * Whether the node of this name is a local request that waits behind
 * others (an upgrade of its cluster passes it: recipe.c), not one whose
 * turn may have come.
 */
bool
local_waiter(const Cluster *c, const char *name)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o->zstate == ZKS_QUEUED && zc_recipe_name_has_uuid(name, o->uuid) && o->watch[0] != '\0' &&
			!o->req.nowait && o->zk.delayed_until == 0)
			return true;
	}
	return false;
}

void
truth_dump(const Truth *tr)
{
	int			i;
	int			j;
	int			k;

	for (i = 0; i < tr->nreqs; i++)
	{
		const TruthReq *r = &tr->reqs[i];

		printf("c%d b%d (%s) needs %d of:", r->ci, S->c[r->ci].b[r->bi].pid,
			   tr->goes[r->ci][r->bi] ? "goes" : "stuck", r->need);
		for (j = 0; j < r->nahead; j++)
		{
			printf(" [");
			for (k = 0; k < r->ahead[j].nowners; k++)
				printf(" c%d b%d", r->ahead[j].oc[k], S->c[r->ahead[j].oc[k]].b[r->ahead[j].ob[k]].pid);
			printf(" ]");
		}
		printf("\n");
	}
	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].t->nused; j++)
		{
			const ZklSlot *o = &S->c[i].t->slots[j];

			if (o->zstate != ZKS_FREE)
				printf("c%d slot %d pid %d %s %c st %d res %d rides %d ab %d node %s uuid %.8s watch %s\n",
					   i, j, o->req.owner_pid, o->key, o->req.mode, o->zstate, o->ans.result, o->zk.rides,
					   o->own.abandoned, o->node, o->uuid, o->watch);
		}
}

void
truth_build(Truth *tr)
{
	int			i;
	int			j;

	tr->nreqs = 0;
	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].nb; j++)
		{
			const Cluster *c = &S->c[i];
			const Backend *b = &c->b[j];
			int			slots[NKEYS];
			int			ns = 0;
			int			k;

			tr->goes[i][j] = true;
			if (b->st == B_WAIT && b->ngroup > 0)
				for (k = 0; k < b->ngroup; k++)
					slots[ns++] = b->group[k];
			else if (b->st == B_WAIT && b->waiting >= 0)
				slots[ns++] = b->waiting;
			for (k = 0; k < ns; k++)
			{
				const ZklSlot *s = &c->t->slots[slots[k]];

				if (s->ans.result != ZKL_RESULT_PENDING || s->req.owner_pid != b->pid || s->own.abandoned)
					continue;
				if (tr->nreqs < TR_REQS && truth_request(i, j, s, &tr->reqs[tr->nreqs]))
				{
					tr->nreqs++;
					tr->goes[i][j] = false;
				}
			}
		}
	/*
	 * ZooKeeper's view: a wait given up in its cluster (a timeout, a
	 * cancel, another search's 40P01) whose node is still queued at the
	 * leader, its delete on its way, is a wait still, for every other
	 * cluster as for the claim that checks its node.
	 */
	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].t->nused; j++)
		{
			const ZklSlot *s = &S->c[i].t->slots[j];
			int			bi = backend_of_pid(&S->c[i], s->req.owner_pid);

			if (bi < 0 || s->req.nowait || s->ans.result == ZKL_RESULT_GRANTED || s->node[0] == '\0' ||
				(s->zstate != ZKS_QUEUED && s->zstate != ZKS_DELETING) ||
				(s->ans.result == ZKL_RESULT_PENDING && !s->own.abandoned))
				continue;
			if (tr->nreqs < TR_REQS && truth_request(i, bi, s, &tr->reqs[tr->nreqs]))
			{
				tr->nreqs++;
				tr->goes[i][bi] = false;
			}
		}
	/* the least fixed point: a request goes on once fewer than need of what is ahead stays */
	for (;;)
	{
		bool		changed = false;
		bool		blocked[NCLUSTERS][NBACKENDS] = {{false}};

		for (i = 0; i < tr->nreqs; i++)
		{
			const TruthReq *r = &tr->reqs[i];
			int			stay = 0;

			if (tr->goes[r->ci][r->bi])
				continue;
			for (j = 0; j < r->nahead; j++)
			{
				int			k;

				for (k = 0; k < r->ahead[j].nowners; k++)
					if (!tr->goes[r->ahead[j].oc[k]][r->ahead[j].ob[k]])
					{
						stay++;
						break;
					}
			}
			blocked[r->ci][r->bi] |= stay >= r->need;
		}
		for (i = 0; i < tr->nreqs; i++)
		{
			const TruthReq *r = &tr->reqs[i];

			if (!tr->goes[r->ci][r->bi] && !blocked[r->ci][r->bi])
			{
				tr->goes[r->ci][r->bi] = true;
				changed = true;
			}
		}
		if (!changed)
			break;
	}
}
