/*
 * queue_read.c — the worker's side of zk_lock_queue(), zk_lock_waits and
 * zk_once_jobs: one live read of a key's queue in ZooKeeper (or of a folder
 * of documents: <root>/.waits, every cluster's published waits, gwaits.c;
 * <root>/.once, zk_once's records), its children and then each one's
 * data, for the backend that asked through the shared query area (views.c).
 * Part of the worker: runs in its process only.
 */
#include "postgres.h"

#include "storage/condition_variable.h"

#include "shmem.h"
#include "zk_client.h"
#include "queue_read.h"

static bool query_to_send = false;	/* asked and started: read the key */

/* Whether a reply tagged zc_core_tag(i, attempt) belongs to the read under way. */
static bool
query_current(uint64 tag)
{
	return zkl_query->state == ZKQ_RUNNING &&
		zc_core_tag(zc_core_tag_idx(tag), zkl_query->attempt) == tag;
}

/* Caller holds the lock; the caller broadcasts once it has released it. */
static void
query_done(int sqlstate, const char *msg)
{
	zkl_query->sqlstate = sqlstate;
	if (msg)
		strlcpy(zkl_query->errmsg, msg, sizeof(zkl_query->errmsg));
	zkl_query->state = ZKQ_DONE;
}

/*
 * A node of this cluster's that passed to another local holder (cohort.c)
 * carries its creator's data (or, once its linger mark came off, that of
 * its holder then): show the holder it has now, or none while it lingers.
 * Other clusters see what the data says.  Readers riding a
 * shared node are not its holder: zk_locks lists them.
 */
static void
local_holder(ZklQueueEntry *e)
{
	int			i;

	for (i = 0; i < zkl_shared->t.nused; i++)
	{
		const ZklSlot *s = &zkl_shared->t.slots[i];

		if ((s->zstate == ZKS_HELD || s->zstate == ZKS_LINGER) && !s->zk.rides &&
			strcmp(s->node, e->node) == 0 &&
			strcmp(s->key, zkl_query->key) == 0 && (s->zk.handed > 0 || s->zstate == ZKS_LINGER))
		{
			strlcpy(e->data, s->zstate == ZKS_HELD ? s->data : "", ZKL_DATA_LEN);
			return;
		}
	}
}

static void
query_data_done(int rc, const char *value, int value_len, const struct Stat *stat,
				const void *ctx)
{
	uint64		v = (uint64) (uintptr_t) ctx;
	int			i = zc_core_tag_idx(v);
	bool		finished = false;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (query_current(v) && i < zkl_query->nentries)
	{
		ZklQueueEntry *e = &zkl_query->entries[i];

		if (zc_core_outcome_unknown(rc) ||
			rc == ZSESSIONEXPIRED || rc == ZCLOSING)
			zkl_query->state = ZKQ_ASKED;	/* read it all again once connected */
		else if (zkl_query->docs)
		{
			/* a cluster's document, whole, while there is room for it */
			e->have_data = rc == ZOK && value != NULL && value_len > 0 &&
				zkl_query->text_used + value_len + 1 <= ZKL_WAITS_TEXT;
			if (e->have_data)
			{
				e->text_at = zkl_query->text_used;
				memcpy(zkl_query->text + e->text_at, value, value_len);
				zkl_query->text[e->text_at + value_len] = '\0';
				zkl_query->text_used += value_len + 1;
			}
			else
				zkl_query->truncated |= rc == ZOK;
			if (--zkl_query->pending == 0)
			{
				query_done(0, NULL);
				finished = true;
			}
		}
		else
		{
			/* ZNONODE: released since the listing; that row is left out */
			e->have_data = (rc == ZOK);
			if (rc == ZOK && value != NULL)
			{
				int			len = Min(value_len, ZKL_DATA_LEN - 1);

				memcpy(e->data, value, len);
				e->data[len] = '\0';
			}
			else
				e->data[0] = '\0';
			local_holder(e);
			if (--zkl_query->pending == 0)
			{
				query_done(0, NULL);
				finished = true;
			}
		}
	}
	LWLockRelease(zkl_shared->lock);
	if (finished)
		ConditionVariableBroadcast(&zkl_query->cv);
}

static void
query_children_done(int rc, const struct String_vector *strings, const struct Stat *stat,
					const void *ctx)
{
	uint64		tag = (uint64) (uintptr_t) ctx;	/* zc_core_tag(0, the read's attempt) */
	char		parent[ZKL_PATH_LEN];
	int			n = 0;
	bool		finished = false;
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (!query_current(tag))
	{
		LWLockRelease(zkl_shared->lock);
		return;
	}
	if (rc == ZOK && zkl_query->docs)
	{
		/* one document per child: a session that has long waits, a job */
		for (i = 0; i < strings->count && n < ZKL_QUEUE_MAX; i++)
		{
			strlcpy(zkl_query->entries[n].node, strings->data[i], ZKL_NODE_BUFLEN);
			zkl_query->entries[n++].have_data = false;
		}
		zkl_query->truncated = strings->count > ZKL_QUEUE_MAX;
		zkl_query->nentries = zkl_query->pending = n;
		if (n == 0)
			query_done(0, NULL);
	}
	else if (rc == ZOK)
	{
		ZkrChild   *kids = palloc(Max(strings->count, 1) * sizeof(ZkrChild));

		n = zc_recipe_collect((const char *const *) strings->data, strings->count, kids);
		zkl_query->truncated = n > ZKL_QUEUE_MAX;
		n = Min(n, ZKL_QUEUE_MAX);
		for (i = 0; i < n; i++)
		{
			strlcpy(zkl_query->entries[i].node, kids[i].name, ZKL_NODE_BUFLEN);
			zkl_query->entries[i].have_data = false;
		}
		pfree(kids);
		zkl_query->nentries = zkl_query->pending = n;
		if (n == 0)
			query_done(0, NULL);
	}
	else if (rc == ZNONODE)
		query_done(0, NULL);	/* no key node: nobody holds or waits */
	else if (zc_core_outcome_unknown(rc) ||
			 rc == ZSESSIONEXPIRED || rc == ZCLOSING)
		zkl_query->state = ZKQ_ASKED;
	else
	{
		char		msg[ZKL_ERRMSG_LEN];

		snprintf(msg, sizeof(msg), "could not read the lock queue: %s", zw_client_strerror(rc));
		query_done(zw_client_sqlstate(rc), msg);
	}
	finished = zkl_query->state == ZKQ_DONE;
	snprintf(parent, sizeof(parent), "%s/%s", zkl_shared->t.roots[zkl_shared->t.cur_root],
			 zkl_query->docs ? zkl_query->dir : zkl_query->key);
	LWLockRelease(zkl_shared->lock);

	if (finished)
		ConditionVariableBroadcast(&zkl_query->cv);

	/* entries are ours while RUNNING: read their names without the lock */
	for (i = 0; i < n; i++)
	{
		char		path[ZKL_PATH_LEN];

		snprintf(path, sizeof(path), "%s/%s", parent, zkl_query->entries[i].node);
		zw_client_get(path, query_data_done,
					  (void *) (uintptr_t) (tag | (uint64) zc_core_tag(i, 0)));
	}
}

/* A backend asked: start the read.  Caller holds the lock, connected. */
/* A new worker: a read the previous one had under way is read again. */
void
zw_query_restarted(void)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (zkl_query->state == ZKQ_RUNNING)
		zkl_query->state = ZKQ_ASKED;
	LWLockRelease(zkl_shared->lock);
}

void
zw_query_start(void)
{
	if (zkl_query->state != ZKQ_ASKED)
		return;
	zkl_query->state = ZKQ_RUNNING;
	zkl_query->attempt = ++zkl_shared->t.next_attempt;
	zkl_query->nentries = 0;
	zkl_query->text_used = 0;
	zkl_query->truncated = false;
	zkl_query->sqlstate = 0;
	query_to_send = true;
}

/* Send the listing of a started read; without the lock. */
void
zw_query_send(void)
{
	char		path[ZKL_PATH_LEN];

	if (!query_to_send)
		return;
	query_to_send = false;
	snprintf(path, sizeof(path), "%s/%s", zkl_shared->t.roots[zkl_shared->t.cur_root],
			 zkl_query->docs ? zkl_query->dir : zkl_query->key);
	zw_client_children_stat(path, query_children_done,
							(void *) (uintptr_t) zc_core_tag(0, zkl_query->attempt));
}
