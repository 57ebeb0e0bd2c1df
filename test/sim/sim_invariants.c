/*
 * sim_invariants.c — the invariants checked after every step: every node has one owner,
 * FIFO and rising tokens, semaphores' holders, multi-key czxids, and a
 * request whose hand-overs wait for a watched listing has one on its way.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

int64_t cutoffs_declared;	/* sessions a worker gave up as cut off (check_cutoff_early) */
int64_t lookups_empty;	/* lookups of a lost create that found nothing (check_lookup_missed) */

/* ---- invariants ---- */

/* Which backend of which cluster owns the node of this name (-1: none). */
bool
node_owner(const char *name, int *ci, int *pid, int *slot)
{
	int			i;
	int			j;

	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].t->nused; j++)
		{
			const ZklSlot *s = &S->c[i].t->slots[j];

			if (s->zstate != ZKS_FREE && zc_recipe_name_has_uuid(name, s->uuid))
			{
				*ci = i;
				*pid = s->req.owner_pid;
				*slot = j;
				return true;
			}
		}
	return false;
}

/* Local readers of other backends hold through o's node (cohort.c). */
bool
ridden_by_other(const Cluster *c, const ZklSlot *o)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *r = &c->t->slots[i];

		if (r->zk.rides && r->zstate == ZKS_HELD && !r->own.abandoned && r->req.owner_pid != o->req.owner_pid &&
			strcmp(r->key, o->key) == 0 && strcmp(r->node, o->node) == 0)
			return true;
	}
	return false;
}

bool
conflict(char a, char b)
{
	return a == ZKL_MODE_EXCLUSIVE || b == ZKL_MODE_EXCLUSIVE;
}

/* A grant passes no conflicting request queued before it, unless core's same-backend rule allows. */
void
check_fifo(Cluster *c, const ZklSlot *s)
{
	char		key_path[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN];
	char	  **names;
	ZkrChild	kids[128];
	int64_t		owner;
	int64_t		czxid;
	int			own = -1;
	int			n;
	int			nn;
	int			i;
	int			k = key_index(s->key);

	if (slot_tainted(s))
		return;					/* its node was deleted behind its back */
	zc_core_key_path(c->t, s, key_path);
	zc_core_child_path(c->t, s, s->node, path);
	if (!zkm_leader_node(S->m, path, &owner, &czxid))
		return;					/* its session is gone at the leader: it cannot commit */
	nn = zkm_leader_children(S->m, key_path, &names);
	n = zc_recipe_collect((const char *const *) names, nn < 128 ? nn : 128, kids);
	for (i = 0; i < n; i++)
		if (strcmp(kids[i].name, s->node) == 0)
			own = i;
	/* a semaphore: granted with fewer than its holders ahead (nodes ahead only go) */
	if (s->req.mode == ZKL_MODE_SEMAPHORE && own >= s->req.holders)
		fail("semaphore: c%d b%d granted %s node %s with %d nodes ahead, holders %d",
			 c->id, s->req.owner_pid, s->key, s->node, own, s->req.holders);
	/*
	 * ... and none of those ahead (live requests: their nodes are there)
	 * names other holders (README: such a request fails with 22023).
	 * Judged from the names at the leader: the nodes ahead now are among
	 * those of any listing the grant was decided from.
	 */
	for (i = 0; s->req.mode == ZKL_MODE_SEMAPHORE && i < own; i++)
		if (kids[i].mode == ZKL_MODE_SEMAPHORE && kids[i].holders != s->req.holders)
			fail("semaphore: c%d b%d granted %s node %s (holders %d) behind %s (holders %d)",
				 c->id, s->req.owner_pid, s->key, s->node, s->req.holders, kids[i].name,
				 kids[i].holders);
	for (i = 0; i < own; i++)
	{
		int			ci = -1;
		int			pid = 0;
		int			slot;
		bool		excused = false;
		int			j;

		if (!conflict(kids[i].mode, s->req.mode))
			continue;
		/* an upgrade made after it waits for it, unless it passed it: the holders' oracles judge that */
		if (kids[i].placed && zc_recipe_seq_cmp(kids[i].seq, kids[own].seq) > 0)
			continue;
		if (node_owner(kids[i].name, &ci, &pid, &slot) && ci == c->id && pid == s->req.owner_pid &&
			!ridden_by_other(c, &c->t->slots[slot]))
			continue;			/* the backend's own node (not one other local readers ride) */
		/*
		 * queued behind a granted node of this backend that it conflicts
		 * with, or (an upgrade passing the waiters it holds up, as core's)
		 * a local request not granted (what held it up when the listing was
		 * read may be gone by now)
		 */
		for (j = 0; j < i && !excused; j++)
		{
			int			cj;
			int			pj;
			int			sj;
			bool		held_up = ci == c->id && c->t->slots[slot].zstate == ZKS_QUEUED;

			excused = (conflict(kids[j].mode, kids[i].mode) || held_up) &&
				node_owner(kids[j].name, &cj, &pj, &sj) && cj == c->id && pj == s->req.owner_pid &&
				S->c[cj].t->slots[sj].zstate == ZKS_HELD;
		}
		if (!excused)
			fail("FIFO: c%d b%d granted %s %c node %s past %s", c->id, s->req.owner_pid, s->key,
				 s->req.mode, s->node, kids[i].name);
	}
	zkm_names_free(names, nn);
	if (s->req.mode == ZKL_MODE_EXCLUSIVE)
	{
		Backend    *b = &c->b[s->req.owner_pid - 100 * (c->id + 1)];

		/*
		 * zk_lock_token(): that of the transaction's oldest node on the key,
		 * from the leader's czxid and the node's hand-overs before it
		 */
		czxid = zc_recipe_fencing_token(czxid, s->zk.handed);
		for (i = 0; i < b->book.n; i++)
		{
			const ZklSlot *o = &c->t->slots[b->book.h[i].slot];
			int64_t		other;

			zc_core_child_path(c->t, o, o->node, path);
			if (strcmp(o->key, s->key) == 0 && zkm_leader_node(S->m, path, &owner, &other) &&
				zc_recipe_fencing_token(other, o->zk.handed) < czxid)
				czxid = zc_recipe_fencing_token(other, o->zk.handed);
		}
		/*
		 * Equal only for the same backend, whose oldest node on the key is
		 * still there: it has held the key all along (a session-level hold).
		 */
		if (czxid < S->last_x_czxid[k] ||
			(czxid == S->last_x_czxid[k] && S->last_x_owner[k] != s->req.owner_pid))
			fail("fencing: c%d b%d granted %s with token %" PRId64 " after %" PRId64,
				 c->id, s->req.owner_pid, s->key, czxid, S->last_x_czxid[k]);
		S->last_x_czxid[k] = czxid;
		S->last_x_owner[k] = s->req.owner_pid;
	}
}

/* More semaphore holders that could commit now than any of them allows. */
void
check_semaphore_holders(const Holder *h, int nh)
{
	int			count = 0;
	int			least = 0;
	int			i;

	for (i = 0; i < nh; i++)
	{
		if (h[i].mode != ZKL_MODE_SEMAPHORE)
			continue;
		count++;
		least = (least == 0 || h[i].holders < least) ? h[i].holders : least;
	}
	if (count > least)
		fail("semaphore: %d holders could commit, holders %d", count, least);
}

/* The czxid of slot s's node at the leader, 0 when it is not there. */
int64_t
leader_czxid(const Cluster *c, const ZklSlot *s)
{
	char		path[ZKL_PATH_LEN];
	int64_t		owner;
	int64_t		czxid;

	if (s->node[0] == '\0' || s->zk.rides ||
		(s->zstate != ZKS_QUEUED && s->zstate != ZKS_HELD))
		return 0;
	zc_core_child_path(c->t, s, s->node, path);
	return zkm_leader_node(S->m, path, &owner, &czxid) ? czxid : 0;
}

/*
 * A multi-key request's nodes were made by one multi, so they share one
 * czxid: checked at the source (the leader's tree), whatever the core
 * believes.  A request whose nodes were made apart can wait in a circle
 * with another one.
 */
void
check_group(const Cluster *c, int idx)
{
	const ZklSlot *s = &c->t->slots[idx];
	int64_t		mine;
	int			j;

	if (S->seen_group[c->id][idx] == s->req.attempt || (mine = leader_czxid(c, s)) == 0)
		return;
	S->seen_group[c->id][idx] = s->req.attempt;
	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *o = &c->t->slots[j];
		int64_t		theirs;

		if (j == idx || o->req.group != s->req.group || o->own.abandoned)
			continue;
		theirs = leader_czxid(c, o);
		if (theirs != 0 && theirs != mine)
			fail("c%d: multi-key request %" PRIu64 " has nodes of two creates: %s (czxid %" PRId64
				 ") and %s (czxid %" PRId64 ")", c->id, s->req.group, s->node, mine, o->node, theirs);
	}
}

/*
 * New grants of cluster c, judged as they are made: after each message the
 * worker handles and each plan (a grant decided with news still unread
 * must be judged before that news is read).
 */
/*
 * Inside one cluster two backends never hold conflicting modes of a key at
 * once, whether or not both get to commit: a grant beside another backend's
 * held lock is wrong when it is made (an upgrade that went ahead of a local
 * waiter, a hand-over whose giver still holds).  And a reader that rides
 * another's shared node (no node, no place of its own in ZooKeeper's queue)
 * passes no local writer that asked before it, which FIFO would break: the
 * writer waits for that node, which riders could keep alive for ever.
 */
static void
check_local_exclusion(const Cluster *c, const ZklSlot *s)
{
	int			j;

	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *o = &c->t->slots[j];

		if (o == s || o->own.abandoned || o->req.owner_pid == s->req.owner_pid ||
			strcmp(o->key, s->key) != 0 || !conflict(o->req.mode, s->req.mode))
			continue;
		if (o->zstate == ZKS_HELD && o->ans.result == ZKL_RESULT_GRANTED)
			fail("c%d b%d granted %s %c beside b%d's %c (node %s)", c->id, s->req.owner_pid, s->key,
				 s->req.mode, o->req.owner_pid, o->req.mode, o->node);
		if (s->zk.rides && o->ans.result == ZKL_RESULT_PENDING && o->zstate != ZKS_FREE &&
			o->zstate != ZKS_GONE && o->req.ticket < s->req.ticket)
			fail("c%d b%d rides %s's node %s past b%d's %c, which asked before it", c->id,
				 s->req.owner_pid, s->key, s->node, o->req.owner_pid, o->req.mode);
	}
}

/*
 * A grant beside the backend's own lock of the key held through a node
 * deleted from outside may rest on it (core's same-backend rule: a writer
 * takes the key shared at once), so it is promised nothing either.
 */
static void
taint_beside(Cluster *c, const ZklSlot *s)
{
	int			j;

	for (j = 0; j < c->t->nused && !s->zk.rides && S->ntainted < 64; j++)
	{
		const ZklSlot *o = &c->t->slots[j];

		if (o != s && o->zstate == ZKS_HELD && o->req.owner_pid == s->req.owner_pid &&
			strcmp(o->key, s->key) == 0 && slot_tainted(o) && !slot_tainted(s))
		{
			snprintf(S->tainted[S->ntainted++], ZKL_UUID_LEN + 1, "%s", s->uuid);
			trace("c%d b%d granted %s beside its lock through a node deleted from outside: promised nothing",
				  c->id, s->req.owner_pid, s->key);
		}
	}
}

void
note_grants(Cluster *c)
{
	int			j;

	S->notes++;					/* requests it sees queue asked after those an earlier one saw */
	for (j = 0; j < c->t->nused; j++)
	{
		ZklSlot    *s = &c->t->slots[j];

		if (s->zstate != ZKS_FREE && s->req.queued_at != S->queued_wall[c->id][j])
		{
			S->queued_wall[c->id][j] = s->req.queued_at;
			S->queued_model[c->id][j] = zkm_now(S->m);
			S->queued_note[c->id][j] = S->notes;
		}
	}
	for (j = 0; j < c->t->nused; j++)
	{
		ZklSlot    *s = &c->t->slots[j];

		/* (a turn reads many replies: a slot may be granted and given up within it) */
		if (s->ans.result == ZKL_RESULT_GRANTED && !s->own.abandoned && s->zstate != ZKS_FREE &&
			S->seen_attempt[c->id][j] != s->req.attempt)
		{
			S->seen_attempt[c->id][j] = s->req.attempt;
			S->granted_at[c->id][j] = zkm_now(S->m);
			S->grants++;
			taint_beside(c, s);
			if (s->zk.handed > 0)
				check_handover(c, s);
			check_fifo(c, s);
			check_local_exclusion(c, s);
		}
		/*
		 * A wait that ended without a grant (a 40P01 of deadlock.c, a
		 * timeout) is given up from here, before its backend acts on it.
		 */
		if ((s->ans.result == ZKL_RESULT_FAILED || s->ans.result == ZKL_RESULT_NOT_GRANTED) && s->zstate != ZKS_FREE &&
			S->ended_attempt[c->id][j] != s->req.attempt)
		{
			int			bi = backend_of_pid(c, s->req.owner_pid);

			S->ended_attempt[c->id][j] = s->req.attempt;
			if (bi >= 0)
				c->b[bi].gave_up_at = zkm_now(S->m);
		}
	}
}

/*
 * cohort.c's belief against what is in flight: a request whose hand-overs
 * wait for a watched listing of its key (COH_PEEK_ASKED) has one on its
 * way.  Else nothing asks again: a released node is kept for good, and its
 * local waiters and every other cluster's wait behind it.
 */
void
check_peek_out(const Cluster *c)
{
	int			i;
	int			j;

	if (c->client < 0 || c->t->conn_state != ZKC_CONNECTED)
		return;
	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *s = &c->t->slots[j];
		uint64_t	tag = zc_core_tag(j, s->req.attempt);
		bool		out = false;

		if (s->coh.peek != COH_PEEK_ASKED || s->zstate == ZKS_FREE || s->zstate == ZKS_GONE ||
			s->zstate == ZKS_DELETING)
			continue;
		for (i = 0; i < c->nouts && !out; i++)
			out = c->outs[i].purpose == P_CALL && c->outs[i].kind == ZKM_CHILDREN &&
				c->outs[i].tag == tag && c->outs[i].watched;
		if (!out)
			fail("c%d slot %d (pid %d, state %d) %s: cohort.c waits for a watched listing of its key, "
				 "and none is on its way", c->id, j, s->req.owner_pid, s->zstate, s->key);
	}
}

/*
 * A clean stop's tombstone says its session holds nothing: other clusters
 * skip lock-delay at its end.  So when cluster c asks for one, no lock
 * node of that session that a request of c owns may live at the leader
 * (every delete was answered before the stop began to mark).  A node no
 * request owns (a stray, zk_lock.test_orphan's) holds nothing: it goes
 * with the session.
 */
/* Whether a slot of c in use is the request of node `name` (by its uuid). */
static bool
owned_here(const Cluster *c, const char *name)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].zstate != ZKS_FREE && c->t->slots[i].uuid[0] != '\0' &&
			zc_recipe_name_has_uuid(name, c->t->slots[i].uuid))
			return true;
	return false;
}

void
check_tombstone_asked(Cluster *c, const ZkmReq *r)
{
	int			i;

	for (i = 0; i < (r->kind == ZKM_MULTI_OP ? r->nsub : 1); i++)
	{
		const char *path = r->kind == ZKM_MULTI_OP ? r->sub[i].path : r->path;
		ZklSessionName n;
		char	  **keys;
		int			nkeys;
		int			k;

		if ((r->kind == ZKM_MULTI_OP ? r->sub[i].kind : r->kind) != ZKM_CREATE ||
			strncmp(path, SESSIONS "/", strlen(SESSIONS "/")) != 0 ||
			!zc_delay_parse_name(path + strlen(SESSIONS "/"), &n) || n.kind != ZKL_NAME_CLOSED)
			continue;
		nkeys = zkm_leader_children(S->m, ROOT, &keys);
		for (k = 0; k < nkeys; k++)
		{
			char		key_path[ZKM_PATH];
			char	  **names;
			int			nn;
			int			j;

			if (keys[k][0] == '.')
				continue;
			snprintf(key_path, sizeof(key_path), ROOT "/%s", keys[k]);
			nn = zkm_leader_children(S->m, key_path, &names);
			for (j = 0; j < nn; j++)
			{
				char		node[ZKM_PATH];
				int64_t		owner;
				int64_t		czxid;

				snprintf(node, sizeof(node), "%s/%s", key_path, names[j]);
				if (zkm_leader_node(S->m, node, &owner, &czxid) && owner == n.id && owned_here(c, names[j]))
					fail("c%d asks for the tombstone of session %" PRIx64 " while its node %s lives",
						 c->id, n.id, node);
			}
			zkm_names_free(names, nn);
		}
		zkm_names_free(keys, nkeys);
	}
}

/* The slot of c whose request a lock node's create (its path, no sequence yet) is for; -1: none. */
static int
create_slot(const Cluster *c, const char *path)
{
	const char *name = strrchr(path, '/');
	int			i;

	if (name == NULL || strlen(++name) < 2 + ZKL_UUID_LEN)
		return -1;
	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].zstate != ZKS_FREE && c->t->slots[i].uuid[0] != '\0' &&
			memcmp(name + 2, c->t->slots[i].uuid, ZKL_UUID_LEN) == 0)
			return i;
	return -1;
}

/*
 * A multi-key request's nodes are created in one multi with every member
 * of its group still in the table (docs/design: its place is then the same
 * on every key): a member created alone, or beside a sibling left out (one
 * failed or given up, whose owner ends the whole request), stands apart.
 */
void
check_group_whole(Cluster *c, const ZkmReq *r)
{
	int			created[ZKM_MULTI];
	int			n = 0;
	int			i;
	int			j;

	for (i = 0; i < (r->kind == ZKM_MULTI_OP ? r->nsub : 1); i++)
		if ((r->kind == ZKM_MULTI_OP ? r->sub[i].kind : r->kind) == ZKM_CREATE &&
			(created[n] = create_slot(c, r->kind == ZKM_MULTI_OP ? r->sub[i].path : r->path)) >= 0)
			n++;
	for (i = 0; i < n; i++)
	{
		const ZklSlot *s = &c->t->slots[created[i]];

		if (s->req.group == 0)
			continue;
		for (j = 0; j < c->t->nused; j++)
		{
			const ZklSlot *o = &c->t->slots[j];
			int			k;

			if (o->zstate == ZKS_FREE || o->req.group != s->req.group)
				continue;
			for (k = 0; k < n && created[k] != j; k++)
				;
			if (k == n)
				fail("c%d creates %s's node for slot %d without its group's slot %d "
					 "(state %d, result %d, given up %d)", c->id, s->key, created[i], j,
					 (int) o->zstate, (int) o->ans.result, (int) o->own.abandoned);
		}
	}
}

/*
 * A cluster that hears nothing from ZooKeeper gives its locks up on its own
 * clock, but not before 11/12 of the session timeout since it last heard
 * from the server (docs/failure-semantics.md): a shorter outage, a leader
 * change say, costs no lock.  Earlier is safe and still a bug: it fails
 * holders whose sessions live.
 */
void
check_cutoff_early(const Cluster *c)
{
	int64_t		silent = c_mono(c) - c->heard_at;
	int64_t		rule = (int64_t) (c->t->negotiated_timeout * 11 / 12) * 1000;

	cutoffs_declared++;
	if (silent < rule)
		fail("c%d declares itself cut off %.3f s after it last heard from the server, before 11/12 of its %d ms timeout",
			 c->id, silent / 1e6, c->t->negotiated_timeout);
}

/*
 * A lookup by uuid after a lost create's reply (requests.c's OP_RECOVER)
 * that finds nothing sends the request to the back of the line.  It may
 * miss only a create the leader applied after this handle connected (a
 * write still under way on the old connection: a "ghost", orphans.c); one
 * applied before had to be seen, or the request gives up its place for
 * nothing and leaves a node of its own in front of itself.
 */
void
check_lookup_missed(const Cluster *c, const ZklSlot *s)
{
	char		parent[ZKM_PATH];
	char	  **names;
	int			nn;
	int			j;

	lookups_empty++;
	zc_core_key_path(c->t, s, parent);
	nn = zkm_leader_children(S->m, parent, &names);
	for (j = 0; j < nn; j++)
	{
		char		node[ZKM_PATH];
		int64_t		owner;
		int64_t		czxid;

		snprintf(node, sizeof(node), "%s/%s", parent, names[j]);
		if (zc_recipe_name_has_uuid(names[j], s->uuid) && zkm_leader_node(S->m, node, &owner, &czxid) &&
			czxid <= c->connect_zxid)
			fail("c%d found no node of request %s, though the leader applied %s before the handle connected",
				 c->id, s->uuid, node);
	}
	zkm_names_free(names, nn);
}

/*
 * Two backends of one cluster that both hold a key shared and both wait to
 * make it exclusive (core_grant.c's upgrade deadlock): the second to read
 * its queue fails at once, as core fails one of two such upgraders, not
 * after deadlock_timeout by the general search.  Judged once both have
 * read their queue (a watch set) and neither is a try.
 */
void
check_pair_upgrades(const Cluster *c)
{
	int			i;
	int			j;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *a = &c->t->slots[i];

		if (a->zstate != ZKS_QUEUED || a->ans.result != ZKL_RESULT_PENDING || a->own.abandoned ||
			a->req.nowait || a->watch[0] == '\0' || zc_table_upgraded(c->t, a) < 0)
			continue;
		for (j = i + 1; j < c->t->nused; j++)
		{
			const ZklSlot *b = &c->t->slots[j];

			if (b->zstate == ZKS_QUEUED && b->ans.result == ZKL_RESULT_PENDING && !b->own.abandoned &&
				!b->req.nowait && b->watch[0] != '\0' && b->req.owner_pid != a->req.owner_pid &&
				strcmp(b->key, a->key) == 0 && zc_table_upgraded(c->t, b) >= 0)
				fail("c%d b%d and b%d both hold %s shared and wait to make it exclusive, and neither failed at once",
					 c->id, a->req.owner_pid, b->req.owner_pid, a->key);
		}
	}
}
