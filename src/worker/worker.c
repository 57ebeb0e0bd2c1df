/*
 * worker.c — the zk_lock background worker: the shell around core.c.
 *
 * It owns the cluster's one ZooKeeper session (session.c) and performs what
 * core.c decides.  Each loop turn:
 *   1. plan: under the slot-table lock, core.c picks the ZooKeeper calls
 *      owed and advances the slots' states;
 *   2. send: without the lock, issue those calls (async, pipelined; creates
 *      and deletes of several slots as multis);
 *   3. wait: sleep on latch + ZooKeeper socket; the library then runs our
 *      completions and watchers, which hand each result to core.c under
 *      the lock.
 * Library calls are never made while holding the lock: the library may run
 * completions from inside them, and those take the lock.
 *
 * Lock-delay is in presence.c, nodes no request owns in orphans.c,
 * zk_lock_queue()'s live read in queue_read.c.
 */
#include "postgres.h"

#include <errno.h>
#include <signal.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/backend_status.h"
#include "utils/memutils.h"
#include "utils/pidfile.h"
#include "utils/timestamp.h"

#include "worker.h"
#include "settings.h"
#include "shmem.h"
#include "zk_client.h"
#include "left_session.h"
#include "orphans.h"
#include "presence.h"
#include "gwaits.h"
#include "queue_read.h"
#include "once_io.h"
#include "session.h"
#include "requests.h"
#include "sigterm.h"
#include "turn.h"
#include "take_here.h"
#include "zk_result.h"

/* src/core reads ZooKeeper's result codes from its own copy: the library's must be the same */
#define ZKL_SAME_RESULT(name, value) \
	StaticAssertDecl(name == (value), #name " differs from src/core/zk_result.h");
ZKL_ZK_RESULTS(ZKL_SAME_RESULT)

#define HELD_TERM_POLL_MS	200	/* how often a held SIGTERM looks for client backends */

static ZklCore core;

/* ---- what core.c asks of the process ---- */

static int64_t
env_wall_now(void *arg)
{
	return GetCurrentTimestamp();
}

static int64_t
env_mono_now(void *arg)
{
	return zkl_mono_now();
}

static void
env_new_uuid(void *arg, char out[ZKL_UUID_LEN + 1])
{
	zkl_new_uuid(out);
}

static void
env_wake(void *arg, ZklSlot *s)
{
	zkl_wake_owner(s);
}

/*
 * A lost lock: cancel the owner's running statement, as pg_cancel_backend
 * would (the owner words the error, see xact.c).  An idle owner ignores the
 * signal and learns at commit.  We hold the lock, so the owner is still the
 * process that holds the slot.
 */
static void
env_interrupt(void *arg, ZklSlot *s)
{
	if (s->req.owner_pid > 0)
		(void) kill(s->req.owner_pid, SIGINT);
}

static void
env_denied(void *arg, const ZklSlot *s)
{
	snprintf(zkl_shared->auth_info, sizeof(zkl_shared->auth_info),
			 "denied under %s: its nodes belong to another ZooKeeper identity",
			 zkl_shared->t.roots[s->zk.root_id]);
}

static bool
env_grants_paused(void *arg, int64_t now, int64_t *until)
{
	return zw_grants_paused(now, until);
}

static void
env_suspect(void *arg, const ZklSlot *s, const char *name)
{
	zw_suspect_blocker(s, name);
}

static bool
env_may_be_orphan(void *arg, const char *name)
{
	return zw_may_be_orphan(name);
}

static void
env_ghost(void *arg, const ZklSlot *s)
{
	zw_remember_ghost(s);
}

static void
env_proof_note(void *arg, int64_t sent_at, int64_t session)
{
	zkl_proof_note(sent_at, session);
}

static void
env_warn(void *arg, const char *msg)
{
	ereport(WARNING, (errmsg("%s", msg)));
}

static const ZklCoreEnv core_env = {
	.wall_now = env_wall_now,
	.mono_now = env_mono_now,
	.new_uuid = env_new_uuid,
	.wake = env_wake,
	.interrupt = env_interrupt,
	.denied = env_denied,
	.grants_paused = env_grants_paused,
	.suspect = env_suspect,
	.may_be_orphan = env_may_be_orphan,
	.ghost = env_ghost,
	.proof_note = env_proof_note,
	.rc_text = zw_client_strerror,
	.rc_sqlstate = zw_client_sqlstate,
	.warn = env_warn,
};

/* ---- the worker process ---- */

static bool
claim_worker_role(void)
{
	pid_t		other;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	other = zkl_shared->worker_pid;
	if (other != 0 && other != MyProcPid && kill(other, 0) == 0)
	{
		LWLockRelease(zkl_shared->lock);
		ereport(LOG, (errmsg("zk_lock worker already running under PID %d", (int) other)));
		return false;
	}
	zkl_shared->worker_pid = MyProcPid;
	zkl_shared->worker_procno = MyProc->pgprocno;
	LWLockRelease(zkl_shared->lock);
	return true;
}

static void
worker_exit(int code, Datum arg)
{
	/* an ERROR may have left the slot-table lock held: we exit, so drop it */
	LWLockReleaseAll();
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (zkl_shared->worker_pid == MyProcPid)
	{
		zkl_shared->worker_pid = 0;
		zkl_shared->worker_procno = -1;
		zkl_shared->t.conn_state = ZKC_STOPPED;
		zkl_shared->state_since = GetCurrentTimestamp();
		zkl_shared->t.writes_held = false;
	}
	LWLockRelease(zkl_shared->lock);
	zkl_flush_wakes();
}

static void
core_init(void)
{
	int			nslots = zkl_shared->t.nslots;

	memset(&core, 0, sizeof(core));
	core.t = &zkl_shared->t;
	core.env = &core_env;
	core.connect_timeout = zkl_connect_timeout;
	core.proof_bound = zkl_proof_bound;
	core.deadlock_timeout = DeadlockTimeout;
	core.cohort.handover = zkl_local_handover;
	core.cohort.handover_limit = zkl_local_handover_limit;
	core.cohort.linger_ms = zkl_linger;
	/* at most one op per slot, plus one read per told successor */
	core.ops = MemoryContextAlloc(TopMemoryContext, 2 * nslots * sizeof(ZklOp));
	core.mine = MemoryContextAlloc(TopMemoryContext, nslots * sizeof(char *));
	core.held = MemoryContextAlloc(TopMemoryContext, nslots * sizeof(bool));
	zw_requests_init(&core, nslots);
	zw_presence_start();
}

/*
 * SIGTERM from the postmaster means shutdown: close the session.  From
 * anyone else (pg_terminate_backend, kill) it means "restart": leave the
 * session open so the next worker resumes it, as after an ERROR, and the
 * cluster's holders keep their locks; during a shutdown it waits for the
 * client backends to go (zc_term_action says why).
 */
static volatile sig_atomic_t terminated_by = 0;
static volatile sig_atomic_t shutdown_by_postmaster = false;

static void
handle_sigterm(int signo, siginfo_t *info, void *context)
{
	int			save_errno = errno;

	if (info != NULL && info->si_pid != PostmasterPid)
		terminated_by = info->si_pid != 0 ? info->si_pid : -1;
	else
		shutdown_by_postmaster = true;	/* wins over any terminate */
	ShutdownRequestPending = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * Whether the postmaster has begun to shut down: it says so in its pid file
 * (in the data directory, our working directory) before it signals anyone.
 */
static bool
postmaster_stopping(void)
{
	char		line[MAXPGPATH];
	bool		stopping = false;
	int			n = 0;
	FILE	   *f = AllocateFile("postmaster.pid", "r");

	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL)
		if (++n == LOCK_FILE_LINE_PM_STATUS)
		{
			stopping = strncmp(line, PM_STATUS_STOPPING, strlen(PM_STATUS_STOPPING)) == 0;
			break;
		}
	FreeFile(f);
	return stopping;
}

/*
 * Whether a terminate comes with a shutdown (a service manager signalling
 * the whole process group): give the postmaster's own SIGTERM a moment to
 * arrive.  Two SIGTERMs that arrive before the handler runs are one
 * (standard signals do not queue), so the postmaster's may never be seen:
 * its pid file says "stopping" all the same.
 */
static bool
shutdown_follows(void)
{
	int			i;

	for (i = 0; i < 10 && !shutdown_by_postmaster; i++)
	{
		if (postmaster_stopping())
			return true;
		ResetLatch(MyLatch);
		if (!shutdown_by_postmaster)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 20, PG_WAIT_EXTENSION);
	}
	return shutdown_by_postmaster || postmaster_stopping();
}

/*
 * Whether any client backend (pg_stat_activity's "client backend") is still
 * there: a smart shutdown signals background workers only once they have all
 * exited.  Walsenders and other processes are not counted: the postmaster
 * stops them with the background workers or after them.
 */
static bool
client_backends_remain(void)
{
	bool		remain = false;
	int			n;
	int			i;

	pgstat_clear_backend_activity_snapshot();	/* read afresh */
	n = pgstat_fetch_stat_numbackends();
	for (i = 1; i <= n && !remain; i++)
	{
		LocalPgBackendStatus *e = pgstat_fetch_stat_local_beentry(i);

		remain = e != NULL && e->backendStatus.st_backendType == B_BACKEND;
	}
	pgstat_clear_backend_activity_snapshot();
	return remain;
}

/*
 * What the SIGTERMs received so far ask for (sigterm.h).  *stopping keeps
 * what was learnt of a shutdown: it is never called off.
 */
static ZklTermAction
term_action(bool *stopping)
{
	bool		by_pm = shutdown_by_postmaster;
	bool		by_other = terminated_by != 0;

	if (by_other && !by_pm && !*stopping)
	{
		*stopping = shutdown_follows();
		by_pm = shutdown_by_postmaster;
	}
	return zc_term_action(by_pm, by_other, *stopping,
						  by_other && !by_pm && *stopping && client_backends_remain());
}

static void
set_signals(void)
{
	struct sigaction act;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	/* pg_cancel_backend has no statement to cancel here */
	pqsignal(SIGINT, SIG_IGN);
	memset(&act, 0, sizeof(act));
	act.sa_sigaction = handle_sigterm;
	sigemptyset(&act.sa_mask);
	act.sa_flags = SA_SIGINFO | SA_RESTART;
	if (sigaction(SIGTERM, &act, NULL) < 0)
		elog(FATAL, "zk_lock: could not set the SIGTERM handler: %m");
	BackgroundWorkerUnblockSignals();
}

/* Settings a reload may have changed (session.c's turn reads a reload). */
static void
take_settings(ZklCore *c)
{
	c->connect_timeout = zkl_connect_timeout;
	c->proof_bound = zkl_proof_bound;
	c->deadlock_timeout = DeadlockTimeout;
	c->cohort.handover = zkl_local_handover;
	c->cohort.handover_limit = zkl_local_handover_limit;
	c->cohort.linger_ms = zkl_linger;
}

/*
 * One turn of the worker (turn.c), then wait for replies (at most
 * max_wait_ms, -1: as the turn says).  While draining for a clean stop,
 * settings stay as stop_cleanly set them.
 */
static void
worker_turn(bool draining, long max_wait_ms)
{
	long		wait_ms;

	/* barriers and the like: the worker has a place in the proc array */
	CHECK_FOR_INTERRUPTS();
	wait_ms = zw_turn(&core, draining, take_settings);
	if (max_wait_ms >= 0)
		wait_ms = (wait_ms < 0) ? max_wait_ms : Min(wait_ms, max_wait_ms);
	/* lingers a backend began since the plan end in time; backends see when to wake us */
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wait_ms = zc_take_here_sleep(&zkl_shared->t, zkl_mono_now(), wait_ms);
	LWLockRelease(zkl_shared->lock);

	/* data read on a connection that stays up came from the server */
	if ((zw_client_wait(zw_client_handle(), wait_ms) & WL_SOCKET_READABLE) && zw_client_connected())
		zkl_shared->last_heard = zkl_mono_now();
}

/*
 * A clean stop (the postmaster shuts down; its backends exit meanwhile and
 * give their locks up): go on serving until every slot is free, so that
 * every node of our session was deleted while it lived, then leave the
 * tombstone that tells other clusters its end needs no lock-delay
 * (presence.c).  Bounded by ZW_CLEAN_STOP_MS: whatever is not done by then,
 * or fails, ends in a plain close, for which the others delay.  Its steps
 * are turn.c's.
 */
static void
stop_cleanly(void)
{
	ZwStop		st;
	ZklStopStep step;

	zw_stop_begin(&st, &core, ZW_CLEAN_STOP_MS);
	while ((step = zw_stop_turn(&st)) != ZKL_STOP_END)
	{
		if (step == ZKL_STOP_SERVE)
			worker_turn(true, 50);
		else
			(void) zw_client_wait(zw_client_handle(), 50);
	}
	zw_stop_report(&st);
}

void
zw_worker_main(Datum arg)
{
	bool		holding = false;	/* a SIGTERM waits for the client backends */
	bool		stopping = false;	/* the postmaster is known to shut down */

	set_signals();
	/* no database: only a place in pg_stat_activity and pg_terminate_backend */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	if (!claim_worker_role())
		proc_exit(0);			/* exit code 0: not restarted */
	before_shmem_exit(worker_exit, (Datum) 0);
	zkl_defer_wakes();
	zw_client_set_settle(zkl_flush_wakes);
	core_init();
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_worker_restarted(&core);
	LWLockRelease(zkl_shared->lock);
	zw_query_restarted();
	zw_once_restarted();
	ereport(LOG, (errmsg("zk_lock worker started")));
	zw_turn_core = &core;
	zw_session_begin(&zw_session_events);

	for (;;)
	{
		/* a held SIGTERM is looked at again each turn */
		if (ShutdownRequestPending || holding)
		{
			ZklTermAction act;

			ShutdownRequestPending = false; /* taken; another sets it again */
			act = term_action(&stopping);
			if (act == ZKL_TERM_CLOSE)
				break;
			if (act == ZKL_TERM_RESTART)
			{
				ereport(LOG,
						(errmsg("zk_lock worker terminated by PID %d; it restarts and resumes session 0x%llx",
								(int) terminated_by, (unsigned long long) zkl_shared->t.session_id)));
				proc_exit(1);
			}
			if (!holding)
				ereport(LOG,
						(errmsg("zk_lock worker terminated by PID %d while the server shuts down; it serves the client backends left and stops once they have exited",
								(int) terminated_by)));
			holding = true;
		}
		worker_turn(false, holding ? HELD_TERM_POLL_MS : -1);
	}

	/*
	 * Closing the session makes ZooKeeper drop our nodes at once, so other
	 * clusters need not wait a session timeout.  A clean stop first gives
	 * every node back and says so (stop_cleanly): no lock-delay for them
	 * either.
	 */
	stop_cleanly();
	zw_session_end();
	ereport(LOG, (errmsg("zk_lock worker stopped")));
	proc_exit(1);				/* exit code 1: restarted unless shutting down */
}
