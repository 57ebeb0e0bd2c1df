/*
 * sim_gw.c — deadlocks across clusters: gwaits.c's schedule restated (documents,
 * rounds, the claim and its confirmations, the victim), its decisions
 * (gwait.c) run as they are.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/* A document is there while its session lives (an ephemeral node). */
bool
gw_visible(const Cluster *c)
{
	return c->gw_doc[0] != '\0' && zkm_session_alive(S->m, c->gw_doc_session);
}

/* This cluster's document as zc_gwait_format makes it now; its length. */
int
gw_format(Cluster *c, char *out)
{
	ZgwLocal	in;
	char		name[16];

	snprintf(name, sizeof(name), "c%d", c->id);
	in.coh = &c->core.cohort;
	in.now = c_wall(c);
	in.timeout_ms = c->core.deadlock_timeout;
	in.cluster = name;
	in.session = c->t->session_id;
	in.heavy = NULL;
	in.nheavy = 0;
	in.sem = c->gw_sems;
	in.nsem = c->gw_nsems;
	in.confirms = c->gw_confirms;
	return zc_gwait_format(&in, out, SIM_DOC_LEN);
}

/* list_sems: what the semaphores waited for have ahead (at the round; kept for rewrites) */
void
gw_list_sems(Cluster *c)
{
	int			slots[16];
	int			n = zc_gwait_sem_waiters(c->t, c_wall(c), c->core.deadlock_timeout, slots, 16);
	int			i;

	c->gw_nsems = 0;
	for (i = 0; i < n; i++)
	{
		char		key_path[ZKL_PATH_LEN];
		char	  **names;
		int			nn;

		zc_core_key_path(c->t, &c->t->slots[slots[i]], key_path);
		nn = zkm_leader_children(S->m, key_path, &names);
		if (zc_gwait_sem_wait(c->t, slots[i], (const char *const *) names, nn, &c->gw_sems[c->gw_nsems]))
			c->gw_nsems++;
		zkm_names_free(names, nn);
	}
}

/* The victim's request as zc_core_fail_deadlock finds it (-1: none). */
int
gw_victim_slot(const Cluster *c, const ZgwVictim *v)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *s = &c->t->slots[i];
		char		name[ZGW_NAME_LEN];

		if ((!zc_deadlock_waiting(s) && !zc_deadlock_sem_waiting(s)) || s->req.owner_pid != v->pid)
			continue;
		snprintf(name, sizeof(name), "%s/%s", s->key, s->node);
		if (v->node[0] == '\0' ? s->zstate == ZKS_COHORT : strcmp(v->node, name) == 0)
			return i;
	}
	return -1;
}

/* A backend the cycle names ("Process P of cluster cN") gave a wait up at `since` or later. */
bool
gw_cycle_gave_up(const ZgwVictim *v, int64_t since)
{
	const char *p = v->detail;
	int			pid;
	int			ci;

	while ((p = strstr(p, "Process ")) != NULL)
	{
		int			bi;

		if (sscanf(p, "Process %d of cluster c%d", &pid, &ci) == 2 && ci >= 0 && ci < S->ncl &&
			(bi = backend_of_pid(&S->c[ci], pid)) >= 0 && S->c[ci].b[bi].gave_up_at >= since)
			return true;
		p++;
	}
	return false;
}

/* A backend the cycle names ("Process P of cluster cN") has a request someone deleted the node of. */
bool
gw_cycle_tainted(const ZgwVictim *v)
{
	const char *p = v->detail;
	int			pid;
	int			ci;

	while ((p = strstr(p, "Process ")) != NULL)
	{
		if (sscanf(p, "Process %d of cluster c%d", &pid, &ci) == 2 && ci >= 0 && ci < S->ncl)
		{
			const Cluster *c = &S->c[ci];
			int			j;

			for (j = 0; j < c->t->nused; j++)
				if (c->t->slots[j].zstate != ZKS_FREE && c->t->slots[j].req.owner_pid == pid &&
					slot_tainted(&c->t->slots[j]))
					return true;
		}
		p++;
	}
	return false;
}

/* The claim goes (deleted by its owner, or gone with its session). */
void
gw_drop_claim(Cluster *c)
{
	if (S->claim_session == c->t->session_id)
		S->claim_session = 0;
	c->gw_claim_until = 0;
}

/* The claim reaches the leader: a multi of checks and the claim's create. */
void
gw_claim(Cluster *c)
{
	const ZgwVictim *v = &c->gw_victim;
	char		data[ZGW_CLAIM_LEN];
	int64_t		read_from[NCLUSTERS];
	int			nread = 0;
	int			i;

	c->gw_phase = GW_IDLE;
	if (S->claim_session != 0 && zkm_session_alive(S->m, S->claim_session))
	{
		gw_claims_refused++;
		return;					/* another victim's claim: the next round sees */
	}
	for (i = 0; i < v->nchecks; i++)
	{
		char		path[ZKM_PATH];
		int64_t		owner;
		int64_t		czxid;

		snprintf(path, sizeof(path), "%s/%s", ROOT, v->checks[i]);
		if (!zkm_leader_node(S->m, path, &owner, &czxid))
		{
			gw_claims_refused++;
			return;
		}
	}
	for (i = 0; i < v->nsessions; i++)
	{
		int			k;
		bool		same = false;

		for (k = 0; k < S->ncl; k++)
			if (gw_visible(&S->c[k]) && S->c[k].gw_doc_session == v->sessions[i])
				same = v->sessions[i] == c->t->session_id ||
					S->c[k].gw_doc_version == c->gw_read_version[k];
		if (!same)
		{
			gw_claims_refused++;
			return;
		}
	}
	S->claim_session = c->t->session_id;
	do
		S->claim_nonce = rnd();
	while (S->claim_nonce == 0);
	for (i = 0; i < S->ncl; i++)
		if (c->gw_read[i][0] != '\0')
			read_from[nread++] = c->gw_read_session[i];
	S->claim_nasks = zc_gwait_claim_sessions(data, zc_gwait_claim_format(S->claim_nonce, read_from, nread,
															   c->t->session_id, data,
															   sizeof(data)),
										S->claim_asks, NCLUSTERS);
	/* the claimer's own copy: the claim node may go and another come meanwhile */
	c->gw_nonce = S->claim_nonce;
	c->gw_nasks = S->claim_nasks;
	memcpy(c->gw_asks, S->claim_asks, sizeof(c->gw_asks));
	memset(c->gw_confirmed, 0, sizeof(c->gw_confirmed));
	c->gw_claimed_at = zkm_now(S->m);
	c->gw_claim_until = zkm_now(S->m) + (int64_t) 2 * c->core.deadlock_timeout * 1000;
	c->gw_phase = GW_CONFIRM;
	c->gw_at = zkm_now(S->m) + 500 + rnd_int(20000) + 50000;	/* its answer, then a poll */
	trace("c%d claims pid %d's wait, %d to confirm", c->id, v->pid, S->claim_nasks);
}

/*
 * The moment of choice: the last confirmation is in.  Until its worker
 * acts, only a wait given up can break a cycle (a grant needs a wait of
 * the cycle to end first), so the victim must then wait for ever by the
 * ground truth, in ZooKeeper's view (truth_build).
 */
void
gw_judge(Cluster *c)
{
	int			s = gw_victim_slot(c, &c->gw_victim);
	int			bi = backend_of_pid(c, c->gw_victim.pid);
	Truth	   *tr;

	c->gw_victim_attempt = 0;
	if (s < 0 || bi < 0)
		return;
	tr = malloc(sizeof(Truth));
	truth_build(tr);
	if (!tr->goes[c->id][bi])
		c->gw_victim_attempt = c->t->slots[s].req.attempt;
	else if (gw_cycle_tainted(&c->gw_victim))
	{
		/*
		 * A request of the cycle whose node someone deleted: zk_lock
		 * promises it nothing (README), and what it believes it holds or
		 * waits for may be wrong.
		 */
		c->gw_victim_attempt = c->t->slots[s].req.attempt;
		gw_tainted_victims++;
	}
	else if (gw_cycle_gave_up(&c->gw_victim, c->gw_claimed_at))
	{
		/*
		 * A wait of the cycle given up (a timeout, a cancel, a stop, a
		 * 40P01 of deadlock.c) since the claim: its cluster's document
		 * confirmed it still waited, and a document says how things stood
		 * when it was written (README: the moment of choice).
		 */
		c->gw_victim_attempt = c->t->slots[s].req.attempt;
		gw_gaveup_victims++;
	}
	else if (getenv("SIM_TRUTH"))
		truth_dump(tr);
	free(tr);
}

/*
 * The victim's cluster reads the documents of the others of the cycle
 * (poll_confirmations): each must have been written for this claim.
 */
void
gw_confirm(Cluster *c)
{
	bool		all = true;
	int			i;
	int			k;

	if (!zkm_session_alive(S->m, c->t->session_id))
	{
		c->gw_phase = GW_IDLE;	/* the reads fail: the claim is gone with the session */
		return;
	}
	/* every one read in one poll: the moment of choice is then */
	memset(c->gw_confirmed, 0, sizeof(c->gw_confirmed));
	for (i = 0; i < c->gw_nasks; i++)
	{
		const Cluster *o = NULL;

		for (k = 0; k < S->ncl; k++)
			if (S->c[k].gw_doc_session == c->gw_asks[i] && gw_visible(&S->c[k]))
				o = &S->c[k];
		if (o == NULL)
		{
			/* no long wait there any more: news as fresh as a confirmation */
			for (k = 0; k < S->ncl; k++)
				if (c->gw_read_session[k] == c->gw_asks[i])
					c->gw_read[k][0] = '\0';
			c->gw_confirmed[i] = true;
		}
		else if (zc_gwait_confirms(o->gw_doc, c->gw_nonce))
		{
			memcpy(c->gw_read[o->id], o->gw_doc, strlen(o->gw_doc) + 1);
			c->gw_confirmed[i] = true;
		}
		all &= c->gw_confirmed[i];
	}
	if (!all && zkm_now(S->m) >= c->gw_claim_until)
	{
		trace("c%d: confirmations not in time: claim dropped", c->id);
		gw_drop_claim(c);
		c->gw_phase = GW_IDLE;
	}
	else if (!all)
		c->gw_at = zkm_now(S->m) + 50000;
	else
	{
		/* decided on those alone: the others' documents were read before the claim */
		for (k = 0; k < S->ncl; k++)
		{
			bool		fresh = false;

			for (i = 0; i < c->gw_nasks; i++)
				fresh |= S->c[k].gw_doc_session == c->gw_asks[i];
			if (!fresh)
				c->gw_read[k][0] = '\0';
		}
		c->gw_phase = GW_BREAK;
		gw_judge(c);
	}
}

/*
 * break_cycle: decide again on the confirmed documents and our waits as
 * they are now.  The moment of choice: the victim must wait for ever by
 * the ground truth, in ZooKeeper's view (a wait given up whose node is
 * still queued counts; truth_build).
 */
void
gw_break(Cluster *c)
{
	const char *all[NCLUSTERS + 1];
	char	   *mine = malloc(SIM_DOC_LEN);
	ZgwVictim	again;
	int			n = 0;
	int			s;
	int			i;

	c->gw_phase = GW_IDLE;
	for (i = 0; i < S->ncl; i++)
		if (i != c->id && c->gw_read[i][0] != '\0')
			all[n++] = c->gw_read[i];
	s = gw_victim_slot(c, &c->gw_victim);
	if (s >= 0 && gw_format(c, mine) > 0)
	{
		all[n++] = mine;
		if (zc_gwait_decide(all, n, c->t->session_id, &again) && again.pid == c->gw_victim.pid &&
			strcmp(again.node, c->gw_victim.node) == 0)
		{
			uint64_t	attempt = c->t->slots[s].req.attempt;

			if (zc_core_fail_deadlock(&c->core, again.pid, again.node,
									"deadlock detected across clusters", again.detail))
			{
				if (attempt != c->gw_victim_attempt)
					fail("c%d: pid %d chosen as a deadlock's victim, but its wait (%s) was not "
						 "one that never ends when the confirmations were in:\n%s", c->id,
						 again.pid, again.node, again.detail);
				gw_victims++;
				trace("c%d pid %d: deadlock across clusters, 40P01", c->id, again.pid);
				free(mine);
				return;
			}
		}
	}
	free(mine);
	trace("c%d: the cycle does not stand on confirmed documents: claim dropped", c->id);
	gw_drop_claim(c);			/* nobody failed: the claim goes at once */
}

/* A round: read every document and decide. */
void
gw_round(Cluster *c)
{
	const char *all[NCLUSTERS];
	int			n = 0;
	int			i;

	gw_rounds++;
	for (i = 0; i < S->ncl; i++)
	{
		const Cluster *o = &S->c[i];

		c->gw_read[i][0] = '\0';
		if (i == c->id || !gw_visible(o))
			continue;
		memcpy(c->gw_read[i], o->gw_doc, strlen(o->gw_doc) + 1);
		c->gw_read_version[i] = o->gw_doc_version;
		c->gw_read_session[i] = o->gw_doc_session;
		all[n++] = c->gw_read[i];
	}
	all[n++] = c->gw_doc;		/* ours as sent */
	if (zc_gwait_decide(all, n, c->t->session_id, &c->gw_victim))
	{
		c->gw_phase = GW_CLAIM;
		c->gw_at = zkm_now(S->m) + 500 + rnd_int(20000);
	}
}

/* zw_gwaits_tend, each worker turn. */
void
gw_tend(Cluster *c)
{
	int64_t		now = zkm_now(S->m);
	int64_t		wall = c_wall(c);
	int64_t		session = c->t->session_id;
	int			tmo = c->core.deadlock_timeout;
	bool		published;
	bool		round;
	int64_t		due;
	uint64_t	print;
	int			len = -1;

	if (c->client < 0 || c->t->conn_state != ZKC_CONNECTED || session == 0 ||
		!zkm_connected(S->m, c->client))
	{
		/* calls in flight are lost: a claim of ours may be left (found next time) */
		c->gw_phase = GW_IDLE;
		c->gw_claim_until = 0;
		return;
	}
	if (S->claim_session == session && c->gw_claim_until == 0 && c->gw_phase != GW_BREAK)
		S->claim_session = 0;	/* ours from before: claim_looked drops it */
	if (c->gw_claim_until != 0 && now >= c->gw_claim_until && c->gw_phase == GW_IDLE)
		c->gw_claim_until = 1;	/* (goes below; while confirming, gw_confirm sees to it) */
	/* the claim goes once the victim's node is gone (gwaits.c) */
	if (c->gw_claim_until == 1 || (c->gw_claim_until != 0 && c->gw_phase == GW_IDLE &&
								   c->gw_victim.node[0] != '\0' &&
								   !zc_gwait_node_live(c->t, c->gw_victim.node)))
	{
		if (S->claim_session == session)
			S->claim_session = 0;
		c->gw_claim_until = 0;
	}
	/* look_for_claim every 250 ms while we publish: one that names us is confirmed once its data is back */
	if (c->gw_doc_session == session && c->gw_doc[0] != '\0' && now >= c->gw_look_at)
	{
		c->gw_look_at = now + 250000;
		if (S->claim_session != 0 && zkm_session_alive(S->m, S->claim_session) &&
			c->gw_confirms != S->claim_nonce && c->gw_confirm_at == 0)
			c->gw_confirm_at = now + 500 + rnd_int(10000);
	}
	/* another's claim that names us: we write our document again */
	if (S->claim_session == 0 || !zkm_session_alive(S->m, S->claim_session))
		c->gw_confirms = 0;
	else if (c->gw_confirm_at != 0 && now >= c->gw_confirm_at &&
			 c->gw_confirms != S->claim_nonce && c->gw_doc_session == session &&
			 c->gw_doc[0] != '\0')
	{
		int			i;

		for (i = 0; i < S->claim_nasks; i++)
			if (S->claim_asks[i] == session)
				break;
		c->gw_confirm_at = 0;
		if (i < S->claim_nasks)
		{
			char	   *doc = malloc(SIM_DOC_LEN);
			int			len;

			c->gw_confirms = S->claim_nonce;
			len = gw_format(c, doc);
			if (len == 0)
				c->gw_doc[0] = '\0';
			else
			{
				c->gw_doc_version++;
				memcpy(c->gw_doc, doc, len + 1);
			}
			free(doc);
		}
	}
	if (c->gw_phase != GW_IDLE)
	{
		if (now >= c->gw_at)
		{
			if (c->gw_phase == GW_CLAIM)
				gw_claim(c);
			else if (c->gw_phase == GW_CONFIRM)
				gw_confirm(c);
			else
				gw_break(c);
		}
		return;
	}
	published = c->gw_doc[0] != '\0' && c->gw_doc_session == session;
	due = zc_gwait_next_due(c->t, tmo);
	round = due != 0 && wall >= due && now >= c->gw_next_round;
	/* (looked at every 100 ms, not every turn as the worker does: the simulator's turns are many) */
	print = c->gw_print;
	if (round || (published && now >= c->gw_next_write))
	{
		print = zc_gwait_fingerprint(c->t, wall, tmo);
		c->gw_next_write = now + 100000;
	}
	if (due == 0 || wall < due)
		c->gw_nsems = 0;
	if (round)
		gw_list_sems(c);
	if (round || (published && print != c->gw_print) ||
		(published && (due == 0 || wall < due)))
	{
		char	   *doc = malloc(SIM_DOC_LEN);

		len = gw_format(c, doc);
		if (len > gw_longest_doc)
			gw_longest_doc = len;
		if (len > SIM_DOC_LEN - 1024)
			fail("c%d: a wait document of %d bytes: SIM_DOC_LEN is too small", c->id, len);
		if (len == 0)
			c->gw_doc[0] = '\0';	/* deleted */
		else if (!published || strcmp(doc, c->gw_doc) != 0)
		{
			c->gw_doc_version = published ? c->gw_doc_version + 1 : 0;
			c->gw_doc_session = session;
			memcpy(c->gw_doc, doc, len + 1);
		}
		free(doc);
		if (len > 0 && !published && now >= c->gw_next_round)
			c->gw_next_round = now + (int64_t) (tmo / 4 < 250 ? tmo / 4 : 250) * 1000;
		c->gw_print = print;
		c->gw_next_write = now + 100000;
	}
	if (len > 0 && now >= c->gw_next_round)
	{
		c->gw_next_round = now + (int64_t) tmo * 1000;
		gw_round(c);
	}
}
