/*
 * sim_aims.c — faults aimed at a moment a seed's shape makes rare: a
 * gap the clock-rate rule closes, a new session's first listing, a
 * session of a reused id beside its old tombstone, orphans, the wall
 * clock stepping back behind a local writer, a held node deleted while
 * another lock of its backend leans on it or its barrier read is out.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/*
 * SIM_GAP's moment: the first cluster has a backend holding locks in its
 * transaction while a backend of another cluster waits.
 */
bool
gap_aimed(void)
{
	bool		holds = false;
	bool		waits = false;
	int			i;
	int			j;

	for (j = 0; j < S->c[0].nb; j++)
		holds |= S->c[0].b[j].st == B_HOLD && S->c[0].b[j].book.n > 0;
	for (i = 1; i < S->ncl; i++)
		for (j = 0; j < S->c[i].nb; j++)
			waits |= S->c[i].b[j].st == B_WAIT;
	return holds && waits;
}

/* A cluster other than b with a backend holding locks in its transaction, connected (-1: none). */
static int
holder_cluster(int b)
{
	int			i;
	int			j;

	for (i = 0; i < S->ncl; i++)
		for (j = 0; i != b && j < S->c[i].nb; j++)
			if (S->c[i].b[j].st == B_HOLD && S->c[i].b[j].book.n > 0 && S->c[i].client >= 0 &&
				S->c[i].t->conn_state == ZKC_CONNECTED)
				return i;
	return -1;
}

/*
 * A new session's first listing, aimed (one seed in five, by its number):
 * cluster B's session ends; once its new session is up, every listing of
 * the sessions is refused for longer than B's lock-delay, so B's first
 * listing comes after the pause its session's start began has run out;
 * just before it does, a cluster holding a lock goes silent and its session
 * ends at the leader.  That first listing never shows the dead session: it
 * must pause all the same (lock_delay.c), or B grants while the dead
 * session's holder may still commit.
 */
void
first_listing_tend(void)
{
	int64_t		now = zkm_now(S->m);
	Cluster    *b = &S->c[S->aim.fl_b];
	int			a;

	if (S->quiet || S->aim.fl_count >= 3)
		return;
	if (S->aim.fl_phase == 0 && now >= S->aim.fl_at)
	{
		S->aim.fl_b = rnd_int(S->ncl);
		b = &S->c[S->aim.fl_b];
		S->aim.fl_at = now + 1000000 + rnd_int(4000000);
		if (b->client < 0 || b->t->session_id == 0 || holder_cluster(S->aim.fl_b) < 0)
			return;
		trace("fault (aimed): c%d session killed at the leader: its next one lists late", S->aim.fl_b);
		S->aim.fl_session = b->t->session_id;
		zkm_kill(S->m, b->client);
		S->aim.fl_phase = 1;
	}
	else if (S->aim.fl_phase == 1 && now >= S->aim.fl_at)
		S->aim.fl_phase = 0;		/* no new session in time: another try later */
	else if (S->aim.fl_phase == 1 && b->t->session_id != S->aim.fl_session && b->t->session_id != 0 &&
			 b->t->conn_state == ZKC_CONNECTED)
	{
		int64_t		us = (int64_t) zc_table_lock_delay_ms(b->lock_delay, b->proof_bound) * 1000 + 200000;

		trace("fault (aimed): an ACL on %s refuses us for %.3f s", SESSIONS, us / 1e6);
		zkm_refuse(S->m, SESSIONS, us);
		S->aim.fl_at = now + us - 50000;
		S->aim.fl_phase = 2;
	}
	else if (S->aim.fl_phase == 2 && now >= S->aim.fl_at)
	{
		if ((a = holder_cluster(S->aim.fl_b)) >= 0)
		{
			trace("fault (aimed): c%d link goes silent and its session is killed at the leader", a);
			zkm_silence(S->m, S->c[a].client);
			zkm_kill(S->m, S->c[a].client);
			S->aim.fl_count++;
		}
		S->aim.fl_phase = 0;
		S->aim.fl_at = now + 5000000;
	}
}

/* Whether the leader has a tombstone of session id under another nonce than `nonce`. */
static bool
old_tombstone(int64_t id, uint64_t nonce)
{
	char	  **names;
	bool		found = false;
	int			n = zkm_leader_children(S->m, SESSIONS, &names);
	int			i;

	for (i = 0; i < n && !found; i++)
	{
		ZklSessionName t;

		found = zc_delay_parse_name(names[i], &t) && t.kind != ZKL_NAME_PRESENCE && t.id == id &&
			t.nonce != nonce;
	}
	zkm_names_free(names, n);
	return found;
}

/*
 * In the seeds that hand ended sessions' ids out again: a cluster whose
 * session took an id whose earlier session's tombstone is still listed,
 * and that holds a lock in a transaction, goes silent and its session
 * ends at the leader.  The tombstone speaks for the earlier session only
 * (its nonce): the others must pause for lock-delay, or one grants while
 * the silent holder may still commit.
 */
void
reused_tend(void)
{
	int64_t		now = zkm_now(S->m);
	int			i;
	int			k;

	if (S->quiet || now < S->aim.reused_at)
		return;
	S->aim.reused_at = now + 20000;
	for (k = 0; k < 3 && S->aim.reused_killed[k] != 0; k++)
		;
	for (i = 0; k < 3 && i < S->ncl; i++)
	{
		Cluster    *c = &S->c[i];
		int			j;

		if (c->client < 0 || c->t->session_id == 0 || c->t->conn_state != ZKC_CONNECTED ||
			(k > 0 && S->aim.reused_killed[k - 1] == c->t->session_id))
			continue;
		for (j = 0; j < c->nb && !(c->b[j].st == B_HOLD && c->b[j].book.n > 0); j++)
			;
		if (j == c->nb || !old_tombstone(c->t->session_id, *c->session_nonce))
			continue;
		trace("fault (aimed): c%d, on reused id %" PRIx64 " beside its old tombstone, goes silent and "
			  "its session is killed at the leader", i, (uint64_t) c->t->session_id);
		S->aim.reused_killed[k] = c->t->session_id;
		zkm_silence(S->m, c->client);
		zkm_kill(S->m, c->client);
		return;
	}
}

/*
 * In the seeds whose new sessions mostly take their owner's last id (as
 * after a member's restart): a backend's transaction is to give up a
 * session-level lock it holds.  Now and then it first stays idle in it past
 * every cluster's lock-delay (own_id_unlock_plan), and as it begins to,
 * its session ends at the leader and its worker stops a little longer
 * (own_id_unlock_tend): another cluster may take the key meanwhile.  The
 * backend then gives the lock up and commits once its worker is back on a
 * new session, very likely of the same id.  That transaction ran under a
 * lock the old session lost: it must not commit on the new session's proof
 * (sessions are told apart by their tag, not their id:
 * zc_table_session_tag).
 */
void
own_id_unlock_plan(Backend *b)
{
	int64_t		hold_ms = 0;
	int			i;

	if (!S->aim.aim_own_id || S->quiet || b->napp == 0 || S->aim.own_id_count >= 3)
		return;
	for (i = 0; i < S->ncl; i++)
	{
		int64_t		ms = zc_table_lock_delay_ms(S->c[i].lock_delay, S->c[i].proof_bound);

		if (ms > hold_ms)
			hold_ms = ms;
	}
	add_pause(b);
	b->acts[b->nacts - 1].pause_us = hold_ms * 1000 + 500000 + rnd_int(1000000);
	b->acts[b->nacts - 1].own_id_kill = true;
}

void
own_id_unlock_tend(Backend *b, int64_t hold)
{
	Cluster    *c = b->cl;

	if (S->quiet || b->napp == 0 || c->paused || c->client < 0 || c->t->session_id == 0 ||
		S->aim.own_id_count >= 3)
		return;
	S->aim.own_id_count++;
	trace("fault (aimed): c%d b%d is to give up a session-level lock in %.3f s: its session is killed at "
		  "the leader", c->id, b->pid, hold / 1e6);
	zkm_kill(S->m, c->client);
	pause_worker(c, zkm_now(S->m) + hold + 200000 + rnd_int(500000));
}

/*
 * zk_lock.test_orphan on for 0.3-1.5 s in one cluster now and then (one
 * seed in seven, by its number): before each lock node, requests.c makes
 * one of the session's that no request owns, as a create applied after its
 * lookup leaves; a waiter it blocks must find it ours and delete it
 * (orphans.c), or wait for the session's life.
 */
void
orphans_tend(void)
{
	int64_t		now = zkm_now(S->m);

	if (S->quiet || now < S->aim.orph_at)
		return;
	S->aim.orph_cl = rnd_int(S->ncl);
	S->aim.orph_until = now + 300000 + rnd_int(1200000);
	S->aim.orph_at = now + 3000000 + rnd_int(5000000);
	trace("fault (aimed): c%d makes an orphan ahead of each request for %.3f s", S->aim.orph_cl,
		  (S->aim.orph_until - now) / 1e6);
}

/*
 * A local writer that will wait for a hand-over (another backend of c holds
 * the key exclusive): now and then the wall clock steps back right after it
 * asked, so that the next local writer asks "earlier" by the wall clock
 * though later in truth.  Local order must not follow the wall clock.
 */
void
wall_step_behind(Cluster *c, int idx)
{
	const ZklSlot *s = &c->t->slots[idx];
	int			j;

	if (s->req.mode != ZKL_MODE_EXCLUSIVE || !chance(25))
		return;
	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *o = &c->t->slots[j];

		if (j != idx && o->zstate == ZKS_HELD && o->req.mode == ZKL_MODE_EXCLUSIVE &&
			o->req.owner_pid != s->req.owner_pid && strcmp(o->key, s->key) == 0)
		{
			c->wall_jump -= 1000000 + rnd_int(2000000);
			trace("fault: c%d wall clock steps back to %+.3f s behind slot %d's request", c->id,
				  c->wall_jump / 1e6, idx);
			return;
		}
	}
}

/*
 * Whether o, another lock of s's backend on s's key, was granted past other
 * backends' waiters (not at the head): it may have passed them for s's node.
 */
static bool
leans_on(const ZklSlot *o, const ZklSlot *s)
{
	return o != s && o->zstate == ZKS_HELD && !o->zk.at_head && o->req.owner_pid == s->req.owner_pid &&
		strcmp(o->key, s->key) == 0;
}

/* Whether another lock of s's backend leans on s's node. */
static bool
leaned_on(const Cluster *c, const ZklSlot *s)
{
	int			j;

	for (j = 0; j < c->t->nused; j++)
		if (leans_on(&c->t->slots[j], s))
			return true;
	return false;
}

/*
 * Someone deletes a held or lingering node behind its cluster's back.  Its
 * holders are promised nothing (tainted, by the node's uuid: riders hold
 * through it too, and a hand-over's taker takes its giver's uuid), except
 * that the cluster, once it reads the key's listing without the node,
 * learns it is lost; nor are its backend's other locks on the key until
 * then (beside_gone_held).  A held node at the head that another lock of
 * its backend leans on (leaned_on) goes first.
 */
/* Whether s's node was deleted from outside already. */
static bool
already_gone(const Cluster *c, const ZklSlot *s)
{
	int			g;

	for (g = 0; g < S->ngone_held; g++)
		if (S->gone_held[g].cl == c->id && strcmp(S->gone_held[g].node, s->node) == 0)
			return true;
	return false;
}

/* A held node at the head, not deleted yet, that another lock of its backend leans on. */
static bool
leaned_target(const Cluster *c, const ZklSlot *s)
{
	return s->zstate == ZKS_HELD && s->ans.result == ZKL_RESULT_GRANTED && s->zk.at_head &&
		!already_gone(c, s) && leaned_on(c, s);
}

/* c's lookups of path on their way (their answers are counted: note_gone_lookup). */
static int
lookups_out(const Cluster *c, const char *path)
{
	int			n = 0;
	int			i;

	for (i = 0; i < c->nouts; i++)
		n += c->outs[i].purpose == P_CALL && c->outs[i].kind == ZKM_EXISTS &&
			strcmp(c->outs[i].path, path) == 0;
	return n;
}

/* The held or lingering node of slot s deleted from outside; its holders are promised nothing now. */
static bool
delete_node_of(Cluster *c, const ZklSlot *s)
{
	char		uuid[ZKL_UUID_LEN + 1];
	char		path[ZKL_PATH_LEN];
	Backend    *b = owner_of(c, s);

	if (S->ntainted >= 64 || S->ngone_held >= 16 || already_gone(c, s) ||
		s->node[0] == '\0' || !zc_recipe_uuid_of(s->node, uuid))
		return false;
	snprintf(S->tainted[S->ntainted++], ZKL_UUID_LEN + 1, "%s", uuid);
	/* past its check, its commit goes on without the node: its locks of the key lean on nothing */
	if (b != NULL && b->st == B_PUBLISH)
		b->gone_in_commit |= UINT32_C(1) << key_index(s->key);
	S->gone_held[S->ngone_held].cl = c->id;
	zc_core_key_path(c->t, s, S->gone_held[S->ngone_held].key_path);
	snprintf(S->gone_held[S->ngone_held].node, ZKL_NODE_BUFLEN, "%s", s->node);
	S->gone_held[S->ngone_held].listed_at = 0;
	S->gone_held[S->ngone_held].seen_gone = false;
	zc_core_child_path(c->t, s, s->node, path);
	S->gone_held[S->ngone_held++].lookups = lookups_out(c, path);
	trace("fault: %s (%s) deleted behind its owner's back", path, s->zstate == ZKS_LINGER ? "lingering" : "held");
	zkm_admin_delete(S->m, path);
	return true;
}

bool
delete_holder(Cluster *c)
{
	int			j;
	bool		leaned = false;

	for (j = 0; j < c->t->nused && !leaned; j++)
		leaned = leaned_target(c, &c->t->slots[j]);
	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *s = &c->t->slots[j];

		if (!(s->zstate == ZKS_HELD && s->ans.result == ZKL_RESULT_GRANTED) && s->zstate != ZKS_LINGER)
			continue;
		if (leaned && !leaned_target(c, s))
			continue;
		if (delete_node_of(c, s))
			return true;
	}
	return false;
}

/*
 * In the seeds that delete held nodes, a lock granted while the read of its
 * own node behind its blocker's delete event is still out (the blocker's
 * delete reply granted it first) has its node deleted then, one a second at
 * most: that read's "no node" must lose the lock at once, or, once a local
 * waiter took the node, the taker's own look (core_reply.c's barrier reply,
 * cohort.c's take_node).
 */
void
barrier_tend(void)
{
	int64_t		now = zkm_now(S->m);
	int			i;
	int			j;

	if (S->quiet || now < S->aim.barrier_at)
		return;
	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].t->nused; j++)
		{
			const ZklSlot *s = &S->c[i].t->slots[j];

			if (s->zstate == ZKS_HELD && s->ans.result == ZKL_RESULT_GRANTED && s->zk.barrier_out &&
				delete_node_of(&S->c[i], s))
			{
				S->aim.barrier_at = now + 1000000;
				return;
			}
		}
}

/* The backend of c whose pid owns s (NULL: none). */
Backend *
owner_of(Cluster *c, const ZklSlot *s)
{
	int			j = backend_of_pid(c, s->req.owner_pid);

	return j >= 0 ? &c->b[j] : NULL;
}

/* Whether name is the node of a slot of c that pid owns. */
static bool
node_of_pid(const Cluster *c, int pid, const char *name)
{
	int			j;

	for (j = 0; j < c->t->nused; j++)
		if (c->t->slots[j].req.owner_pid == pid && strcmp(c->t->slots[j].node, name) == 0)
			return true;
	return false;
}

/*
 * The nodes of s's key at the leader that stand after node `from` and
 * before node `to`, in the recipe's order: whether `each` holds for one of
 * them, `to` standing too.
 */
bool
leader_between(const Cluster *c, const ZklSlot *s, const char *from, const char *to,
			   bool (*each) (const Cluster *c, const ZkrChild *kid, const ZklSlot *arg), const ZklSlot *arg)
{
	char		key_path[ZKL_PATH_LEN];
	char	  **names = NULL;
	ZkrChild	kids[64];
	int			n;
	int			k;
	int			i;
	bool		after = false;
	bool		found = false;

	zc_core_key_path(c->t, s, key_path);
	n = zkm_leader_children(S->m, key_path, &names);
	k = zc_recipe_collect((const char *const *) names, n < 64 ? n : 64, kids);
	for (i = 0; i < k && strcmp(kids[i].name, to) != 0; i++)
	{
		found = found || (after && each(c, &kids[i], arg));
		after |= strcmp(kids[i].name, from) == 0;
	}
	zkm_names_free(names, n);
	return found && i < k;
}

/* A node of another backend than o's that conflicts with o: o, granted behind it, passed it. */
static bool
passed_by(const Cluster *c, const ZkrChild *kid, const ZklSlot *o)
{
	return zc_kind_conflict(kid->mode, o->req.mode) && !node_of_pid(c, o->req.owner_pid, kid->name);
}

/*
 * For half the nodes (by their name: the choice holds from one look to the
 * next), the moment waited for is the one after their own lock was
 * released while a waiter the later lock passed still waits: the node is
 * kept while the later lock is held (holds.c), and only its loss stands
 * between that lock and the waiter.  Whether s's node is aimed at now.
 */
static bool
leaned_moment(Cluster *c, const ZklSlot *s)
{
	uint64_t	h = S->seed;
	const char *p;
	Backend    *b = owner_of(c, s);
	bool		released = b != NULL;
	int			i;

	for (p = s->node; *p; p++)
		h = h * 31 + (unsigned char) *p;
	if (h % 2 == 0)
		return true;
	/* (its transaction ended, or an unlock gave it up) */
	for (i = 0; b != NULL && i < b->book.n; i++)
		released &= b->book.h[i].slot != (int) (s - c->t->slots) || zc_holds_holds(&b->book.h[i]) == 0;
	for (i = 0; released && i < c->t->nused; i++)
		if (leans_on(&c->t->slots[i], s) &&
			leader_between(c, s, s->node, c->t->slots[i].node, passed_by, &c->t->slots[i]))
			return true;
	return false;
}

/*
 * Or the moment its backend is past its commit check, with a session-level
 * lock leaning on it past such a waiter: a loss then spares the backend's
 * locks (its commit goes on, zc_core_lose_slot), but the session-level one
 * outlives the commit and must be lost once it is over.  Only a backend
 * that holds no other key: its commit is then drawn out (draw_out_commit),
 * and it is promised nothing on this one (gone_in_commit).
 */
/* An idle backend of c outside any session-level episode (-1: none). */
static int
idle_backend(const Cluster *c)
{
	int			i;

	for (i = 0; i < c->nb; i++)
		if (c->b[i].st == B_IDLE && c->b[i].sess_key < 0)
			return i;
	return -1;
}

static bool
committing_moment(Cluster *c, const ZklSlot *s)
{
	const Backend *b = owner_of(c, s);
	int			i;

	/* (and another backend that may ask the key: draw_out_commit) */
	if (b == NULL || b->st != B_PUBLISH || idle_backend(c) < 0)
		return false;
	for (i = 0; i < b->book.n; i++)
		if (strcmp(b->book.h[i].key, s->key) != 0)
			return false;
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (leans_on(o, s) && (o->own.scope & ZKL_SCOPE_SESSION) &&
			leader_between(c, s, s->node, o->node, passed_by, o))
			return true;
	}
	return false;
}

/*
 * The committing moment: b's commit takes long (a remote one's), and c
 * learns of the deletion during it: with local hand-over off (a reload),
 * another backend's request for the key reads the key's queue.
 */
static void
draw_out_commit(Cluster *c, Backend *b, int key)
{
	int64_t		now = zkm_now(S->m);

	b->next_at = b->next_at > now + 2000000 ? b->next_at : now + 2000000;
	c->core.cohort.handover = false;
	c->b[idle_backend(c)].next_at = now;	/* (committing_moment found one) */
	c->burst_key = key;
	c->burst_mode = ZKL_MODE_EXCLUSIVE;
	c->burst_until = now + 100000;
	trace("aim: c%d b%d's commit drawn out, local hand-over off, another backend asks the key", c->id, b->pid);
}

/*
 * In the seeds that delete held nodes, a node another lock of its backend
 * leans on is deleted soon after that lock's grant, or after its own lock's
 * release (leaned_moment), or during its backend's commit
 * (committing_moment), one a second at most, and its cluster's
 * connection is reset, so that it reads the key again: it must lose both
 * before another cluster's waiter it passed may commit beside the other
 * (zc_core_lose_slot).  The backend's transaction stays open a while, so
 * that the later lock is still held when the cluster learns it.  (The book
 * keeps a released lock beside a later one of its key, and a loss of it
 * fails every commit until both go: book.c.  So a later lock kept past the
 * loss, bite 83, lets no two holders commit; check_believed sees it.)
 */
void
leaned_on_tend(void)
{
	int64_t		now = zkm_now(S->m);
	int			i;
	int			j;

	if (S->quiet || now < S->aim.leaned_at)
		return;
	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].t->nused; j++)
		{
			Cluster    *c = &S->c[i];
			Backend    *b = owner_of(c, &c->t->slots[j]);

			bool		committing;

			if (!leaned_target(c, &c->t->slots[j]))
				continue;
			committing = committing_moment(c, &c->t->slots[j]);
			if (!committing && !leaned_moment(c, &c->t->slots[j]))
				continue;
			S->aim.leaned_at = now + 1000000;
			if (b != NULL)
				b->stay_until = now + 1500000;
			/* a commit that takes long (a remote one's), so that the cluster learns during it */
			if (committing)
				draw_out_commit(c, b, key_index(c->t->slots[j].key));
			if (delete_holder(c) && c->client >= 0)
			{
				trace("fault (aimed): and c%d connection reset", i);
				zkm_reset(S->m, c->client);
			}
			return;
		}
}

/*
 * A backend that begins while the worker sends (sim_env.c) takes nothing
 * by itself and waits for the next plan; the one that begins right after
 * the sends (sim_worker.c) may take.  Now and then, when a writer's node
 * lingers in c, two idle backends are due then and both come for that
 * node (a burst of this moment only): the later one must not take it past
 * the earlier (take_here.c leaves a key with any other request to the
 * worker: bite 73).  Drawn off the seed's stream.  Whether it set them up.
 */
bool
send_pair_aim(Cluster *c)
{
	const ZklSlot *l = NULL;
	int			n = 0;
	int			i;

	for (i = 0; i < c->t->nused && l == NULL; i++)
		if (c->t->slots[i].zstate == ZKS_LINGER && c->t->slots[i].req.mode == ZKL_MODE_EXCLUSIVE &&
			c->t->slots[i].req.group == 0)
			l = &c->t->slots[i];
	if (l == NULL || !aside_chance(70))
		return false;
	for (i = 0; i < c->nb && n < 2; i++)
		if (c->b[i].st == B_IDLE && c->b[i].sess_key < 0)
		{
			c->b[i].next_at = zkm_now(S->m);
			n++;
		}
	if (n < 2)
		return false;
	c->burst_key = key_index(l->key);
	c->burst_mode = l->req.mode;
	c->burst_until = zkm_now(S->m) + 1;
	trace("aim: c%d backends ask %s during and after the sends", c->id, l->key);
	return true;
}
