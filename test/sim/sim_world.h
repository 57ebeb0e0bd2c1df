/*
 * sim_world.h — the simulator's world, shared by its files (sim.c says
 * what the simulator is; docs/testing.md maps the files).
 */
#ifndef SIM_WORLD_H
#define SIM_WORLD_H

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
#include "invariant.h"
#include "cutoff.h"
#include "deadlock.h"
#include "gwait.h"
#include "book.h"
#include "holds.h"
#include "lock_delay.h"
#include "looks.h"
#include "resume.h"
#include "table.h"
#include "take_here.h"
#include "slot_state.h"
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
#include "session.h"
#include "clean_stop.h"
#include "left_session.h"
#include "gwaits.h"
#include "turn.h"
#include "once.h"
#include "once_io.h"
#include "zk_client.h"

/* the largest world a seed may draw (Sim.ncl, Cluster.nb, Cluster.t->nslots) */
#define NCLUSTERS	5
#define NBACKENDS	12
#define NKEYS		3			/* lock keys */
#define SEM_KEY		NKEYS		/* one semaphore key besides */
#define ONCE_KEY	(NKEYS + 1)	/* and a zk_once job's claim (sim_once.c) */
#define NALL		(NKEYS + 2)
#define SEM_HOLDERS	3
#define NSLOTS		48
#define MAXHOLD		4
#define ROOT		"/zkl"
#define SESSIONS	ROOT "/.sessions"

#define CONNECT_TIMEOUT	5000	/* ms; the other settings are drawn per cluster (draw_world) */

#define WORK_US		(30 * 1000000LL)	/* faults and load */
#define QUIET_US	(180 * 1000000LL)	/* then no faults, no new work */
#define TRACE		48
/* how the uuid of a node zk_lock.test_orphan made starts: no request's does */
#define ORPHAN_UUID	"ffffffff"

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
	B_ONCE,						/* zk_once: a call on the job's record (sim_once.c) */
	B_SEAL,						/* committed: the period's record (sim_once.c) */
	B_DOWN,						/* its cluster stopped: back when it runs again */
	B_DONE
} BState;

/* One step of a transaction's script. */
typedef struct Act
{
	bool		pause;			/* idle in transaction for a while */
	int64_t		pause_us;		/* for so long (0: a while, drawn) */
	bool		own_id_kill;	/* its session ends as it begins (own_id_unlock_tend) */
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
	bool		once;			/* zk_once on the job, its claim taken by the act before */
	bool		once_claim;		/* that claim: zk_once reads the clock before it */
	bool		latest;			/* zk_once's `latest` */
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
	bool		excused;		/* its commit is promised nothing (Backend.gone_in_commit) */
} Span;

#define MAXSPANS	8
#define HISTORY		512			/* committed spans kept per key */

typedef struct Backend
{
	BState		st;
	int			nspans;
	Span		spans[MAXSPANS];	/* this transaction's, for the commit check */
	bool		lost_seen;		/* a lock of this transaction was lost (seen by check_step) */
	uint32_t	gone_in_commit;	/* keys (bits by index) with a node of its deleted from outside
								 * past its commit check: that commit is promised nothing on them */
	int64_t		stay_until;		/* model time: its transaction does not end before (leaned_on_tend) */
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
	/* zk_once (sim_once.c): the call on the record under way, the period owed */
	struct
	{
		int			phase;		/* OncePhase */
		bool		asked;		/* it holds the cluster's once area */
		int64_t		deadline;	/* of the call (model time) */
		bool		latest;
		int64_t		now;		/* the call's clock (Unix us), read before its claim */
		bool		pending;	/* the transaction does period `start` */
		int64_t		start;
		int64_t		skipped;
		int32_t		version;	/* of the record read */
		ZkoRecord	rec;
		ZkoBy		by;			/* its commit, as the seal names it */
		int			doer;		/* its entry in S->once.doers */
	}			once;
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
	int			client;			/* model handle, -1: none (session.c's, through sim_zk.c) */
	int64_t    *last_heard;		/* in its shared memory: the last reply from the server */
	int64_t		heard_at;		/* the oracle's own copy of it (check_cutoff_early) */
	int64_t		connect_zxid;	/* the leader's last write when the handle last connected */
	int64_t		write_sent_at;	/* its clock when the worker last sent a write (env_proof_note) */
	bool		paused;
	int64_t		paused_until;
	int64_t		busy_until;		/* model time: the worker sees its latch only then */
	bool		in_turn;		/* the worker plans and sends: a wake waits for its next turn */
	bool		began_in_send;	/* a backend claimed during this turn's sends */
	uint64_t	linger_seen[NSLOTS];	/* attempt of a slot seen lingering */
	int			burst_key;		/* while busy: transactions begun are writers of it */
	char		burst_mode;		/* in the lingering node's mode (readers for a reader's) */
	int64_t		burst_until;	/* model time: busy for a lingering node until then */
	int			linger_try_key;	/* another cluster's node of it lingers: one backend tries it */
	int64_t		linger_try_until;	/* model time: that try is begun until then (0: none due) */
	int			pair_key;		/* a reader of it upgrades: another backend here does too */
	int64_t		pair_until;		/* model time: that one is begun until then (0: none due) */
	int64_t		proof_at;
	int64_t		proof_session;
	Out		   *outs;
	int			nouts;
	int			capouts;
	uint64_t	next_out;
	uint64_t   *session_nonce;	/* in its shared memory: drawn for each new session (session.c) */
	/* liveness all along: since when (model time) each slot's request is first at the leader */
	int64_t		clear_since[NSLOTS];
	int64_t		settled_since[NSLOTS];	/* and nothing on its way (check_liveness) */
	uint64_t	clear_attempt[NSLOTS];
	int64_t		liveness_at;	/* next sample */
	int64_t		try_since[NSLOTS];	/* a try-lock pending since, calm all along */
	int64_t		try_asked[NSLOTS];	/* its requested_at: which try it is */
	/* its data directory (the session file) and its postmaster (left_session.c) */
	void	   *fs;
	int			pm_pid;
	int64_t		pm_start;
	/* a wait of its worker on a handle of its own (simh_wait): as its clocks saw it */
	int64_t		block_us;
	/* a clean stop (worker.c's stop_cleanly: turn.c's steps) */
	bool		stopping;
	ZwStop		stop;
	int64_t    *closing_tag;	/* in its shared memory: the incarnation stopped, once marking */
	/* its worker process's memory in the shipped worker files it runs */
	void	   *proc;			/* its memory (sim_pg.c): gone when the process dies */
	ZwOrphans  *orphans;		/* orphans.c */
	ZwPresence *presence;		/* presence.c: lock-delay (its rules: lock_delay.c) */
	ZwRequests *requests;		/* requests.c */
	ZwSession  *session;		/* session.c */
	ZwLeft	   *left;			/* left_session.c */
	ZwOnceIo   *once_io;		/* once_io.c */
	bool		crashing;		/* its processes are killed now (crash_restart) */
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
	/* zk_lock.hosts as its worker has it and as the file has it; a reload signalled (F_RELOAD) */
	char		hosts[16];
	char		hosts_file[16];
	bool		reload_due;
	int			reload_client;	/* at a reload in this turn, its live session's handle (-1: none) */
	/* deadlocks across clusters: gwaits*.c's memory, and when its last claim was sent */
	ZklGwState *gw;
	int64_t		gw_claimed_at;
	Backend		b[NBACKENDS];
} Cluster;

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
	F_RELOAD,					/* a reload: local hand-over off or on, zk_lock.hosts another list */
	F_REAP,						/* the server reaps an empty container */
	F_SILENT,					/* a link that drops every packet, with no reset */
	F_STOP,						/* a clean stop (fast shutdown) and a start */
	F_ACL,						/* an operator's ACL refuses us on a key node or the root a while */
	F_GARBLE,					/* a server fails inside on a request (ZMARSHALLINGERROR) */
	F_CRASH_RESTART,			/* a backend crashes: the postmaster restarts the whole cluster */
	F_CUT_LEADER,				/* the leader cut off from every follower: an election */
	F_DELETE_PRESENCE,			/* someone deletes a session's presence node, its create refused a while */
	F_DELETE_HOLDER,			/* someone deletes a held (or lingering) node */
	NFAULTS
} FaultKind;

/* An earlier version's client (sim_legacy.c): a request's state */
typedef enum LegacyState
{
	L_IDLE,
	L_CREATING,
	L_MKKEY,					/* its key node was missing: made first */
	L_LISTING,
	L_PEEK,						/* a read that sets the watch on the node it waits for */
	L_WAITING,
	L_PAUSED,					/* first in line, in its lock-delay */
	L_HELD,
	L_RELEASING,
	L_GIVING_UP
} LegacyState;

#define LEGACY_CL	NCLUSTERS	/* its spans' cluster */
#define LEGACY_REQS	2			/* its backends: requests at a time */

typedef struct LegacyReq
{
	LegacyState st;
	uint64_t	want;			/* the reply it waits for */
	uint64_t	wwant;			/* the watch it waits on */
	int64_t		next_at;
	int64_t		give_up_at;
	int64_t		granted_at;
	int64_t		released_at;
	int			key;
	char		mode;
	int			pid;
	bool		made_key;
	char		uuid[ZKL_UUID_LEN + 1];
	char		node[ZKM_PATH];
} LegacyReq;

typedef struct Legacy
{
	bool		on;
	uint64_t	rng;			/* its own random stream */
	int			client;			/* the model's handle, -1: none */
	bool		connected;		/* told so on this handle */
	int64_t		open_at;		/* no handle: when it opens one */
	uint64_t	tags;
	uint64_t	swant;			/* its listing of the sessions, and that watch */
	bool		sessions_seen;	/* that listing answered: it knows of changes since */
	int64_t		sessions_at;	/* when it lists them again (0: not due) */
	int64_t		pause_until;	/* its lock-delay */
	LegacyReq	r[LEGACY_REQS];
	int64_t		asked;
	int64_t		spans;
} Legacy;

#include "sim_aims.h"

typedef struct Sim
{
	uint64_t	seed;
	uint64_t	rng;
	uint64_t	nonces;			/* drawn so far (next_nonce) */
	uint64_t	asides;			/* and by aside_chance */
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
	Legacy		legacy;			/* an earlier version's client, in some seeds */
	/*
	 * Requests whose node someone else deleted (a fault): zk_lock promises
	 * them nothing until they queue again, under a new uuid.
	 */
	char		tainted[64][ZKL_UUID_LEN + 1];
	int			ntainted;
	/*
	 * Held nodes deleted from outside (F_DELETE_HOLDER): once their cluster
	 * has read a listing of the key without one, its holder must learn it
	 * lost within a bound (check_lost_told), not hold a phantom.
	 */
	struct
	{
		int			cl;
		char		key_path[ZKL_PATH_LEN];
		char		node[ZKL_NODE_BUFLEN];
		int64_t		listed_at;	/* 0: no such listing read yet */
		int			lookups;	/* of it on their way: its server's pace, not the worker's */
		bool		seen_gone;	/* a lookup's answer said it is gone: lost by the last one's answer */
	}			gone_held[16];
	int			ngone_held;
	int			nhistory[NALL];
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
	int64_t		queued_note[NCLUSTERS][NSLOTS];	/* which note_grants saw it queue (notes) */
	int64_t		notes;			/* note_grants calls so far */
	/* multi-key members whose node's czxid was checked: cluster, slot, attempt */
	uint64_t	seen_group[NCLUSTERS][NSLOTS];
	int64_t		commits;
	int64_t		grants;
	/* the workload: every third seed leans on the semaphore */
	int			sem_pct;		/* transactions that are a semaphore's */
	int			mismatch_pct;	/* of those, with another holders number */
	int			circle_sem_pct;	/* of the circles of two keys, those through the semaphore */
	int			multi_pct;		/* transactions that are a multi-key request (the swarm's) */
	int64_t		commit_pause_us;	/* longest pause between a commit's check and its record */
	int			fault_weight[NFAULTS];	/* per FaultKind (the seed's mix) */
	bool		gap;			/* SIM_GAP: aim session kills at the gap (fault()) */
	SimAims		aim;			/* the aims' state (sim_aims.h) */
	int64_t		fault_every;	/* us between faults, on average */
	/*
	 * zk_once (sim_once.c): one job, called by once_pct of transactions,
	 * and every committed transaction that did a period of it.
	 */
	int			once_pct;
	int64_t		once_period;	/* us */
	int			ndoers;
	struct OnceDoer
	{
		int64_t		start;
		int			cluster;
		int			pid;
		int			outcome;	/* OnceOutcome */
		bool		contested;	/* another commit of it came while it sealed */
	}			doers[1024];
	/* local hand-over (cohort.c): settings of the seed */
	bool		handover;
	int			handover_limit;
	int			linger_ms;
	int			hot_pct;		/* transactions that take just key 0 */
	int			hot_read_pct;	/* of them, readers (the others write) */
	int			hot_upgrade_pct;	/* of those, readers that upgrade */
	bool		pair_upgrades;	/* and another reader of their cluster with them (plan_xact) */
	bool		hot_home;		/* readers mostly read their cluster's own key: nodes linger */
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

/*
 * Its wall clock, as GetCurrentTimestamp() has it: microseconds since
 * 2000-01-01 (about 26 years, where the monotonic clock starts at boot), set
 * a little apart per cluster, running at the monotonic clock's rate, plus
 * whatever steps it took.  Code that reads one clock where it needs the
 * other is off by decades at once.
 */
#define WALL_2026_US	((int64_t) 849000000 * 1000000)

/*
 * A watcher and its context, as the model's watch tag: the library keeps
 * one watch per watcher and context (a second read with the same pair sets
 * no other), and the model one per tag.
 */
#define WATCH_CTX_BITS	56

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

typedef struct News
{
	const char *key_path;
	const char *waiter;
} News;

typedef struct Holder
{
	int			cluster;
	int			pid;
	int			key;
	char		mode;
	int			holders;		/* a semaphore's */
} Holder;

#define CALM_BACKLOG	8

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

/* ---- deadlocks across clusters ----
 *
 * gwaits*.c run as shipped: documents, claims and confirmations are nodes
 * of the model.  When break_cycle fails a victim (the last confirmation
 * just read: the moment of choice), the victim must wait for ever by the
 * ground truth, in ZooKeeper's view (sim_gw.c judges it first).
 */


/* ---- the run's state and counters (sim.c) ---- */

extern int64_t handovers_seen;	/* over the run, to show the seeds use it */
extern int64_t linger_waits[2];	/* try-locks that waited for a lingering node: refused, granted */
extern int64_t deadlocks_broken;	/* local circles of waits broken with 40P01 */
extern int64_t noauth_answers;	/* the model's ZNOAUTH answers (an operator's ACL) */
extern int64_t garbled_answers;	/* its ZMARSHALLINGERROR answers (a failure inside a server) */
extern int64_t elections_held;	/* the model's elections */
extern int64_t proposals_lost;	/* and the writes they lost */
extern int64_t legacy_spans;	/* an earlier version's locks held and released */
extern int64_t ids_reused;		/* sessions that took an ended session's id */
extern void (*client_watchers[ZKM_CLIENTS]) (void);
extern int64_t left_alone;		/* a crash's left session whose id another session had */
extern int64_t held_deleted[2];	/* held nodes deleted from outside: not listed, listed since */
extern int64_t ids_reissued;	/* reconnects that came back to another session of the id */
extern int64_t late_answers;	/* new sessions whose answer was read after they ended */
extern int64_t lookups_empty;	/* lookups of a lost create that found nothing */
extern int64_t cutoffs_declared;	/* sessions a worker gave up as cut off */
extern int64_t resumes_refused;	/* resumed sessions whose presence node was gone: expired */
extern int64_t rides_seen;	/* of them, readers joining a local reader's node */
extern int64_t upgrades_ahead;	/* upgrades granted ahead of local waiters (counters) */
extern int64_t upgrades_across;	/* upgrades granted past other clusters' requests (counters) */
extern int64_t taken_here;	/* nodes a backend took itself (take_here.c) */
extern int64_t joined_here;	/* requests that waited behind a local holder from their claim */
extern int64_t began_sending;	/* transactions begun while their worker sent its plan's calls */
extern int64_t rides_here;
extern int64_t reader_takes_here;
extern int64_t held_for_local;	/* turns held for a local conflicting holder (counters) */
extern int64_t calls_sent[ZKM_SETDATA + 1];
extern int64_t once_counts[7];	/* sim_once.c's */	/* by the shipped worker files, by kind */
extern Sim *S;
extern bool verbose_run;

/* A run's seeds (sim.c), and what it made of them. */
#define SIM_MAX_JOBS 16
typedef struct SimRange
{
	uint64_t	first;
	uint64_t	last;
	int			stride;			/* every stride-th seed from first */
	double		seconds;		/* 0: no time bound */
	double		t0;				/* wall_seconds() at the start */
	int64_t		max_steps;
	bool		first_failure;
	bool		verbose;
} SimRange;

typedef struct SimTotals
{
	int			passed;
	int			failed;
	int64_t		steps;
} SimTotals;

extern Cluster *cur_cl;
extern void (*watch_fns[16]) (void);
extern int	nwatch_fns;
extern int64_t gw_victims;	/* over the run */
extern int64_t gw_rounds;
extern int64_t gw_claims;	/* claims sent */
extern int64_t gw_gaveup_victims;	/* of a cycle a wait of which was given up meanwhile */
extern int64_t gw_tainted_victims;	/* through a request whose node was deleted from outside */	/* chosen through a wait ended, not yet rewritten */
extern int64_t gw_max_stuck_ms;	/* longest a backend waited for ever, until broken */
extern int	gw_longest_doc;	/* the longest document written */

#include "sim_files.h"

#endif
