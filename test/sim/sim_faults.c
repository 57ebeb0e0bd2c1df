/*
 * sim_faults.c — a cluster's start, its worker's restarts and crashes, clean stops,
 * and the faults a seed draws, with their healing.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/* ---- the scheduler ---- */

void
cluster_init(Cluster *c, int id, int nb, int nslots)
{
	int			i;

	memset(c, 0, sizeof(*c));
	c->id = id;
	c->shared = simpg_shared_new();
	c->t = simpg_table(c->shared);
	c->session_nonce = simpg_session_nonce(c->shared);
	c->last_heard = simpg_last_heard(c->shared);
	c->closing_tag = simpg_closing_tag(c->shared);
	c->fs = simpg_fs_new();
	c->pm_pid = 1000 * (id + 1);
	c->pm_start = c_wall(c);
	c->t->nslots = nslots;
	c->t->slots = c->slots;
	c->t->conn_state = ZKC_STOPPED;
	snprintf(c->t->roots[0], sizeof(c->t->roots[0]), "%s", ROOT);
	snprintf(c->hosts_file, sizeof(c->hosts_file), "model");
	c->reload_client = -1;
	for (i = 0; i < NSLOTS; i++)
		c->slots[i].req.owner_procno = -1;
	c->env.arg = c;
	c->env.wall_now = env_now;
	c->env.mono_now = env_mono;
	c->env.new_uuid = env_new_uuid;
	c->env.wake = env_wake;
	c->env.interrupt = env_interrupt;
	c->env.denied = env_denied;
	c->env.grants_paused = env_grants_paused;
	c->env.suspect = env_suspect;
	c->env.may_be_orphan = env_may_be_orphan;
	c->env.ghost = env_ghost;
	c->env.proof_note = env_proof_note;
	c->env.rc_text = env_rc_text;
	c->env.rc_sqlstate = env_rc_sqlstate;
	c->env.warn = env_warn;
	c->core.t = c->t;
	c->core.env = &c->env;
	c->core.connect_timeout = CONNECT_TIMEOUT;
	c->core.deadlock_timeout = 1000;
	c->core.cohort.handover = S->handover;
	c->core.cohort.handover_limit = S->handover_limit;
	c->core.cohort.linger_ms = S->linger_ms;
	c->core.ops = c->ops;
	c->core.mine = c->mine;
	c->core.held = c->held;
	/* as worker.c's main at every start: a crash before the first plan finds its state set */
	zc_core_worker_restarted(&c->core);
	c->client = -1;
	worker_memory(c);
	worker_start(c);
	c->nb = nb;
	for (i = 0; i < nb; i++)
	{
		c->b[i].pid = 100 * (id + 1) + i;
		book_init(c, &c->b[i]);
		c->b[i].subid = 1;
		c->b[i].waiting = -1;
		c->b[i].txns_left = 1000;
		c->b[i].sess_key = -1;
		c->b[i].next_at = rnd_int(500000);
	}
}

FaultKind
pick_fault(void)
{
	int			total = 0;
	int			r;
	int			k;

	for (k = 0; k < NFAULTS; k++)
		total += S->fault_weight[k];
	if (total == 0)
		return F_REAP;
	r = rnd_int(total);
	for (k = 0; r >= S->fault_weight[k]; k++)
		r -= S->fault_weight[k];
	return (FaultKind) k;
}

/*
 * The worker process dies (an ERROR, a kill): its connection closes, its
 * session lives on.  The postmaster starts another, with its own process
 * memory (core_init in worker.c: the core's own state, presence, orphans)
 * over the same shared memory, which resumes the session (session.c).
 */
void
worker_restart(Cluster *c)
{
	ZklCore		keep = c->core;

	if (c->client >= 0)
		zkm_abandon(S->m, c->client);
	c->client = -1;
	drop_outs(c, true);			/* replies to the old process are gone with it */
	memset(&c->core, 0, sizeof(c->core));
	c->core.t = keep.t;
	c->core.env = keep.env;
	c->core.connect_timeout = keep.connect_timeout;
	c->core.deadlock_timeout = keep.deadlock_timeout;
	c->core.proof_bound = keep.proof_bound;
	c->core.ops = keep.ops;
	c->core.mine = keep.mine;
	c->core.held = keep.held;
	c->core.cohort.handover = keep.cohort.handover;
	c->core.cohort.handover_limit = keep.cohort.handover_limit;
	c->core.cohort.linger_ms = S->linger_ms;	/* the setting, read afresh (a stop set the core's to 0) */
	c->paused = false;			/* a stopped process killed: the new one runs */
	worker_memory(c);			/* process memory */
	simpg_once_worker_restarted();	/* worker.c's start: a once call under way is sent again */
	zc_core_worker_restarted(&c->core);
	c->t->writes_held = false;	/* worker.c's worker_exit */
	c->t->conn_state = ZKC_CONNECTING;
	trace("c%d worker restarted", c->id);
	worker_start(c);			/* its first turn resumes the session (session.c), if any */
}

/*
 * A fast shutdown: each backend's transaction aborts and the backend exits,
 * giving up every lock at both levels; one past its commit check finishes
 * its commit first (backend_step), as interrupts wait for it.
 */
void
backend_exit(Cluster *c, Backend *b)
{
	if (b->st == B_PUBLISH || b->st == B_DONE || b->st == B_DOWN)
		return;
	if (b->st == B_SEAL)
		end_xact(c, b, "commits: its period's record cut short");
	else if (b->st != B_IDLE)
	{
		b->txns_left--;
		end_xact(c, b, "aborts: its cluster stops");
	}
	release_all(c, b);
	if (b->st == B_DONE)
		return;
	if (c->stopping)
		b->st = B_DOWN;
	else
	{
		/* the stop ended while it published: it comes back with the new postmaster's backends */
		b->st = b->txns_left > 0 && !S->quiet ? B_IDLE : B_DONE;
		b->next_at = zkm_now(S->m) + 1000000 + rnd_int(1000000);
	}
}

/*
 * A backend crashes: the postmaster kills every process of the cluster at
 * once (no exit callbacks: nothing is released, the worker's connection
 * just closes), resets shared memory, replays the WAL and starts a new
 * worker with a new session, which closes the old one (left_tend).  A
 * backend past its commit check had its commit made durable, or not; one
 * that was is visible after recovery, before the new worker starts.
 */
void
crash_restart(Cluster *c)
{
	int			i;

	trace("fault: c%d a backend crashes: the postmaster restarts the cluster", c->id);
	c->paused = true;			/* the worker is killed with them: it sends nothing more */
	c->crashing = true;
	for (i = 0; i < c->nb; i++)
	{
		Backend    *b = &c->b[i];

		if (b->st == B_PUBLISH && chance(50))
			settle(c, b, ZKH_COMMIT);
		else if (b->st == B_PUBLISH)
		{
			b->txns_left--;
			end_xact(c, b, "dies before its commit was durable");
		}
		backend_exit(c, b);
	}
	c->crashing = false;
	c->stop.marking = false;
	zc_cohort_stop_lingering(&c->core.cohort);
	stop_close(c, STOP_DIED);	/* the new worker finds the session file (left_session.c) */
}

void
begin_stop(Cluster *c)
{
	int			i;

	trace("fault: c%d stops (fast shutdown)", c->id);
	/* the stop begins before its backends' exits wake the worker (which then takes its steps) */
	enter(c);
	zw_stop_begin(&c->stop, &c->core, ZW_CLEAN_STOP_MS);
	c->stopping = true;			/* its backends exit till the new postmaster starts */
	for (i = 0; i < c->nb; i++)
		backend_exit(c, &c->b[i]);
}

/* c's worker stops running (descheduled, stopped) until `until`, model time: heal() wakes it. */
void
pause_worker(Cluster *c, int64_t until)
{
	c->paused = true;
	c->paused_until = until;
	if (c->client >= 0)
		zkm_set_paused(S->m, c->client, true);
	trace("fault: c%d worker paused until %.3f", c->id, c->paused_until / 1e6);
}

void
fault(void)
{
	int			ci = rnd_int(S->ncl);
	Cluster    *c = &S->c[ci];
	FaultKind	what = pick_fault();

	if (what == F_RESET && c->client >= 0)
	{
		trace("fault: c%d connection reset", ci);
		zkm_reset(S->m, c->client);
	}
	else if (what == F_LOSE_REPLY && c->client >= 0)
	{
		trace("fault: c%d will lose its next write's reply", ci);
		zkm_lose_write_reply(S->m, c->client);
	}
	else if (what == F_CUT_FOLLOWER)
	{
		int			s = 1 + rnd_int(zkm_nservers(S->m) - 1);

		trace("fault: server %d cut off from the leader", s);
		zkm_partition(S->m, s, true);
	}
	else if (what == F_KILL_SESSION && S->gap && S->c[0].client >= 0 && gap_aimed())
	{
		/*
		 * SIM_GAP: the gap the clock-rate rule closes.  The first cluster
		 * (the slow one under SIM_RATES=outside) stops hearing ZooKeeper and
		 * its session ends at the leader at that moment: others see the
		 * death at once, it only when its proof has aged on its own clock.
		 */
		trace("fault: c0 link goes silent and its session is killed at the leader");
		zkm_silence(S->m, S->c[0].client);
		zkm_kill(S->m, S->c[0].client);
	}
	else if (what == F_KILL_SESSION && c->client >= 0)
	{
		/* an operator (or a worker restart racing a commit) ends the session at the leader */
		trace("fault: c%d session killed at the leader", ci);
		zkm_kill(S->m, c->client);
	}
	else if (what == F_DELETE_WAITER)
	{
		/* someone deletes a waiter's node behind its back: it must queue again */
		int			j;

		for (j = 0; j < c->t->nused; j++)
		{
			ZklSlot    *s = &c->t->slots[j];
			char		path[ZKL_PATH_LEN];

			if (s->zstate == ZKS_QUEUED && s->ans.result == ZKL_RESULT_PENDING && s->node[0] != '\0' &&
				S->ntainted < 64)
			{
				snprintf(S->tainted[S->ntainted++], ZKL_UUID_LEN + 1, "%s", s->uuid);
				zc_core_child_path(c->t, s, s->node, path);
				trace("fault: %s deleted behind its owner's back", path);
				zkm_admin_delete(S->m, path);
				break;
			}
			/* or a multi-key member's node whose create reply was lost, before its lookup */
			if ((s->zstate == ZKS_RECOVER || s->zstate == ZKS_RECOVERING) && s->req.group != 0 &&
				S->ntainted < 64 && delete_by_uuid(c, s))
				break;
		}
	}
	else if (what == F_PAUSE && !c->paused)
		pause_worker(c, zkm_now(S->m) + 500000 + rnd_int(c->session_timeout * 2000));
	else if (what == F_CRASH && c->stopping)
	{
		/* the postmaster, shutting down, starts no new worker */
		trace("fault: c%d worker dies during its stop", ci);
		stop_close(c, STOP_DIED);
	}
	else if (what == F_CRASH)
	{
		trace("fault: c%d worker crashes", ci);
		worker_restart(c);
	}
	else if (what == F_WALL)
	{
		/* the wall clock steps (NTP, an operator): the monotonic one does not */
		c->wall_jump += (int64_t) (rnd_int(20001) - 10000) * 1000;
		trace("fault: c%d wall clock steps to %+.3f s", ci, c->wall_jump / 1e6);
	}
	else if (what == F_RELOAD && !c->stopping)
	{
		/* a reload turns local hand-over off, or back on (in the seeds that have it) */
		if (S->handover)
		{
			c->core.cohort.handover = !c->core.cohort.handover;
			trace("fault: c%d local hand-over %s", ci, c->core.cohort.handover ? "on" : "off");
		}
		/* and, drawn off the seed's stream, names the ensemble by another list (session.c) */
		if (aside_chance(50))
		{
			snprintf(c->hosts_file, sizeof(c->hosts_file), "model-%d", (int) (zkm_now(S->m) / 1000 % 3));
			c->reload_due = true;
			trace("fault: c%d reload: zk_lock.hosts \"%s\"", ci, c->hosts_file);
		}
	}
	else if (what == F_SILENT && c->client >= 0)
	{
		trace("fault: c%d link goes silent", ci);
		zkm_silence(S->m, c->client);
	}
	else if (what == F_REAP && zkm_step_reap(S->m))
		trace("fault: an empty key node reaped");
	else if (what == F_ACL)
	{
		/* mostly a key node (its children's creates and deletes, its listing), now and then the root */
		int			k = rnd_int(NALL + 1);
		char		path[ZKM_PATH];
		int64_t		us = 50000 + (int64_t) rnd_int(4000) * 1000;

		if (k == NALL)
			snprintf(path, sizeof(path), "%s", ROOT);
		else
			snprintf(path, sizeof(path), "%s/%s", ROOT, key_name(k));
		trace("fault: an ACL on %s refuses us for %.3f s", path, us / 1e6);
		zkm_refuse(S->m, path, us);
	}
	else if (what == F_CRASH_RESTART && !c->stopping)
		crash_restart(c);
	else if (what == F_DELETE_PRESENCE && c->client >= 0 && c->t->session_id != 0)
	{
		/* an operator deletes the presence node; half the time an ACL refuses its create back a while */
		char		path[ZKM_PATH];
		int64_t		us = 50000 + (int64_t) rnd_int(2000) * 1000;

		pres_path(path, c->t->session_id, *c->session_nonce, ZKL_NAME_PRESENCE);
		trace("fault: someone deletes c%d's presence node %s", ci, path);
		zkm_admin_delete(S->m, path);
		if (chance(50))
		{
			trace("fault: an ACL on %s refuses us for %.3f s", SESSIONS, us / 1e6);
			zkm_refuse(S->m, SESSIONS, us);
		}
	}
	else if (what == F_DELETE_HOLDER)
		delete_holder(c);
	else if (what == F_CUT_LEADER)
	{
		trace("fault: the leader is cut off from every follower");
		zkm_isolate_leader(S->m);
	}
	else if (what == F_GARBLE && c->client >= 0)
	{
		trace("fault: c%d's next request fails inside its server", ci);
		zkm_garble_next(S->m, c->client);
	}
	else if (what == F_STOP)
	{
		/* mostly a cluster with a backend past its commit check: the stop must wait for it */
		int			i;
		int			j;

		for (i = 0; i < S->ncl; i++)
			for (j = 0; j < S->c[i].nb; j++)
				if (S->c[i].b[j].st == B_PUBLISH && chance(70))
					c = &S->c[i];
		if (!c->stopping && !c->paused && c->client >= 0)
			begin_stop(c);
	}
}

void
heal(bool all)
{
	int			i;

	for (i = 1; i < zkm_nservers(S->m); i++)
		if (all || chance(1))
			zkm_partition(S->m, i, false);
	for (i = 0; i < S->ncl; i++)
	{
		Cluster    *c = &S->c[i];

		if (all)
			c->core.cohort.handover = S->handover;
		if (c->paused && (all || zkm_now(S->m) >= c->paused_until))
		{
			c->paused = false;
			if (c->client >= 0)
				zkm_set_paused(S->m, c->client, false);
			trace("c%d worker resumes", i);
		}
	}
}
