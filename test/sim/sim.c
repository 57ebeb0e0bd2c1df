/*
 * sim.c — deterministic simulation of zk_lock: several clusters, each
 * running the real worker decisions (src/core/core.c) and the real slot table
 * (src/core/table.c) for several backends, against the model ZooKeeper
 * (zkmodel*.c), under a seeded scheduler that also injects faults:
 * connection resets, a write applied whose reply is lost, a follower cut
 * off from the leader, a worker paused past its session timeout, a session
 * killed at the leader, a waiter's node deleted behind its back (that
 * request is left out of the checks until it queues again), a held or
 * lingering node deleted so (its holders too; but once a listing the worker
 * reads shows it gone, they must learn it lost within a read's bound), containers
 * reaped, an operator's ACL refusing us on a key node or the root for a
 * while, a server failing inside on a request, a backend crash (the whole
 * cluster restarts with fresh shared memory); in one seed of four, session
 * ids of ended sessions handed out again (SIM_REUSE_IDS=P: in every seed):
 * in half of those, a session on such an id beside its id's old tombstone
 * is then killed while it holds a lock; in the other half, a new session
 * mostly takes its owner's last id (SIM_REUSE_OWN=P),
 * and in one of four, an expired session's id handed out before its client
 * reconnects, which then lands in that other session (SIM_REISSUE=P).
 * In one seed of five, an earlier version's client shares the keys
 * (sim_legacy.c): its nodes carry no mark, and it orders them by sequence.
 * After every step it checks:
 *   - never two holders of conflicting modes of one key that could both
 *     commit now (by the real commit rule, holds.c);
 *   - FIFO: a grant never passes a conflicting request queued before it
 *     (other than as core's same-backend rule allows); fencing tokens of
 *     exclusive grants strictly increase (as zk_lock_token gives them;
 *     equal only for a backend that held the key all along);
 *   - a lock whose node the leader no longer has is known lost within a
 *     bound (judged from the model, not the core's flags);
 *   - a transaction that lost a lock is refused its commit as lost;
 *   - committed transactions never held conflicting locks at once; a
 *     transaction committed under a session-level lock held it from that
 *     lock's grant to its commit;
 *   - a session-level lock is released only by its unlock or the backend's
 *     exit, never by a transaction's end;
 *   - a multi-key request's nodes are created in one multi with every
 *     member of its group still in the table (check_group_whole);
 *   - at the end, after a fault-free quiet phase: every request ended, no
 *     slot in use, no lock node left.
 * A failing seed prints the last steps and replays exactly.
 *
 * Backends run transactions, and now and then a session-level lock episode:
 * one transaction takes it, the next ones run under it, the last gives it up.
 * In a third of the seeds some transactions call zk_once on one job (sim_once.c):
 * its claim, the calls on its record through the cluster's once area and
 * the worker's once_io.c, the seal after the commit; the record's rule is
 * checked from the ground truth (one commit per period, none lost).
 *
 * Shipped worker files run here as they are (build.sh lists them), with
 * their ZooKeeper calls answered by the model (sim_zk.c) and what they take
 * from PostgreSQL from sim_pg.c: the session, its handle, its cut-off
 * clock and a resumed session's confirmation (session.c), closing a
 * session left from before a crash-restart and the session file
 * (left_session.c), every lock request's calls and replies (requests.c),
 * the orphan clean-up (orphans.c), lock-delay's presence list and
 * tombstones (presence.c), and deadlock detection across clusters: the
 * documents, rounds, claims and confirmations (gwaits.c, gwaits_doc.c,
 * gwaits_claim.c; the lock manager's waits are not simulated), and zk_once's
 * calls on a job's record (once_io.c).  The client
 * library's part is played here too: completions in order, ZCLOSING when a
 * handle closes, watchers kept once a read is answered ZOK, one-shot, and
 * told of session events.
 * The worker's turn, its clean stop's steps and its session events are
 * turn.c's, run as is.  Nothing of the worker's decisions is re-stated
 * here: worker.c keeps the process (signals, settings, the waits between
 * turns), whose place the scheduler takes.  A backend's bookkeeping of its
 * locks is book.c, run as is.
 *
 * Usage: sim [--seed N] [--seeds A-B] [--seconds S] [--steps N] [--first-failure]
 *            [--verbose]
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/* ---- the run's state and counters ---- */

int64_t handovers_seen = 0;	/* over the run, to show the seeds use it */
int64_t linger_waits[2];	/* try-locks that waited for a lingering node: refused, granted */
int64_t deadlocks_broken;	/* local circles of waits broken with 40P01 */
int64_t noauth_answers;	/* the model's ZNOAUTH answers (an operator's ACL) */
int64_t garbled_answers;	/* its ZMARSHALLINGERROR answers (a failure inside a server) */
int64_t elections_held;	/* the model's elections */
int64_t proposals_lost;	/* and the writes they lost */
int64_t ids_reused;		/* sessions that took an ended session's id */
int64_t legacy_spans;		/* an earlier version's client's locks held and released */
int64_t late_answers;		/* new sessions whose answer was read after they ended */
int64_t left_alone;		/* a crash's left session whose id another session had */
int64_t held_deleted[2];	/* held nodes deleted from outside: not listed, listed since */
int64_t ids_reissued;	/* reconnects that came back to another session of the id */
int64_t resumes_refused;	/* resumed sessions whose presence node was gone: expired */
int64_t rides_seen = 0;	/* of them, readers joining a local reader's node */
int64_t upgrades_ahead;	/* upgrades granted ahead of local waiters (counters) */
int64_t upgrades_across;	/* upgrades granted past other clusters' requests (counters) */
int64_t taken_here;	/* nodes a backend took itself (take_here.c): lingering, or to ride */
int64_t joined_here;	/* requests that waited behind a local holder (or were refused) at their claim */
int64_t began_sending;	/* transactions begun while their worker sent its plan's calls */
int64_t rides_here;	/* of them, rides on a local reader's node */
int64_t reader_takes_here;	/* of them, readers' lingering nodes */
int64_t held_for_local;	/* turns held for a local conflicting holder (counters) */
int64_t calls_sent[ZKM_SETDATA + 1];	/* by the shipped worker files, by kind */
Sim *S;
bool verbose_run = false;
Cluster *cur_cl;
void (*watch_fns[16]) (void);
int	nwatch_fns;
int64_t gw_victims = 0;	/* over the run */
int64_t gw_rounds = 0;
int64_t gw_claims = 0;
int64_t gw_gaveup_victims = 0;	/* of a cycle a wait of which was given up meanwhile */
int64_t gw_tainted_victims = 0;	/* through a request whose node was deleted from outside */	/* chosen through a wait ended, not yet rewritten */
int64_t gw_max_stuck_ms = 0;
int	gw_longest_doc = 0;

uint64_t
rnd(void)
{
	S->rng ^= S->rng << 13;
	S->rng ^= S->rng >> 7;
	S->rng ^= S->rng << 17;
	return S->rng;
}

int
rnd_int(int n)
{
	return (int) (rnd() % (uint64_t) n);
}

bool
chance(int percent)
{
	return rnd_int(1000) < percent * 10;
}

/*
 * A session's nonce (session.c draws a random one): distinct for each, never
 * 0, and off the seed's random stream, so that drawing one changes no seed.
 */
uint64_t
next_nonce(void)
{
	uint64_t	z = ++S->nonces * UINT64_C(0x9e3779b97f4a7c15);

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	return z != 0 ? z : 1;
}

/*
 * A draw off the seed's random stream, for an aim added after the swarm:
 * every other draw of a seed stays as it was, so the seeds that catch
 * other bites go on catching them (only what the aim changes differs).
 */
bool
aside_chance(int percent)
{
	uint64_t	z = (++S->asides + (uint64_t) S->seed * 1000003) * UINT64_C(0xd6e8feb86659fd93);

	z = (z ^ (z >> 32)) * UINT64_C(0xd6e8feb86659fd93);
	z ^= z >> 32;
	return z % 1000 < (uint64_t) percent * 10;
}

void
trace(const char *fmt,...)
{
	va_list		ap;
	char	   *line = S->trace[S->ntrace++ % TRACE];
	int			n;

	n = snprintf(line, 200, "%8.3fs #%" PRId64 " ", zkm_now(S->m) / 1e6, S->step);
	va_start(ap, fmt);
	vsnprintf(line + n, 200 - n, fmt, ap);
	va_end(ap);
	if (S->verbose)
		printf("%s\n", line);
}

void
fail(const char *fmt,...)
{
	va_list		ap;
	int			i;

	if (S->failed)
		return;
	S->failed = true;
	printf("seed %" PRIu64 " FAILED at step %" PRId64 " (%.3f s): ", S->seed, S->step,
		   zkm_now(S->m) / 1e6);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nlast steps:\n");
	for (i = S->ntrace > TRACE ? S->ntrace - TRACE : 0; i < S->ntrace; i++)
		printf("  %s\n", S->trace[i % TRACE]);
	printf("replay: make sim SIM_SEED=%" PRIu64 "\n", S->seed);
}

const char *
key_name(int k)
{
	static const char *names[NALL] = {"tk0", "tk1", "tk2", "mtk3", "otk4"};

	return names[k];
}

/* The index of an encoded key: its last digit. */
int
key_index(const char *key)
{
	return key[strlen(key) - 1] - '0';
}

void
tick(int64_t us)
{
	int			i;

	/* faults come at random, one every fault_every on average */
	if (!S->quiet && rnd_int((int) S->fault_every) < us)
		fault();
	if (S->aim.aim_first)
		first_listing_tend();
	if (S->aim.aim_orphans)
		orphans_tend();
	if (S->aim.aim_reused)
		reused_tend();
	if (S->hot_pct > 0)
	{
		ridden_upgrade_tend();
		sole_reader_tend();
	}
	if (S->fault_weight[F_DELETE_HOLDER] > 0)
	{
		leaned_on_tend();
		barrier_tend();
	}
	/* time stops at the next commit record due to become visible */
	for (i = 0; i < S->ncl; i++)
	{
		int			j;

		for (j = 0; j < S->c[i].nb; j++)
			if (S->c[i].b[j].st == B_PUBLISH && S->c[i].b[j].next_at - zkm_now(S->m) < us)
				us = S->c[i].b[j].next_at > zkm_now(S->m) ? S->c[i].b[j].next_at - zkm_now(S->m) : 0;
	}
	zkm_advance(S->m, us);
	for (i = 0; i < S->ncl; i++)
	{
		Cluster    *c = &S->c[i];
		int			j;

		/* a commit record becomes visible when its pause is over, whoever runs then */
		for (j = 0; j < c->nb; j++)
			if (c->b[j].st == B_PUBLISH && zkm_now(S->m) >= c->b[j].next_at)
				publish(c, &c->b[j], ZKH_COMMIT);

		/* pings answered: the socket is readable and the connection stays up (worker.c) */
		if (!c->paused && c->client >= 0 && zkm_answering(S->m, c->client))
			*c->last_heard = c->heard_at = c_mono(c);
		worker_turn(c);
	}
}

void
model_log(const char *line)
{
	trace("%s", line);
}

/* One step: something happens somewhere. */
void
step(void)
{
	int			pick = rnd_int(100);
	Cluster    *c = &S->c[rnd_int(S->ncl)];
	int			i;

	S->step++;
	/* (beside the step: it draws from a stream of its own, the seed's draws as without it) */
	(void) legacy_step();
	if (pick < 18)
	{
		if (c->client >= 0 && zkm_step_server(S->m, c->client))
			return;
	}
	else if (pick < 30)
	{
		if (zkm_step_leader(S->m))
			return;
	}
	else if (pick < 42)
	{
		if (zkm_step_follower(S->m, 1 + rnd_int(zkm_nservers(S->m) - 1)))
			return;
	}
	else if (pick < 62)
	{
		if (deliver(c))
			return;
	}
	else if (pick < 80)
	{
		Backend    *b = &c->b[rnd_int(c->nb)];

		if (backend_step(c, b))
			return;
	}
	else if (pick < 84)
	{
		if (c->client >= 0 && !c->paused && zkm_step_reconnect(S->m, c->client))
			return;
	}
	if (S->quiet)
	{
		/* nothing picked: let the world settle in order before time moves */
		for (i = 0; i < S->ncl; i++)
			if (S->c[i].client >= 0 && zkm_step_server(S->m, S->c[i].client))
				return;
		if (legacy_settle() || zkm_step_leader(S->m))
			return;
		/* (followers too: one that lags for good would answer its clients ever later) */
		for (i = 1; i < zkm_nservers(S->m); i++)
			if (zkm_step_follower(S->m, i))
				return;
	}
	heal(S->quiet);
	/* round trips take a millisecond or two; now and then the world stalls longer */
	tick(rnd_int(20) == 0 ? 20000 + rnd_int(100000) : 200 + rnd_int(3000));
}

bool
all_done(void)
{
	int			i;
	int			j;

	for (i = 0; i < S->ncl; i++)
	{
		for (j = 0; j < S->c[i].nb; j++)
			if (S->c[i].b[j].st != B_DONE)
				return false;
		for (j = 0; j < S->c[i].t->nused; j++)
			if (S->c[i].t->slots[j].zstate != ZKS_FREE)
				return false;
	}
	/* a session closed while cut off ends at its expiry, and its nodes with it */
	return legacy_done() && !zkm_busy(S->m) && !zkm_unattached(S->m);
}

/*
 * The world's shape, drawn per seed (a swarm): how many clusters, each
 * with its own number of backends and slots, so that shapes no fixed
 * setting reaches (many backends on few keys, a table nearly full) come up
 * within the seeds make test runs.  Drawn after the settings above, from the
 * seed's own stream, so that a seed replays.
 */
void
draw_world(Sim *sim)
{
	static const int ncl[] = {1, 2, 2, 3, 3, 3, 3, 4, 4, 5};
	static const int multi[] = {0, 6, 12, 12, 30, 50};
	/* the last kinds' weights are set by the seed's number after draw_world: other seeds draw as before */
	static const int weights[NFAULTS] = {20, 15, 20, 15, 7, 11, 3, 2, 2, 5, 6, 3, 3, 6, 3, 2, 0, 0};
	int			base_pb;
	int			sum_timeout = 0;
	int			margin;
	int			i;
	int			k;

	sim->ncl = ncl[rnd_int(10)];
	/* the default mix of faults, each weight dropped in a quarter of the seeds or scaled up to 3 times */
	for (k = 0; k < F_DELETE_PRESENCE; k++)
		sim->fault_weight[k] = chance(25) ? 0 : weights[k] * (2 + rnd_int(5)) / 2;
	sim->gap = getenv("SIM_GAP") != NULL && sim->ncl > 1;
	if (sim->gap)
		sim->fault_weight[F_KILL_SESSION] = 60;
	sim->fault_every = 500000 + rnd_int(5000000);
	sim->multi_pct = multi[rnd_int(6)];
	if (sim->multi_pct + sim->sem_pct > 90)
		sim->multi_pct = 90 - sim->sem_pct;
	/*
	 * Settings differ between clusters within what README requires of them:
	 * lock_delay (or the floor of twice a cluster's own proof_bound) longer
	 * than every cluster's proof_bound.  Proof bounds lie within [0.6, 1]
	 * of a base, so a lock_delay set below it is raised by that floor.
	 */
	base_pb = 300 + rnd_int(1700);
	for (i = 0; i < sim->ncl; i++)
	{
		Cluster    *c = &sim->c[i];
		int			nb = chance(50) ? 1 + rnd_int(4) : 1 + rnd_int(NBACKENDS);

		/* room for every backend's locks mostly; now and then a table that fills */
		cluster_init(c, i, nb, chance(15) ? 4 + rnd_int(8) : 8 + rnd_int(NSLOTS - 7));
		c->session_timeout = 2000 + rnd_int(6001);
		c->proof_bound = base_pb * (60 + rnd_int(41)) / 100;
		c->lock_delay = chance(50) ? rnd_int(base_pb) : base_pb * (120 + rnd_int(131)) / 100;
		/* crystals drift some ppm; these drift much more (draw_rates may spread them further) */
		c->drift_ppm = rnd_int(2001) - 1000;
		c->mono_off = (int64_t) rnd_int(1000000) * 1000;
		c->wall_jump = 0;
		c->wall_off = (int64_t) (rnd_int(4001) - 2000) * 1000;
		c->core.proof_bound = c->proof_bound;
		/* each cluster's own deadlock_timeout: a detector's rounds differ from the others' */
		c->core.deadlock_timeout = 200 + rnd_int(1001);
		sum_timeout += c->session_timeout;
		trace("world: c%d of %d: %d backends, %d slots, session timeout %d, proof bound %d, "
			  "lock-delay %d, drift %+d ppm", i, sim->ncl, nb, c->t->nslots, c->session_timeout,
			  c->proof_bound, c->lock_delay, (int) c->drift_ppm);
	}
	/*
	 * What a commit may take between its check and its record becoming
	 * visible, within the margin the settings leave (README: longer pauses
	 * are what fencing tokens are for).
	 */
	margin = draw_rates(sim);
	sim->commit_pause_us = (int64_t) rnd_int(margin / 2 + 1) * 1000;
	/*
	 * A follower cut off from the leader drops its clients after syncLimit
	 * ticks, which operators set around and above the session timeout.
	 */
	zkm_set_follower_drop(sim->m, (int64_t) (sum_timeout / sim->ncl) *
						  (50 + rnd_int(200)) * 10);
}

/* One seed: load with faults, then quiet until everything ended.  Returns steps run. */
int64_t
run_seed(uint64_t seed, int64_t max_steps)
{
	Sim		   *sim = calloc(1, sizeof(Sim));
	int32_t		cstart;
	int64_t		steps;
	int			i;

	S = sim;
	sim->seed = seed;
	sim->verbose = verbose_run;
	sim->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	/* a third of the seeds start key nodes' counters near the wrap */
	cstart = seed % 3 == 0 ? INT32_MAX - 40 : 0;
	sim->sem_pct = seed % 3 == 1 ? 80 : 12;
	sim->mismatch_pct = seed % 3 == 1 ? 30 : 8;
	/*
	 * In one seed of six, circles mostly go through the semaphore, among
	 * many semaphore holders: a circle that one of them, outside it, undoes
	 * when it gives a place up is no deadlock (gwait.c's settle).
	 */
	sim->circle_sem_pct = seed % 6 == 1 ? 80 : 25;
	/* hand-over on in three seeds of four, lingering in half of those */
	sim->handover = seed % 4 != 3;
	sim->handover_limit = (int) (seed / 4 % 4);
	sim->linger_ms = seed % 8 < 4 ? 0 : 50 * (int) (1 + seed / 8 % 5);
	sim->hot_pct = sim->handover && seed % 2 == 0 ? 60 : 0;
	sim->hot_read_pct = seed % 3 == 0 ? 90 : 30;
	/* hot readers that upgrade: more of them in one seed of five (readers between a writer and its successor) */
	sim->hot_upgrade_pct = seed % 5 == 1 || seed % 7 == 3 ? 35 : 10;
	/* in one seed of seven, upgrading readers come in pairs of one cluster (they ride one node) */
	sim->pair_upgrades = seed % 7 == 3;
	if (sim->pair_upgrades)
	{
		sim->hot_read_pct = 90;	/* (readers of other clusters queued around the pair) */
		sim->hot_upgrade_pct = 70;
	}
	/* a key one cluster's readers use alone: its readers' nodes linger and are taken */
	sim->hot_home = sim->linger_ms > 0 && sim->hot_pct > 0 && seed % 8 == 4;
	sim->m = zkm_new(seed, 3, cstart);
	zkm_set_log(sim->m, model_log);
	/* ids handed out again (lock-delay's tombstones speak for one incarnation) */
	zkm_set_id_reuse(sim->m, getenv("SIM_REUSE_IDS") ? atoi(getenv("SIM_REUSE_IDS")) :
					 seed % 8 == 7 || seed % 8 == 3 ? 100 : 0);
	sim->aim.aim_reused = seed % 8 == 7 || getenv("SIM_REUSE_IDS") != NULL;	/* reused_tend */
	/* in the others of those, a new session mostly on its owner's last id (as after a member's restart) */
	zkm_set_own_id_reuse(sim->m, getenv("SIM_REUSE_OWN") ? atoi(getenv("SIM_REUSE_OWN")) :
						 seed % 8 == 3 ? 67 : 0);
	sim->aim.aim_own_id = seed % 8 == 3 && getenv("SIM_REUSE_OWN") == NULL;	/* own_id_unlock_tend */
	/* and, in one seed of four, an expired session's id given out before its client is back */
	zkm_set_reissue(sim->m, getenv("SIM_REISSUE") ? atoi(getenv("SIM_REISSUE")) :
					seed % 4 == 2 ? 50 : 0);
	/* where its id may then go to a stranger: a left-over session ends just before its close */
	sim->aim.aim_left_end = seed % 4 == 2;
	draw_world(sim);
	/* presence nodes deleted from outside in one seed of five (by its number: other seeds draw as before) */
	sim->fault_weight[F_DELETE_PRESENCE] = seed % 5 == 4 ? 8 : 0;
	/* held nodes deleted from outside in one seed of six */
	sim->fault_weight[F_DELETE_HOLDER] = seed % 6 == 5 ? 6 : 0;
	sim->aim.aim_first = seed % 5 == 3 && sim->ncl > 1;	/* first_listing_tend */
	/*
	 * orphans_tend, in one cluster: another cluster's waiter blocked by such a
	 * node waits for the owner's session to end (only the owner's ghost
	 * looks, which these nodes have none of, would delete it sooner)
	 */
	sim->aim.aim_orphans = seed % 7 == 6 && sim->ncl == 1;
	once_draw(seed);
	legacy_draw(seed);
	while (!sim->failed && sim->step < max_steps)
	{
		int64_t		now = zkm_now(sim->m);

		if (!sim->quiet && now >= WORK_US)
		{
			sim->quiet = true;
			trace("quiet: no more faults, no new transactions");
			heal(true);
			for (i = 0; i < S->ncl; i++)
			{
				int			j;

				for (j = 0; j < S->c[i].nb; j++)
					sim->c[i].b[j].txns_left = 0;
			}
		}
		if (sim->quiet && (all_done() || now >= WORK_US + QUIET_US))
			break;
		step();
		check_step();
	}
	if (!sim->failed && sim->step < max_steps)
		check_end();
	if (!sim->failed && sim->step >= max_steps)
		fail("did not settle within %" PRId64 " steps", max_steps);
	steps = sim->step;
	if (sim->verbose || getenv("SIM_STATS"))
		printf("seed %" PRIu64 ": %" PRId64 " steps, %" PRId64 " grants, %" PRId64 " commits\n",
			   seed, steps, sim->grants, sim->commits);
	for (i = 0; i < S->ncl; i++)
	{
		int			j;

		upgrades_ahead += sim->c[i].t->counters.upgrades_ahead;
		upgrades_across += sim->c[i].t->counters.upgrades_across;
		held_for_local += sim->c[i].t->counters.held_for_local;
		for (j = 0; j < sim->c[i].nb; j++)
			zc_book_free(&sim->c[i].b[j].book);
		free(sim->c[i].outs);
		simpg_proc_end(sim->c[i].proc);
		free(sim->c[i].watches);
		simpg_shared_free(sim->c[i].shared);
		simpg_fs_free(sim->c[i].fs);
	}
	{
		int64_t		noauth;
		int64_t		garbled;

		int64_t		elections;
		int64_t		lost;

		zkm_counts(sim->m, &noauth, &garbled);
		noauth_answers += noauth;
		garbled_answers += garbled;
		zkm_model_counts(sim->m, &elections, &lost);
		elections_held += elections;
		proposals_lost += lost;
		ids_reused += zkm_reused_ids(sim->m);
		legacy_spans += sim->legacy.spans;
		ids_reissued += zkm_reissued(sim->m);
		late_answers += zkm_late_answers(sim->m);
		for (i = 0; i < sim->ngone_held; i++)
			held_deleted[sim->gone_held[i].listed_at != 0]++;
	}
	zkm_free(sim->m);
	i = sim->failed;
	free(sim);
	S = NULL;
	return i ? -steps : steps;
}

double
wall_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A ZC_ASSERT of the core broke: the seed fails with its last steps (then it aborts). */
static void
invariant_broken(const char *cond, const char *file, int line)
{
	fail("broken invariant at %s:%d: %s", file, line, cond);
	fflush(stdout);
}

/* A slot moved where its state machine forbids (slot_state.c): the seed fails with its last steps. */
static void
slot_illegal(const ZklSlot *s, ZklZkState to)
{
	fail("illegal slot transition %s -> %s of %s %s", zc_slot_name(s->zstate), zc_slot_name(to), s->key,
		 s->node);
	fflush(stdout);
	abort();
}

/* Seeds first, first + stride, ... up to last, within the time bound from t0. */
void
sim_run_range(const SimRange *r, SimTotals *tot)
{
	uint64_t	seed;

	memset(tot, 0, sizeof(*tot));
	for (seed = r->first; seed <= r->last; seed += (uint64_t) r->stride)
	{
		int64_t		steps;

		if (r->seconds > 0 && wall_seconds() - r->t0 >= r->seconds)
			break;
		if (r->verbose)
			printf("seed %" PRIu64 "\n", seed);
		steps = run_seed(seed, r->max_steps);
		tot->steps += steps < 0 ? -steps : steps;
		if (steps < 0)
			tot->failed++;
		else
			tot->passed++;
		if (steps < 0 && r->first_failure)
			break;
		if (seed > UINT64_MAX - (uint64_t) r->stride)
			break;
	}
}

int
main(int argc, char **argv)
{
	SimRange	r = {.first = 1, .last = 0, .stride = 1, .max_steps = 20000000};
	SimTotals	tot;
	long		jobs = sysconf(_SC_NPROCESSORS_ONLN);
	int			i;

	r.t0 = wall_seconds();
	zc_invariant_broken = invariant_broken;
	zc_slot_illegal = slot_illegal;

	for (i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			r.first = r.last = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
		{
			char	   *dash;

			r.first = strtoull(argv[++i], &dash, 10);
			r.last = *dash == '-' ? strtoull(dash + 1, NULL, 10) : r.first;
		}
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			r.seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			r.max_steps = strtoll(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
			jobs = atol(argv[++i]);
		else if (strcmp(argv[i], "--first-failure") == 0)
			r.first_failure = true;
		else if (strcmp(argv[i], "--verbose") == 0)
			r.verbose = verbose_run = true;
		else
		{
			fprintf(stderr, "usage: sim [--seed N | --seeds A-B | --seconds S] [--steps N] [--jobs N] "
					"[--first-failure] [--verbose]\n");
			return 2;
		}
	}
	if (r.seconds > 0 && r.last == 0)
	{
		/* random seeds, as many as fit */
		r.first = (uint64_t) time(NULL) * 1000 + (uint64_t) getpid() % 1000;
		r.last = UINT64_MAX;
	}
	else if (r.last == 0)
		r.last = r.first;
	/* several processes, one core each, take turns at the seeds (sim_jobs.c) */
	if (jobs > 1 && r.last > r.first && !r.verbose)
		return sim_jobs(&r, (int) (jobs < SIM_MAX_JOBS ? jobs : SIM_MAX_JOBS));
	sim_run_range(&r, &tot);
	printf("%.0f steps/s over %" PRId64 " steps in %.1f s\n",
		   tot.steps / (wall_seconds() - r.t0 + 1e-9), tot.steps, wall_seconds() - r.t0);
	sim_print_stats();
	printf("%d passed, %d failed\n", tot.passed, tot.failed);
	return tot.failed ? 1 : 0;
}
