/*
 * once_io.c — the worker's side of zk_once (backend/once.c): one call on a
 * job's record, <root>/.once/<job's text key>, for the backend that asked
 * through the shared once area (shmem.h).
 *
 * A call whose connection dropped is sent again once connected, and each
 * is safe to repeat:
 *   - READ reads;
 *   - MAKE creates: a repeat finds the node (ZNODEEXISTS) and the backend
 *     reads it again; only the claim's holder makes a record;
 *   - SEAL is a multi, conditional on the claim's node and on the version
 *     read: one that applied makes a repeat fail (ZBADVERSION), and the
 *     backend reads the record to see whether it names its own commit.
 *     Without the claim's node (its session ended) nothing is written.
 * Part of the worker: runs in its process only.
 */
#include "postgres.h"

#include "storage/condition_variable.h"
#include "utils/memutils.h"

#include "shmem.h"
#include "zk_client.h"
#include "once_io.h"
#include "once.h"

/*
 * The call under way, copied out of the area when it started (sent without
 * the lock): this file's process memory.  The worker has one copy, the
 * simulator one per simulated cluster (it points zw_once_io at each).
 */
struct ZwOnceIo
{
	bool		to_send;
	ZklOnceOp	op;
	uint64		tag;
	char		record_path[ZKL_PATH_LEN];
	char		claim_path[ZKL_PATH_LEN];
	char		data[ZKL_ONCE_DATA_LEN];
	int			len;
	int32		version;
	bool		claim_missing;	/* SEAL: the claim's slot holds no node here */
	zoo_op_t	seal_ops[2];
	zoo_op_result_t seal_results[2];	/* alive until the multi's reply */
};

static ZwOnceIo own;
ZwOnceIo   *zw_once_io = &own;

ZwOnceIo *
zw_once_io_new(void)
{
	return MemoryContextAllocZero(TopMemoryContext, sizeof(ZwOnceIo));
}

/*
 * The call's answer, if it is the one under way: one whose connection
 * dropped is asked again.  Takes the lock.
 */
static void
answer(uint64 tag, int rc, bool claim_gone, const char *value, int len, const struct Stat *stat)
{
	bool		finished = false;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (zkl_once->state == ZKQ_RUNNING && zkl_once->attempt == tag)
	{
		if (zc_core_outcome_unknown(rc) || rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZTHROTTLEDOP)
			zkl_once->state = ZKQ_ASKED;
		else
		{
			zkl_once->result = rc == ZOK ? ZKL_ONCE_OK : rc == ZNONODE ? ZKL_ONCE_NONODE :
				rc == ZNODEEXISTS ? ZKL_ONCE_EXISTS : rc == ZBADVERSION ? ZKL_ONCE_BADVERSION :
				ZKL_ONCE_FAILED;
			zkl_once->claim_gone = claim_gone;
			zkl_once->sqlstate = zw_client_sqlstate(rc);
			snprintf(zkl_once->errmsg, sizeof(zkl_once->errmsg), "%s", zw_client_strerror(rc));
			if (stat != NULL)
			{
				zkl_once->version = stat->version;
				zkl_once->mtime = stat->mtime;
			}
			/* a record too long for the area is no record of ours: -1 */
			zkl_once->len = value == NULL ? 0 : len <= ZKL_ONCE_DATA_LEN ? len : -1;
			if (zkl_once->len > 0)
				memcpy(zkl_once->data, value, zkl_once->len);
			zkl_once->state = ZKQ_DONE;
			finished = true;
		}
	}
	LWLockRelease(zkl_shared->lock);
	if (finished)
		ConditionVariableBroadcast(&zkl_once->cv);
}

static void
read_done(int rc, const char *value, int value_len, const struct Stat *stat, const void *ctx)
{
	answer((uint64) (uintptr_t) ctx, rc, false, rc == ZOK ? value : NULL, value_len,
		   rc == ZOK ? stat : NULL);
}

static void
make_done(int rc, const char *value, const void *ctx)
{
	answer((uint64) (uintptr_t) ctx, rc, false, NULL, 0, NULL);
}

static void
seal_done(int rc, const void *ctx)
{
	bool		claim_gone = false;

	/*
	 * The failing op's answer (the other reads "not run"); a failure of the
	 * whole request (the client copies it into every op) stays as it is.
	 */
	if (rc == ZNONODE && zw_once_io->seal_results[0].err == ZNONODE)
		claim_gone = true;
	else if (rc == ZBADVERSION || rc == ZNONODE)
		rc = zw_once_io->seal_results[1].err;
	answer((uint64) (uintptr_t) ctx, rc, claim_gone, NULL, 0, NULL);
}

/* A backend asked: take its call.  Caller holds the lock, connected. */
void
zw_once_start(void)
{
	const ZklTable *t = &zkl_shared->t;
	ZwOnceIo   *io = zw_once_io;
	int			root = t->cur_root;
	const ZklSlot *s;

	if (zkl_once->state != ZKQ_ASKED)
		return;
	zkl_once->state = ZKQ_RUNNING;
	zkl_once->attempt = ++zkl_shared->t.next_attempt;
	io->tag = zkl_once->attempt;
	io->op = zkl_once->op;
	io->len = Min(zkl_once->len, ZKL_ONCE_DATA_LEN);
	memcpy(io->data, zkl_once->data, io->len);
	io->version = zkl_once->version;
	/* the record is beside the claim, under the root the claim was made in */
	s = zkl_once->claim_slot >= 0 ? &t->slots[zkl_once->claim_slot] : NULL;
	io->claim_missing = s == NULL || s->zstate != ZKS_HELD || s->node[0] == '\0';
	if (!io->claim_missing)
	{
		zc_core_child_path(t, s, s->node, io->claim_path);
		root = s->zk.root_id;
	}
	snprintf(io->record_path, sizeof(io->record_path), "%s/" ZKO_DIR "/%s", t->roots[root], zkl_once->name);
	io->to_send = true;
}

/* A new worker: a call the previous one had under way is sent again. */
void
zw_once_restarted(void)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (zkl_once->state == ZKQ_RUNNING)
		zkl_once->state = ZKQ_ASKED;
	LWLockRelease(zkl_shared->lock);
}

/* Send the call taken; without the lock. */
void
zw_once_send(void)
{
	ZwOnceIo   *io = zw_once_io;
	void	   *ctx = (void *) (uintptr_t) io->tag;
	char		dir[ZKL_PATH_LEN];
	int			rc = ZOK;

	if (!io->to_send)
		return;
	io->to_send = false;
	switch (io->op)
	{
		case ZKL_ONCE_READ:
			rc = zw_client_get(io->record_path, read_done, ctx);
			break;
		case ZKL_ONCE_MAKE:
			/* the records' folder, made as the root's parts are (same ACL), ahead of it */
			strlcpy(dir, io->record_path, sizeof(dir));
			*strrchr(dir, '/') = '\0';
			zw_client_create_persistent(dir);
			rc = zw_client_create(io->record_path, io->data, io->len, ZOO_PERSISTENT, make_done, ctx);
			break;
		case ZKL_ONCE_SEAL:
			/* (read and make need no claim here: the backend's commit check covers them) */
			if (io->claim_missing)
			{
				answer(io->tag, ZNONODE, true, NULL, 0, NULL);
				return;
			}
			zw_client_op_check(&io->seal_ops[0], io->claim_path, -1);
			zw_client_op_set(&io->seal_ops[1], io->record_path, io->data, io->len, io->version);
			rc = zw_client_multi(2, io->seal_ops, io->seal_results, seal_done, ctx);
			break;
	}
	/* not sent (the handle is closing): asked again once connected */
	if (rc != ZOK)
		answer(io->tag, ZCONNECTIONLOSS, false, NULL, 0, NULL);
}
