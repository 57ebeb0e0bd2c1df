/*
 * sim_fair.c — the fairness bound of local hand-over: what each cluster was told
 * of the waiters behind its nodes, and the hand-overs and joins counted
 * since; the same counted from what its server has.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/* ---- the fairness bound of local hand-over ---- */

/* Is name still queued under key k at the leader? */
bool
leader_has(const Cluster *c, const ZklSlot *s, const char *name)
{
	char		path[ZKL_PATH_LEN];
	int64_t		owner;
	int64_t		czxid;

	zc_core_child_path(c->t, s, name, path);
	return zkm_leader_node(S->m, path, &owner, &czxid);
}

/* Cluster c now knows that `waiter` queues behind its node of slot s. */
void
told(Cluster *c, const ZklSlot *s, const char *waiter)
{
	int			k = key_index(s->key);

	/* only a writer waits for readers */
	if (waiter[0] == ZKL_MODE_EXCLUSIVE &&
		(S->rtold_waiter[c->id][k][0] == '\0' || !leader_has(c, s, S->rtold_waiter[c->id][k])))
	{
		snprintf(S->rtold_waiter[c->id][k], ZKL_NODE_BUFLEN, "%s", waiter);
		S->rtold_joins[c->id][k] = 0;
	}
	if (strcmp(S->told_node[c->id][k], s->node) == 0 && S->told_waiter[c->id][k][0] != '\0' &&
		leader_has(c, s, S->told_waiter[c->id][k]))
		return;					/* told already, and that one still waits: keep counting */
	snprintf(S->told_node[c->id][k], ZKL_NODE_BUFLEN, "%s", s->node);
	snprintf(S->told_waiter[c->id][k], ZKL_NODE_BUFLEN, "%s", waiter);
	S->told_passes[c->id][k] = 0;
}

/* A node hand-over may pass, now or once granted (a listing for it tells core who waits). */
bool
passes_node(const Cluster *c, const ZklSlot *s)
{
	return c->core.cohort.handover && s->req.mode != ZKL_MODE_SEMAPHORE && s->req.group == 0 &&
		!s->zk.rides && s->node[0] != '\0' &&
		(s->zstate == ZKS_QUEUED || s->zstate == ZKS_HELD || s->zstate == ZKS_LINGER);
}

/*
 * The first node behind kids[i] that waits for it, or -1: behind an
 * exclusive node, the next; behind a shared one, the first writer (readers
 * behind it hold already).
 */
int
waits_for(const ZkrChild *kids, int n, int i)
{
	int			j;

	for (j = i + 1; j < n; j++)
		if (kids[i].mode != ZKL_MODE_SHARED || kids[j].mode == ZKL_MODE_EXCLUSIVE)
			return j;
	return -1;
}

/* A listing for the slot of tag: core learns who queues behind that slot's node. */
void
told_by_listing(Cluster *c, uint64_t tag, const ZkrChild *kids, int n)
{
	int			idx = zc_core_tag_idx(tag);
	const ZklSlot *s;
	int			i;

	if (idx >= c->t->nused)
		return;
	s = &c->t->slots[idx];
	if (s->zstate == ZKS_FREE || zc_core_tag(idx, s->req.attempt) != tag || !passes_node(c, s))
		return;
	for (i = 0; i + 1 < n; i++)
		if (strcmp(kids[i].name, s->node) == 0)
		{
			if ((i = waits_for(kids, n, i)) >= 0)
				told(c, s, kids[i].name);
			return;
		}
}

/* Keep of kids (in queue order) the nodes made at or before zxid; how many. */
int
made_by(const Cluster *c, const ZklSlot *s, ZkrChild *kids, int n, int64_t zxid)
{
	char		path[ZKL_PATH_LEN];
	int64_t		owner;
	int64_t		czxid;
	int			kept = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		zc_core_child_path(c->t, s, kids[i].name, path);
		if (zkm_leader_node(S->m, path, &owner, &czxid) && czxid <= zxid)
			kids[kept++] = kids[i];
	}
	return kept;
}

/*
 * A child event on a key: core reads the key again before any hand-over,
 * and that read shows at least the nodes made up to the change that fired
 * the event (its server may not have applied later ones yet).
 */
void
told_by_event(Cluster *c, const char *path, int64_t zxid)
{
	int			j;

	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *s = &c->t->slots[j];
		char		key_path[ZKL_PATH_LEN];
		char	  **names;
		ZkrChild	kids[128];
		int			nn;
		int			n;
		int			i;

		if (!passes_node(c, s))
			continue;
		zc_core_key_path(c->t, s, key_path);
		if (strcmp(key_path, path) != 0)
			continue;
		nn = zkm_leader_children(S->m, key_path, &names);
		n = zc_recipe_collect((const char *const *) names, nn < 128 ? nn : 128, kids);
		n = made_by(c, s, kids, n, zxid);
		for (i = 0; i + 1 < n; i++)
			if (strcmp(kids[i].name, s->node) == 0)
			{
				if ((i = waits_for(kids, n, i)) >= 0)
					told(c, s, kids[i].name);
				break;
			}
		zkm_names_free(names, nn);
	}
}

/*
 * Every node of a cluster has one slot (nodes pass between slots: cohort.c);
 * riders own none, and the node a rider holds through has its owner's slot.
 */
void
check_one_owner(const Cluster *c)
{
	int			i;
	int			j;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *s = &c->t->slots[i];
		bool		owned = false;

		if (s->zk.rides && s->zstate == ZKS_HELD)
		{
			for (j = 0; j < c->t->nused && !owned; j++)
			{
				const ZklSlot *o = &c->t->slots[j];

				owned = o->zstate == ZKS_HELD && !o->zk.rides && o->zk.root_id == s->zk.root_id &&
					strcmp(o->key, s->key) == 0 && strcmp(o->node, s->node) == 0;
			}
			if (!owned)
				fail("c%d slot %d rides node %s of %s, which no slot holds", c->id, i, s->node, s->key);
		}

		if ((s->zstate != ZKS_QUEUED && s->zstate != ZKS_HELD && s->zstate != ZKS_LINGER &&
			 s->zstate != ZKS_DELETING) || s->zk.rides)
			continue;
		for (j = i + 1; j < c->t->nused; j++)
		{
			const ZklSlot *o = &c->t->slots[j];

			if ((o->zstate == ZKS_QUEUED || o->zstate == ZKS_HELD || o->zstate == ZKS_LINGER ||
				 o->zstate == ZKS_DELETING) && !o->zk.rides && strcmp(o->node, s->node) == 0 &&
				strcmp(o->key, s->key) == 0)
				fail("c%d node %s of %s owned by slots %d and %d", c->id, s->node, s->key, i, j);
		}
	}
}

/* Whether node a stands ahead of node b in their key's queue. */
bool
ahead_of(const char *a, const char *b)
{
	ZkrChild	ca;
	ZkrChild	cb;

	return zc_recipe_parse_child(a, &ca) && zc_recipe_parse_child(b, &cb) && zc_recipe_seq_cmp(ca.seq, cb.seq) < 0;
}

/*
 * Fairness from the ground truth, not from what the core was told: once
 * the cluster's own server has another cluster's node queued behind the node being passed
 * (so a child watch armed there has fired, and any listing there shows
 * it), at most the limit more hand-overs of that node, or joins of the
 * key's nodes ahead of that writer, follow: those decided while a message
 * that tells of it is still unread are not counted.
 */
/* The cluster that made a node: its name carries the cluster's number (create_path). */
int
name_cluster(const char *name)
{
	return (int) strtol(name + 2 + ZKL_UUID_LEN + 1, NULL, 10) - 1;
}

/* A message that tells of the waiter: a child event of the key, or a listing showing it. */
bool
tells(const ZkmMsg *msg, void *arg)
{
	const News *n = arg;
	int			i;

	if (msg->kind == ZKM_EVENT)
		return msg->child && strcmp(msg->path, n->key_path) == 0;
	for (i = 0; msg->kind == ZKM_REPLY && msg->req == ZKM_CHILDREN && i < msg->nchildren; i++)
		if (strcmp(msg->children[i], n->waiter) == 0)
			return true;
	return false;
}

void
check_handover_truth(Cluster *c, const ZklSlot *s)
{
	int			k = key_index(s->key);
	int			server = c->client >= 0 ? zkm_client_server(S->m, c->client) : -1;
	char		key_path[ZKL_PATH_LEN];
	char	  **names;
	ZkrChild	kids[128];
	int			nn;
	int			n;
	int			i;
	int			w = -1;

	/* a session the leader ended: its nodes go with it, and nobody waits behind them for long */
	if (server < 0 || !zkm_session_alive(S->m, c->t->session_id))
		return;
	zc_core_key_path(c->t, s, key_path);
	nn = zkm_server_children(S->m, server, key_path, &names);
	n = zc_recipe_collect((const char *const *) names, nn < 128 ? nn : 128, kids);
	/*
	 * The first node of another cluster that waits for s's node (the bound
	 * is across clusters; FIFO judges this cluster's own order).
	 */
	for (i = 0; i < n && w < 0; i++)
		if (strcmp(kids[i].name, s->node) == 0)
		{
			int			j;

			for (j = waits_for(kids, n, i); j >= 0 && j < n && w < 0; j++)
				if ((kids[i].mode != ZKL_MODE_SHARED || kids[j].mode == ZKL_MODE_EXCLUSIVE) &&
					name_cluster(kids[j].name) != c->id)
					w = j;
		}
	if (w >= 0)
	{
		News		news = {key_path, kids[w].name};
		char	   *seen_node = s->zk.rides ? S->truth_node[c->id][k] : S->truth_xnode[c->id][k];
		char	   *seen_waiter = s->zk.rides ? S->truth_rwaiter[c->id][k] : S->truth_waiter[c->id][k];
		int		   *passes = s->zk.rides ? &S->truth_joins[c->id][k] : &S->truth_passes[c->id][k];

		/* the readers' bound is the key's: any of its nodes ahead of that writer */
		if ((!s->zk.rides && strcmp(seen_node, s->node) != 0) || strcmp(seen_waiter, kids[w].name) != 0)
		{
			snprintf(seen_node, ZKL_NODE_BUFLEN, "%s", s->node);
			snprintf(seen_waiter, ZKL_NODE_BUFLEN, "%s", kids[w].name);
			*passes = 0;
		}
		/* decided while the news was still on its way to the worker: not counted */
		if (!zkm_inbox_any(S->m, c->client, tells, &news) && ++*passes > S->handover_limit)
			fail("fairness: c%d %s %s of %s %d times since its server has waiter %s (limit %d)",
				 c->id, s->zk.rides ? "let readers join ahead of" : "handed node", s->node, s->key,
				 *passes, kids[w].name, S->handover_limit);
	}
	zkm_names_free(names, nn);
}

/*
 * A writer's hand-over goes to the local writer waiting longest for the
 * key (in the model's time: a cluster's wall clock may step): one waiting
 * for it (COHORT), or one that asked and is not planned yet (NEW, a lock
 * of one key: a lingering node goes to the one that asked first, whether
 * the worker passes it or a backend takes it itself).  Two that asked at
 * one model instant (one during the worker's sends, one right after) are
 * told apart by the note_grants that saw each queue.
 */
void
check_local_fifo(Cluster *c, const ZklSlot *s)
{
	int			me = (int) (s - c->t->slots);
	int			j;

	if (s->zk.rides || s->req.mode != ZKL_MODE_EXCLUSIVE)
		return;
	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *o = &c->t->slots[j];

		if (j != me && !o->own.abandoned && o->req.mode == ZKL_MODE_EXCLUSIVE &&
			(o->zstate == ZKS_COHORT || (o->zstate == ZKS_NEW && o->req.group == 0 &&
										 o->req.owner_pid != s->req.owner_pid)) &&
			o->zk.root_id == s->zk.root_id && strcmp(o->key, s->key) == 0 &&
			(S->queued_model[c->id][j] < S->queued_model[c->id][me] ||
			 (S->queued_model[c->id][j] == S->queued_model[c->id][me] &&
			  S->queued_note[c->id][j] < S->queued_note[c->id][me])))
			fail("local FIFO: c%d handed %s to slot %d (b%d, waiting since %.3f) past slot %d (b%d, since %.3f)",
				 c->id, s->key, me, s->req.owner_pid, S->queued_model[c->id][me] / 1e6, j, o->req.owner_pid,
				 S->queued_model[c->id][j] / 1e6);
	}
}

/* A grant by hand-over: within the bound. */
void
check_handover(Cluster *c, const ZklSlot *s)
{
	int			k = key_index(s->key);
	const char *w = S->rtold_waiter[c->id][k];

	handovers_seen++;
	rides_seen += s->zk.rides;
	check_handover_truth(c, s);
	check_local_fifo(c, s);
	/* a reader joining any of the cluster's nodes ahead of a writer it was told of */
	if (s->zk.rides && w[0] != '\0' && leader_has(c, s, w) && ahead_of(s->node, w) &&
		++S->rtold_joins[c->id][k] > S->handover_limit)
		fail("fairness: c%d let %d readers join its nodes of %s ahead of waiter %s it was told of (limit %d)",
			 c->id, S->rtold_joins[c->id][k], s->key, w, S->handover_limit);
	if (strcmp(S->told_node[c->id][k], s->node) != 0 || !leader_has(c, s, S->told_waiter[c->id][k]))
		return;
	if (++S->told_passes[c->id][k] > S->handover_limit)
		fail("fairness: c%d handed node %s of %s over %d times after it was told of waiter %s (limit %d)",
			 c->id, s->node, s->key, S->told_passes[c->id][k], S->told_waiter[c->id][k],
			 S->handover_limit);
}

/*
 * The slot a listing of its key is for (requests.c's contexts are core
 * tags), before its completion runs; NULL: another listing (presence.c's,
 * orphans.c's, a recovery's of a slot moved on).
 */
const ZklSlot *
listed_slot(const Cluster *c, const Out *o)
{
	int			idx = zc_core_tag_idx(o->tag);
	const ZklSlot *s;
	char		key_path[ZKL_PATH_LEN];

	if (o->kind != ZKM_CHILDREN || o->call.kind != SC_STRINGS_STAT || idx >= c->t->nused)
		return NULL;
	s = &c->t->slots[idx];
	if (s->zstate == ZKS_FREE || zc_core_tag(idx, s->req.attempt) != o->tag)
		return NULL;
	zc_core_key_path(c->t, s, key_path);
	return strcmp(key_path, o->path) == 0 ? s : NULL;
}

/*
 * A reply: its completion runs (the shipped worker file's), with what the
 * checks need from it taken first: what a listing tells core of who queues
 * behind our node (the fairness bound), and whether it may refuse a try.
 */
void
on_reply(Cluster *c, const ZkmMsg *msg)
{
	Out			o;
	ZkrChild	kids[64];
	int			n = 0;
	const ZklSlot *s;
	bool		may_wait = false;

	if (!out_take(c, msg->tag, &o) || o.purpose != P_CALL)
		return;
	if (o.kind == ZKM_CREATE || o.kind == ZKM_DELETE || o.kind == ZKM_MULTI_OP)
		trace("c%d reply %d rc %d %s", c->id, o.kind, msg->rc, msg->path);
	if ((s = listed_slot(c, &o)) != NULL)
	{
		n = msg->rc == ZOK ? zc_recipe_collect((const char *const *) msg->children,
											  msg->nchildren < 64 ? msg->nchildren : 64, kids) : 0;
		if (msg->rc == ZOK)
			told_by_listing(c, o.tag, kids, n);
		/* the slot's own listing, of a try still within its linger bound (none yet, or not over) */
		may_wait = s->zstate == ZKS_QUEUED && s->req.nowait && s->ans.result == ZKL_RESULT_PENDING &&
			(s->zk.try_until == 0 || c_mono(c) < s->zk.try_until);
	}
	/* a listing the worker reads for a request still placed on the key */
	if (s != NULL && msg->rc == ZOK &&
		(s->zstate == ZKS_QUEUED || s->zstate == ZKS_HELD || s->zstate == ZKS_LINGER))
		note_gone_held(c, o.path, msg);
	if (o.watched && msg->rc == ZOK)
		watch_keep(c, &o);
	enter(c);
	simzk_answer(&o.call, msg, 0);
	if (o.kind == ZKM_EXISTS)
		note_gone_lookup(c, o.path, msg);
	if (may_wait && msg->rc == ZOK && s->ans.result == ZKL_RESULT_NOT_GRANTED)
		check_try_refusal(c, s, kids, n);
}

void
on_event(Cluster *c, const ZkmMsg *msg)
{
	if (msg->type == ZKM_EV_CHILD)
		told_by_event(c, msg->path, msg->zxid);
	/* the watcher and context of the shipped file that set it (watch_tag), if the library kept it */
	if (watch_take(c, msg))
		watcher_call(c, msg->tag, msg->type, ZOO_CONNECTED_STATE, msg->path);
}

/* The worker reads one message from its connection. */
bool
handle_next(Cluster *c)
{
	ZkmMsg	   *msg;

	if (c->client < 0 || c->paused || (msg = zkm_pop(S->m, c->client)) == NULL)
		return false;
	/* worker.c: data read from the server, the connection up after it (not the library's own news) */
	if (!msg->local && zkm_connected(S->m, c->client))
		*c->last_heard = c->heard_at = c_mono(c);
	if (msg->kind == ZKM_STATE)
		on_state(c, msg);
	else if (msg->kind == ZKM_EVENT)
		on_event(c, msg);
	else
		on_reply(c, msg);
	zkm_msg_free(msg);
	note_grants(c);
	check_sole_blocker(c);
	check_pair_upgrades(c);
	return true;
}

/* Messages reach the worker's socket: it wakes, reads them and plans. */
bool
deliver(Cluster *c)
{
	/* (nor while it waits on a handle of its own: busy, its clocks moved on by that wait) */
	if (c->client < 0 || c->paused || c->in_turn || zkm_now(S->m) < c->busy_until ||
		!zkm_has_message(S->m, c->client))
		return false;
	worker_read(c, 1);
	/* a backend may claim between the worker's read and its plan (take_here.c) */
	if (S->linger_ms > 0 && chance(30))
		backend_begins_now(c);
	if (c->stopping)
		stop_turn(c);			/* worker.c's stop: a turn only when its step says so */
	else
		plan_turn(c);
	return true;
}
