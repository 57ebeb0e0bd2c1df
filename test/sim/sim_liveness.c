/*
 * sim_liveness.c — liveness while calm (a waiter nothing blocks at the
 * leader is served within a bound) and the end of a seed: every request
 * ended, no slot in use, no lock node left.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/*
 * Liveness all along, judged from the leader's tree, not from the core:
 * a waiter whose node nothing blocks there (by the recipe, the backend's
 * own nodes not counted) is granted within a bound while its cluster is
 * connected, running and in no lock-delay.  The bound leaves room for a
 * silent link the library has not given up yet and for one recheck of a
 * lost watch.  The end check only sees waits that outlast the quiet phase.
 * Sampled (every 100 ms of model time): nodes ahead of a node only ever go,
 * so a request first at the leader stays first while its node lives.
 */
void
check_liveness(Cluster *c)
{
	int64_t		now = zkm_now(S->m);
	int64_t		bound = (int64_t) (2 * c->session_timeout + 3000) * 1000;
	int64_t		until;
	/* (an overloaded connection, many requests unanswered, is slow, not wrong) */
	bool		calm = !c->paused && c->client >= 0 && c->t->conn_state == ZKC_CONNECTED &&
		zkm_quorum(S->m) &&
		zkm_backlog(S->m, c->client) <= CALM_BACKLOG && !env_grants_paused(c, c_mono(c), &until);
	int			j;

	if (calm && now < c->liveness_at)
		return;
	c->liveness_at = now + 100000;
	for (j = 0; j < c->t->nused && j < NSLOTS; j++)
	{
		const ZklSlot *s = &c->t->slots[j];
		ZkrBackend	b;
		char		key_path[ZKL_PATH_LEN];
		char	  **names;
		ZkrChild	kids[128];
		int			nk;
		int			nn;
		int			own;
		int			watch;
		int			i;
		ZkrVerdict	v;

		/*
		 * A try-lock is answered within the same bound: a few round trips, a
		 * linger wait of 500 ms at most, or its holder's listing for a local
		 * hand-over; never a hold's length (a silent link takes the bound).
		 */
		if (!calm || !s->req.nowait || s->ans.result != ZKL_RESULT_PENDING || s->own.abandoned || s->zstate == ZKS_FREE)
			c->try_since[j] = 0;
		else if (c->try_since[j] == 0 || c->try_asked[j] != s->req.requested_at)
		{
			c->try_since[j] = now;
			c->try_asked[j] = s->req.requested_at;
		}
		else if (now - c->try_since[j] > bound)
		{
			fail("promptness: c%d slot %d (pid %d) try-lock of %s %c unanswered for %.1f s, "
				 "its cluster connected and in no lock-delay",
				 c->id, j, s->req.owner_pid, s->key, s->req.mode, (now - c->try_since[j]) / 1e6);
			dump_cluster(c);
		}
		if (!calm || s->zstate != ZKS_QUEUED || s->ans.result != ZKL_RESULT_PENDING || s->own.abandoned ||
			s->req.mode == ZKL_MODE_SEMAPHORE || s->req.group != 0 || s->node[0] == '\0')
		{
			c->clear_since[j] = 0;
			c->settled_since[j] = 0;
			continue;
		}
		zc_core_backend_of(&c->core, s, &b);
		zc_core_key_path(c->t, s, key_path);
		nn = zkm_leader_children(S->m, key_path, &names);
		nk = zc_recipe_collect((const char *const *) names, nn < 128 ? nn : 128, kids);
		v = zc_recipe_decide(kids, nk, s->uuid, &b, &own, &watch);
		/*
		 * Promptness: nothing blocks it at the leader, its own server shows
		 * the same queue, and nothing is on its way to or from the worker:
		 * the worker knows all it needs, so it is granted at its next turn.
		 */
		{
			/* (a slot that waits for its timer to read again is not settled: the bound above holds) */
			/* (nor one an upgrade of its cluster went ahead of: it waits for that, as core's) */
			bool		settled = v == ZKR_GRANT && !key_news(c, s, key_path) && s->zk.delayed_until == 0 &&
				zc_table_conflicting_holder(c->t, s, 0) < 0;
			int			server = zkm_client_server(S->m, c->client);

			if (settled && server < 0)
				settled = false;	/* (the link is down: the worker will hear of it) */
			/*
			 * An upgrade it watches, of another backend, whose anchor went
			 * first: the upgrade stood ahead of it when it listed, and stands
			 * behind it now; it hears when its owner deletes it, on a
			 * connection that may be slow (liveness bounds that wait).
			 */
			for (i = 0; settled && i < nk; i++)
				settled = !(strcmp(kids[i].name, s->watch) == 0 && kids[i].upgrade && !kids[i].placed);
			if (settled)
			{
				char	  **snames;
				int			sn = zkm_server_children(S->m, server, key_path, &snames);

				settled = sn == nn;
				for (i = 0; settled && i < nn; i++)
				{
					int			k;

					settled = false;
					for (k = 0; k < sn && !settled; k++)
						settled = strcmp(names[i], snames[k]) == 0;
				}
				zkm_names_free(snames, sn);
			}
			if (!settled)
				c->settled_since[j] = 0;
			else if (c->settled_since[j] == 0)
				c->settled_since[j] = now;
			else if (now - c->settled_since[j] > 500000)
				fail("promptness: c%d slot %d (pid %d) %s %c: nothing blocks it at the leader, "
					 "its server shows the same queue, nothing is on its way, and it is not "
					 "granted for %.1f s", c->id, j, s->req.owner_pid, s->key, s->req.mode,
					 (now - c->settled_since[j]) / 1e6);
		}
		zkm_names_free(names, nn);
		if (v != ZKR_GRANT)
			c->clear_since[j] = 0;
		else if (c->clear_since[j] == 0 || c->clear_attempt[j] != s->req.attempt)
		{
			c->clear_since[j] = now;
			c->clear_attempt[j] = s->req.attempt;
		}
		else if (now - c->clear_since[j] > bound)
			fail("liveness: c%d slot %d (pid %d) %s %c has been first at the leader for %.1f s, "
				 "its cluster connected and in no lock-delay, and is not granted",
				 c->id, j, s->req.owner_pid, s->key, s->req.mode, (now - c->clear_since[j]) / 1e6);
	}
}

void
dump_cluster(const Cluster *c)
{
	int			j;

	printf("c%d: client %d conn %d session %" PRIx64 " listed %d stale %d paused_until %.3f outs %d\n",
		   c->id, c->client, c->t->conn_state, c->t->session_id, c->t->pause.listed, c->t->pause.stale,
		   c->t->pause.paused_until / 1e6, c->nouts);
	if (c->client >= 0)
		zkm_debug(S->m, c->client);
	printf("  writes in flight %d, outs:", c->core.writes_in_flight);
	for (j = 0; j < c->nouts; j++)
		printf(" %d/%" PRIu64, c->outs[j].purpose, c->outs[j].id);
	printf("\n");
	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *s = &c->t->slots[j];

		printf("  slot %d: z%d r%d todo %x ab %d key %s node %s watch %s sole %d delayed %.3f"
			   " first %d clear %d handed %d/%d rides %d foreign %d/%d peek %d kept %d\n",
			   j, s->zstate, s->ans.result, s->zk.todo, s->own.abandoned, s->key, s->node, s->watch,
			   s->zk.watch_sole, s->zk.delayed_until / 1e6, s->zk.first, s->zk.clear, s->zk.handed,
			   s->coh.node_handed, s->zk.rides, s->coh.foreign, s->coh.since_foreign, s->coh.peek, s->coh.kept);
	}
}

void
check_end(void)
{
	int			i;
	int			j;

	for (i = 0; i < S->ncl; i++)
	{
		Cluster    *c = &S->c[i];

		for (j = 0; j < S->c[i].nb; j++)
			if (c->b[j].st != B_DONE)
			{
				fail("liveness: c%d b%d never finished (state %d)", i, c->b[j].pid, c->b[j].st);
				dump_cluster(c);
				if (getenv("SIM_TRUTH"))
				{
					Truth	   *tr = malloc(sizeof(Truth));

					truth_build(tr);
					truth_dump(tr);
					free(tr);
				}
			}
		for (j = 0; j < c->t->nused; j++)
			if (c->t->slots[j].zstate != ZKS_FREE)
				fail("c%d slot %d left in state %d", i, j, c->t->slots[j].zstate);
	}
	for (i = 0; i < NALL; i++)
	{
		char		path[ZKM_PATH];
		char	  **names;
		int			n;

		snprintf(path, sizeof(path), ROOT "/%s", key_name(i));
		n = zkm_leader_children(S->m, path, &names);
		/* an orphan zk_lock.test_orphan made that blocks nobody stays while its session lives */
		for (j = 0; j < n; j++)
			if (strstr(names[j], "-" ORPHAN_UUID) != NULL)
			{
				free(names[j]);
				names[j--] = names[--n];
			}
		if (n > 0)
			fail("node %s/%s left behind", path, names[0]);
		for (j = 0; j < n; j++)
		{
			char		child[ZKM_PATH * 2];
			int64_t		owner = 0;
			int64_t		czxid;

			snprintf(child, sizeof(child), "%s/%s", path, names[j]);
			(void) zkm_leader_node(S->m, child, &owner, &czxid);
			printf("  at the leader: %s (session %" PRIx64 ")\n", child, owner);
		}
		zkm_names_free(names, n);
	}
	once_final();
}

/* The node of slot s at the leader, found by its uuid, deleted as by another client. */
bool
delete_by_uuid(Cluster *c, const ZklSlot *s)
{
	char		key_path[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN * 2];
	char	  **names;
	bool		found = false;
	int			n;
	int			i;

	zc_core_key_path(c->t, s, key_path);
	n = zkm_leader_children(S->m, key_path, &names);
	for (i = 0; i < n && !found; i++)
	{
		if (!zc_recipe_name_has_uuid(names[i], s->uuid))
			continue;
		found = true;
		snprintf(S->tainted[S->ntainted++], ZKL_UUID_LEN + 1, "%s", s->uuid);
		snprintf(path, sizeof(path), "%s/%s", key_path, names[i]);
		trace("fault: %s (its create's reply lost) deleted behind its owner's back", path);
		zkm_admin_delete(S->m, path);
	}
	zkm_names_free(names, n);
	return found;
}
