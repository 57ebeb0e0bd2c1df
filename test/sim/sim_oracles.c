/*
 * sim_oracles.c — the oracles over time: circles broken within a bound, losses told,
 * no two live beliefs in conflicting locks whose nodes both stand,
 * sole blockers, try-locks refused only for a holder (sim_liveness.c:
 * liveness while calm, and the end of a seed).
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/*
 * Every circle of waits is broken within a bound once the world is calm:
 * sampled in the quiet phase, a backend that waits for ever by the ground
 * truth must stop doing so within the bound.
 */
void
check_circles(void)
{
	Truth	   *tr;
	int64_t		now = zkm_now(S->m);
	int			nstuck = 0;
	int			max_tmo = 0;
	int			i;
	int			j;

	if (now < S->circles_at)
		return;
	S->circles_at = now + (S->quiet ? 200000 : 1000000);	/* (the bound is checked when quiet) */
	/* (cheap first: a circle's waits are all as old as its last one) */
	for (i = 0; i < S->ncl; i++)
	{
		int64_t		due = zc_gwait_next_due(S->c[i].t, S->c[i].core.deadlock_timeout);

		if (due != 0 && c_wall(&S->c[i]) >= due)
			break;
	}
	if (i == S->ncl)
	{
		for (i = 0; i < S->ncl; i++)
			for (j = 0; j < S->c[i].nb; j++)
				S->c[i].b[j].stuck_since = 0;
		return;
	}
	tr = malloc(sizeof(Truth));
	truth_build(tr);
	for (i = 0; i < S->ncl; i++)
	{
		max_tmo = S->c[i].core.deadlock_timeout > max_tmo ? S->c[i].core.deadlock_timeout : max_tmo;
		for (j = 0; j < S->c[i].nb; j++)
			nstuck += !tr->goes[i][j];
	}
	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].nb; j++)
		{
			Cluster    *c = &S->c[i];
			Backend    *b = &c->b[j];
			/* one victim at a time in all clusters: a knot of n waits takes n rounds or so */
			int64_t		bound = (int64_t) (nstuck * (2 * max_tmo + 1000) + 2 * c->session_timeout +
										   5000) * 1000;

			if (tr->goes[i][j])
			{
				if (b->stuck_since != 0 && now - b->stuck_since > gw_max_stuck_ms * 1000)
					gw_max_stuck_ms = (now - b->stuck_since) / 1000;
				b->stuck_since = 0;
				continue;
			}
			if (b->stuck_since == 0)
				b->stuck_since = now;
			if (S->quiet && now - (b->stuck_since > WORK_US ? b->stuck_since : WORK_US) > bound)
			{
				fail("c%d b%d has waited for ever for %" PRId64 " ms (a circle of waits nobody broke)",
					 c->id, b->pid, (now - b->stuck_since) / 1000);
				if (getenv("SIM_TRUTH"))
				{
					int			k;

					dump_cluster(c);
					truth_dump(tr);
					char	  **names;
					int			n = zkm_leader_children(S->m, ROOT "/" ZGW_WAITS_DIR, &names);

					for (k = 0; k < n; k++)
					{
						char		path[ZKM_PATH];

						snprintf(path, sizeof(path), ROOT "/" ZGW_WAITS_DIR "/%s", names[k]);
						printf("document %s:\n%s\n", names[k], zkm_leader_data(S->m, path));
					}
					zkm_names_free(names, n);
				}
			}
		}
	free(tr);
}

/*
 * Whether pid of c still holds, by its cluster's table, a node of key that
 * was deleted from outside: its other locks on the key are promised
 * nothing either until the cluster learns it (those granted past other
 * backends' waiters passed them for that node); then they are judged again.
 */
bool
beside_gone_held(const Cluster *c, int pid, int key)
{
	int			g;
	int			j;

	for (g = 0; g < S->ngone_held; g++)
		for (j = 0; S->gone_held[g].cl == c->id && j < c->t->nused; j++)
		{
			const ZklSlot *s = &c->t->slots[j];

			if (s->zstate == ZKS_HELD && s->ans.result == ZKL_RESULT_GRANTED && s->req.owner_pid == pid &&
				strcmp(s->node, S->gone_held[g].node) == 0 && key_index(s->key) == key)
				return true;
		}
	return false;
}

/*
 * A backend's commit passes its check beside a node of the key deleted from
 * outside that its cluster still holds: its locks on the key were promised
 * nothing (beside_gone_held), through its commit too.
 */
void
taint_beside_gone(const Cluster *c, const Backend *b)
{
	char		uuid[ZKL_UUID_LEN + 1];
	int			i;
	int			j;

	for (i = 0; i < b->book.n; i++)
	{
		const ZklHold *hk = &b->book.h[i];

		if (!beside_gone_held(c, b->pid, key_index(hk->key)))
			continue;
		slot_uuid(&c->t->slots[hk->slot], uuid);
		taint(uuid);
		for (j = 0; j < b->nspans; j++)
			if (b->spans[j].key == key_index(hk->key))
				taint(b->spans[j].uuid);
	}
}

/*
 * Two backends that each believe they hold conflicting locks of one key,
 * both through nodes that stand at the leader: ZooKeeper's queue orders
 * the two, so the later one holds only by leaning on an earlier node of its
 * backend, and that node is gone (its cluster knows: not beside_gone_held).
 * A later lock must be lost with the node it leans on (zc_core_lose_slot),
 * even when the backend's commits fail anyway (book.c: a lost lock fails
 * every commit until both go); otherwise it is not told, and its node stays.
 * Past its commit check it is kept (its commit was decided), until the
 * commit is over (lose_after_commit).
 */
static void
check_believed(void)
{
	struct
	{
		const Cluster *c;
		const ZklSlot *s;
	}			h[NCLUSTERS * NSLOTS];
	int			nh = 0;
	int			i;
	int			j;

	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].t->nused; j++)
		{
			const ZklSlot *s = &S->c[i].t->slots[j];

			if (s->zstate == ZKS_HELD && s->ans.result == ZKL_RESULT_GRANTED && !s->own.abandoned &&
				!s->own.committing && s->node[0] != '\0' && !slot_tainted(s) &&
				!beside_gone_held(&S->c[i], s->req.owner_pid, key_index(s->key)))
			{
				h[nh].c = &S->c[i];
				h[nh++].s = s;
			}
		}
	for (i = 0; i < nh; i++)
		for (j = i + 1; j < nh; j++)
		{
			const ZklSlot *a = h[i].s;
			const ZklSlot *b = h[j].s;

			if (strcmp(a->key, b->key) != 0 || !conflict(a->req.mode, b->req.mode) ||
				(h[i].c == h[j].c && (a->req.owner_pid == b->req.owner_pid || strcmp(a->node, b->node) == 0)) ||
				!leader_has(h[i].c, a, a->node) || !leader_has(h[j].c, b, b->node))
				continue;
			fail("c%d b%d and c%d b%d both hold %s (%c by node %s, %c by node %s), both nodes standing: "
				 "one leans on a node that is gone and is not told it is lost", h[i].c->id,
				 a->req.owner_pid, h[j].c->id, b->req.owner_pid, a->key, a->req.mode, a->node,
				 b->req.mode, b->node);
		}
}

void
check_step(void)
{
	Holder		h[NCLUSTERS * NBACKENDS * MAXHOLD];
	int			nh = 0;
	int			i;
	int			j;

	for (i = 0; i < S->ncl; i++)
	{
		Cluster    *c = &S->c[i];

		note_grants(c);
		check_liveness(c);
		check_peek_out(c);
		for (j = 0; j < c->t->nused; j++)
		{
			if (c->t->slots[j].req.group != 0 && !c->t->slots[j].own.abandoned)
				check_group(c, j);
			/* a clean stop ended every linger, and no release begins one after (its tombstone waits for it) */
			if (c->stopping && c->t->slots[j].zstate == ZKS_LINGER)
				fail("c%d: slot %d (%s) lingers during a clean stop", c->id, j, c->t->slots[j].key);
		}
		check_one_owner(c);
		for (j = 0; j < S->c[i].nb; j++)
		{
			Backend    *b = &c->b[j];
			int			k;

			/* a request's slot is its owner's until the owner gives it up */
			if (b->st == B_WAIT && b->ngroup == 0 && b->waiting >= 0 &&
				c->t->slots[b->waiting].req.owner_pid != b->pid)
				fail("c%d b%d waits on slot %d, which is no longer its own (state %d)", c->id,
					 b->pid, b->waiting, c->t->slots[b->waiting].zstate);
			b->lost_seen |= any_lost(c, b);
			/* (one past its check commits, whatever happens to its locks meanwhile) */
			if (b->book.n == 0 || (b->st != B_PUBLISH && commit_verdict(c, b) != ZKH_COMMIT))
				continue;
			for (k = 0; k < b->book.n; k++)
			{
				const ZklHold *hk = &b->book.h[k];

				if (zc_holds_holds(hk) == 0 || slot_tainted(&c->t->slots[hk->slot]) ||
					beside_gone_held(c, b->pid, key_index(hk->key)) ||
					(b->st == B_PUBLISH && ((b->gone_in_commit >> key_index(hk->key)) & 1)))
					continue;	/* given up (node kept for the other mode); or a node of its deleted */
				h[nh].cluster = i;
				h[nh].pid = b->pid;
				h[nh].key = key_index(hk->key);
				h[nh].mode = hk->mode;
				h[nh].holders = c->t->slots[hk->slot].req.holders;
				nh++;
			}
		}
	}
	for (i = 0; i < nh; i++)
		for (j = i + 1; j < nh; j++)
			if (h[i].key == h[j].key && conflict(h[i].mode, h[j].mode) &&
				(h[i].cluster != h[j].cluster || h[i].pid != h[j].pid))
				fail("two holders could commit: c%d b%d %c and c%d b%d %c of %s",
					 h[i].cluster, h[i].pid, h[i].mode, h[j].cluster, h[j].pid, h[j].mode,
					 key_name(h[i].key));
	check_semaphore_holders(h, nh);
	check_circles();
	check_lost_told();
	check_believed();
}

/* A listing of key_path read by c: the held nodes deleted from outside it no longer shows. */
void
note_gone_held(Cluster *c, const char *key_path, const ZkmMsg *msg)
{
	int			g;
	int			i;

	for (g = 0; g < S->ngone_held; g++)
	{
		if (S->gone_held[g].cl != c->id || S->gone_held[g].listed_at != 0 ||
			strcmp(S->gone_held[g].key_path, key_path) != 0)
			continue;
		for (i = 0; i < msg->nchildren && strcmp(msg->children[i], S->gone_held[g].node) != 0; i++)
			;
		if (i == msg->nchildren)
			S->gone_held[g].listed_at = zkm_now(S->m);
	}
}

/*
 * The worker c looks up path (sent: reply NULL), or reads the answer: the
 * lookups of a held node deleted from outside, counted from its deletion
 * on (delete_node_of counts those already out), listed without it or not.
 */
void
note_gone_lookup(Cluster *c, const char *path, const ZkmMsg *reply)
{
	int			g;

	for (g = 0; g < S->ngone_held; g++)
	{
		char		node_path[ZKL_PATH_LEN + ZKL_NODE_BUFLEN];

		if (S->gone_held[g].cl != c->id)
			continue;
		snprintf(node_path, sizeof(node_path), "%s/%s", S->gone_held[g].key_path, S->gone_held[g].node);
		if (strcmp(node_path, path) != 0)
			continue;
		if (reply == NULL)
			S->gone_held[g].lookups++;
		else if (S->gone_held[g].lookups > 0)
			S->gone_held[g].lookups--;
		if (reply != NULL && reply->rc == ZNONODE)
			S->gone_held[g].seen_gone = true;
	}
}

/*
 * A held node deleted from outside: once a lookup's answer said it is gone,
 * nothing holds the key through it after the last lookup out has answered
 * (one sent before a local hand-over may answer for a slot freed since:
 * the taker's own look then tells it); once its cluster listed the key
 * without it, it is looked up within the bound of one read.  While a
 * lookup is on its way the clock waits: the answer comes at its server's
 * pace, behind whatever the worker sent before it.
 */
static void
check_gone_held(int64_t now)
{
	int			g;
	int			j;

	for (g = 0; g < S->ngone_held; g++)
	{
		Cluster    *c = &S->c[S->gone_held[g].cl];
		/* one read: it may wait for the cut-off (11/12 of the timeout) and a new connection */
		int64_t		bound = (int64_t) (c->session_timeout + CONNECT_TIMEOUT) * 1000;
		bool		off = c->paused || c->t->conn_state != ZKC_CONNECTED;

		if (S->gone_held[g].listed_at == 0 && !S->gone_held[g].seen_gone)
			continue;
		/* a worker stopped, or a lookup lost with its connection (sent again once back), starts it over */
		if (off)
			S->gone_held[g].lookups = 0;
		if (off && S->gone_held[g].listed_at == 0)
			S->gone_held[g].seen_gone = false;
		if (S->gone_held[g].listed_at != 0 && (off || S->gone_held[g].lookups > 0))
			S->gone_held[g].listed_at = now;
		for (j = 0; j < c->t->nused; j++)
		{
			const ZklSlot *s = &c->t->slots[j];

			if (s->zstate == ZKS_HELD && s->ans.result == ZKL_RESULT_GRANTED &&
				strcmp(s->node, S->gone_held[g].node) == 0 &&
				((S->gone_held[g].seen_gone && S->gone_held[g].lookups == 0) ||
				 (S->gone_held[g].listed_at != 0 && now - S->gone_held[g].listed_at > bound)))
				fail("c%d slot %d (pid %d) holds %s by node %s, deleted from outside (listed without "
					 "it at %.3f s), and is not told it is lost%s", c->id, j, s->req.owner_pid,
					 s->key, s->node, S->gone_held[g].listed_at / 1e6,
					 S->gone_held[g].seen_gone ? " (a lookup's answer said it is gone)" : "");
		}
	}
}

/*
 * Lost locks judged from the model, not from the core's flags: a lock the
 * core holds (granted, HELD) whose node the leader no longer has (its
 * session ended, or the node was deleted) must be known lost within a
 * bound, however the cluster learns it (an expiry, the cut-off clock, a
 * commit's verify).  A worker paused does not count the time; a node
 * deleted from outside is left out (zk_lock promises nothing then).
 */
void
check_lost_told(void)
{
	int64_t		now = zkm_now(S->m);
	int			i;
	int			j;

	if (now < S->lost_at)
		return;
	S->lost_at = now + 50000;
	check_gone_held(now);
	for (i = 0; i < S->ncl; i++)
	{
		Cluster    *c = &S->c[i];
		int64_t		bound = (int64_t) (2 * c->session_timeout + CONNECT_TIMEOUT + 5000) * 1000;

		for (j = 0; j < c->t->nused; j++)
		{
			const ZklSlot *s = &c->t->slots[j];
			char		path[ZKL_PATH_LEN];
			int64_t		owner;
			int64_t		czxid;

			if (s->zstate != ZKS_HELD || s->ans.result != ZKL_RESULT_GRANTED || s->node[0] == '\0' ||
				slot_tainted(s) || c->paused)
			{
				S->gone_since[i][j] = 0;
				continue;
			}
			zc_core_child_path(c->t, s, s->node, path);
			if (zkm_leader_node(S->m, path, &owner, &czxid))
			{
				S->gone_since[i][j] = 0;
				continue;
			}
			if (S->gone_since[i][j] == 0 || S->gone_attempt[i][j] != s->req.attempt)
			{
				S->gone_since[i][j] = now;
				S->gone_attempt[i][j] = s->req.attempt;
			}
			else if (now - S->gone_since[i][j] > bound)
				fail("c%d slot %d (pid %d) holds %s by node %s, gone at the leader since %.3f s, "
					 "and is not told it is lost", c->id, j, s->req.owner_pid, s->key, s->node,
					 S->gone_since[i][j] / 1e6);
		}
	}
}

/* An event about a node under key path arg (or the key node itself). */
bool
key_event(const ZkmMsg *msg, void *arg)
{
	const char *key_path = arg;
	size_t		n = strlen(key_path);

	return msg->kind == ZKM_EVENT && strncmp(msg->path, key_path, n) == 0 &&
		(msg->path[n] == '\0' || msg->path[n] == '/');
}

/* Whether a request of cluster c about s's key, or an event about it, is under way. */
bool
key_news(Cluster *c, const ZklSlot *s, const char *key_path)
{
	int			i;

	for (i = 0; i < c->nouts; i++)
	{
		const Out  *o = &c->outs[i];

		if (o->purpose != P_CALL || (o->keys & (UINT32_C(1) << key_index(s->key))))
			return true;		/* about the key, or not told apart by key */
	}
	return zkm_inbox_any(S->m, c->client, key_event, (void *) key_path);
}

/*
 * A waiter that counts the node it watches as its only blocker is granted
 * on that node's delete without reading its queue again (zc_core_watch_event,
 * delete_result): so that must be true at the leader, by the recipe with
 * the backend's own nodes as they are now.  Nodes ahead of a node only go,
 * and none come ahead of it, so this stays true once it is; a node that
 * changed hands (a hand-over) or a place that changed (a new node) may make
 * it false, and then a grant would pass whatever else blocks it.
 */
void
check_sole_blocker(Cluster *c)
{
	uint64_t	sig = 1469598103934665603ull;
	bool		any = false;
	int			j;

	/* judged again only once the slots changed: the leader's tree cannot make it false */
	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *s = &c->t->slots[j];
		size_t		lw = strlen(s->watch);
		size_t		ln = strlen(s->node);
		uint64_t	v[6] = {(uint64_t) s->zstate << 32 | (uint64_t) s->req.owner_pid, s->req.attempt,
		(uint64_t) s->own.abandoned << 2 | s->zk.watch_sole << 1 | s->zk.rides, 0, 0, 0};
		int			k;

		any |= s->zk.watch_sole && s->zstate == ZKS_QUEUED;
		memcpy(&v[3], s->watch + (lw < 8 ? 0 : lw - 8), lw < 8 ? lw : 8);
		memcpy(&v[4], s->node + (ln < 8 ? 0 : ln - 8), ln < 8 ? ln : 8);
		memcpy(&v[5], s->uuid, 8);
		for (k = 0; k < 6; k++)
			sig = (sig ^ v[k]) * 1099511628211ull;
	}
	if (!any || sig == c->sole_sig)
		return;
	c->sole_sig = sig;
	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *s = &c->t->slots[j];
		ZkrBackend	b;
		char		key_path[ZKL_PATH_LEN];
		char	  **names;
		ZkrChild	kids[128];
		int			nn;
		int			n;
		int			own;
		int			watch;
		int			i;
		ZkrVerdict	v;

		if (s->zstate != ZKS_QUEUED || s->ans.result != ZKL_RESULT_PENDING || s->own.abandoned ||
			!s->zk.watch_sole || s->watch[0] == '\0' || s->zk.rides ||
			s->req.mode == ZKL_MODE_SEMAPHORE || s->node[0] == '\0' || slot_tainted(s))
			continue;
		zc_core_backend_of(&c->core, s, &b);
		zc_core_key_path(c->t, s, key_path);
		nn = zkm_leader_children(S->m, key_path, &names);
		n = zc_recipe_collect((const char *const *) names, nn < 128 ? nn : 128, kids);
		/*
		 * An upgrade of the watched node stands right behind it, so ahead of
		 * us; the watched node stays while it is held (holds.c), and it is
		 * never handed on (zk.first): once the watched node goes, the
		 * upgrade holds nothing.
		 */
		v = zc_recipe_decide(kids, n, s->uuid, &b, &own, &watch);
		for (i = 0; v == ZKR_WAIT && kids[watch].placed && i < watch; i++)
			if (kids[i].seq == kids[watch].anchor && strcmp(kids[i].name, s->watch) == 0)
				watch = i;
		if (v == ZKR_WAIT &&
			(strcmp(kids[watch].name, s->watch) != 0 ||
			 !zc_recipe_sole_blocker(kids, own, watch, &b)))
			fail("c%d slot %d (pid %d) %s %c node %s would be granted once %s goes, "
				 "but at the leader %s blocks it%s", c->id, j, s->req.owner_pid, s->key, s->req.mode,
				 s->node, s->watch, kids[watch].name,
				 strcmp(kids[watch].name, s->watch) == 0 ? ", and so does a node ahead of it" : "");
		zkm_names_free(names, nn);
	}
}

/*
 * A lingering node is no holder: a try-lock, of one key or of many, whose
 * listing shows nothing ahead that blocks it but one node that lingers
 * (ZKS_LINGER in its cluster: nobody holds it) waits for that node to go,
 * within its bound (core_grant.c, linger_wait), and is never refused on
 * that listing before the bound is over.
 */
void
check_try_refusal(Cluster *c, const ZklSlot *s, const ZkrChild *kids, int n)
{
	ZkrBackend	b;
	const ZklSlot *o;
	int			own;
	int			watch;
	int			ci;
	int			pid;
	int			slot;

	zc_core_backend_of(&c->core, s, &b);
	if (zc_recipe_decide(kids, n, s->uuid, &b, &own, &watch) != ZKR_WAIT ||
		!(kids[own].placed || zc_recipe_sole_blocker(kids, own, watch, &b)) ||
		zc_recipe_foreign_ahead(kids, n, own, &b) != 1 ||
		!node_owner(kids[watch].name, &ci, &pid, &slot))
		return;
	o = &S->c[ci].t->slots[slot];
	/* lingering, or lingered and being deleted: nobody's (cohort.c), its data bears the mark */
	if (o->zstate != ZKS_LINGER && !(o->zstate == ZKS_DELETING && o->req.owner_pid == 0 && o->coh.may_linger))
		return;
	fail("c%d slot %d (pid %d) %s try-lock of %s %c refused on a listing where only node %s "
		 "of c%d, which lingers (nobody holds it), is ahead of it", c->id, (int) (s - c->t->slots), s->req.owner_pid,
		 s->req.group != 0 ? "multi-key" : "single-key", s->key, s->req.mode, kids[watch].name, ci);
}
