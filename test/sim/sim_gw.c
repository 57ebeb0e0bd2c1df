/*
 * sim_gw.c — deadlocks across clusters: gwaits*.c run as shipped, their
 * decisions (gwait.c) with them.  What is here is the simulator's own: the
 * judgement of a victim at the moment of choice (simh_fail_deadlock, which
 * gwaits_claim.c calls for zc_core_fail_deadlock: build.sh), and what the
 * run reports of rounds, claims and documents.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

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

static bool
ends_with(const char *s, const char *suffix)
{
	size_t		n = strlen(s);
	size_t		k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A request cluster c sends: count rounds and claims, note the longest document. */
void
gw_observe(Cluster *c, const ZkmReq *r)
{
	int			i;

	if (r->kind == ZKM_CHILDREN && ends_with(r->path, "/" ZGW_WAITS_DIR))
		gw_rounds++;
	if ((r->kind == ZKM_CREATE || r->kind == ZKM_SETDATA) && strstr(r->path, "/" ZGW_WAITS_DIR "/") &&
		(int) strlen(r->data) > gw_longest_doc)
		gw_longest_doc = (int) strlen(r->data);
	for (i = 0; r->kind == ZKM_MULTI_OP && i < r->nsub; i++)
		if (r->sub[i].kind == ZKM_CREATE && ends_with(r->sub[i].path, "/.deadlock"))
		{
			gw_claims++;
			c->gw_claimed_at = zkm_now(S->m);
			trace("c%d claims a deadlock's victim", c->id);
		}
}

/*
 * break_cycle fails a victim (gwaits_claim.c): the last confirmation is
 * in, and the cycle still stands on them and on our waits as they are now.
 * Until its worker acts, only a wait given up can break a cycle (a grant
 * needs a wait of the cycle to end first), so the victim must wait for
 * ever by the ground truth, in ZooKeeper's view (truth_build), unless a
 * wait of the cycle was given up since the claim or a request of it lost
 * its node to someone else.
 */
bool
simh_fail_deadlock(ZklCore *core, int pid, const char *node, const char *msg, const char *detail)
{
	Cluster    *c = cur_cl;
	ZgwVictim	v;
	int			s;
	int			bi;
	bool		forever = true;
	bool		excused = false;

	memset(&v, 0, sizeof(v));
	v.pid = pid;
	snprintf(v.node, sizeof(v.node), "%s", node);
	snprintf(v.detail, sizeof(v.detail), "%s", detail);
	s = gw_victim_slot(c, &v);
	bi = backend_of_pid(c, pid);
	if (s >= 0 && bi >= 0)
	{
		Truth	   *tr = malloc(sizeof(Truth));

		truth_build(tr);
		forever = !tr->goes[c->id][bi];
		if (!forever && getenv("SIM_TRUTH"))
			truth_dump(tr);
		free(tr);
		/*
		 * A request of the cycle whose node someone deleted: zk_lock
		 * promises it nothing (README).  A wait of the cycle given up (a
		 * timeout, a cancel, a stop, a 40P01 of deadlock.c) since the
		 * claim: its cluster's document confirmed it still waited, and a
		 * document says how things stood when it was written (README: the
		 * moment of choice).
		 */
		if (!forever && gw_cycle_tainted(&v))
			excused = true, gw_tainted_victims++;
		else if (!forever && gw_cycle_gave_up(&v, c->gw_claimed_at))
			excused = true, gw_gaveup_victims++;
	}
	if (!zc_core_fail_deadlock(core, pid, node, msg, detail))
		return false;
	if (s < 0 || bi < 0)
		fail("c%d: pid %d's wait (%s) failed as a deadlock's victim, but the simulator finds no such "
			 "request to judge", c->id, pid, node);
	if (!forever && !excused)
		fail("c%d: pid %d chosen as a deadlock's victim, but its wait (%s) is not one that never "
			 "ends when the confirmations are in:\n%s", c->id, pid, node, detail);
	gw_victims++;
	trace("c%d pid %d: deadlock across clusters, 40P01", c->id, pid);
	return true;
}
