/*
 * requests.c — the ZooKeeper requests core.c plans, for the worker
 * (worker.c): planning under the slot-table lock, sending them (creates
 * and deletes of several slots as multis, pipelined), and handing each
 * reply and watch event back to core.c under the lock.
 * Part of the worker: runs in its process only.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "settings.h"
#include "shmem.h"
#include "zk_client.h"
#include "orphans.h"
#include "queue_read.h"
#include "once_io.h"
#include "requests.h"
#include "core_batch.h"
#include "core_grant.h"
#include "core_plan.h"
#include "core_reply.h"
#include "table.h"

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

/*
 * This file's process memory: the worker has one copy, the simulator one
 * per simulated cluster (it points zw_requests at each).
 */
struct ZwRequests
{
	ZklCore    *core;			/* the worker's (zw_requests_init) */
	Batch	   *batch_pool[BATCH_POOL];
	int			batch_pooled;
	ZkrChild   *childbuf;		/* the last listing, parsed and sorted */
	int			maxchild;
	zoo_op_result_t *verify_results;	/* one per slot, alive until the reply */
	zoo_op_result_t proof_result;
};

static ZwRequests own;
ZwRequests *zw_requests = &own;

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

/* Parse and sort a children listing into childbuf; returns how many. */
static int
collect_children(const struct String_vector *children)
{
	if (children->count > zw_requests->maxchild)
	{
		Size		size = Max(children->count, 64) * sizeof(ZkrChild);

		zw_requests->maxchild = Max(children->count, 64);
		zw_requests->childbuf = zw_requests->childbuf ? repalloc(zw_requests->childbuf, size)
			: MemoryContextAlloc(TopMemoryContext, size);
	}
	return zc_recipe_collect((const char *const *) children->data, children->count,
							 zw_requests->childbuf);
}

/* ---- completions and watchers: hand the result to core.c, under the lock ---- */

static void
key_node_done(int rc, const char *value, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_key_node_reply(zw_requests->core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
	if (rc != ZNOAUTH)
		zw_client_create_answered(rc, value, ctx);
}

static void
create_done(int rc, const char *name, const struct Stat *stat, const void *ctx)
{
	bool		stray;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	stray = zc_core_create_reply(zw_requests->core, ctx_tag(ctx), rc, name, stat != NULL,
							   stat ? stat->czxid : 0);
	LWLockRelease(zkl_shared->lock);
	if (stray)
		zw_delete_stray(name, NULL);
}

static void
children_reply(int rc, const struct String_vector *strings, const void *ctx, bool watched)
{
	int			n = rc == ZOK ? collect_children(strings) : 0;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_children_reply(zw_requests->core, ctx_tag(ctx), rc, zw_requests->childbuf, n, watched);
	LWLockRelease(zkl_shared->lock);
	zw_check_suspects();
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
	zc_core_watch_set_reply(zw_requests->core, ctx_tag(ctx), rc, value, value_len);
	LWLockRelease(zkl_shared->lock);
}

static void
unmark_done(int rc, const struct Stat *stat, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_unmark_reply(zw_requests->core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
}

static void
predecessor_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	/* the library also hands session events to every watcher; not ours */
	if (type == ZOO_SESSION_EVENT)
		return;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_watch_event(zw_requests->core, ctx_tag(ctx), type == ZOO_DELETED_EVENT, path ? path : "");
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
	zc_core_watch_event(zw_requests->core, ZKL_KEY_WATCH_TAG, type == ZOO_DELETED_EVENT,
						path ? path : "");
	LWLockRelease(zkl_shared->lock);
}

static void
barrier_done(int rc, const struct Stat *stat, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_barrier_reply(zw_requests->core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
}

static void
delete_done(int rc, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_delete_reply(zw_requests->core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
}

/* A batch from the pool: under load one is in flight per multi at a time. */
static Batch *
batch_get(void)
{
	Batch	   *b;

	b = zw_requests->batch_pooled > 0 ? zw_requests->batch_pool[--zw_requests->batch_pooled] :
		MemoryContextAlloc(TopMemoryContext, sizeof(Batch));
	b->n = 0;
	return b;
}

static void
batch_put(Batch *b)
{
	if (zw_requests->batch_pooled < BATCH_POOL)
		zw_requests->batch_pool[zw_requests->batch_pooled++] = b;
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
	zc_core_multi_reply(zw_requests->core, b->n, b->tags, b->del, names, rc, errs, stray);
	LWLockRelease(zkl_shared->lock);

	for (i = 0; i < b->n; i++)
		if (stray[i])
			zw_delete_stray(b->names[i], NULL);
	batch_put(b);
}

static void
recover_done(int rc, const struct String_vector *strings, const struct Stat *stat,
			 const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_recover_reply(zw_requests->core, ctx_tag(ctx), rc,
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
	is_stray = zc_core_stat_reply(zw_requests->core, ctx_tag(ctx), rc,
								  rc == ZOK ? stat->ephemeralOwner : 0,
								rc == ZOK ? stat->czxid : 0, stray);
	LWLockRelease(zkl_shared->lock);
	if (is_stray)
		zw_delete_stray(stray, NULL);
}

static void
verify_done(int rc, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zc_core_verify_reply(zw_requests->core, ctx_tag(ctx), rc);
	LWLockRelease(zkl_shared->lock);
}

static void
proof_done(int rc, const void *data)
{
	zc_core_proof_reply(zw_requests->core, (uint64) (uintptr_t) data, rc);
}

/* ---- plan and send ---- */

/* Under the lock, let core.c pick the calls owed.  Returns the ms until it must plan again. */
long
zw_requests_plan(void)
{
	bool		connected;
	int64		session;
	int64		proof_at;
	long		next_ms;

	proof_at = zkl_proof_read(&session);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	connected = zw_client_handle() != NULL && zkl_shared->t.conn_state == ZKC_CONNECTED;
	if (session != zkl_shared->t.session_tag)
		proof_at = 0;
	next_ms = zc_core_plan(zw_requests->core, connected, proof_at);
	if (connected)
	{
		zw_query_start();
		zw_once_start();
	}
	LWLockRelease(zkl_shared->lock);
	return next_ms;
}

/*
 * One cheap leader-checked request: a multi holding a check of the root
 * (a write, so it goes through the leader; its answer, even "no node",
 * says the session was alive there).
 */
void
zw_requests_send_proof(void)
{
	zoo_op_t	check;

	zw_client_op_check(&check, zkl_shared->t.roots[zkl_shared->t.cur_root], -1);
	zw_requests->core->proof_sent = zkl_mono_now();
	zc_core_proof_sent(zw_requests->core,
					 zw_client_multi(1, &check, &zw_requests->proof_result, proof_done,
									 (const void *) (uintptr_t) zw_requests->core->proof_gen) == ZOK);
}

/* Create root path components (persistent) and the key node (container). */
static void
send_parents(const ZklSlot *s, void *ctx)
{
	char		path[ZKL_PATH_LEN];

	zw_client_create_persistent(zkl_shared->t.roots[s->zk.root_id]);
	zc_core_key_path(&zkl_shared->t, s, path);
	zw_client_create(path, NULL, -1, ZOO_CONTAINER, key_node_done, ctx);
}

/* The path a slot's create asks for: the sequence is appended by the server. */
static void
create_path(const ZklSlot *s, const char *uuid, char *out)
{
	char		prefix[ZKL_NODE_BUFLEN];

	/* an upgrade's names the node its backend holds: read under the lock, as backends claim slots */
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	zc_table_node_prefix(&zkl_shared->t, s, uuid, GetSystemIdentifier(), prefix, sizeof(prefix));
	LWLockRelease(zkl_shared->lock);
	zc_core_child_path(&zkl_shared->t, s, prefix, out);
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
	zw_client_create(path, NULL, -1, ZOO_EPHEMERAL_SEQUENTIAL, zw_client_create_answered, NULL);
}

/*
 * Read the key's children for slot s.  Some reads also set a child watch on
 * the key (zc_core_listing_watches); core.c routes its event by the key's
 * path, not by this tag.
 */
static int
send_listing(const ZklSlot *s, const char *key_path, void *ctx)
{
	if (zc_core_listing_watches(zw_requests->core, s))
		return zw_client_children_watched(key_path, key_children_watch, NULL,
										  watched_children_done, ctx);
	return zw_client_children_stat(key_path, children_done, ctx);
}

/* Send the multis core.c groups, each with the new nodes' listings right behind. */
static void
send_batches(void)
{
	int			members[ZKL_BATCH_MAX];
	int			n;
	int			j;

	if (!zc_core_batch_wanted(zw_requests->core))
		return;					/* the usual light-load turn: no multi, no lock taken */
	for (;;)
	{
		Batch	   *b;

		/* it counts the batched ops in shared memory */
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		n = zc_core_next_batch(zw_requests->core, members);
		LWLockRelease(zkl_shared->lock);
		if (n == 0)
			break;
		b = batch_get();

		for (j = 0; j < n; j++)
		{
			const ZklOp *op = &zw_requests->core->ops[members[j]];
			const ZklSlot *s = &zkl_shared->t.slots[op->idx];

			b->del[j] = op->kind == OP_DELETE;
			b->tags[j] = zc_core_tag(op->idx, op->attempt);
			if (b->del[j])
			{
				zc_core_child_path(&zkl_shared->t, s, s->node, b->names[j]);
				zw_client_op_delete(&b->ops[j], b->names[j], -1);
			}
			else
			{
				/* a multi-key request's key nodes go first: the server answers in order */
				if (op->parents)
					send_parents(s, tag_ctx(b->tags[j]));
				/* names[] is read when the multi is sent, and gets the result */
				create_path(s, s->uuid, b->names[j]);
				zc_core_node_data(s, b->data[j]);
				zw_client_op_create(&b->ops[j], b->names[j], b->data[j], strlen(b->data[j]),
									ZOO_EPHEMERAL_SEQUENTIAL, b->names[j], ZKL_PATH_LEN);
			}
		}
		b->n = n;
		if (zw_client_multi(b->n, b->ops, b->results, multi_done, b) != ZOK)
			elog(ERROR, "zk_lock: could not send a ZooKeeper multi");
		zc_core_write_sent(zw_requests->core);
		/* each new node's key's children, in the same round trip, as for a single create */
		for (j = 0; j < b->n; j++)
		{
			char		path[ZKL_PATH_LEN];
			const ZklSlot *s;

			if (b->del[j])
				continue;
			s = &zkl_shared->t.slots[zw_requests->core->ops[members[j]].idx];
			zc_core_key_path(&zkl_shared->t, s, path);
			(void) send_listing(s, path, tag_ctx(b->tags[j]));
		}
	}
}

/* Issue one planned call on its own.  Returns the library's result. */
static int
send_op(const ZklOp *op)
{
	const ZklSlot *s = &zkl_shared->t.slots[op->idx];
	void	   *ctx = tag_ctx(zc_core_tag(op->idx, op->attempt));
	char		path[ZKL_PATH_LEN];
	char		parent[ZKL_PATH_LEN];
	char		data[ZKL_NODE_DATA_LEN];
	int			rc = ZOK;

	zc_core_key_path(&zkl_shared->t, s, parent);
	switch (op->kind)
	{
		case OP_CREATE:
			if (op->parents)
				send_parents(s, ctx);
			if (zkl_test_orphan)
				send_test_orphan(s);
			create_path(s, s->uuid, path);
			zc_core_node_data(s, data);
			rc = zw_client_create_stat(path, data, strlen(data), ZOO_EPHEMERAL_SEQUENTIAL,
									   create_done, ctx);
			if (rc == ZOK)
			{
				zc_core_write_sent(zw_requests->core);
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
			rc = zw_client_sync(parent, zw_client_sync_answered, NULL);
			if (rc == ZOK)
				rc = zw_client_children_stat(parent, recover_done, ctx);
			break;
		case OP_STAT:
			zc_core_child_path(&zkl_shared->t, s, s->node, path);
			rc = zw_client_exists(path, stat_done, ctx);
			break;
		case OP_BARRIER:
			zc_core_child_path(&zkl_shared->t, s, s->node, path);
			rc = zw_client_exists(path, barrier_done, ctx);
			break;
		case OP_VERIFY:
			{
				/* a multi is a write: it goes through the leader, so a reply
				 * proves the session alive there, now */
				zoo_op_t	check;

				zc_core_child_path(&zkl_shared->t, s, s->node, path);
				zw_client_op_check(&check, path, -1);
				rc = zw_client_multi(1, &check, &zw_requests->verify_results[op->idx], verify_done, ctx);
			}
			break;
		case OP_WATCH:
			zc_core_child_path(&zkl_shared->t, s, s->watch, path);
			rc = zw_client_get_watched(path, predecessor_watch, ctx, watch_set, ctx);
			break;
		case OP_UNMARK:
			zc_core_child_path(&zkl_shared->t, s, s->node, path);
			zc_core_node_data(s, data);
			rc = zw_client_set(path, data, strlen(data), -1, unmark_done, ctx);
			break;
		case OP_DELETE:
			zc_core_child_path(&zkl_shared->t, s, s->node, path);
			rc = zw_client_delete(path, -1, delete_done, ctx);
			if (rc == ZOK)
				zc_core_write_sent(zw_requests->core);
			break;
	}
	return rc;
}

/*
 * Issue the planned calls.  The slots' names and data are stable here: the
 * plan moved each into a state that only this process changes.
 */
void
zw_requests_send(void)
{
	int			i;

	send_batches();
	for (i = 0; i < zw_requests->core->nops; i++)
	{
		int			rc;

		if (zw_requests->core->ops[i].batched)
			continue;
		rc = send_op(&zw_requests->core->ops[i]);

		/*
		 * ZINVALIDSTATE: the session just ended and zc_core_session_lost() will
		 * re-queue.  Anything else is a local failure to build a request.
		 */
		if (rc != ZOK && rc != ZINVALIDSTATE)
			elog(ERROR, "zk_lock: could not send a ZooKeeper request: %s", zw_client_strerror(rc));
	}
	/* the slots are read: backends may take and let linger by themselves again (take_here.c) */
	if (zkl_shared->t.cohort.sending)
	{
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		zkl_shared->t.cohort.sending = false;
		LWLockRelease(zkl_shared->lock);
	}
}

/* A fresh copy of this file's memory, as a new worker process has it. */
ZwRequests *
zw_requests_new(void)
{
	return MemoryContextAllocZero(TopMemoryContext, sizeof(ZwRequests));
}

/* Room for what the requests of nslots slots need; core is the worker's. */
void
zw_requests_init(ZklCore *worker_core, int nslots)
{
	zw_requests->core = worker_core;
	zw_requests->verify_results = MemoryContextAllocZero(TopMemoryContext,
														 nslots * sizeof(zoo_op_result_t));
}
