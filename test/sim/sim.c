/*
 * sim.c — deterministic simulation of zk_lock: several clusters, each
 * running the real worker decisions (src/core/core.c) and the real slot table
 * (src/core/table.c) for several backends, against the model ZooKeeper
 * (zkmodel.c), under a seeded scheduler that also injects faults:
 * connection resets, a write applied whose reply is lost, a follower cut
 * off from the leader, a worker paused past its session timeout, a session
 * killed at the leader, a waiter's node deleted behind its back (that
 * request is left out of the checks until it queues again), containers
 * reaped, an operator's ACL refusing us on a key node or the root for a
 * while, a server failing inside on a request, a backend crash (the whole
 * cluster restarts with fresh shared memory); in one seed of eight, session
 * ids of ended sessions handed out again (SIM_REUSE_IDS=P: in every seed),
 * and in one of four, an expired session's id handed out before its client
 * reconnects, which then lands in that other session (SIM_REISSUE=P).
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
 *   - at the end, after a fault-free quiet phase: every request ended, no
 *     slot in use, no lock node left.
 * A failing seed prints the last steps and replays exactly.
 *
 * Backends run transactions, and now and then a session-level lock episode:
 * one transaction takes it, the next ones run under it, the last gives it up.
 *
 * Shipped worker files run here as they are (build.sh lists them), with
 * their ZooKeeper calls answered by the model (sim_zk.c) and what they take
 * from PostgreSQL from sim_pg.c: every lock request's calls and replies
 * (requests.c), the orphan clean-up (orphans.c), and lock-delay's presence
 * list and tombstones (presence.c).  The client library's part is played
 * here too: completions in order, ZCLOSING when a handle closes, watchers
 * kept once a read is answered ZOK, one-shot, and told of session events.
 * What is re-stated here rather than run: the worker's session handling
 * (session.c and left_session.c; the cut-off clock is cutoff.c, run as is),
 * the worker's loop and clean stop (worker.c) and the deadlock detector's
 * I/O schedule (gwaits.c; its decisions are gwait.c, run as is), following
 * those files.  A backend's bookkeeping of its locks is book.c, run as is.
 *
 * Usage: sim [--seed N] [--seeds A-B] [--seconds S] [--steps N] [--first-failure]
 *            [--verbose]
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>	/* result codes, event and state types */

#include "core.h"
#include "cutoff.h"
#include "deadlock.h"
#include "gwait.h"
#include "book.h"
#include "holds.h"
#include "lock_delay.h"
#include "looks.h"
#include "resume.h"
#include "table.h"
#include "zkmodel.h"
#include "core_batch.h"
#include "core_grant.h"
#include "core_plan.h"
#include "core_reply.h"
#include "gwait_doc.h"
#include "sim_host.h"
#include "orphans.h"
#include "presence.h"
#include "requests.h"

/* the largest world a seed may draw (Sim.ncl, Cluster.nb, Cluster.t->nslots) */
#define NCLUSTERS	5
#define NBACKENDS	12
#define NKEYS		3			/* lock keys */
#define SEM_KEY		NKEYS		/* one semaphore key besides */
#define NALL		(NKEYS + 1)
#define SEM_HOLDERS	3
#define NSLOTS		48
#define MAXHOLD		4
#define ROOT		"/zkl"
#define SESSIONS	ROOT "/.sessions"

#define CONNECT_TIMEOUT	5000	/* ms; the other settings are drawn per cluster (draw_world) */

#define WORK_US		(30 * 1000000LL)	/* faults and load */
#define QUIET_US	(180 * 1000000LL)	/* then no faults, no new work */
#define TRACE		48
#define SIM_DOC_LEN	8192		/* a cluster's wait document (gwait.h allows more) */

/* ---- the run ---- */

typedef enum Purpose
{
	P_NONE,
	P_IGNORE,					/* a reply nobody reads (the simulator's own request) */
	P_CALL						/* a shipped worker file's call (sim_zk.c): its completion */
} Purpose;

typedef struct Out
{
	uint64_t	id;
	Purpose		purpose;
	ZkmReqKind	kind;			/* the request's */
	uint64_t	tag;			/* its context, read as a core tag (requests.c's are) */
	uint32_t	keys;			/* the lock keys its paths are under, a bit each (key_index) */
	bool		watched;		/* it sets a watch */
	uint64_t	wtag;			/* and the watch's tag (watch_tag) */
	char		path[ZKM_PATH];
	SimCall		call;			/* P_CALL */
} Out;

typedef enum BState
{
	B_IDLE,
	B_WAIT,
	B_HOLD,
	B_COMMIT,
	B_PUBLISH,					/* past its commit check: the commit record becomes visible */
	B_DOWN,						/* its cluster stopped: back when it runs again */
	B_DONE
} BState;

/* One step of a transaction's script. */
typedef struct Act
{
	bool		pause;			/* idle in transaction for a while */
	bool		session;		/* zk_session_lock / zk_session_unlock */
	bool		all;			/* zk_session_unlock_all (with session and unlock) */
	bool		discard;		/* DISCARD ALL, alone in its transaction */
	bool		unlock;
	uint8_t		sp;				/* SP_*: a savepoint's begin or end, nothing else */
	int			key;
	char		mode;
	int			kind;			/* lock: 0 wait for ever, 1 with timeout, 2 try */
	int			holders;		/* a semaphore's (mode 'c') */
	int			nkeys;			/* a multi-key request's keys[] (0: just `key`) */
	int			keys[NKEYS];
} Act;

#define MAXACTS	8

/* Savepoints (Act.sp): SAVEPOINT, ROLLBACK TO SAVEPOINT, RELEASE SAVEPOINT. */
#define SP_BEGIN	1
#define SP_ROLLBACK	2
#define SP_RELEASE	3
#define MAXSUB		4

/* A lock a transaction held: from its grant to its release (0: still held). */
typedef struct Span
{
	int			key;
	char		mode;
	int			cluster;
	int			pid;
	int64_t		from;
	int64_t		to;
	int			holders;		/* a semaphore's */
	char		uuid[ZKL_UUID_LEN + 1];	/* the request's */
} Span;

#define MAXSPANS	8
#define HISTORY		512			/* committed spans kept per key */

typedef struct Backend
{
	BState		st;
	int			nspans;
	Span		spans[MAXSPANS];	/* this transaction's, for the commit check */
	bool		lost_seen;		/* a lock of this transaction was lost (seen by check_step) */
	int			pid;
	ZklBook		book;			/* granted locks: xact.c's book (book.c), run as is */
	ZkbHost		host;			/* its host: this backend of cluster `cl` */
	struct Cluster *cl;
	uint32_t	subid;			/* the current subtransaction's (savepoints) */
	bool		exits;			/* a stop ended while it published its commit */
	uint32_t	next_subid;
	int			nsub;
	uint32_t	subs[MAXSUB];	/* the enclosing ones', innermost last */
	/*
	 * Transaction-level acquisitions by key and mode as the application
	 * counts them, whatever the book says: by savepoint level (0: outside
	 * any), as core's resource owners count them.  A rolled-back
	 * savepoint's go, a released one's pass to its parent, and an unlock
	 * (not transactional, like core's) takes the innermost one.
	 */
	int			xlev[MAXSUB + 1][NALL][3];
	/*
	 * The session-level locks as the application sees them, from the grant
	 * to its unlock (or its acknowledgement of their loss), whatever the
	 * bookkeeping says: every transaction it commits meanwhile ran under them.
	 */
	int			napp;
	Span		app[MAXHOLD];
	int			app_count[MAXHOLD];	/* stacked session-level acquisitions */
	bool		told_lost;		/* an error told it of a session-level loss not acknowledged */
	bool		wait_session;	/* the request waited for is session-level */
	int			sess_key;		/* key of a session-level lock episode, -1: none */
	bool		hasty;			/* its next timed request: a lock_timeout of a few ms */
	char		sess_mode;
	int			sess_txns;		/* transactions left to run under it */
	int			sess_asked;		/* session-level requests of the episode: as many unlocks */
	int			waiting;		/* slot waited for, -1: none */
	int			ngroup;			/* or the slots of a multi-key request waited for */
	int			group[NKEYS];
	int			npstack;		/* holds of that request's keys held already: stacked once granted */
	int			pstack[NKEYS];
	int64_t		deadline;		/* of the wait or the commit (0: none) */
	int			nacts;
	int			next_act;
	Act			acts[MAXACTS];
	int64_t		next_at;
	int			txns_left;
	int			commits;
	int64_t		stuck_since;	/* waits for ever by the ground truth since (0: not) */
	int64_t		gave_up_at;		/* a wait of its last ended with no grant then (model time) */
} Backend;

typedef struct Cluster
{
	uint64_t	sole_sig;		/* check_sole_blocker's last look */
	int			id;
	void	   *shared;			/* its ZklShared (sim_pg.c) */
	ZklTable   *t;			/* in it, as the worker has it */
	ZklSlot		slots[NSLOTS];
	ZklCore		core;
	ZklCoreEnv	env;
	ZklOp		ops[2 * NSLOTS];
	const char *mine[NSLOTS];
	bool		held[NSLOTS];
	int			client;			/* model handle, -1: none */
	int64_t		next_open;
	int64_t		last_heard;
	bool		paused;
	int64_t		paused_until;
	int64_t		busy_until;		/* model time: the worker sees its latch only then */
	uint64_t	linger_seen[NSLOTS];	/* attempt of a slot seen lingering */
	int			burst_key;		/* while busy: transactions begun are writers of it */
	int64_t		burst_until;	/* model time: busy for a lingering node until then */
	int			linger_try_key;	/* another cluster's node of it lingers: one backend tries it */
	int64_t		linger_try_until;	/* model time: that try is begun until then (0: none due) */
	int64_t		proof_at;
	int64_t		proof_session;
	Out		   *outs;
	int			nouts;
	int			capouts;
	uint64_t	next_out;
	uint64_t   *session_nonce;	/* in its shared memory: drawn for each new session (session.c) */
	bool		fresh_handle;	/* the handle opened for a new session, not connected yet */
	/* session.c: a resumed session is ours once the leader shows its presence node (resume.h) */
	bool		confirming;
	bool		confirm_due;	/* ask (again) once connected */
	uint64_t	confirm_gen;	/* the connection it asks on */
	int64_t    *own_ids;		/* ids of its sessions so far: the model gives none of them again */
	int			nown_ids;
	/* liveness all along: since when (model time) each slot's request is first at the leader */
	int64_t		clear_since[NSLOTS];
	int64_t		settled_since[NSLOTS];	/* and nothing on its way (check_liveness) */
	uint64_t	clear_attempt[NSLOTS];
	int64_t		liveness_at;	/* next sample */
	int64_t		try_since[NSLOTS];	/* a try-lock pending since, calm all along */
	int64_t		try_asked[NSLOTS];	/* its requested_at: which try it is */
	/* a session left from before a crash-restart (left_session.c) */
	int64_t		left_session;
	uint64_t	left_nonce;		/* its nonce (the session file) */
	/* a clean stop (worker.c's stop_cleanly) */
	bool		stopping;
	bool		marking;		/* its tombstone asked for: nothing is planned any more */
	int64_t		stop_deadline;	/* model time */
	/* its worker process's memory in the shipped worker files it runs */
	void	   *proc;			/* its memory (sim_pg.c): gone when the process dies */
	ZwOrphans  *orphans;		/* orphans.c */
	ZwPresence *presence;		/* presence.c: lock-delay (its rules: lock_delay.c) */
	ZwRequests *requests;		/* requests.c */
	/* the watchers the client library keeps for them: set by a read's ZOK, one-shot */
	struct Watch
	{
		uint64_t	wtag;
		bool		child;
		char		path[ZKM_PATH];
	}		   *watches;
	int			nwatches;
	int			nb;				/* backends of this cluster (the seed draws it) */
	/* its settings, drawn per seed within what README requires of clusters sharing locks */
	int			session_timeout;	/* ms */
	int			proof_bound;	/* ms */
	int			lock_delay;		/* ms, as set: zc_table_lock_delay_ms applies the floor */
	/* its clocks: a monotonic one that drifts, and a wall clock that also jumps */
	int64_t		drift_ppm;
	int64_t		mono_off;
	int64_t		wall_off;		/* how far its wall clock was set from the others' */
	int64_t		wall_jump;
	/* deadlocks across clusters (gw_tend: gwaits.c's schedule) */
	char		gw_doc[SIM_DOC_LEN];	/* published ("": none) */
	int64_t		gw_doc_session;
	int			gw_doc_version;
	uint64_t	gw_print;
	int64_t		gw_next_write;	/* model time */
	int64_t		gw_next_round;
	int			gw_phase;		/* GW_* */
	int64_t		gw_at;			/* when its next step comes */
	int64_t		gw_claim_until;	/* a claim of ours lives until (0: none) */
	ZgwVictim	gw_victim;
	bool		gw_confirmed[NCLUSTERS];
	uint64_t	gw_nonce;		/* our claim's, and the sessions it asks */
	int64_t		gw_asks[NCLUSTERS];
	int			gw_nasks;
	uint64_t	gw_victim_attempt;	/* its request, if it waited for ever when confirmed */
	int64_t		gw_claimed_at;	/* of the claim's sessions, ours to collect */
	uint64_t	gw_confirms;	/* another's claim that named us, confirmed (0: none) */
	int64_t		gw_confirm_at;	/* when a look for it is back */
	int64_t		gw_look_at;		/* the next look for a claim */
	ZgwSemWait	gw_sems[16];
	int			gw_nsems;
	char		gw_read[NCLUSTERS][SIM_DOC_LEN];	/* the others' documents, as read */
	int			gw_read_version[NCLUSTERS];
	int64_t		gw_read_session[NCLUSTERS];
	Backend		b[NBACKENDS];
} Cluster;

typedef struct Sim
{
	uint64_t	seed;
	uint64_t	rng;
	uint64_t	nonces;			/* drawn so far (next_nonce) */
	Zkm		   *m;
	int			ncl;			/* clusters of this seed's world */
	Cluster		c[NCLUSTERS];
	int64_t		step;
	bool		quiet;
	bool		failed;
	int64_t		last_x_czxid[NALL];
	int			last_x_owner[NALL];	/* pid of its holder (pids differ across clusters) */
	char		trace[TRACE][200];
	int			ntrace;
	bool		verbose;
	Span		history[NALL][HISTORY];	/* spans of committed transactions */
	/*
	 * Requests whose node someone else deleted (a fault): zk_lock promises
	 * them nothing until they queue again, under a new uuid.
	 */
	char		tainted[64][ZKL_UUID_LEN + 1];
	int			ntainted;
	int			nhistory[NALL];
	int64_t		claim_session;	/* <root>/.deadlock's owner (0: none) */
	uint64_t	claim_nonce;	/* and its data: the sessions that must confirm */
	int64_t		claim_asks[NCLUSTERS];
	int			claim_nasks;
	int64_t		circles_at;		/* check_circles' next sample */
	int64_t		lost_at;		/* check_lost_told's next sample */
	/* a held slot's node missing at the leader: since when (0: there), and for which attempt */
	int64_t		gone_since[NCLUSTERS][NSLOTS];
	uint64_t	gone_attempt[NCLUSTERS][NSLOTS];
	/* granted slots already checked: cluster, slot, attempt */
	uint64_t	seen_attempt[NCLUSTERS][NSLOTS];
	uint64_t	ended_attempt[NCLUSTERS][NSLOTS];	/* the last wait seen to end without a grant */
	int64_t		granted_at[NCLUSTERS][NSLOTS];	/* when those grants were made */
	/* when each slot last became NEW (its queued_at changed), in the model's time */
	int64_t		queued_wall[NCLUSTERS][NSLOTS];
	int64_t		queued_model[NCLUSTERS][NSLOTS];
	/* multi-key members whose node's czxid was checked: cluster, slot, attempt */
	uint64_t	seen_group[NCLUSTERS][NSLOTS];
	int64_t		commits;
	int64_t		grants;
	/* the workload: every third seed leans on the semaphore */
	int			sem_pct;		/* transactions that are a semaphore's */
	int			mismatch_pct;	/* of those, with another holders number */
	int			multi_pct;		/* transactions that are a multi-key request (the swarm's) */
	int64_t		commit_pause_us;	/* longest pause between a commit's check and its record */
	int			fault_weight[17];	/* per FaultKind (the seed's mix) */
	bool		gap;			/* SIM_GAP: aim session kills at the gap (fault()) */
	int64_t		fault_every;	/* us between faults, on average */
	/* local hand-over (cohort.c): settings of the seed */
	bool		handover;
	int			handover_limit;
	int			linger_ms;
	int			hot_pct;		/* transactions that take just key 0 */
	int			hot_read_pct;	/* of them, readers (the others write) */
	/*
	 * The fairness bound, from what each cluster was told: once a listing
	 * or a child event reached cluster c showing `waiter` queued behind its
	 * node `node` of key k, at most handover_limit hand-overs of that node
	 * may follow while the waiter still waits.
	 */
	char		told_node[NCLUSTERS][NALL][ZKL_NODE_BUFLEN];
	char		told_waiter[NCLUSTERS][NALL][ZKL_NODE_BUFLEN];
	int			told_passes[NCLUSTERS][NALL];
	/* the readers' bound is the key's: joins of any node ahead of that writer count */
	char		rtold_waiter[NCLUSTERS][NALL][ZKL_NODE_BUFLEN];
	int			rtold_joins[NCLUSTERS][NALL];
	/* the same bounds counted from what the cluster's server has (check_handover_truth) */
	char		truth_xnode[NCLUSTERS][NALL][ZKL_NODE_BUFLEN];
	char		truth_waiter[NCLUSTERS][NALL][ZKL_NODE_BUFLEN];
	int			truth_passes[NCLUSTERS][NALL];
	char		truth_node[NCLUSTERS][NALL][ZKL_NODE_BUFLEN];
	char		truth_rwaiter[NCLUSTERS][NALL][ZKL_NODE_BUFLEN];
	int			truth_joins[NCLUSTERS][NALL];
} Sim;

static int64_t handovers_seen = 0;	/* over the run, to show the seeds use it */
static int64_t linger_waits[2];	/* try-locks that waited for a lingering node: refused, granted */
static int64_t deadlocks_broken;	/* local circles of waits broken with 40P01 */
static int64_t noauth_answers;	/* the model's ZNOAUTH answers (an operator's ACL) */
static int64_t garbled_answers;	/* its ZMARSHALLINGERROR answers (a failure inside a server) */
static int64_t elections_held;	/* the model's elections */
static int64_t proposals_lost;	/* and the writes they lost */
static int64_t ids_reused;		/* sessions that took an ended session's id */
static int64_t left_alone;		/* a crash's left session whose id another session had */
static int64_t ids_reissued;	/* reconnects that came back to another session of the id */
static int64_t resumes_refused;	/* resumed sessions whose presence node was gone: expired */
static int64_t rides_seen = 0;	/* of them, readers joining a local reader's node */
static int64_t upgrades_ahead;	/* upgrades granted ahead of local waiters (counters) */
static int64_t upgrades_across;	/* upgrades granted past other clusters' requests (counters) */
static int64_t held_for_local;	/* turns held for a local conflicting holder (counters) */
static int64_t calls_sent[ZKM_SETDATA + 1];	/* by the shipped worker files, by kind */

static Sim *S;
static Cluster *enter(Cluster *c);
static bool verbose_run = false;


static uint64_t
rnd(void)
{
	S->rng ^= S->rng << 13;
	S->rng ^= S->rng >> 7;
	S->rng ^= S->rng << 17;
	return S->rng;
}

static int
rnd_int(int n)
{
	return (int) (rnd() % (uint64_t) n);
}

static bool
chance(int percent)
{
	return rnd_int(1000) < percent * 10;
}

/*
 * A session's nonce (session.c draws a random one): distinct for each, never
 * 0, and off the seed's random stream, so that drawing one changes no seed.
 */
static uint64_t
next_nonce(void)
{
	uint64_t	z = ++S->nonces * UINT64_C(0x9e3779b97f4a7c15);

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	return z != 0 ? z : 1;
}

static void
trace(const char *fmt,...) __attribute__((format(printf, 1, 2)));

static void
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

static void
fail(const char *fmt,...) __attribute__((format(printf, 1, 2)));

static void
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

static const char *
key_name(int k)
{
	static const char *names[NALL] = {"tk0", "tk1", "tk2", "mtk3"};

	return names[k];
}

/* The index of an encoded key: its last digit. */
static int
key_index(const char *key)
{
	return key[strlen(key) - 1] - '0';
}

/* ---- outstanding requests ---- */

static Out *
out_new(Cluster *c, Purpose p, uint64_t tag)
{
	Out		   *o;

	if (c->nouts == c->capouts)
	{
		c->capouts = c->capouts ? 2 * c->capouts : 64;
		c->outs = realloc(c->outs, c->capouts * sizeof(Out));
	}
	o = &c->outs[c->nouts++];
	memset(o, 0, sizeof(*o));
	o->id = ++c->next_out;
	o->purpose = p;
	o->tag = tag;
	return o;
}

static bool
out_take(Cluster *c, uint64_t id, Out *into)
{
	int			i;

	for (i = 0; i < c->nouts; i++)
		if (c->outs[i].id == id)
		{
			*into = c->outs[i];
			c->outs[i] = c->outs[--c->nouts];
			return true;
		}
	return false;
}

static void
send_req(Cluster *c, ZkmReq *r)
{
	zkm_send(S->m, c->client, r);
}


/* ---- what core.c asks of its host ---- */

/* Cluster c's monotonic clock: its rate drifts (drift_ppm) from true time. */
static int64_t
c_mono(const Cluster *c)
{
	int64_t		t = zkm_now(S->m);

	return t + t * c->drift_ppm / 1000000 + c->mono_off;
}

/*
 * Its wall clock, as GetCurrentTimestamp() has it: microseconds since
 * 2000-01-01 (about 26 years, where the monotonic clock starts at boot), set
 * a little apart per cluster, running at the monotonic clock's rate, plus
 * whatever steps it took.  Code that reads one clock where it needs the
 * other is off by decades at once.
 */
#define WALL_2026_US	((int64_t) 849000000 * 1000000)

static int64_t
c_wall(const Cluster *c)
{
	return WALL_2026_US + c->wall_off + (c_mono(c) - c->mono_off) + c->wall_jump;
}

static int64_t
env_mono(void *arg)
{
	return c_mono((const Cluster *) arg);
}

static int64_t
env_now(void *arg)
{
	return c_wall((const Cluster *) arg);
}

static void
env_new_uuid(void *arg, char out[ZKL_UUID_LEN + 1])
{
	uint64_t	r[2];

	r[0] = rnd();
	r[1] = rnd();
	zc_recipe_format_uuid((const unsigned char *) r, out);
}

static void
env_wake(void *arg, ZklSlot *s)
{
}

static int	backend_of_pid(const Cluster *c, int pid);

/* A lost lock cancels its owner's statement: never a commit past its check. */
static void
env_interrupt(void *arg, ZklSlot *s)
{
	Cluster    *c = arg;
	int			i = backend_of_pid(c, s->req.owner_pid);

	if (i >= 0 && c->b[i].st == B_PUBLISH)
		fail("c%d b%d: a loss of %s cancels a commit past its check (the rest of it cut in half)",
			 c->id, c->b[i].pid, s->key);
}

static void
env_denied(void *arg, const ZklSlot *s)
{
	trace("c%d denied under %s", ((Cluster *) arg)->id, ROOT);
}

static bool
env_grants_paused(void *arg, int64_t now, int64_t *until)
{
	Cluster    *c = arg;

	enter(c);
	return zw_grants_paused(now, until);
}

/*
 * The shipped worker files (orphans.c) run for cluster c: its shared
 * memory and its worker process's memory.  Every call into them comes
 * through here first.
 */
static Cluster *cur_cl;

static Cluster *
enter(Cluster *c)
{
	cur_cl = c;
	simpg_enter(c->shared, c->proc);
	zw_orphans = c->orphans;
	zw_presence = c->presence;
	zw_requests = c->requests;
	return c;
}

int64_t
simh_mono(void)
{
	return c_mono(cur_cl);
}

int64_t
simh_proof_read(int64_t *session)
{
	*session = cur_cl->proof_session;
	return cur_cl->proof_at;
}

void
simh_new_uuid(char *out)
{
	env_new_uuid(cur_cl, out);
}

int
simh_lock_delay_ms(void)
{
	return zc_table_lock_delay_ms(cur_cl->lock_delay, cur_cl->proof_bound);
}

bool
simh_has_handle(void)
{
	return cur_cl->client >= 0;
}

int64_t
simh_wall(void)
{
	return c_wall(cur_cl);
}

uint64_t
simh_sysid(void)
{
	return (uint64_t) cur_cl->id + 1;
}

void
simh_log(bool error, const char *line)
{
	if (error)
		fail("c%d worker: ERROR %s", cur_cl->id, line);
	else
		trace("c%d worker: %s", cur_cl->id, line);
}

bool
simh_connected(void)
{
	return cur_cl->client >= 0 && zkm_connected(S->m, cur_cl->client);
}

/* The lock key a path is under (its bit in Out.keys), or 0. */
static uint32_t
path_keys(const char *path)
{
	int			k;

	for (k = 0; k < NALL; k++)
	{
		size_t		n = strlen(ROOT "/") + strlen(key_name(k));

		if (strncmp(path, ROOT "/", strlen(ROOT "/")) == 0 &&
			strncmp(path + strlen(ROOT "/"), key_name(k), strlen(key_name(k))) == 0 &&
			(path[n] == '\0' || path[n] == '/'))
			return UINT32_C(1) << k;
	}
	return 0;
}

/*
 * A watcher and its context, as the model's watch tag: the library keeps
 * one watch per watcher and context (a second read with the same pair sets
 * no other), and the model one per tag.
 */
#define WATCH_CTX_BITS	56
static void (*watch_fns[16]) (void);
static int	nwatch_fns;

static uint64_t
watch_tag(const SimCall *call)
{
	uint64_t	ctx = (uint64_t) (uintptr_t) call->wctx;
	int			f;

	for (f = 0; f < nwatch_fns && watch_fns[f] != call->watcher; f++)
		;
	if (f == nwatch_fns)
	{
		if (nwatch_fns == 16)
			abort();
		watch_fns[nwatch_fns++] = call->watcher;
	}
	if (ctx >> WATCH_CTX_BITS)
		fail("c%d: a watcher's context too wide for a watch tag", cur_cl->id);
	return (UINT64_C(1) << 63) | ((uint64_t) f << WATCH_CTX_BITS) | ctx;
}

/* A read with a watch answered ZOK: the library keeps its watcher (once per path, kind and tag). */
static void
watch_keep(Cluster *c, const Out *o)
{
	int			i;

	for (i = 0; i < c->nwatches; i++)
		if (c->watches[i].wtag == o->wtag && strcmp(c->watches[i].path, o->path) == 0 &&
			c->watches[i].child == (o->kind == ZKM_CHILDREN))
			return;
	c->watches = realloc(c->watches, (c->nwatches + 1) * sizeof(c->watches[0]));
	c->watches[c->nwatches].wtag = o->wtag;
	c->watches[c->nwatches].child = o->kind == ZKM_CHILDREN;
	snprintf(c->watches[c->nwatches].path, ZKM_PATH, "%s", o->path);
	c->nwatches++;
}

/* A watch event: whether the library has a watcher for it (then taken: one-shot). */
static bool
watch_take(Cluster *c, const ZkmMsg *msg)
{
	int			i;

	for (i = 0; i < c->nwatches; i++)
		if (c->watches[i].wtag == msg->tag && c->watches[i].child == msg->child &&
			strcmp(c->watches[i].path, msg->path) == 0)
		{
			c->watches[i] = c->watches[--c->nwatches];
			return true;
		}
	return false;
}

static void
watcher_call(Cluster *c, uint64_t wtag, int type, int state, const char *path)
{
	int			f = (int) ((wtag >> WATCH_CTX_BITS) & 0x7f);

	enter(c);
	((watcher_fn) watch_fns[f]) (NULL, type, state, path,
								 (void *) (uintptr_t) (wtag & ((UINT64_C(1) << WATCH_CTX_BITS) - 1)));
}

/* A change of the connection's state: the library tells every watcher it keeps. */
static void
watchers_session_event(Cluster *c, int state)
{
	int			i;

	for (i = 0; i < c->nwatches; i++)
		watcher_call(c, c->watches[i].wtag, ZOO_SESSION_EVENT, state, "");
}

bool
simh_send(const ZkmReq *req, const SimCall *call)
{
	Out		   *o;
	ZkmReq		r = *req;
	int			i;

	if (cur_cl->client < 0)
		return false;
	o = out_new(cur_cl, P_CALL, (uint64_t) (uintptr_t) call->ctx);
	o->call = *call;
	o->kind = r.kind;
	calls_sent[r.kind]++;
	snprintf(o->path, sizeof(o->path), "%s", r.path);
	o->keys = path_keys(r.path);
	for (i = 0; i < r.nsub; i++)
		o->keys |= path_keys(r.sub[i].path);
	r.tag = o->id;
	if (call->watcher != NULL)
	{
		r.watch = true;
		r.wtag = o->wtag = watch_tag(call);
		o->watched = true;
	}
	send_req(cur_cl, &r);
	if (S->verbose && (r.kind == ZKM_CREATE || r.kind == ZKM_DELETE || r.kind == ZKM_MULTI_OP))
		trace("c%d sends %d %s%s", cur_cl->id, r.kind, r.kind == ZKM_MULTI_OP ? r.sub[0].path : r.path,
			  r.nsub > 1 ? " ..." : "");
	return true;
}

/*
 * The client library answers what is in flight when its handle closes with
 * ZCLOSING; a process that dies answers nothing (died).  Either way the
 * replies to the old handle are gone.
 */
static void
drop_outs(Cluster *c, bool died)
{
	Out		   *outs = c->outs;
	int			n = c->nouts,
				i;

	c->outs = NULL;
	c->nouts = c->capouts = 0;
	c->nwatches = 0;			/* the library's watchers go with its handle */
	for (i = 0; i < n && !died; i++)
		if (outs[i].purpose == P_CALL)
		{
			enter(c);
			simzk_answer(&outs[i].call, NULL, ZCLOSING);
		}
	free(outs);
}

static void
env_suspect(void *arg, const ZklSlot *s, const char *name)
{
	enter(arg);
	zw_suspect_blocker(s, name);
}

static bool
env_may_be_orphan(void *arg, const char *name)
{
	enter(arg);
	return zw_may_be_orphan(name);
}

/* A new worker process: the shipped files' process memory, fresh. */
static void
worker_memory(Cluster *c)
{
	if (c->proc != NULL)
		simpg_proc_end(c->proc);
	c->proc = simpg_proc_new();
	enter(c);
	c->orphans = zw_orphans_new();
	c->presence = zw_presence_new();
	c->requests = zw_requests_new();
	zw_requests = c->requests;
	zw_requests_init(&c->core, c->t->nslots);	/* as worker.c's main */
}

static void
env_ghost(void *arg, const ZklSlot *s)
{
	enter(arg);
	zw_remember_ghost(s);
}

static void
env_proof_note(void *arg, int64_t sent_at, int64_t session)
{
	Cluster    *c = arg;

	/* the rule shmem.c's zkl_proof_note applies */
	switch (zc_holds_proof_step(c->proof_at, c->proof_session, sent_at, session))
	{
		case ZKH_PROOF_KEEP:
			break;
		case ZKH_PROOF_NEW_SESSION:
			c->proof_session = session;
			/* fall through */
		case ZKH_PROOF_ADVANCE:
			c->proof_at = sent_at;
			break;
	}
	c->t->proof_wanted = false;
}

static const char *
env_rc_text(int rc)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "rc %d", rc);
	return buf;
}

static int
env_rc_sqlstate(int rc)
{
	return ZKL_SQLSTATE('3', '8', '0', '0', '0');
}

static void
env_warn(void *arg, const char *msg)
{
	trace("c%d warning: %s", ((Cluster *) arg)->id, msg);
}

/* ---- the worker: session (session.c), presence (presence.c), orphans ---- */

static void
proof_forget(Cluster *c)
{
	c->proof_at = 0;
	c->proof_session = 0;
}

static void
session_lost(Cluster *c)
{
	proof_forget(c);
	zc_core_session_lost(&c->core);
}

/* One of the sessions' names: its path. */
static void
pres_path(char *out, int64_t id, uint64_t nonce, int kind)
{
	ZklSessionName n;
	char		leaf[ZLD_NAME_LEN];

	n.id = id;
	n.nonce = nonce;
	n.kind = kind;
	zc_delay_format_name(leaf, sizeof(leaf), &n);
	snprintf(out, ZKM_PATH, SESSIONS "/%s", leaf);
}

static void
open_session(Cluster *c)
{
	c->t->conn_state = ZKC_CONNECTING;
	zc_core_new_handle(&c->core);
	drop_outs(c, false);		/* (a stop or a crash closed the old handle) */
	enter(c);
	zw_presence_reset();		/* worker.c's session_new_handle */
	/*
	 * An id handed out again may come back to the cluster that had it: the
	 * commit check and local hand-over tell incarnations apart by the
	 * session's tag (zc_table_session_tag), not by its id.
	 */
	c->client = zkm_open_avoiding(S->m, c->session_timeout, c->own_ids, 0);
	c->fresh_handle = true;
	c->confirming = false;
	trace("c%d opens a session", c->id);
}

static void
close_session(Cluster *c, const char *why)
{
	trace("c%d closes its session (%s)", c->id, why);
	session_lost(c);
	zkm_close(S->m, c->client);
	c->client = -1;
	drop_outs(c, false);
	c->confirming = false;
	c->next_open = c_mono(c) + 1000000;
}

/* session.c's use of the cut-off clock (cutoff.c, run as is): lost at 11/12 of the timeout. */
static void
session_tend(Cluster *c)
{
	int64_t		now = c_wall(c);	/* session.c reads GetCurrentTimestamp() */

	if (c->client >= 0 &&
		zc_cutoff_ms_left(c->t->conn_state == ZKC_CONNECTING, c->t->session_id, c->t->negotiated_timeout,
					c->last_heard, now) == 0)
		close_session(c, "cut off past the timeout");
	if (c->client < 0 && c_mono(c) >= c->next_open && !S->failed)
		open_session(c);
}

/* worker.c's loop turn: presence.c, as shipped */
static void
presence_tend(Cluster *c)
{
	enter(c);
	zw_presence_tend();
}

/*
 * left_session.c's zw_left_tend: once the new session is up and listed,
 * mark the session left from before the crash-restart dead (an ephemeral
 * .dead of ours: its holders are all dead, so no lock-delay), then close it.
 */
static void left_close(Cluster *c, bool marked);

static void
left_tend(Cluster *c)
{
	if (c->left_session == 0)
		return;
	enter(c);
	if (!zw_presence_listed())
		return;
	if (!zw_presence_incarnation_listed(c->left_session, c->left_nonce))
	{
		trace("c%d leaves session %" PRIx64 " alone: not listed as ours (ended, or another session's now)",
			  c->id, c->left_session);
		left_alone++;
		c->left_session = 0;
		return;
	}
	switch (zw_presence_mark_dead(c->left_session, c->left_nonce))
	{
		case ZKL_MARK_PENDING:
			return;
		case ZKL_MARK_FAILED:
			left_close(c, false);
			break;
		case ZKL_MARK_DONE:
			left_close(c, true);
			break;
	}
}

/* close_left_session: a handle on the old session, connected (within a bound) just to close it */
static void
left_close(Cluster *c, bool marked)
{
	int			h = zkm_resume(S->m, c->left_session);

	if (!marked)
		trace("c%d could not mark session %" PRIx64 " dead: the others delay", c->id,
			  c->left_session);
	if (h >= 0)
	{
		int			bound = c->t->negotiated_timeout / 3 > 100 ? c->t->negotiated_timeout / 3 : 100;
		bool		up;

		/* connected, or told it expired: one round trip; no server to answer: the bound */
		up = zkm_step_reconnect(S->m, h);
		trace("c%d closes session %" PRIx64 " left from before its crash%s", c->id,
			  c->left_session, zkm_connected(S->m, h) ? "" : up ? ": expired" : ": unreachable");
		zkm_close(S->m, h);
		/* the worker waits for that handle meanwhile: its own session is not served */
		bound = bound < CONNECT_TIMEOUT ? bound : CONNECT_TIMEOUT;
		c->busy_until = zkm_now(S->m) + (up ? 2000 : (int64_t) bound * 1000);
	}
	c->left_session = 0;
}

/* worker.c's loop turn: the looks that are due (orphans.c) */
static void
ghosts_tend(Cluster *c)
{
	enter(c);
	(void) zw_send_looks();
}

/* ---- sending what core.c planned ---- */

static bool handle_next(Cluster *c);
static void note_grants(Cluster *c);
static int	backend_of_pid(const Cluster *c, int pid);
static bool local_waiter(const Cluster *c, const char *name);
static bool upgrade_ahead(const Cluster *c, const ZkrChild *kids, int own, int i);
static void check_sole_blocker(Cluster *c);
static void check_try_refusal(Cluster *c, const ZklSlot *s, const ZkrChild *kids, int n);

/*
 * One turn of the worker's loop, as in worker.c: woken (latch or socket),
 * it first reads what has arrived, up to MAX_REPLIES_PER_WAKE messages
 * (zk_client.c), then plans once and sends.  What has arrived of what the
 * servers sent is drawn: all of it, or a few messages (the rest is still
 * on the way), so that plans fall between replies too.
 */
static void
worker_read(Cluster *c, int at_least)
{
	int			most = chance(60) ? 256 : at_least + rnd_int(3);
	int			i;

	for (i = 0; i < most && handle_next(c); i++)
		;
}

static void plan_turn(Cluster *c);
static void send_confirm(Cluster *c);
static void gw_tend(Cluster *c);
static void worker_restart(Cluster *c);
static void backend_exit(Cluster *c, Backend *b);
static void end_xact(Cluster *c, Backend *b, const char *how);

/* Whether no slot is in use (worker.c's table_empty). */
static bool
table_empty(const Cluster *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].zstate != ZKS_FREE)
			return false;
	return true;
}

/*
 * The stop ends: the session closes (with its tombstone, or without: the
 * other clusters then delay), the worker process exits, and the cluster
 * starts again with a new worker and a new session; its backends come back.
 */
typedef enum StopEnd
{
	STOP_TOMBSTONE,				/* the tombstone answered: close */
	STOP_PLAIN,					/* not in time, or no session: close all the same */
	STOP_DIED					/* the worker died: its session is left to expire */
} StopEnd;

static void
stop_close(Cluster *c, StopEnd how)
{
	int			i;

	trace("c%d stops %s", c->id, how == STOP_TOMBSTONE ? "cleanly: tombstone made" :
		  how == STOP_PLAIN ? "without a tombstone" : "with its worker dead, the session left");
	c->stopping = false;
	c->marking = false;
	if (c->client >= 0 && how == STOP_DIED)
		zkm_abandon(S->m, c->client);
	else if (c->client >= 0)
		close_session(c, how == STOP_TOMBSTONE ? "clean stop" : "stop");
	c->client = -1;
	/*
	 * A new postmaster: new shared memory (every slot free), a new session.
	 * A backend still publishing its commit belongs to the old one: its
	 * book names slots that are gone, and it exits once published.
	 */
	for (i = 0; i < c->nb; i++)
		if (c->b[i].st == B_PUBLISH)
		{
			zc_book_free(&c->b[i].book);
			c->b[i].exits = true;
		}
	c->t->session_id = 0;
	c->t->session_tag = 0;
	*c->session_nonce = 0;
	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].zstate != ZKS_FREE)
			zc_table_free(c->t, &c->t->slots[i]);
	worker_restart(c);
	for (i = 0; i < c->nb; i++)
		if (c->b[i].st == B_DOWN)
		{
			c->b[i].st = c->b[i].txns_left > 0 && !S->quiet ? B_IDLE : B_DONE;
			c->b[i].next_at = zkm_now(S->m) + 1000000 + rnd_int(1000000);
		}
}

/*
 * worker.c's stop_cleanly(), one turn: serve until every slot is free, then
 * ask for the tombstone and plan nothing more; bounded.
 */
static void
stop_turn(Cluster *c)
{
	worker_read(c, 0);
	if (!c->stopping)
		return;
	if (zkm_now(S->m) >= c->stop_deadline || c->client < 0 ||
		c->t->conn_state != ZKC_CONNECTED)
	{
		stop_close(c, STOP_PLAIN);
		return;
	}
	if (!c->marking && !table_empty(c))
	{
		plan_turn(c);
		return;
	}
	if (!c->marking)
		trace("c%d: every slot free, asks for its tombstone", c->id);
	c->marking = true;
	enter(c);
	switch (zw_presence_mark_closed())
	{
		case ZKL_MARK_PENDING:
			break;
		case ZKL_MARK_DONE:
			stop_close(c, STOP_TOMBSTONE);
			break;
		case ZKL_MARK_FAILED:
			stop_close(c, STOP_PLAIN);
			break;
	}
}

static void
worker_turn(Cluster *c)
{
	if (c->paused || zkm_now(S->m) < c->busy_until)
		return;
	if (c->stopping)
	{
		stop_turn(c);
		return;
	}
	worker_read(c, 0);
	plan_turn(c);
}

/*
 * A node of cluster c starts to linger on key k: an idle backend of another
 * cluster tries the key while it lingers, alone or with another key (a
 * multi-key try), so that tries meet other clusters' lingering nodes often
 * (a lingering node is no holder: check_try_refusal).
 */
static void
linger_try_due(Cluster *c, int k)
{
	int64_t		now = zkm_now(S->m);
	Cluster    *d;
	int			j;

	if (S->ncl < 2 || S->quiet)
		return;
	d = &S->c[(c->id + 1 + rnd_int(S->ncl - 1)) % S->ncl];
	d->linger_try_key = k;
	d->linger_try_until = now + (int64_t) S->linger_ms * 1000;
	for (j = 0; j < d->nb; j++)
		if (d->b[j].st == B_IDLE && d->b[j].sess_key < 0)
		{
			int64_t		at = now + rnd_int(S->linger_ms * 500 + 1);

			if (at < d->b[j].next_at)
				d->b[j].next_at = at;
			return;
		}
}

static void
plan_turn(Cluster *c)
{
	int			i;

	session_tend(c);
	if (c->client >= 0 && c->confirming && c->confirm_due && zkm_connected(S->m, c->client))
		send_confirm(c);
	presence_tend(c);
	left_tend(c);
	gw_tend(c);
	enter(c);
	(void) zw_requests_plan();
	note_grants(c);
	check_sole_blocker(c);
	if (c->core.nops > 0 && c->client < 0)
		fail("c%d planned ops without a session", c->id);
	if (c->client < 0)
		return;
	enter(c);
	zw_requests_send();
	if (c->core.proof_due)
		zw_requests_send_proof();
	ghosts_tend(c);
	note_grants(c);
	/*
	 * A node starts to linger: the worker is then busy for one to two
	 * lingers, and the cluster's backends that begin a transaction
	 * meanwhile come for the key in a burst, some with a lock_timeout of a
	 * few ms.  So requests of several backends meet in one plan, and a
	 * later one may sit first in the table (in the slot of one that gave
	 * up between them): the node goes to the one that asked first.
	 */
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *l = &c->t->slots[i];
		int64_t		busy;
		int			j;

		if (l->zstate != ZKS_LINGER || c->linger_seen[i] == l->req.attempt)
			continue;
		c->linger_seen[i] = l->req.attempt;
		busy = (int64_t) (S->linger_ms + rnd_int(S->linger_ms + 1)) * 1000;
		c->busy_until = c->burst_until = zkm_now(S->m) + busy;
		c->burst_key = key_index(l->key);
		for (j = 0; j < c->nb; j++)
			if (c->b[j].st == B_IDLE && c->b[j].next_at > c->busy_until)
				c->b[j].next_at = zkm_now(S->m) + rnd_int((int) busy + 1);
		linger_try_due(c, key_index(l->key));
	}
}

/* ---- replies ---- */

static void connection_made(Cluster *c);
static void close_session(Cluster *c, const char *why);

/* session.c's confirm_done: the presence node behind the sync says whose the session is */
static void
confirm_done(int rc, const struct Stat *stat, const void *data)
{
	Cluster    *c = cur_cl;

	if (!c->confirming || (uintptr_t) data != c->confirm_gen)
		return;					/* a connection or handle since */
	switch (zc_resume_confirmed(rc, rc == ZOK ? stat->ephemeralOwner : 0, c->t->session_id))
	{
		case ZKL_CONFIRM_OURS:
			c->confirming = false;
			connection_made(c);
			trace("c%d: its presence node is there: the session is its own", c->id);
			break;
		case ZKL_CONFIRM_ENDED:
			resumes_refused++;
			close_session(c, "resumed, but its presence node is gone: another session has the id");
			break;
		case ZKL_CONFIRM_AGAIN:
			c->confirm_due = true;
			break;
		case ZKL_CONFIRM_WAIT:
			break;
	}
}

/* session.c's look at a resumed session: presence.c's zw_presence_confirm */
static void
send_confirm(Cluster *c)
{
	c->confirm_due = false;
	enter(c);
	if (zw_presence_confirm(c->t->session_id, *c->session_nonce, confirm_done,
							(const void *) (uintptr_t) c->confirm_gen) != ZOK)
		c->confirm_due = true;
}

/* The connection is the session's: serve on it. */
static void
connection_made(Cluster *c)
{
	c->t->conn_state = ZKC_CONNECTED;
	zc_core_reconnected(&c->core);
	enter(c);
	zw_presence_reconnected();
}

static void
on_state(Cluster *c, const ZkmMsg *msg)
{
	watchers_session_event(c, msg->type);
	if (msg->type == ZKM_ST_CONNECTED)
	{
		int64_t		id = zkm_session(S->m, c->client);
		bool		old_lost;
		ZklConnected what = zc_resume_connected(c->fresh_handle, c->t->session_id, id, &old_lost);

		if (old_lost)
			session_lost(c);
		/* session.c: a handle not resuming one gets a new session, whatever its id */
		if (what == ZKL_CONN_NEW)
		{
			*c->session_nonce = next_nonce();
			c->own_ids = realloc(c->own_ids, (c->nown_ids + 1) * sizeof(int64_t));
			c->own_ids[c->nown_ids++] = id;
		}
		c->fresh_handle = false;
		c->t->session_id = id;
		c->t->session_tag = zc_table_session_tag(id, *c->session_nonce);
		c->t->negotiated_timeout = zkm_timeout(S->m, c->client);
		c->last_heard = c_wall(c);
		c->confirming = what == ZKL_CONN_CONFIRM;
		c->confirm_gen++;
		if (c->confirming)
			send_confirm(c);
		else
			connection_made(c);
		trace("c%d connected, session %" PRIx64 "%s", c->id, id,
			  c->confirming ? ": resumed, asks for its presence node" : "");
	}
	else if (msg->type == ZKM_ST_CONNECTING)
	{
		c->t->conn_state = ZKC_CONNECTING;
		trace("c%d connection lost", c->id);
	}
	else if (msg->type == ZKM_ST_EXPIRED)
		close_session(c, "expired");
}

/* ---- the fairness bound of local hand-over ---- */

/* Is name still queued under key k at the leader? */
static bool
leader_has(const Cluster *c, const ZklSlot *s, const char *name)
{
	char		path[ZKL_PATH_LEN];
	int64_t		owner;
	int64_t		czxid;

	zc_core_child_path(c->t, s, name, path);
	return zkm_leader_node(S->m, path, &owner, &czxid);
}

/* Cluster c now knows that `waiter` queues behind its node of slot s. */
static void
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
static bool
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
static int
waits_for(const ZkrChild *kids, int n, int i)
{
	int			j;

	for (j = i + 1; j < n; j++)
		if (kids[i].mode != ZKL_MODE_SHARED || kids[j].mode == ZKL_MODE_EXCLUSIVE)
			return j;
	return -1;
}

/* A listing for the slot of tag: core learns who queues behind that slot's node. */
static void
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
static int
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
static void
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
static void
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
static bool
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
static int
name_cluster(const char *name)
{
	return (int) strtol(name + 2 + ZKL_UUID_LEN + 1, NULL, 10) - 1;
}

typedef struct News
{
	const char *key_path;
	const char *waiter;
} News;

/* A message that tells of the waiter: a child event of the key, or a listing showing it. */
static bool
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

static void
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
 * key (in the model's time: a cluster's wall clock may step).
 */
static void
check_local_fifo(Cluster *c, const ZklSlot *s)
{
	int			me = (int) (s - c->t->slots);
	int			j;

	if (s->zk.rides || s->req.mode != ZKL_MODE_EXCLUSIVE)
		return;
	for (j = 0; j < c->t->nused; j++)
	{
		const ZklSlot *o = &c->t->slots[j];

		if (j != me && o->zstate == ZKS_COHORT && !o->own.abandoned && o->req.mode == ZKL_MODE_EXCLUSIVE &&
			o->zk.root_id == s->zk.root_id && strcmp(o->key, s->key) == 0 &&
			S->queued_model[c->id][j] < S->queued_model[c->id][me])
			fail("local FIFO: c%d handed %s to slot %d (b%d, waiting since %.3f) past slot %d (b%d, since %.3f)",
				 c->id, s->key, me, s->req.owner_pid, S->queued_model[c->id][me] / 1e6, j, o->req.owner_pid,
				 S->queued_model[c->id][j] / 1e6);
	}
}

/* A grant by hand-over: within the bound. */
static void
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
static const ZklSlot *
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
static void
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
	if (o.watched && msg->rc == ZOK)
		watch_keep(c, &o);
	enter(c);
	simzk_answer(&o.call, msg, 0);
	if (may_wait && msg->rc == ZOK && s->ans.result == ZKL_RESULT_NOT_GRANTED)
		check_try_refusal(c, s, kids, n);
}

static void
on_event(Cluster *c, const ZkmMsg *msg)
{
	if (msg->type == ZKM_EV_CHILD)
		told_by_event(c, msg->path, msg->zxid);
	/* the watcher and context of the shipped file that set it (watch_tag), if the library kept it */
	if (watch_take(c, msg))
		watcher_call(c, msg->tag, msg->type, ZOO_CONNECTED_STATE, msg->path);
}

/* The worker reads one message from its connection. */
static bool
handle_next(Cluster *c)
{
	ZkmMsg	   *msg;

	if (c->client < 0 || c->paused || (msg = zkm_pop(S->m, c->client)) == NULL)
		return false;
	c->last_heard = c_wall(c);
	if (msg->kind == ZKM_STATE)
		on_state(c, msg);
	else if (msg->kind == ZKM_EVENT)
		on_event(c, msg);
	else
		on_reply(c, msg);
	zkm_msg_free(msg);
	note_grants(c);
	check_sole_blocker(c);
	return true;
}

/* Messages reach the worker's socket: it wakes, reads them and plans. */
static bool
deliver(Cluster *c)
{
	if (c->client < 0 || c->paused || !zkm_has_message(S->m, c->client))
		return false;
	worker_read(c, 1);
	plan_turn(c);
	return true;
}

/* ---- backends ---- */

/*
 * The lock a request of key in mode stacks onto (lockfuncs.c asks xact.c's
 * zb_local_held): one held, or one given up whose node stays for the
 * key's other mode, which a repeat request takes back.
 */
static int
find_hold(Backend *b, int key, char mode)
{
	return zc_book_find(&b->book, key_name(key), mode);
}

static int
mode_index(char mode)
{
	return mode == ZKL_MODE_EXCLUSIVE ? 0 : mode == ZKL_MODE_SHARED ? 1 : 2;
}

static bool book_node_before(void *arg, int a, int b);

/*
 * The book against the application's own count of its transaction-level
 * acquisitions (stacking, unlocks, savepoints rolled back or released).
 */
static void
check_book(Cluster *c, Backend *b)
{
	static const char modes[3] = {ZKL_MODE_EXCLUSIVE, ZKL_MODE_SHARED, ZKL_MODE_SEMAPHORE};
	int			k;
	int			m;

	for (k = 0; k < NALL; k++)
		for (m = 0; m < 3; m++)
		{
			int			i = zc_book_find(&b->book, key_name(k), modes[m]);
			int			n = i >= 0 ? b->book.h[i].nxact : 0;
			int			want = 0;
			int			d;

			for (d = 0; d <= b->nsub; d++)
				want += b->xlev[d][k][m];
			if (n != want)
				fail("c%d b%d holds %s %c %d times at transaction level, its application counts %d",
					 c->id, b->pid, key_name(k), modes[m], n, want);
		}
	/* a lock held at no level is given up, unless its node stays for the key's other mode */
	for (k = 0; k < b->book.n; k++)
		if (zc_holds_holds(&b->book.h[k]) == 0 && !zc_holds_keeps_node(b->book.h, b->book.n, k, book_node_before, b))
			fail("c%d b%d keeps %s %c, held at no level, with no other mode of the key held",
				 c->id, b->pid, b->book.h[k].key, b->book.h[k].mode);
}

/* The application takes (+1) or gives up (-1) a transaction-level lock of key in mode. */
static void
app_count_xact(Backend *b, int key, char mode, int delta)
{
	int			d = b->nsub;

	if (delta > 0)
		b->xlev[d][key][mode_index(mode)]++;
	else
	{
		while (d > 0 && b->xlev[d][key][mode_index(mode)] == 0)
			d--;
		if (b->xlev[d][key][mode_index(mode)] > 0)
			b->xlev[d][key][mode_index(mode)]--;
	}
}

/* A lost session-level lock not acknowledged yet, or -1. */
static int
unacknowledged(Cluster *c, Backend *b)
{
	return zc_book_unacknowledged_loss(&b->book);
}

static bool
tainted(const char *uuid)
{
	int			i;

	for (i = 0; i < S->ntainted && i < 64; i++)
		if (strcmp(S->tainted[i], uuid) == 0)
			return true;
	return false;
}

/* The request uuid of the node a slot holds through: a rider's is its host's (cohort.c). */
static void
slot_uuid(const ZklSlot *s, char out[ZKL_UUID_LEN + 1])
{
	if (!s->zk.rides || !zc_recipe_uuid_of(s->node, out))
		snprintf(out, ZKL_UUID_LEN + 1, "%s", s->uuid);
}

static bool
slot_tainted(const ZklSlot *s)
{
	char		uuid[ZKL_UUID_LEN + 1];

	slot_uuid(s, uuid);
	return tainted(uuid);
}

/* The lock of slot s is given up now: its span ends. */
static void
end_span(Backend *b, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < b->nspans; i++)
		if (b->spans[i].to == 0 && b->spans[i].key == key_index(s->key) &&
			b->spans[i].mode == s->req.mode)
			b->spans[i].to = zkm_now(S->m);
}

static bool conflict(char a, char b);

/*
 * A semaphore span commits: at no moment of it were more committed
 * transactions inside than its holders (the moments to look at are its start
 * and the starts of the others inside it).
 */
static void
check_semaphore_commit(const Span *sp)
{
	const Span *in[HISTORY];
	int			nin = 0;
	int			n = S->nhistory[sp->key] < HISTORY ? S->nhistory[sp->key] : HISTORY;
	int			i;
	int			j;

	for (i = 0; i < n; i++)
	{
		const Span *o = &S->history[sp->key][i];

		if (!tainted(o->uuid) && o->from < sp->to && sp->from < o->to)
			in[nin++] = o;
	}
	for (i = -1; i < nin; i++)
	{
		int64_t		at = i < 0 ? sp->from : in[i]->from;
		int			inside = 1;

		if (at < sp->from)
			continue;
		for (j = 0; j < nin; j++)
			inside += in[j]->from <= at && at < in[j]->to;
		if (inside > sp->holders)
			fail("committed transactions overlap: %d inside %s at %.3f, holders %d (c%d b%d)",
				 inside, key_name(sp->key), at / 1e6, sp->holders, sp->cluster, sp->pid);
	}
}

/*
 * A transaction commits: none of the locks it held at any point (released
 * early or not) may have overlapped a conflicting lock of another committed
 * transaction.  Both orders are checked, at the later commit.
 */
static void
check_commit(Backend *b)
{
	int			i;
	int			j;

	for (i = 0; i < b->nspans; i++)
	{
		Span	   *sp = &b->spans[i];
		int			k = sp->key;
		int			n = S->nhistory[k] < HISTORY ? S->nhistory[k] : HISTORY;

		if (sp->to == 0)
			sp->to = zkm_now(S->m);
		if (sp->mode == ZKL_MODE_SEMAPHORE && !tainted(sp->uuid))
			check_semaphore_commit(sp);
		for (j = 0; j < n && !tainted(sp->uuid); j++)
		{
			const Span *o = &S->history[k][j];

			if (tainted(o->uuid) || (o->cluster == sp->cluster && o->pid == sp->pid))
				continue;		/* a backend's own locks never conflict (session-level spans repeat) */
			if (conflict(o->mode, sp->mode) && o->from < sp->to && sp->from < o->to)
				fail("committed transactions overlap: c%d b%d held %s %c %.3f-%.3f, c%d b%d held it %c %.3f-%.3f",
					 sp->cluster, sp->pid, key_name(k), sp->mode, sp->from / 1e6, sp->to / 1e6,
					 o->cluster, o->pid, o->mode, o->from / 1e6, o->to / 1e6);
		}
	}
	for (i = 0; i < b->nspans; i++)
		S->history[b->spans[i].key][S->nhistory[b->spans[i].key]++ % HISTORY] = b->spans[i];
}

/* ---- the book's host (book.h): a backend's memory and its cluster's slot table ---- */

static void *
book_alloc(void *arg, size_t size)
{
	void	   *p = malloc(size);

	if (p == NULL)
		exit(2);
	return p;
}

static void *
book_grow(void *arg, void *p, size_t size)
{
	p = realloc(p, size);
	if (p == NULL)
		exit(2);
	return p;
}

static void
book_release(void *arg, void *p)
{
	free(p);
}

static bool
book_lost(void *arg, int slot)
{
	const Backend *b = arg;

	return b->cl->t->slots[slot].ans.result == ZKL_RESULT_LOST;
}

static void
book_scope(void *arg, int slot, uint8_t scope)
{
	const Backend *b = arg;

	b->cl->t->slots[slot].own.scope = scope;
}

static bool
book_node_before(void *arg, int a, int b)
{
	const Backend *bk = arg;

	return zc_table_node_before(bk->cl->t, a, b);
}

/* A lock given up: its span ends (a transaction-level one's), its slot is abandoned. */
static void
book_abandon(void *arg, const int *slots, int n)
{
	Backend    *b = arg;
	int			i;

	for (i = 0; i < n; i++)
	{
		end_span(b, &b->cl->t->slots[slots[i]]);
		(void) zc_table_abandon(b->cl->t, &b->cl->t->slots[slots[i]]);
	}
}

static void
book_init(Cluster *c, Backend *b)
{
	const ZkbHost host = {b, book_alloc, book_grow, book_release, book_lost, book_scope, book_abandon,
	book_node_before};

	b->cl = c;
	b->host = host;
	b->book.host = &b->host;
}

/* Give up every slot of the multi-key request waited for (lockfuncs.c's abandon_all). */
static void
abandon_group(Cluster *c, Backend *b)
{
	int			i;

	zc_book_set_pending(&b->book, NULL, 0);	/* lockfuncs.c's abandon_all */
	for (i = 0; i < b->ngroup; i++)
		(void) zc_table_abandon(c->t, &c->t->slots[b->group[i]]);
	b->ngroup = 0;
}

/* The backend exits: every lock of it goes, session-level ones too (xact.c's exit_callback). */
static void
release_all(Cluster *c, Backend *b)
{
	zc_book_release_level(&b->book, true);
	memset(&b->book.proof, 0, sizeof(b->book.proof));	/* a new backend starts afresh */
	b->lost_seen = false;
	b->sess_key = -1;
	b->napp = 0;
	b->told_lost = false;
}

static void
end_xact(Cluster *c, Backend *b, const char *how)
{
	int			i;

	if (b->st == B_WAIT)
		b->gave_up_at = zkm_now(S->m);
	/* a request still waited for is the book's pending one: the abort gives it up */
	zc_book_xact_end(&b->book);		/* session-level ones stay */
	b->ngroup = 0;
	for (i = 0; i < b->book.n; i++)
		if (b->book.h[i].nsession > 0 && c->t->slots[b->book.h[i].slot].own.abandoned)
			fail("c%d b%d: the end of a transaction released a session-level lock on %s",
				 c->id, b->pid, b->book.h[i].key);
	if (b->txns_left <= 0 || S->quiet)
		release_all(c, b);		/* the backend exits */
	b->nspans = 0;
	b->lost_seen = false;
	trace("c%d b%d %s", c->id, b->pid, how);
	b->waiting = -1;
	b->deadline = 0;
	b->st = b->txns_left > 0 && !S->quiet ? B_IDLE : B_DONE;
	/* hot seeds: back at once, as a client in a loop */
	b->next_at = zkm_now(S->m) + rnd_int(S->hot_pct ? 20000 : 300000);
	worker_turn(c);
}

static void add_act(Backend *b, bool unlock, int key, char mode, int kind);

static void
add_pause(Backend *b)
{
	add_act(b, false, 0, 0, 0);
	b->acts[b->nacts - 1].pause = true;
}

static void
add_act(Backend *b, bool unlock, int key, char mode, int kind)
{
	Act		   *a = &b->acts[b->nacts++];

	a->pause = false;
	a->sp = 0;
	a->session = false;
	a->all = false;
	a->discard = false;
	a->unlock = unlock;
	a->key = key;
	a->mode = mode;
	a->kind = kind;
	a->holders = 0;
	a->nkeys = 0;
}

static void
add_session_act(Backend *b, bool unlock, int key, char mode, int kind)
{
	add_act(b, unlock, key, mode, kind);
	b->acts[b->nacts - 1].session = true;
}

/*
 * A session-level lock episode: one transaction takes it, the next ones run
 * under it, the last one gives it up.  Requests while it is held never wait
 * for ever: they would not follow the one key order that keeps clusters out
 * of deadlock.
 */
static bool
plan_session(Backend *b, int k)
{
	if (b->sess_key < 0)
	{
		if (!chance(8))
			return false;
		b->sess_key = k;
		b->sess_mode = chance(70) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED;
		b->sess_txns = 1 + rnd_int(3);
		b->sess_asked = 1 + (chance(30) ? 1 : 0);	/* the second one stacks */
		add_session_act(b, false, k, b->sess_mode, chance(50) ? 1 : 2);
		if (b->sess_asked > 1)
			add_session_act(b, false, k, b->sess_mode, 1);
		return true;
	}
	if (--b->sess_txns <= 0)
	{
		int			how = rnd_int(100);

		if (how < 15)
		{
			/* DISCARD ALL (a pooler's reset), alone in its transaction */
			add_session_act(b, true, b->sess_key, b->sess_mode, 0);
			b->acts[b->nacts - 1].discard = true;
			b->sess_key = -1;
			return true;
		}
		if (chance(50))
			add_pause(b);
		if (how < 30)
		{
			add_session_act(b, true, b->sess_key, b->sess_mode, 0);
			b->acts[b->nacts - 1].all = true;
		}
		else
			while (b->sess_asked-- > 0)
				add_session_act(b, true, b->sess_key, b->sess_mode, 0);
		b->sess_key = -1;
		return true;
	}
	/* under it: maybe the same key at transaction level, either mode */
	if (chance(30))
		k = b->sess_key;
	add_act(b, false, k, chance(60) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED, chance(50) ? 1 : 2);
	if (chance(30))
		add_pause(b);
	return true;
}

static bool
holds_session(const Backend *b)
{
	int			i;

	for (i = 0; i < b->book.n; i++)
		if (b->book.h[i].nsession > 0)
			return true;
	return false;
}

static void plan_plain(Backend *b, int k, int pattern);

/*
 * A savepoint somewhere in the transaction's script, rolled back or
 * released later: what was taken inside a rolled-back one goes (xact.c's
 * subtransaction callback, book.c), stacked acquisitions one by one.
 */
static void
add_savepoint(Backend *b)
{
	Act			acts[MAXACTS];
	Act			mark;
	int			at;
	int			end;
	int			n = 0;
	int			i;

	if (b->nacts + 2 > MAXACTS)
		return;
	at = rnd_int(b->nacts + 1);
	end = at + rnd_int(b->nacts - at + 1);
	add_act(b, false, 0, 0, 0);	/* a blank act, copied below */
	mark = b->acts[--b->nacts];
	for (i = 0; i <= b->nacts; i++)
	{
		if (i == at)
		{
			acts[n] = mark;
			acts[n++].sp = SP_BEGIN;
		}
		if (i == end)
		{
			acts[n] = mark;
			acts[n++].sp = chance(60) ? SP_ROLLBACK : SP_RELEASE;
		}
		if (i < b->nacts)
			acts[n++] = b->acts[i];
	}
	memcpy(b->acts, acts, n * sizeof(Act));
	b->nacts = n;
}

/* Savepoints in about one transaction of seven, nested now and then. */
static void
plan_savepoints(Backend *b)
{
	if (chance(15))
	{
		add_savepoint(b);
		if (chance(30))
			add_savepoint(b);
	}
}

static void next_act(Cluster *c, Backend *b);

static void
do_savepoint(Cluster *c, Backend *b, const Act *a)
{
	if (a->sp == SP_BEGIN && b->nsub < MAXSUB)
	{
		b->subs[b->nsub++] = b->subid;
		b->subid = ++b->next_subid;
		memset(b->xlev[b->nsub], 0, sizeof(b->xlev[0]));
	}
	else if (a->sp != SP_BEGIN && b->nsub > 0)
	{
		uint32_t	parent = b->subs[b->nsub - 1];
		int			k;
		int			m;

		if (a->sp == SP_ROLLBACK)
			zc_book_subxact_abort(&b->book, b->subid);
		else
		{
			zc_book_subxact_commit(&b->book, b->subid, parent);
			for (k = 0; k < NALL; k++)
				for (m = 0; m < 3; m++)
					b->xlev[b->nsub - 1][k][m] += b->xlev[b->nsub][k][m];
		}
		b->nsub--;
		b->subid = parent;
	}
	trace("c%d b%d %s savepoint", c->id, b->pid,
		  a->sp == SP_BEGIN ? "takes a" : a->sp == SP_ROLLBACK ? "rolls back to its" : "releases its");
	next_act(c, b);
}

/*
 * A multi-key request, alone in its transaction, naming two or three keys
 * in a random order and mostly waiting for ever: two of them that waited
 * for each other in a circle would never finish (check_end).
 */
static void
plan_multi(Backend *b)
{
	Act		   *a;
	int			i;

	add_act(b, false, 0, chance(70) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED,
			chance(60) ? 0 : (chance(60) ? 1 : 2));
	a = &b->acts[b->nacts - 1];
	/* an array of one key is a multi-key request too (one multi of one create) */
	a->nkeys = chance(15) ? 1 : 2 + (chance(50) ? 1 : 0);
	for (i = 0; i < NKEYS; i++)
		a->keys[i] = i;
	for (i = NKEYS - 1; i > 0; i--)
	{
		int			j = rnd_int(i + 1);
		int			t = a->keys[i];

		a->keys[i] = a->keys[j];
		a->keys[j] = t;
	}
	if (chance(30))
		add_pause(b);
}

/*
 * A semaphore transaction: the semaphore alone (with other locks, holders
 * waiting for each other's locks across clusters would deadlock, as with
 * locks taken in different orders).  Now and then with other holders, which
 * must fail (22023) behind live requests of another number; it may stack,
 * and may be given up early.
 */
static void
plan_semaphore(Backend *b)
{
	/* now and then another number: fewer, or more (the riskier: 22023 must stop it) */
	int			holders = chance(S->mismatch_pct) ?
		(chance(50) ? SEM_HOLDERS - 1 : SEM_HOLDERS + 2) : SEM_HOLDERS;

	add_act(b, false, SEM_KEY, ZKL_MODE_SEMAPHORE, chance(25) ? 0 : (chance(75) ? 1 : 2));
	b->acts[b->nacts - 1].holders = holders;
	if (chance(10))
	{
		add_act(b, false, SEM_KEY, ZKL_MODE_SEMAPHORE, 1);	/* stacks */
		b->acts[b->nacts - 1].holders = holders;
	}
	if (chance(30))
		add_pause(b);
	if (chance(15))
		add_act(b, true, SEM_KEY, ZKL_MODE_SEMAPHORE, 0);
}

/* A transaction's script: which locks it takes and gives up, in order. */
static void
plan_xact(Backend *b)
{
	int			k = rnd_int(NKEYS);
	int			pattern = rnd_int(100);
	int			i;

	b->nacts = 0;
	b->next_act = 0;
	b->subid = b->next_subid = 1;	/* the top transaction's */
	b->nsub = 0;
	memset(b->xlev, 0, sizeof(b->xlev));
	if (zkm_now(S->m) < b->cl->burst_until && b->sess_key < 0)
	{
		/* one of a burst for a lingering node (plan_turn) */
		add_act(b, false, b->cl->burst_key, ZKL_MODE_EXCLUSIVE, chance(40) ? 1 : 0);
		b->hasty = b->acts[0].kind == 1 && chance(50);
		return;
	}
	if (zkm_now(S->m) < b->cl->linger_try_until && b->sess_key < 0)
	{
		/* another cluster's node lingers on the key (linger_try_due) */
		b->cl->linger_try_until = 0;
		add_act(b, false, b->cl->linger_try_key, ZKL_MODE_EXCLUSIVE, 2);
		if (chance(50))
		{
			b->acts[0].nkeys = 2;
			b->acts[0].keys[0] = b->cl->linger_try_key;
			b->acts[0].keys[1] = (b->cl->linger_try_key + 1 + rnd_int(NKEYS - 1)) % NKEYS;
		}
		return;
	}
	if (plan_session(b, k))
	{
		plan_savepoints(b);
		return;
	}
	if (chance(S->hot_pct))
	{
		/*
		 * One hot key: local hand-overs, local readers riding one node,
		 * upgrades of a ridden lock, and other clusters' waiters behind
		 * them all.
		 */
		bool		reads = chance(S->hot_read_pct);

		add_act(b, false, 0, reads ? ZKL_MODE_SHARED : ZKL_MODE_EXCLUSIVE,
				chance(50) ? 0 : (chance(70) ? 1 : 2));
		/*
		 * A writer that gives the key up and asks it shared at once: its
		 * node, kept for a local waiter's hand-over until the holder's
		 * listing is back, is what the shared request counts as its
		 * backend's own (core's same-backend rule) meanwhile.
		 */
		if (!reads && chance(50))
		{
			add_act(b, true, 0, ZKL_MODE_EXCLUSIVE, 0);
			add_act(b, false, 0, ZKL_MODE_SHARED, chance(50) ? 0 : 1);
		}
		if (reads && chance(10))
			add_act(b, false, 0, ZKL_MODE_EXCLUSIVE, chance(50) ? 1 : 2);
	}
	else if (pattern >= 100 - S->sem_pct)
	{
		plan_semaphore(b);
		return;
	}
	else if (pattern >= 100 - S->sem_pct - S->multi_pct)
	{
		plan_multi(b);
		return;
	}
	else
		plan_plain(b, k, pattern);
	plan_savepoints(b);
	/* under a session-level lock no wait is for ever: it breaks the one key order */
	for (i = 0; i < b->nacts; i++)
		if (holds_session(b) && !b->acts[i].unlock && b->acts[i].kind == 0)
			b->acts[i].kind = 1;
}

static void
plan_plain(Backend *b, int k, int pattern)
{
	if (pattern < 10)
	{
		/* an upgrade: shared, then exclusive; two upgraders wait for each other, so never for ever */
		add_act(b, false, k, ZKL_MODE_SHARED, 1);
		add_act(b, false, k, ZKL_MODE_EXCLUSIVE, chance(50) ? 1 : 2);
	}
	else if (pattern < 16)
	{
		/*
		 * Two keys in either order, the second maybe shared: backends that
		 * meet in a circle are broken by a deadlock search (40P01), of
		 * their cluster's (deadlock.c) or across clusters (gwait.c), or by
		 * a wait's timeout.  A wait for ever leaves it to the searches.
		 */
		int			first = rnd_int(NKEYS);
		int			second = (first + 1 + rnd_int(NKEYS - 1)) % NKEYS;
		int			i;

		if (chance(25))
		{
			/* a semaphore and a lock, in either order: circles through the semaphore */
			if (chance(50))
				second = SEM_KEY;
			else
			{
				second = first;
				first = SEM_KEY;
			}
		}
		add_act(b, false, first, ZKL_MODE_EXCLUSIVE, chance(50) ? 0 : 1);
		add_pause(b);
		add_act(b, false, second, chance(70) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED,
				chance(50) ? 0 : 1);
		for (i = b->nacts - 3; i < b->nacts; i++)
			if (!b->acts[i].pause && b->acts[i].key == SEM_KEY)
			{
				b->acts[i].mode = ZKL_MODE_SEMAPHORE;
				b->acts[i].holders = SEM_HOLDERS;
			}
	}
	else if (pattern < 22)
	{
		/* exclusive, then shared (granted at once), then the exclusive given up */
		add_act(b, false, k, ZKL_MODE_EXCLUSIVE, chance(50) ? 0 : 1);
		add_act(b, false, k, ZKL_MODE_SHARED, 0);
		if (chance(50))
			add_pause(b);
		add_act(b, true, k, ZKL_MODE_EXCLUSIVE, 0);
	}
	else
	{
		int			n = 1 + (chance(30) ? 1 : 0);
		int			i;

		/*
		 * Several keys in one order everywhere: no deadlock among these; but
		 * a multi-key request's place is one on all its keys, and one taken
		 * key by key can hold one of them and wait for another behind it, as
		 * with core's locks: such waits are bounded (lock_timeout).
		 */
		k = rnd_int(NKEYS - n + 1);
		for (i = 0; i < n; i++)
		{
			add_act(b, false, k + i, chance(70) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED,
					(chance(25) && n == 1) ? 0 : (chance(75) ? 1 : 2));
			if (chance(10))
				add_act(b, false, k + i, b->acts[b->nacts - 1].mode, 1);	/* stacks */
		}
		if (chance(20))
		{
			/* given up before the commit, maybe after idling a while */
			if (chance(50))
				add_pause(b);
			add_act(b, true, k, b->acts[0].mode, 0);
		}
	}
}

static void next_act(Cluster *c, Backend *b);
static bool any_lost(Cluster *c, Backend *b);
static void apply_stacks(Cluster *c, Backend *b);
static void request(Cluster *c, Backend *b, const Act *a);
static void fill_span(Cluster *c, Backend *b, const ZklSlot *s, Span *sp);

/* The application took a session-level lock on slot s (granted, or stacked). */
static void
app_take(Cluster *c, Backend *b, const ZklSlot *s)
{
	int			k = key_index(s->key);
	int			i;

	for (i = 0; i < b->napp; i++)
		if (b->app[i].key == k && b->app[i].mode == s->req.mode)
		{
			b->app_count[i]++;
			return;
		}
	if (b->napp == MAXHOLD)
		return;
	fill_span(c, b, s, &b->app[b->napp]);
	b->app_count[b->napp++] = 1;
}

/*
 * The application unlocked one acquisition of key (-1: every key), or all
 * of them (its acknowledgement of a loss too).  The transaction ran under
 * what it gave up until now, as under a lock released early (but DISCARD
 * ALL, alone in its transaction: ran_under false).
 */
static void
app_release(Backend *b, int key, char mode, bool all, bool ran_under)
{
	int			n = 0;
	int			i;

	for (i = 0; i < b->napp; i++)
	{
		if (key < 0 || (b->app[i].key == key && b->app[i].mode == mode))
			b->app_count[i] = all ? 0 : b->app_count[i] - 1;
		if (b->app_count[i] > 0)
		{
			b->app[n] = b->app[i];
			b->app_count[n++] = b->app_count[i];
		}
		else if (ran_under && b->nspans < MAXSPANS)
		{
			b->spans[b->nspans] = b->app[i];
			b->spans[b->nspans++].to = zkm_now(S->m);
		}
	}
	b->napp = n;
}

/*
 * An error told the backend of a lost session-level lock (xact.c's
 * session_lost_error): the statement or commit fails.  An application
 * acknowledges the loss at once, or (a wrapper that retries on 40001)
 * only when its episode ends.
 */
static void
told_of_session_loss(Cluster *c, Backend *b, const char *how)
{
	b->told_lost = true;
	if (chance(50))
		b->sess_txns = 0;
	b->txns_left--;
	end_xact(c, b, how);
}

/*
 * Every zk_* call but an acknowledgement: a lost session-level lock not
 * acknowledged fails it (xact.c's zb_check_losses).  Returns whether it did.
 */
static bool
refused_for_loss(Cluster *c, Backend *b)
{
	if (unacknowledged(c, b) < 0)
		return false;
	told_of_session_loss(c, b, "aborts: a zk_* call finds a session-level lock lost");
	return true;
}

/*
 * zk_session_unlock, zk_session_unlock_all, DISCARD ALL: the
 * acknowledgements of xact.c (zb_acknowledge_losses, zb_discard_all).
 * Returns whether the transaction ended.
 */
static bool
acknowledge(Cluster *c, Backend *b, const Act *a)
{
	char		first[ZKL_KEY_BUFLEN];
	bool		acked;

	if (a->discard)
	{
		/* alone in its transaction: nothing ran under what it gave up */
		acked = zc_book_unacknowledged_loss(&b->book) >= 0;
		zc_book_discard_all(&b->book, true);
	}
	else
		acked = zc_book_acknowledge(&b->book, a->all ? NULL : key_name(a->key), a->mode, first);
	if (a->all || a->discard)
		app_release(b, -1, 0, true, !a->discard);
	else if (acked)
		app_release(b, a->key, a->mode, true, true);
	if (acked)
		b->told_lost = false;
	if (a->discard)
	{
		b->lost_seen = false;
		trace("c%d b%d DISCARD ALL%s", c->id, b->pid, acked ? " (acknowledges a loss)" : "");
		return false;
	}
	if (!acked)
		return false;
	if (chance(30))
	{
		/* the application catches the call's error (a savepoint) and goes on to commit */
		trace("c%d b%d acknowledges a lost session-level lock, catches the error", c->id, b->pid);
		return false;
	}
	b->txns_left--;
	end_xact(c, b, "aborts: its unlock acknowledges a lost session-level lock");
	return true;
}

static void
do_unlock(Cluster *c, Backend *b, const Act *a)
{
	if (a->session && acknowledge(c, b, a))
		return;
	if (!a->discard && refused_for_loss(c, b))
		return;
	if (!a->all && !a->discard && zc_book_unlock(&b->book, key_name(a->key), a->mode, a->session) &&
		a->session)
		app_release(b, a->key, a->mode, false, true);
	if (!a->session)
		app_count_xact(b, a->key, a->mode, -1);
	trace("c%d b%d unlocks %s %c%s", c->id, b->pid, key_name(a->key), a->mode,
		  a->session ? " (session)" : "");
	next_act(c, b);
}

/* A multi-key request: one slot per key, claimed at once, sharing a group (shmem.c). */
static void
request_group(Cluster *c, Backend *b, const Act *a)
{
	ZklRequest	r;
	char		uuid[ZKL_UUID_LEN + 1];
	int			fresh[NKEYS];
	int			nfresh = 0;
	int			free_slots = 0;
	int			i;

	/*
	 * As lockfuncs.c's acquire_keys: keys this backend holds in the mode
	 * stack (once the rest is granted), a lost one fails the request; the
	 * others are claimed, as a group only when there are two or more.
	 */
	b->npstack = 0;
	if (refused_for_loss(c, b))
		return;
	for (i = 0; i < a->nkeys; i++)
	{
		int			held = find_hold(b, a->keys[i], a->mode);

		if (held >= 0 && book_lost(b, b->book.h[held].slot))
		{
			b->txns_left--;
			end_xact(c, b, "aborts: stacking onto a lost lock");
			return;
		}
		if (held >= 0)
			b->pstack[b->npstack++] = held;
		else
			fresh[nfresh++] = a->keys[i];
	}
	if (nfresh <= 1)
	{
		Act			one = *a;

		if (nfresh == 0)
		{
			apply_stacks(c, b);
			next_act(c, b);
			return;
		}
		one.nkeys = 0;
		one.key = fresh[0];
		request(c, b, &one);
		return;
	}
	for (i = 0; i < c->t->nslots; i++)
		free_slots += c->t->slots[i].zstate == ZKS_FREE;
	if (free_slots < nfresh)
	{
		end_xact(c, b, "aborts: out of slots");
		return;
	}
	r.mode = a->mode;
	r.holders = 0;
	r.nowait = a->kind == 2;
	r.scope = ZKL_SCOPE_XACT;
	r.data = "{\"sim\":1}";
	r.procno = b->pid;
	r.pid = b->pid;
	r.now = c_wall(c);
	r.group = ++c->t->next_attempt;
	for (i = 0; i < nfresh; i++)
	{
		env_new_uuid(NULL, uuid);
		r.uuid = uuid;
		r.key = key_name(fresh[i]);
		b->group[i] = zc_table_find_free(c->t);
		zc_table_claim(c->t, b->group[i], &r);
	}
	b->ngroup = nfresh;
	zc_book_set_pending(&b->book, b->group, nfresh);
	b->waiting = -1;
	b->wait_session = false;
	b->deadline = a->kind == 1 ? zkm_now(S->m) + 300000 + rnd_int(6000000) : 0;
	b->st = B_WAIT;
	trace("c%d b%d asks {%s %s%s%s} %c%s", c->id, b->pid, key_name(fresh[0]), key_name(fresh[1]),
		  nfresh > 2 ? " " : "", nfresh > 2 ? key_name(fresh[2]) : "", a->mode,
		  r.nowait ? " try" : (b->deadline ? " timed" : ""));
	worker_turn(c);
}

static void
request(Cluster *c, Backend *b, const Act *a)
{
	ZklRequest	r;
	char		uuid[ZKL_UUID_LEN + 1];
	int			held = find_hold(b, a->key, a->mode);
	int			idx;

	if (refused_for_loss(c, b))
		return;
	if (held >= 0)
	{
		/* stacks, as core does; onto a lost lock it fails */
		if (book_lost(b, b->book.h[held].slot))
		{
			b->txns_left--;
			end_xact(c, b, "aborts: stacking onto a lost lock");
			return;
		}
		zc_book_stack(&b->book, held, a->session, b->subid);
		if (a->session)
			app_take(c, b, &c->t->slots[b->book.h[held].slot]);
		else
			app_count_xact(b, a->key, a->mode, 1);
		next_act(c, b);
		return;
	}
	idx = zc_table_find_free(c->t);
	if (idx < 0)
	{
		end_xact(c, b, "aborts: out of slots");
		return;
	}
	env_new_uuid(NULL, uuid);
	r.key = key_name(a->key);
	r.mode = a->mode;
	r.holders = a->holders;
	r.group = 0;
	r.nowait = a->kind == 2;
	r.scope = a->session ? ZKL_SCOPE_SESSION : ZKL_SCOPE_XACT;
	r.data = "{\"sim\":1}";
	r.procno = b->pid;
	r.pid = b->pid;
	r.now = c_wall(c);
	r.uuid = uuid;
	zc_table_claim(c->t, idx, &r);
	zc_book_set_pending(&b->book, &idx, 1);
	b->waiting = idx;
	b->wait_session = a->session;
	b->deadline = a->kind == 1 ? zkm_now(S->m) + 300000 + rnd_int(6000000) : 0;
	if (b->deadline && b->hasty)
		b->deadline = zkm_now(S->m) + 1000 + rnd_int(S->linger_ms * 1000);
	b->hasty = false;
	b->st = B_WAIT;
	trace("c%d b%d asks %s %c%s (slot %d)", c->id, b->pid, r.key, r.mode,
		  r.nowait ? " try" : (b->deadline ? " timed" : ""), idx);
	worker_turn(c);
}

/* A multi-key request granted: its keys held already stack now (xact.c's add_hold). */
static void
apply_stacks(Cluster *c, Backend *b)
{
	int			i;

	for (i = 0; i < b->npstack; i++)
	{
		const ZklHold *h = &b->book.h[b->pstack[i]];

		app_count_xact(b, key_index(h->key), h->mode, 1);
		zc_book_stack(&b->book, b->pstack[i], false, b->subid);
	}
	b->npstack = 0;
}

static void
next_act(Cluster *c, Backend *b)
{
	check_book(c, b);
	b->npstack = 0;
	b->waiting = -1;
	b->deadline = 0;
	if (b->next_act < b->nacts)
	{
		const Act  *a = &b->acts[b->next_act++];

		if (a->pause)
		{
			b->st = B_HOLD;
			b->next_at = zkm_now(S->m) + rnd_int(3000000);
		}
		else if (a->sp)
			do_savepoint(c, b, a);
		else if (a->unlock)
			do_unlock(c, b, a);
		else if (a->nkeys > 0)
			request_group(c, b, a);
		else
			request(c, b, a);
		return;
	}
	b->st = B_HOLD;
	b->next_at = zkm_now(S->m) + rnd_int(chance(10) ? 3000000 : 400000);
}

/* Slot s's lock, held from its grant on. */
static void
fill_span(Cluster *c, Backend *b, const ZklSlot *s, Span *sp)
{
	sp->key = key_index(s->key);
	sp->mode = s->req.mode;
	sp->holders = s->req.holders;
	sp->cluster = c->id;
	sp->pid = b->pid;
	sp->from = S->granted_at[c->id][s - c->t->slots];	/* the model's time, not the cluster's clock */
	slot_uuid(s, sp->uuid);
	sp->to = 0;
}

/* The transaction holds slot s's lock from its grant on (checked at commit). */
static void
open_span(Cluster *c, Backend *b, const ZklSlot *s)
{
	if (b->nspans < MAXSPANS)
		fill_span(c, b, s, &b->spans[b->nspans++]);
}

/* A granted slot is the transaction's now. */
static void
take_grant(Cluster *c, Backend *b, int idx)
{
	ZklSlot    *s = &c->t->slots[idx];

	zc_book_add(&b->book, idx, s->key, s->req.mode, s->ans.session_id, b->wait_session, b->subid);
	if (b->wait_session)
		app_take(c, b, s);
	else
	{
		app_count_xact(b, key_index(s->key), s->req.mode, 1);
		open_span(c, b, s);
	}
	trace("c%d b%d granted %s %c node %s", c->id, b->pid, s->key, s->req.mode, s->node);
}

/* A try's answer, counted once per request if a key of it waited for a node that may linger. */
static void
count_linger_wait(Cluster *c, Backend *b, bool granted)
{
	int			i;

	for (i = 0; i < b->ngroup; i++)
		if (c->t->slots[b->group[i]].req.nowait && c->t->slots[b->group[i]].zk.try_until != 0)
		{
			linger_waits[granted]++;
			return;
		}
}

/* A multi-key request: all granted, or any other answer gives all of it up. */
static void
wait_group_step(Cluster *c, Backend *b)
{
	int			granted = 0;
	int			i;

	for (i = 0; i < b->ngroup; i++)
	{
		ZklResult	res = c->t->slots[b->group[i]].ans.result;

		if (res == ZKL_RESULT_GRANTED)
			granted++;
		else if (res == ZKL_RESULT_NOT_GRANTED)
		{
			count_linger_wait(c, b, false);
			abandon_group(c, b);
			trace("c%d b%d multi-key try refused", c->id, b->pid);
			next_act(c, b);
			return;
		}
		else if (res != ZKL_RESULT_PENDING)
		{
			b->txns_left--;
			end_xact(c, b, res == ZKL_RESULT_LOST ? "aborts: a lock was lost while it waited" : "aborts");
			return;
		}
	}
	if (granted == b->ngroup)
	{
		count_linger_wait(c, b, true);
		for (i = 0; i < b->ngroup; i++)
			take_grant(c, b, b->group[i]);
		b->ngroup = 0;
		apply_stacks(c, b);
		next_act(c, b);
	}
	else if (b->deadline && zkm_now(S->m) >= b->deadline)
	{
		b->txns_left--;
		end_xact(c, b, "times out");
	}
}

static void
wait_step(Cluster *c, Backend *b)
{
	ZklSlot    *s;
	ZklResult	res;

	if (b->ngroup > 0)
	{
		wait_group_step(c, b);
		return;
	}
	s = &c->t->slots[b->waiting];
	res = s->ans.result;

	if (res == ZKL_RESULT_PENDING && any_lost(c, b))
	{
		/* the worker cancels the waiting statement (core.c's lose_slot): a session-level loss first */
		if (unacknowledged(c, b) >= 0)
		{
			told_of_session_loss(c, b, "aborts: a session-level lock was lost while it waited");
			return;
		}
		b->txns_left--;
		end_xact(c, b, "aborts: a lock was lost while it waited");
		return;
	}
	if (res == ZKL_RESULT_PENDING && b->deadline && zkm_now(S->m) >= b->deadline)
	{
		/* zkl_cancel_slots: give up only if still unanswered */
		zc_book_set_pending(&b->book, NULL, 0);
		(void) zc_table_abandon(c->t, s);
		b->waiting = -1;
		b->txns_left--;
		end_xact(c, b, "times out");
		return;
	}
	if (res == ZKL_RESULT_PENDING)
		return;
	if (s->req.nowait && s->zk.try_until != 0)
		linger_waits[res == ZKL_RESULT_GRANTED]++;
	if (res == ZKL_RESULT_GRANTED)
	{
		take_grant(c, b, b->waiting);
		apply_stacks(c, b);
		next_act(c, b);
	}
	else if (res == ZKL_RESULT_NOT_GRANTED)
	{
		zc_book_set_pending(&b->book, NULL, 0);
		(void) zc_table_abandon(c->t, s);
		trace("c%d b%d try-lock refused %s", c->id, b->pid, s->key);
		next_act(c, b);
	}
	else
	{
		trace("c%d b%d request failed: %s", c->id, b->pid, s->errmsg);
		deadlocks_broken += strncmp(s->errmsg, "deadlock detected: processes", 28) == 0;
		b->txns_left--;
		end_xact(c, b, "aborts");
	}
}

static bool
any_lost(Cluster *c, Backend *b)
{
	int			i;

	for (i = 0; i < b->book.n; i++)
		if (book_lost(b, b->book.h[i].slot))
			return true;
	return false;
}

/*
 * The commit rule of xact.c, now: a transaction also runs under the
 * session-level locks held at its commit.
 */
static ZklCommitVerdict
commit_verdict(Cluster *c, Backend *b)
{
	ZklBook		now = b->book;	/* its proof only is changed: a copy will do */

	zc_book_at_commit(&now);
	return zc_holds_commit_verdict(&now.proof, unacknowledged(c, b) >= 0, any_lost(c, b), c->proof_at,
							  c->proof_session,
							  c->t->session_tag, c_mono(c), c->proof_bound);
}

/*
 * Each session-level lock the application believes it holds at commit (not
 * what the bookkeeping says): the transaction ran under it from its grant.
 */
static void
add_session_spans(Backend *b)
{
	int			i;

	for (i = 0; i < b->napp && b->nspans < MAXSPANS; i++)
		b->spans[b->nspans++] = b->app[i];
}

static void publish(Cluster *c, Backend *b, ZklCommitVerdict v);

/* held.c's mark of a commit past its check, on the backend's slots. */
static void
mark_committing(Cluster *c, Backend *b, bool on)
{
	int			i;

	for (i = 0; i < b->book.n; i++)
		c->t->slots[b->book.h[i].slot].own.committing = on;
}

static void
commit_step(Cluster *c, Backend *b)
{
	ZklCommitVerdict v = commit_verdict(c, b);

	/* lost stays lost: unlocking a lost lock does not make the commit go through */
	if (b->lost_seen && v != ZKH_LOST && v != ZKH_SESSION_LOST)
		fail("c%d b%d lost a lock of its transaction, yet its commit is not refused as lost",
			 c->id, b->pid);

	if (v == ZKH_WAIT && zkm_now(S->m) < b->deadline)
	{
		c->t->proof_wanted = true;
		return;
	}
	if (v == ZKH_COMMIT && S->commit_pause_us > 0)
	{
		mark_committing(c, b, true);
		b->st = B_PUBLISH;
		b->next_at = zkm_now(S->m) + rnd_int((int) S->commit_pause_us + 1);
		return;
	}
	publish(c, b, v);
}

/* The commit's record is visible now: the transaction held its locks until this moment. */
static void settle(Cluster *c, Backend *b, ZklCommitVerdict v);

static void
publish(Cluster *c, Backend *b, ZklCommitVerdict v)
{
	bool		exits = c->stopping || b->exits;	/* (end_xact may end the stop) */

	mark_committing(c, b, false);

	if (v == ZKH_SESSION_LOST)
		told_of_session_loss(c, b, "commit fails: a session-level lock is lost");
	else
		settle(c, b, v);
	if (exits)
	{
		b->exits = false;
		backend_exit(c, b);		/* it was past its commit check when the stop began */
	}
}

/* A commit's outcome once its record is visible (or not). */
static void
settle(Cluster *c, Backend *b, ZklCommitVerdict v)
{
	b->txns_left--;
	if (v == ZKH_COMMIT)
	{
		/* a lost session-level lock: no commit until the application acknowledges it */
		if (b->told_lost)
			fail("c%d b%d commits, told of a session-level loss it has not acknowledged",
				 c->id, b->pid);
		add_session_spans(b);
		check_commit(b);
		b->commits++;
		S->commits++;
		end_xact(c, b, "commits");
	}
	else
		end_xact(c, b, v == ZKH_WAIT ? "commit fails: no proof in time" : "commit fails: lost or ended");
}

static bool
backend_step(Cluster *c, Backend *b)
{
	int64_t		now = zkm_now(S->m);

	switch (b->st)
	{
		case B_IDLE:
			if (now < b->next_at)
				return false;
			plan_xact(b);
			next_act(c, b);
			return true;
		case B_WAIT:
			wait_step(c, b);
			return true;
		case B_HOLD:
			/* idle in transaction: a lost lock's cancel finds no statement to end */
			if (now < b->next_at)
				return false;
			if (b->next_act < b->nacts)
			{
				next_act(c, b);
				return true;
			}
			if (chance(15))
			{
				b->txns_left--;
				end_xact(c, b, "rolls back");
				return true;
			}
			b->st = B_COMMIT;
			b->deadline = now + (int64_t) (c->session_timeout + 2000) * 1000;
			commit_step(c, b);
			return true;
		case B_COMMIT:
			commit_step(c, b);
			return true;
		case B_PUBLISH:
			if (now < b->next_at)
				return false;
			publish(c, b, ZKH_COMMIT);
			return true;
		case B_DOWN:
		case B_DONE:
			return false;
	}
	return false;
}

/* ---- invariants ---- */

/* Which backend of which cluster owns the node of this name (-1: none). */
static bool
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
static bool
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

static bool
conflict(char a, char b)
{
	return a == ZKL_MODE_EXCLUSIVE || b == ZKL_MODE_EXCLUSIVE;
}

/* A grant passes no conflicting request queued before it, unless core's same-backend rule allows. */
static void
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

typedef struct Holder
{
	int			cluster;
	int			pid;
	int			key;
	char		mode;
	int			holders;		/* a semaphore's */
} Holder;

/* More semaphore holders that could commit now than any of them allows. */
static void
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
static int64_t
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
static void
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
static void
note_grants(Cluster *c)
{
	int			j;

	for (j = 0; j < c->t->nused; j++)
	{
		ZklSlot    *s = &c->t->slots[j];

		if (s->zstate != ZKS_FREE && s->req.queued_at != S->queued_wall[c->id][j])
		{
			S->queued_wall[c->id][j] = s->req.queued_at;
			S->queued_model[c->id][j] = zkm_now(S->m);
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
			if (s->zk.handed > 0)
				check_handover(c, s);
			check_fifo(c, s);
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

static void dump_cluster(const Cluster *c);
static void check_liveness(Cluster *c);
static void check_lost_told(void);

#define CALM_BACKLOG	8


/*
 * cohort.c's belief against what is in flight: a request whose hand-overs
 * wait for a watched listing of its key (COH_PEEK_ASKED) has one on its
 * way.  Else nothing asks again: a released node is kept for good, and its
 * local waiters and every other cluster's wait behind it.
 */
static void
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

/* ---- ground truth: waits that can never end ----
 *
 * From the leader's tree and the backends as they are, not from what any
 * core believes: a backend can go on unless it waits (B_WAIT, a request
 * still pending), and a pending request can go on once fewer than `need`
 * of the entries ahead of it stay (1 for a lock: all of them go; the
 * holders count for a semaphore).  An entry ahead is a node before the
 * request's own at the leader that conflicts with it, or for a request
 * waiting for a local hand-over (no node of its own), a local request of
 * another backend that holds the key or has a node for it; it goes once
 * every backend holding or riding it can go (a node no backend holds, a
 * lingering one or an orphan, goes in time).  The least fixed point of
 * "can go on" leaves the backends that wait for ever: circles of waits and
 * what waits behind them.  Timeouts are left out: a circle is a deadlock
 * even if a lock_timeout would end it later, as for core's detector.
 * A request not judged (its node not at the leader yet, or deleted) counts
 * as one that goes on, and local waiters queued behind each other without
 * nodes are not edges: both make this miss some circles, never see one
 * that is not there.
 */
#define TR_AHEAD	64
#define TR_OWNERS	8
#define TR_REQS		(NCLUSTERS * NSLOTS)

typedef struct TruthEntry
{
	int			nowners;
	int8_t		oc[TR_OWNERS];	/* cluster and backend index of each owner */
	int8_t		ob[TR_OWNERS];
} TruthEntry;

typedef struct TruthReq
{
	int8_t		ci;
	int8_t		bi;
	int			need;
	int			nahead;
	TruthEntry	ahead[TR_AHEAD];
} TruthReq;

typedef struct Truth
{
	bool		goes[NCLUSTERS][NBACKENDS];
	int			nreqs;
	TruthReq	reqs[TR_REQS];
} Truth;

static int
backend_of_pid(const Cluster *c, int pid)
{
	int			i;

	for (i = 0; i < c->nb; i++)
		if (c->b[i].pid == pid)
			return i;
	return -1;
}

/* Every backend holding, riding or queued through node `name` of key `key`. */
static void
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
static bool
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
		/* a local hand-over: the holders of the key, and the request with the cluster's node */
		for (i = 0; i < c->t->nused && r->nahead < TR_AHEAD; i++)
		{
			const ZklSlot *o = &c->t->slots[i];
			int			ob = backend_of_pid(c, o->req.owner_pid);

			if (o->req.owner_pid == pid || ob < 0 || strcmp(o->key, s->key) != 0 ||
				!(o->zstate == ZKS_HELD || (o->zstate == ZKS_QUEUED && o->node[0] != '\0')) ||
				(s->req.mode != ZKL_MODE_SEMAPHORE && !conflict(o->req.mode, s->req.mode)))
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

			if (i == own || zc_recipe_seq_cmp(kids[i].seq, kids[own].seq) > 0)
				continue;
			truth_owners(s->key, kids[i].name, &e);
			if (e.nowners != 1 || e.oc[0] != ci || e.ob[0] != bi)
				continue;
			for (j = 0; j < c->t->nused; j++)
				held |= c->t->slots[j].zstate == ZKS_HELD && c->t->slots[j].req.owner_pid == pid &&
					zc_recipe_name_has_uuid(kids[i].name, c->t->slots[j].uuid);
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
				 (kids[i].mode == ZKL_MODE_EXCLUSIVE || local_waiter(c, kids[i].name))))
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
 * Whether kids[i], made after kids[own], is an upgrade placed ahead of it
 * (recipe.h) that it waits for: not one of its own cluster that is not
 * granted (ZkrBackend.pending), judged from the upgrade's slot.
 */
static bool
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
static bool
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

static void
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

static void
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

/* ---- deadlocks across clusters ----
 *
 * gwaits.c's schedule, restated on the model's clock (its I/O is
 * PostgreSQL's and ZooKeeper's); gwait.c's decisions run as they are.
 * The documents live beside the model, whose nodes keep ZKM_DATA bytes:
 * each lives while the session that wrote it does, as an ephemeral node,
 * and a version counts its writes.  A round reads them all at once; the
 * claim (checks of the cycle's nodes and of the documents' versions, one
 * claim at a time in all clusters) reaches the leader a few ms later, and
 * its answer a few ms after that, when the victim's own part is checked
 * again (break_cycle) and the victim fails.  The moment of choice is the
 * claim: the victim must then wait for ever by the ground truth.
 */
#define GW_IDLE		0
#define GW_CLAIM	1			/* the claim is on its way to the leader */
#define GW_CONFIRM	2			/* ours: the others' confirmations are awaited */
#define GW_BREAK	3			/* all in: decide again and fail the victim */

static int64_t gw_victims = 0;	/* over the run */
static int64_t gw_rounds = 0;
static int64_t gw_claims_refused = 0;
static int64_t gw_gaveup_victims = 0;	/* of a cycle a wait of which was given up meanwhile */
static int64_t gw_tainted_victims = 0;	/* through a request whose node was deleted from outside */	/* chosen through a wait ended, not yet rewritten */
static int64_t gw_max_stuck_ms = 0;
static int	gw_longest_doc = 0;	/* longest a backend waited for ever, until broken */

/* A document is there while its session lives (an ephemeral node). */
static bool
gw_visible(const Cluster *c)
{
	return c->gw_doc[0] != '\0' && zkm_session_alive(S->m, c->gw_doc_session);
}

/* This cluster's document as zc_gwait_format makes it now; its length. */
static int
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
static void
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
static int
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
static bool
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
static bool
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
static void
gw_drop_claim(Cluster *c)
{
	if (S->claim_session == c->t->session_id)
		S->claim_session = 0;
	c->gw_claim_until = 0;
}

/* The claim reaches the leader: a multi of checks and the claim's create. */
static void
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
static void
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
static void
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
static void
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
static void
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
static void
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

/*
 * Every circle of waits is broken within a bound once the world is calm:
 * sampled in the quiet phase, a backend that waits for ever by the ground
 * truth must stop doing so within the bound.
 */
static void
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
					for (k = 0; k < S->ncl; k++)
						printf("c%d document (session %" PRIx64 "):\n%s\n", k,
							   S->c[k].gw_doc_session, S->c[k].gw_doc);
				}
			}
		}
	free(tr);
}

static void
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
			if (c->t->slots[j].req.group != 0 && !c->t->slots[j].own.abandoned)
				check_group(c, j);
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

				if (zc_holds_holds(hk) == 0 || slot_tainted(&c->t->slots[hk->slot]))
					continue;	/* given up (node kept for the other mode); or its node deleted */
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
}

/*
 * Lost locks judged from the model, not from the core's flags: a lock the
 * core holds (granted, HELD) whose node the leader no longer has (its
 * session ended, or the node was deleted) must be known lost within a
 * bound, however the cluster learns it (an expiry, the cut-off clock, a
 * commit's verify).  A worker paused does not count the time; a node
 * deleted from outside is left out (zk_lock promises nothing then).
 */
static void
check_lost_told(void)
{
	int64_t		now = zkm_now(S->m);
	int			i;
	int			j;

	if (now < S->lost_at)
		return;
	S->lost_at = now + 50000;
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
static bool
key_event(const ZkmMsg *msg, void *arg)
{
	const char *key_path = arg;
	size_t		n = strlen(key_path);

	return msg->kind == ZKM_EVENT && strncmp(msg->path, key_path, n) == 0 &&
		(msg->path[n] == '\0' || msg->path[n] == '/');
}

/* Whether a request of cluster c about s's key, or an event about it, is under way. */
static bool
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
static void
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
static void
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
		!zc_recipe_sole_blocker(kids, own, watch, &b) ||
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
static void
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
		v = zc_recipe_decide(kids, zc_recipe_collect((const char *const *) names, nn < 128 ? nn : 128, kids),
					   s->uuid, &b, &own, &watch);
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

static void
dump_cluster(const Cluster *c)
{
	int			j;

	printf("c%d: client %d conn %d session %" PRIx64 " listed %d stale %d paused_until %.3f outs %d\n",
		   c->id, c->client, c->t->conn_state, c->t->session_id, c->presence->pres.listed, c->presence->pres.stale,
		   c->presence->pres.paused_until / 1e6, c->nouts);
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

static void
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
		if (n > 0)
			fail("node %s/%s left behind", path, names[0]);
		for (j = 0; j < n; j++)
		{
			char		child[ZKM_PATH * 2];
			int64_t		owner;
			int64_t		czxid;

			snprintf(child, sizeof(child), "%s/%s", path, names[j]);
			(void) zkm_leader_node(S->m, child, &owner, &czxid);
			printf("  at the leader: %s (session %" PRIx64 ")\n", child, owner);
		}
		zkm_names_free(names, n);
	}
}

/* The node of slot s at the leader, found by its uuid, deleted as by another client. */
static bool
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

/* ---- the scheduler ---- */

static void
cluster_init(Cluster *c, int id, int nb, int nslots)
{
	int			i;

	memset(c, 0, sizeof(*c));
	c->id = id;
	c->shared = simpg_shared_new();
	c->t = simpg_table(c->shared);
	c->session_nonce = simpg_session_nonce(c->shared);
	c->t->nslots = nslots;
	c->t->slots = c->slots;
	c->t->conn_state = ZKC_STOPPED;
	snprintf(c->t->roots[0], sizeof(c->t->roots[0]), "%s", ROOT);
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

/*
 * The faults, each with a weight the seed draws (swarm testing: a seed
 * that leaves some out meets the others more often, and in combinations
 * an even mix rarely makes).
 */
typedef enum FaultKind
{
	F_RESET,					/* a connection reset */
	F_LOSE_REPLY,				/* a write applied, its reply lost */
	F_CUT_FOLLOWER,				/* a follower cut off from the leader */
	F_KILL_SESSION,				/* a session ended at the leader */
	F_DELETE_WAITER,			/* someone deletes a waiter's node */
	F_PAUSE,					/* a worker stopped, maybe past its session timeout */
	F_CRASH,					/* a worker dies and another resumes its session */
	F_WALL,						/* a wall clock steps */
	F_RELOAD,					/* a reload turns local hand-over off or on */
	F_REAP,						/* the server reaps an empty container */
	F_SILENT,					/* a link that drops every packet, with no reset */
	F_STOP,						/* a clean stop (fast shutdown) and a start */
	F_ACL,						/* an operator's ACL refuses us on a key node or the root a while */
	F_GARBLE,					/* a server fails inside on a request (ZMARSHALLINGERROR) */
	F_CRASH_RESTART,			/* a backend crashes: the postmaster restarts the whole cluster */
	F_CUT_LEADER,				/* the leader cut off from every follower: an election */
	F_DELETE_PRESENCE,			/* someone deletes a session's presence node, its create refused a while */
	NFAULTS
} FaultKind;

static FaultKind
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
static void
worker_restart(Cluster *c)
{
	ZklCore		keep = c->core;
	int64_t		session = c->t->session_id;

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
	c->core.cohort.linger_ms = keep.cohort.linger_ms;
	c->paused = false;			/* a stopped process killed: the new one runs */
	worker_memory(c);			/* process memory */
	zc_core_worker_restarted(&c->core);
	c->gw_phase = GW_IDLE;		/* a claim of ours may be left: the new worker looks */
	c->left_session = 0;		/* process memory: a left session then ends by timeout */
	c->gw_claim_until = 0;
	c->gw_nsems = 0;
	c->t->conn_state = ZKC_CONNECTING;
	c->confirming = false;
	if (session != 0)
	{
		c->client = zkm_resume(S->m, session);
		zc_core_new_handle(&c->core);	/* worker.c's session_new_handle */
		enter(c);
		zw_presence_reset();
		c->fresh_handle = false;
		trace("c%d worker restarted, resumes session %" PRIx64, c->id, session);
	}
	else
		c->next_open = c_mono(c);
}

/*
 * A fast shutdown: each backend's transaction aborts and the backend exits,
 * giving up every lock at both levels; one past its commit check finishes
 * its commit first (backend_step), as interrupts wait for it.
 */
static void
backend_exit(Cluster *c, Backend *b)
{
	if (b->st == B_PUBLISH || b->st == B_DONE || b->st == B_DOWN)
		return;
	if (b->st != B_IDLE)
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

static void stop_close(Cluster *c, StopEnd how);

/*
 * A backend crashes: the postmaster kills every process of the cluster at
 * once (no exit callbacks: nothing is released, the worker's connection
 * just closes), resets shared memory, replays the WAL and starts a new
 * worker with a new session, which closes the old one (left_tend).  A
 * backend past its commit check had its commit made durable, or not; one
 * that was is visible after recovery, before the new worker starts.
 */
static void
crash_restart(Cluster *c)
{
	int64_t		old = c->t->session_id;
	uint64_t	old_nonce = *c->session_nonce;
	int			i;

	trace("fault: c%d a backend crashes: the postmaster restarts the cluster", c->id);
	c->paused = true;			/* the worker is killed with them: it sends nothing more */
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
	c->marking = false;
	zc_cohort_stop_lingering(&c->core.cohort);
	stop_close(c, STOP_DIED);
	c->left_session = old;
	c->left_nonce = old_nonce;
}

static void
begin_stop(Cluster *c)
{
	int			i;

	trace("fault: c%d stops (fast shutdown)", c->id);
	c->stopping = true;			/* its backends exit till the new postmaster starts */
	for (i = 0; i < c->nb; i++)
		backend_exit(c, &c->b[i]);
	c->marking = false;
	c->stop_deadline = zkm_now(S->m) + 3000000;
	zc_cohort_stop_lingering(&c->core.cohort);
}

/*
 * SIM_GAP's moment: the first cluster has a backend holding locks in its
 * transaction while a backend of another cluster waits.
 */
static bool
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

static void
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
	{
		c->paused = true;
		c->paused_until = zkm_now(S->m) + 500000 + rnd_int(c->session_timeout * 2000);
		if (c->client >= 0)
			zkm_set_paused(S->m, c->client, true);
		trace("fault: c%d worker paused until %.3f", ci, c->paused_until / 1e6);
	}
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
	else if (what == F_RELOAD && S->handover)
	{
		/* a reload turns local hand-over off, or back on */
		c->core.cohort.handover = !c->core.cohort.handover;
		trace("fault: c%d local hand-over %s", ci, c->core.cohort.handover ? "on" : "off");
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

static void
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

static void
tick(int64_t us)
{
	int			i;

	/* faults come at random, one every fault_every on average */
	if (!S->quiet && rnd_int((int) S->fault_every) < us)
		fault();
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

		if (!c->paused && c->client >= 0 && zkm_connected(S->m, c->client))
			c->last_heard = c_wall(c);	/* pings answered */
		worker_turn(c);
	}
}

static void
model_log(const char *line)
{
	trace("%s", line);
}

/* One step: something happens somewhere. */
static void
step(void)
{
	int			pick = rnd_int(100);
	Cluster    *c = &S->c[rnd_int(S->ncl)];
	int			i;

	S->step++;
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
		if (zkm_step_leader(S->m))
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

static bool
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
	return !zkm_busy(S->m) && !zkm_unattached(S->m);
}

/* A duration a cluster's clock measures as ms, in true ms. */
static double
true_ms(const Cluster *c, int ms)
{
	return ms / (1.0 + c->drift_ppm / 1e6);
}

/*
 * The margin the clocks leave, in true ms: failure-semantics.md's bound,
 * for a session closed while its holders live (an expiry adds the session
 * timeout): a holder h's last commit check comes at most proof_bound on h's
 * clock after its proof, another cluster g grants at least its lock-delay
 * on g's clock after the close.
 */
static int
rate_margin(const Sim *sim)
{
	double		m = 1e9;
	int			h;
	int			g;

	for (h = 0; h < sim->ncl; h++)
		for (g = 0; g < sim->ncl; g++)
		{
			const Cluster *ch = &sim->c[h];
			const Cluster *cg = &sim->c[g];
			double		d = true_ms(cg, zc_table_lock_delay_ms(cg->lock_delay, cg->proof_bound)) -
				true_ms(ch, ch->proof_bound);

			m = d < m ? d : m;
		}
	return (int) m;
}

/*
 * The clusters' clock rates.  In half the seeds they stay crystals'; in the
 * other half they spread by up to 40 %, then close in until the bound holds
 * with some margin left (a seed at its edge now and then).  SIM_RATES=outside
 * instead slows the first cluster's clock just past the bound, to show that
 * the bound is what keeps the lock safe: the checks must fail.  Returns the
 * margin left, in true ms, for pauses between a commit's check and its record.
 */
static int
draw_rates(Sim *sim)
{
	const char *mode = getenv("SIM_RATES");
	int			spread = chance(50) ? 0 : 100000 + rnd_int(300001);
	int			floor_ms = 5 + rnd_int(50);
	int			i;

	for (i = 0; spread > 0 && i < sim->ncl; i++)
		sim->c[i].drift_ppm = rnd_int(2 * spread + 1) - spread;
	while (rate_margin(sim) < floor_ms)
		for (i = 0; i < sim->ncl; i++)
			sim->c[i].drift_ppm /= 2;
	if (mode != NULL && strcmp(mode, "outside") == 0 && sim->ncl > 1)
	{
		Cluster    *h = &sim->c[0];
		double		grant = 1e9;

		for (i = 1; i < sim->ncl; i++)
		{
			double		g = true_ms(&sim->c[i], zc_table_lock_delay_ms(sim->c[i].lock_delay,
																			sim->c[i].proof_bound));

			grant = g < grant ? g : grant;
		}
		/* h's proof bound lasts 1.5 times the shortest lock-delay elsewhere */
		h->drift_ppm = (int64_t) ((h->proof_bound / (1.5 * grant) - 1.0) * 1e6);
	}
	for (i = 0; i < sim->ncl; i++)
		trace("world: c%d's clock runs %+.1f %% off true time's rate", i, sim->c[i].drift_ppm / 1e4);
	return rate_margin(sim) > 0 ? rate_margin(sim) : 0;
}

/*
 * The world's shape, drawn per seed (a swarm): how many clusters, each
 * with its own number of backends and slots, so that shapes no fixed
 * setting reaches (many backends on few keys, a table nearly full) come up
 * within the seeds make test runs.  Drawn after the settings above, from the
 * seed's own stream, so that a seed replays.
 */
static void
draw_world(Sim *sim)
{
	static const int ncl[] = {1, 2, 2, 3, 3, 3, 3, 4, 4, 5};
	static const int multi[] = {0, 6, 12, 12, 30, 50};
	/* the last kind's weight is set by the seed's number after draw_world: other seeds draw as before */
	static const int weights[NFAULTS] = {20, 15, 20, 15, 7, 11, 3, 2, 2, 5, 6, 3, 3, 6, 3, 2, 0};
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
static int64_t
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
	/* hand-over on in three seeds of four, lingering in half of those */
	sim->handover = seed % 4 != 3;
	sim->handover_limit = (int) (seed / 4 % 4);
	sim->linger_ms = seed % 8 < 4 ? 0 : 50 * (int) (1 + seed / 8 % 5);
	sim->hot_pct = sim->handover && seed % 2 == 0 ? 60 : 0;
	sim->hot_read_pct = seed % 3 == 0 ? 90 : 30;
	sim->m = zkm_new(seed, 3, cstart);
	zkm_set_log(sim->m, model_log);
	/* ids handed out again (lock-delay's tombstones speak for one incarnation) */
	zkm_set_id_reuse(sim->m, getenv("SIM_REUSE_IDS") ? atoi(getenv("SIM_REUSE_IDS")) :
					 seed % 8 == 7 ? 100 : 0);
	/* and, in one seed of four, an expired session's id given out before its client is back */
	zkm_set_reissue(sim->m, getenv("SIM_REISSUE") ? atoi(getenv("SIM_REISSUE")) :
					seed % 4 == 2 ? 50 : 0);
	draw_world(sim);
	/* presence nodes deleted from outside in one seed of five (by its number: other seeds draw as before) */
	sim->fault_weight[F_DELETE_PRESENCE] = seed % 5 == 4 ? 8 : 0;
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
		free(sim->c[i].own_ids);
		simpg_shared_free(sim->c[i].shared);
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
		ids_reissued += zkm_reissued(sim->m);
	}
	zkm_free(sim->m);
	i = sim->failed;
	free(sim);
	S = NULL;
	return i ? -steps : steps;
}

static double
wall_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	uint64_t	first = 1;
	uint64_t	last = 0;
	double		seconds = 0;
	int64_t		max_steps = 20000000;
	bool		verbose = false;
	bool		first_failure = false;
	int			passed = 0;
	int			failed = 0;
	int64_t		total_steps = 0;
	double		t0 = wall_seconds();
	uint64_t	seed;
	int			i;

	for (i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			first = last = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
		{
			char	   *dash;

			first = strtoull(argv[++i], &dash, 10);
			last = *dash == '-' ? strtoull(dash + 1, NULL, 10) : first;
		}
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			max_steps = strtoll(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--first-failure") == 0)
			first_failure = true;
		else if (strcmp(argv[i], "--verbose") == 0)
			verbose = verbose_run = true;
		else
		{
			fprintf(stderr, "usage: sim [--seed N | --seeds A-B | --seconds S] [--steps N] [--verbose]\n");
			return 2;
		}
	}
	if (seconds > 0 && last == 0)
	{
		/* random seeds, as many as fit */
		first = (uint64_t) time(NULL) * 1000 + (uint64_t) getpid() % 1000;
		last = UINT64_MAX;
	}
	else if (last == 0)
		last = first;
	for (seed = first; seed <= last; seed++)
	{
		int64_t		steps;

		if (seconds > 0 && wall_seconds() - t0 >= seconds)
			break;
		if (verbose)
			printf("seed %" PRIu64 "\n", seed);
		steps = run_seed(seed, max_steps);
		total_steps += steps < 0 ? -steps : steps;
		if (steps < 0)
			failed++;
		else
			passed++;
		if (steps < 0 && first_failure)
			break;
		if (seed == UINT64_MAX)
			break;
	}
	printf("%.0f steps/s over %" PRId64 " steps in %.1f s\n",
		   total_steps / (wall_seconds() - t0 + 1e-9), total_steps, wall_seconds() - t0);
	printf("%" PRId64 " local hand-overs (%" PRId64 " of them readers joining a reader's node)\n",
		   handovers_seen, rides_seen);
	printf("%" PRId64 " upgrades granted ahead of local waiters they held up, %" PRId64
		   " past other clusters' requests behind the writers they held up; %" PRId64
		   " turns held for a local holder past which an upgrade went\n", upgrades_ahead, upgrades_across,
		   held_for_local);
	printf("%" PRId64 " local deadlocks broken (40P01)\n", deadlocks_broken);
	printf("%" PRId64 " deadlocks across clusters broken (40P01) in %" PRId64 " rounds, %" PRId64
		   " claims refused; the longest wait for ever lasted %" PRId64 " ms; documents up to %d bytes\n",
		   gw_victims, gw_rounds, gw_claims_refused, gw_max_stuck_ms, gw_longest_doc);
	printf("%" PRId64 " of those victims of a cycle a wait of which was given up since the claim, "
		   "%" PRId64 " through a request whose node was deleted from outside\n",
		   gw_gaveup_victims, gw_tainted_victims);
	printf("%" PRId64 " try-locks waited for a node that may linger: %" PRId64 " granted, %" PRId64 " refused\n",
		   linger_waits[0] + linger_waits[1], linger_waits[1], linger_waits[0]);
	printf("%" PRId64 " answers ZNOAUTH (an ACL), %" PRId64 " ZMARSHALLINGERROR (a server's failure inside)\n",
		   noauth_answers, garbled_answers);
	printf("%" PRId64 " elections, %" PRId64 " writes ordered by a leader and lost with it\n",
		   elections_held, proposals_lost);
	printf("%" PRId64 " sessions took an ended session's id; %" PRId64
		   " crash-restarts left such an id alone\n", ids_reused, left_alone);
	printf("%" PRId64 " reconnects came back to another session of their id; %" PRId64
		   " resumed sessions found without their presence node, taken as expired\n",
		   ids_reissued, resumes_refused);
	printf("calls of the shipped worker files: %" PRId64 " creates, %" PRId64 " deletes, %" PRId64
		   " multis, %" PRId64 " listings, %" PRId64 " reads, %" PRId64 " exists, %" PRId64
		   " setData, %" PRId64 " syncs\n",
		   calls_sent[ZKM_CREATE], calls_sent[ZKM_DELETE], calls_sent[ZKM_MULTI_OP],
		   calls_sent[ZKM_CHILDREN], calls_sent[ZKM_GETDATA], calls_sent[ZKM_EXISTS],
		   calls_sent[ZKM_SETDATA], calls_sent[ZKM_SYNC]);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
