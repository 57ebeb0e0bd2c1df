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
#include "utils/memutils.h"
#include "utils/pidfile.h"
#include "utils/timestamp.h"

#include "zk_lock.h"
#include "zk_client.h"
#include "left_session.h"
#include "orphans.h"
#include "presence.h"
#include "gwaits.h"
#include "queue_read.h"
#include "session.h"
#include "zk_result.h"

/* src/core reads ZooKeeper's result codes from its own copy: the library's must be the same */
#define ZKL_SAME_RESULT(name, value) \
	StaticAssertDecl(name == (value), #name " differs from src/core/zk_result.h");
ZKL_ZK_RESULTS(ZKL_SAME_RESULT)

/* One multi in flight: its ops, their results, and what core.c needs back. */
typedef struct Batch
{
	int			n;
	bool		del[ZKL_BATCH_MAX];	/* a delete (else a create) */
	uint64		tags[ZKL_BATCH_MAX];
	zoo_op_t	ops[ZKL_BATCH_MAX];
	zoo_op_result_t results[ZKL_BATCH_MAX];
	char		names[ZKL_BATCH_MAX][ZKL_PATH_LEN]; /* ops' paths; created nodes' paths */
	char		data[ZKL_BATCH_MAX][ZKL_NODE_DATA_LEN]; /* created nodes' data */
} Batch;

#define BATCH_POOL	4			/* spare batches kept for reuse */
#define CLEAN_STOP_MS	3000	/* a clean stop's wait for every lock to be given back */

static Batch *batch_pool[BATCH_POOL];
static int	batch_pooled = 0;

static ZkrChild *childbuf = NULL;	/* the last listing, parsed and sorted */
static int	maxchild = 0;
static zoo_op_result_t *verify_results = NULL;	/* one per slot, alive until the reply */
static zoo_op_result_t proof_result;
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
	if (s->owner_pid > 0)
		(void) kill(s->owner_pid, SIGINT);
}

static void
env_denied(void *arg, const ZklSlot *s)
{
	snprintf(zkl_shared->auth_info, sizeof(zkl_shared->auth_info),
			 "denied under %s: its nodes belong to another ZooKeeper identity",
			 zkl_shared->t.roots[s->root_id]);
}

static bool
env_grants_paused(void *arg, int64_t now, int64_t *until)
{
	return zkl_grants_paused(now, until);
}

static void
env_suspect(void *arg, const ZklSlot *s, const char *name)
{
	zkl_suspect_blocker(s, name);
}

static bool
env_may_be_orphan(void *arg, const char *name)
{
	return zkl_may_be_orphan(name);
}

static void
env_ghost(void *arg, const ZklSlot *s)
{
	zkl_remember_ghost(s);
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
	.rc_text = zerror,
	.rc_sqlstate = zkc_sqlstate,
	.warn = env_warn,
};

static void *
tag_ctx(uint64 tag)
{
	return (void *) (uintptr_t) tag;
}

static uint64
ctx_tag(const void *ctx)
{
	return (uint64) (uintptr_t) ctx;
}

/* ---- session events (session.c) ---- */

/*
 * Connected again (the same session, perhaps through another server).
 * Caller holds the lock.
 */
static void
session_reconnected(void)
{
	zcore_reconnected(&core);
	zkl_presence_reconnected();
}

/*
 * The session that held our nodes is gone (expired, or closed by us): every
 * node is gone with it, and nothing it proved counts any more.
 */
static void
session_lost(void)
{
	zkl_proof_forget();
	zkl_left_forget();			/* a later worker must not mistake it for a crash's leftover */
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_session_lost(&core);
	zkl_shared->state_since = GetCurrentTimestamp();
	LWLockRelease(zkl_shared->lock);
}

/* A new handle has nothing in flight. */
static void
session_new_handle(void)
{
	zcore_new_handle(&core);
	zkl_presence_reset();
	zkl_gwaits_reset();
}

static const ZklSessionEvents session_events = {
	.lost = session_lost,
	.reconnected = session_reconnected,
	.new_handle = session_new_handle,
};

/* Parse and sort a children listing into childbuf; returns how many. */
static int
collect_children(const struct String_vector *children)
{
	if (children->count > maxchild)
	{
		maxchild = Max(children->count, 64);
		childbuf = childbuf ? repalloc(childbuf, maxchild * sizeof(ZkrChild))
			: MemoryContextAlloc(TopMemoryContext, maxchild * sizeof(ZkrChild));
	}
	return zkr_collect((const char *const *) children->data, children->count, childbuf);
}

/* ---- completions and watchers: hand the result to core.c, under the lock ---- */

static void
key_node_done(int rc, const char *value, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_key_node_reply(&core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
	if (rc != ZNOAUTH)
		zkc_create_answered(rc, value, ctx);
}

static void
create_done(int rc, const char *name, const struct Stat *stat, const void *ctx)
{
	bool		stray;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	stray = zcore_create_reply(&core, ctx_tag(ctx), rc, name, stat != NULL,
							   stat ? stat->czxid : 0);
	LWLockRelease(zkl_shared->lock);
	if (stray)
		zkl_delete_stray(name, NULL);
}

static void
children_reply(int rc, const struct String_vector *strings, const void *ctx, bool watched)
{
	int			n = rc == ZOK ? collect_children(strings) : 0;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_children_reply(&core, ctx_tag(ctx), rc, childbuf, n, watched);
	LWLockRelease(zkl_shared->lock);
	zkl_check_suspects();
}

static void
children_done(int rc, const struct String_vector *strings, const struct Stat *stat,
			  const void *ctx)
{
	children_reply(rc, strings, ctx, false);
}

/* A listing that set a child watch on the key (send_listing). */
static void
watched_children_done(int rc, const struct String_vector *strings, const struct Stat *stat,
					  const void *ctx)
{
	children_reply(rc, strings, ctx, true);
}

static void
watch_set(int rc, const char *value, int value_len, const struct Stat *stat,
		  const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_watch_set_reply(&core, ctx_tag(ctx), rc, value, value_len);
	LWLockRelease(zkl_shared->lock);
}

static void
unmark_done(int rc, const struct Stat *stat, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_unmark_reply(&core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
}

static void
predecessor_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	/* the library also hands session events to every watcher; not ours */
	if (type == ZOO_SESSION_EVENT)
		return;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_watch_event(&core, ctx_tag(ctx), type == ZOO_DELETED_EVENT, path ? path : "");
	LWLockRelease(zkl_shared->lock);
}

/*
 * A key's child watch (semaphores, hand-over): routed by the key's path, so
 * it is set with no context of a slot's.  The library keeps one watcher per
 * function and context, so one change of the key runs this once, however
 * many of our requests read the key with the watch.
 */
static void
key_children_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	if (type == ZOO_SESSION_EVENT)
		return;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_watch_event(&core, ZKL_KEY_WATCH_TAG, type == ZOO_DELETED_EVENT, path ? path : "");
	LWLockRelease(zkl_shared->lock);
}

static void
barrier_done(int rc, const struct Stat *stat, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_barrier_reply(&core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
}

static void
delete_done(int rc, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_delete_reply(&core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
}

/* A batch from the pool: under load one is in flight per multi at a time. */
static Batch *
batch_get(void)
{
	Batch	   *b;

	b = batch_pooled > 0 ? batch_pool[--batch_pooled] :
		MemoryContextAlloc(TopMemoryContext, sizeof(Batch));
	b->n = 0;
	return b;
}

static void
batch_put(Batch *b)
{
	if (batch_pooled < BATCH_POOL)
		batch_pool[batch_pooled++] = b;
	else
		pfree(b);
}

static void
multi_done(int rc, const void *data)
{
	Batch	   *b = (Batch *) data;
	bool		stray[ZKL_BATCH_MAX];
	int			errs[ZKL_BATCH_MAX];
	const char *names[ZKL_BATCH_MAX];
	int			i;

	for (i = 0; i < b->n; i++)
	{
		errs[i] = b->results[i].err;
		names[i] = b->names[i];
	}
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_multi_reply(&core, b->n, b->tags, b->del, names, rc, errs, stray);
	LWLockRelease(zkl_shared->lock);

	for (i = 0; i < b->n; i++)
		if (stray[i])
			zkl_delete_stray(b->names[i], NULL);
	batch_put(b);
}

static void
recover_done(int rc, const struct String_vector *strings, const struct Stat *stat,
			 const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_recover_reply(&core, ctx_tag(ctx), rc,
						rc == ZOK ? (const char *const *) strings->data : NULL,
						rc == ZOK ? strings->count : 0);
	LWLockRelease(zkl_shared->lock);
}

static void
stat_done(int rc, const struct Stat *stat, const void *ctx)
{
	char		stray[ZKL_PATH_LEN];
	bool		is_stray;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	is_stray = zcore_stat_reply(&core, ctx_tag(ctx), rc, rc == ZOK ? stat->ephemeralOwner : 0,
								rc == ZOK ? stat->czxid : 0, stray);
	LWLockRelease(zkl_shared->lock);
	if (is_stray)
		zkl_delete_stray(stray, NULL);
}

static void
verify_done(int rc, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_verify_reply(&core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
}

static void
proof_done(int rc, const void *data)
{
	zcore_proof_reply(&core, (uint64) (uintptr_t) data, rc);
}

/* ---- plan and send ---- */

/* Under the lock, let core.c pick the calls owed.  Returns the ms until it must plan again. */
static long
plan_ops(void)
{
	bool		connected;
	int64		session;
	int64		proof_at;
	long		next_ms;

	proof_at = zkl_proof_read(&session);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	connected = zkc_handle() != NULL && zkl_shared->t.conn_state == ZKC_CONNECTED;
	if (session != zkl_shared->t.session_id)
		proof_at = 0;
	next_ms = zcore_plan(&core, connected, proof_at);
	if (connected)
		zkl_query_start();
	LWLockRelease(zkl_shared->lock);
	return next_ms;
}

/*
 * One cheap leader-checked request: a multi holding a check of the root
 * (a write, so it goes through the leader; its answer, even "no node",
 * says the session was alive there).
 */
static void
send_proof(void)
{
	zoo_op_t	check;

	zoo_check_op_init(&check, zkl_shared->t.roots[zkl_shared->t.cur_root], -1);
	core.proof_sent = zkl_mono_now();
	zcore_proof_sent(&core,
					 zoo_amulti(zkc_handle(), 1, &check, &proof_result, proof_done,
								(const void *) (uintptr_t) core.proof_gen) == ZOK);
}

/* Create root path components (persistent) and the key node (container). */
static void
send_parents(const ZklSlot *s, void *ctx)
{
	char		path[ZKL_PATH_LEN];

	zkc_create_persistent(zkl_shared->t.roots[s->root_id]);
	zcore_key_path(&zkl_shared->t, s, path);
	zoo_acreate(zkc_handle(), path, NULL, -1, zkc_acl(), ZOO_CONTAINER, key_node_done, ctx);
}

/* The path a slot's create asks for: the sequence is appended by the server. */
static void
create_path(const ZklSlot *s, const char *uuid, char *out)
{
	char		prefix[ZKL_NODE_BUFLEN];

	zkr_node_prefix(s->mode, uuid, GetSystemIdentifier(), s->owner_pid, s->holders,
					prefix, sizeof(prefix));
	zcore_child_path(&zkl_shared->t, s, prefix, out);
}

/*
 * zk_lock.test_orphan: a node of our session, with our name pattern, that no
 * slot owns, ahead of the slot's own node: what a create applied after its
 * lookup leaves behind.  Tests use it to see such nodes cleaned up.
 */
static void
send_test_orphan(const ZklSlot *s)
{
	char		uuid[ZKL_UUID_LEN + 1];
	char		path[ZKL_PATH_LEN];

	zkl_new_uuid(uuid);
	create_path(s, uuid, path);
	zoo_acreate(zkc_handle(), path, NULL, -1, zkc_acl(), ZOO_EPHEMERAL_SEQUENTIAL, zkc_create_answered, NULL);
}

/*
 * Read the key's children for slot s.  Some reads also set a child watch on
 * the key (zcore_listing_watches); core.c routes its event by the key's
 * path, not by this tag.
 */
static int
send_listing(const ZklSlot *s, const char *key_path, void *ctx)
{
	if (zcore_listing_watches(&core, s))
		return zoo_awget_children2(zkc_handle(), key_path, key_children_watch, NULL,
								   watched_children_done, ctx);
	return zoo_aget_children2(zkc_handle(), key_path, 0, children_done, ctx);
}

/* Send the multis core.c groups, each with the new nodes' listings right behind. */
static void
send_batches(void)
{
	int			members[ZKL_BATCH_MAX];
	int			n;
	int			j;

	if (!zcore_batch_wanted(&core))
		return;					/* the usual light-load turn: no multi, no lock taken */
	for (;;)
	{
		Batch	   *b;

		/* it counts the batched ops in shared memory */
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		n = zcore_next_batch(&core, members);
		LWLockRelease(zkl_shared->lock);
		if (n == 0)
			break;
		b = batch_get();

		for (j = 0; j < n; j++)
		{
			const ZklOp *op = &core.ops[members[j]];
			const ZklSlot *s = &zkl_shared->t.slots[op->idx];

			b->del[j] = op->kind == OP_DELETE;
			b->tags[j] = zcore_tag(op->idx, op->attempt);
			if (b->del[j])
			{
				zcore_child_path(&zkl_shared->t, s, s->node, b->names[j]);
				zoo_delete_op_init(&b->ops[j], b->names[j], -1);
			}
			else
			{
				/* a multi-key request's key nodes go first: the server answers in order */
				if (op->parents)
					send_parents(s, tag_ctx(b->tags[j]));
				/* names[] is read when the multi is sent, and gets the result */
				create_path(s, s->uuid, b->names[j]);
				zcore_node_data(s, b->data[j]);
				zoo_create_op_init(&b->ops[j], b->names[j], b->data[j], strlen(b->data[j]),
								   zkc_acl(), ZOO_EPHEMERAL_SEQUENTIAL,
								   b->names[j], ZKL_PATH_LEN);
			}
		}
		b->n = n;
		if (zoo_amulti(zkc_handle(), b->n, b->ops, b->results, multi_done, b) != ZOK)
			elog(ERROR, "zk_lock: could not send a ZooKeeper multi");
		zcore_write_sent(&core);
		/* each new node's key's children, in the same round trip, as for a single create */
		for (j = 0; j < b->n; j++)
		{
			char		path[ZKL_PATH_LEN];
			const ZklSlot *s;

			if (b->del[j])
				continue;
			s = &zkl_shared->t.slots[core.ops[members[j]].idx];
			zcore_key_path(&zkl_shared->t, s, path);
			(void) send_listing(s, path, tag_ctx(b->tags[j]));
		}
	}
}

/* Issue one planned call on its own.  Returns the library's result. */
static int
send_op(const ZklOp *op)
{
	const ZklSlot *s = &zkl_shared->t.slots[op->idx];
	void	   *ctx = tag_ctx(zcore_tag(op->idx, op->attempt));
	char		path[ZKL_PATH_LEN];
	char		parent[ZKL_PATH_LEN];
	char		data[ZKL_NODE_DATA_LEN];
	int			rc = ZOK;

	zcore_key_path(&zkl_shared->t, s, parent);
	switch (op->kind)
	{
		case OP_CREATE:
			if (op->parents)
				send_parents(s, ctx);
			if (zkl_test_orphan)
				send_test_orphan(s);
			create_path(s, s->uuid, path);
			zcore_node_data(s, data);
			rc = zoo_acreate2(zkc_handle(), path, data, strlen(data),
							  zkc_acl(), ZOO_EPHEMERAL_SEQUENTIAL, create_done, ctx);
			if (rc == ZOK)
			{
				zcore_write_sent(&core);
				/* same round trip: the server answers a session in order */
				rc = send_listing(s, parent, ctx);
			}
			break;
		case OP_CHILDREN:
			rc = send_listing(s, parent, ctx);
			break;
		case OP_RECOVER:
			/*
			 * The server we reconnected to may lag the leader: a sync first,
			 * so the lookup sees every create of ours the leader applied.
			 */
			rc = zoo_async(zkc_handle(), parent, zkc_sync_answered, NULL);
			if (rc == ZOK)
				rc = zoo_aget_children2(zkc_handle(), parent, 0, recover_done, ctx);
			break;
		case OP_STAT:
			zcore_child_path(&zkl_shared->t, s, s->node, path);
			rc = zoo_aexists(zkc_handle(), path, 0, stat_done, ctx);
			break;
		case OP_BARRIER:
			zcore_child_path(&zkl_shared->t, s, s->node, path);
			rc = zoo_aexists(zkc_handle(), path, 0, barrier_done, ctx);
			break;
		case OP_VERIFY:
			{
				/* a multi is a write: it goes through the leader, so a reply
				 * proves the session alive there, now */
				zoo_op_t	check;

				zcore_child_path(&zkl_shared->t, s, s->node, path);
				zoo_check_op_init(&check, path, -1);
				rc = zoo_amulti(zkc_handle(), 1, &check, &verify_results[op->idx], verify_done, ctx);
			}
			break;
		case OP_WATCH:
			zcore_child_path(&zkl_shared->t, s, s->watch, path);
			rc = zoo_awget(zkc_handle(), path, predecessor_watch, ctx, watch_set, ctx);
			break;
		case OP_UNMARK:
			zcore_child_path(&zkl_shared->t, s, s->node, path);
			zcore_node_data(s, data);
			rc = zoo_aset(zkc_handle(), path, data, strlen(data), -1, unmark_done, ctx);
			break;
		case OP_DELETE:
			zcore_child_path(&zkl_shared->t, s, s->node, path);
			rc = zoo_adelete(zkc_handle(), path, -1, delete_done, ctx);
			if (rc == ZOK)
				zcore_write_sent(&core);
			break;
	}
	return rc;
}

/*
 * Issue the planned calls.  The slots' names and data are stable here: the
 * plan moved each into a state that only this process changes.
 */
static void
send_ops(void)
{
	int			i;

	send_batches();
	for (i = 0; i < core.nops; i++)
	{
		int			rc;

		if (core.ops[i].batched)
			continue;
		rc = send_op(&core.ops[i]);

		/*
		 * ZINVALIDSTATE: the session just ended and zkl_session_lost() will
		 * re-queue.  Anything else is a local failure to build a request.
		 */
		if (rc != ZOK && rc != ZINVALIDSTATE)
			elog(ERROR, "zk_lock: could not send a ZooKeeper request: %s", zerror(rc));
	}
}

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
	verify_results = MemoryContextAllocZero(TopMemoryContext,
											nslots * sizeof(zoo_op_result_t));
}

/*
 * SIGTERM from the postmaster means shutdown: close the session.  From
 * anyone else (pg_terminate_backend, kill) it means "restart": leave the
 * session open so the next worker resumes it, as after an ERROR, and the
 * cluster's holders keep their locks.
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
 * A terminate that comes with a shutdown (a service manager signalling the
 * whole process group) must still close the session: give the postmaster's
 * own SIGTERM a moment to arrive.  Two SIGTERMs that arrive before the
 * handler runs are one (standard signals do not queue), so the postmaster's
 * may never be seen: its pid file says "stopping" all the same.
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

/*
 * One turn of the worker: the session, the presence list, then plan, send,
 * and wait for replies (at most max_wait_ms, -1: as the plan says).  While
 * draining for a clean stop, settings stay as stop_cleanly set them.
 */
static void
worker_turn(bool draining, long max_wait_ms)
{
	long		wait_ms;
	long		ghost_ms;

	/* barriers and the like: the worker has a place in the proc array */
	CHECK_FOR_INTERRUPTS();
	zkl_session_tend();
	if (!draining)
	{
		/* settings a reload may have changed */
		core.connect_timeout = zkl_connect_timeout;
		core.proof_bound = zkl_proof_bound;
		core.deadlock_timeout = DeadlockTimeout;
		core.cohort.handover = zkl_local_handover;
		core.cohort.handover_limit = zkl_local_handover_limit;
		core.cohort.linger_ms = zkl_linger;
	}
	zkl_presence_tend();
	zkl_left_tend();
	zkl_flush_wakes();			/* owners the session's turn woke */

	wait_ms = plan_ops();
	if (core.nops > 1)
	{
		zkc_hold_sends(true);
		send_ops();
		zkc_hold_sends(false);
	}
	else
		send_ops();
	if (core.proof_due)
		send_proof();
	ghost_ms = zkl_send_looks();
	if (ghost_ms >= 0)
		wait_ms = (wait_ms < 0) ? ghost_ms : Min(wait_ms, ghost_ms);
	if (!draining)
	{
		long		gw_ms = zkl_gwaits_tend(&core);

		if (gw_ms >= 0)
			wait_ms = (wait_ms < 0) ? gw_ms : Min(wait_ms, gw_ms);
	}
	zkl_query_send();
	wait_ms = zkl_session_wait_ms(wait_ms);
	if (max_wait_ms >= 0)
		wait_ms = (wait_ms < 0) ? max_wait_ms : Min(wait_ms, max_wait_ms);

	/* data read on a connection that stays up came from the server */
	if ((zkc_wait(zkc_handle(), wait_ms) & WL_SOCKET_READABLE) && zkc_handle() != NULL &&
		zoo_state(zkc_handle()) == ZOO_CONNECTED_STATE)
		zkl_shared->last_heard = GetCurrentTimestamp();
}

/* Whether no slot is in use: every request ended, every node of ours deleted and answered. */
static bool
table_empty(void)
{
	bool		empty = true;
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	for (i = 0; i < zkl_shared->t.nused && empty; i++)
		empty = zkl_shared->t.slots[i].zstate == ZKS_FREE;
	LWLockRelease(zkl_shared->lock);
	return empty;
}

/*
 * A clean stop (the postmaster shuts down; its backends exit meanwhile and
 * give their locks up): go on serving until every slot is free, so that
 * every node of our session was deleted while it lived, then leave the
 * tombstone that tells other clusters its end needs no lock-delay
 * (presence.c).  Bounded by CLEAN_STOP_MS: whatever is not done by then,
 * or fails, ends in a plain close, for which the others delay.
 */
static void
stop_cleanly(void)
{
	int64		deadline = zkl_mono_now() + (int64) CLEAN_STOP_MS * 1000;
	int64		session = zkl_shared->t.session_id;
	ZklMarkState mark = ZKL_MARK_PENDING;
	bool		marking = false;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcoh_stop_lingering(&core.cohort);
	LWLockRelease(zkl_shared->lock);
	/* the session, not a new one a turn might open once it is lost */
	while (zkl_mono_now() < deadline && zkc_handle() != NULL && session != 0 &&
		   zkl_shared->t.session_id == session &&
		   zkl_shared->t.conn_state == ZKC_CONNECTED && mark == ZKL_MARK_PENDING)
	{
		if (!marking && table_empty())
		{
			/*
			 * Nothing is planned from here on: a request that came since
			 * would get a node after the tombstone, and a holder it denies.
			 * Nor is the session resumed (a worker that dies now is started
			 * again if the stop is a smart one): it is over.
			 */
			marking = true;
			LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
			zkl_shared->closing_session = session;
			LWLockRelease(zkl_shared->lock);
		}
		if (!marking)
		{
			worker_turn(true, 50);
			continue;
		}
		mark = zkl_presence_mark_closed();
		if (mark == ZKL_MARK_PENDING)
			(void) zkc_wait(zkc_handle(), 50);
	}
	if (zkl_shared->t.session_id == 0)
		return;					/* no session to close */
	if (mark == ZKL_MARK_DONE)
		ereport(LOG, (errmsg("zk_lock: every lock of session 0x%llx given back; other clusters need no lock-delay for its end",
							 (unsigned long long) zkl_shared->t.session_id)));
	else
		ereport(LOG, (errmsg("zk_lock: could not give every lock of session 0x%llx back before the stop; other clusters wait zk_lock.lock_delay after its end",
							 (unsigned long long) zkl_shared->t.session_id)));
}

void
zkl_worker_main(Datum arg)
{
	set_signals();
	/* no database: only a place in pg_stat_activity and pg_terminate_backend */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	if (!claim_worker_role())
		proc_exit(0);			/* exit code 0: not restarted */
	before_shmem_exit(worker_exit, (Datum) 0);
	zkl_defer_wakes();
	zkc_set_settle(zkl_flush_wakes);
	core_init();
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zcore_worker_restarted(&core);
	LWLockRelease(zkl_shared->lock);
	zkl_query_restarted();
	ereport(LOG, (errmsg("zk_lock worker started")));
	zkl_session_begin(&session_events);

	while (!ShutdownRequestPending)
		worker_turn(false, -1);

	if (terminated_by != 0 && !shutdown_by_postmaster && !shutdown_follows())
	{
		ereport(LOG,
				(errmsg("zk_lock worker terminated by PID %d; it restarts and resumes session 0x%llx",
						(int) terminated_by, (unsigned long long) zkl_shared->t.session_id)));
		proc_exit(1);
	}

	/*
	 * Closing the session makes ZooKeeper drop our nodes at once, so other
	 * clusters need not wait a session timeout.  A clean stop first gives
	 * every node back and says so (stop_cleanly): no lock-delay for them
	 * either.
	 */
	stop_cleanly();
	zkl_session_end();
	ereport(LOG, (errmsg("zk_lock worker stopped")));
	proc_exit(1);				/* exit code 1: restarted unless shutting down */
}
