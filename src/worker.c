/*
 * worker.c — the zk_lock background worker.
 *
 * It owns the cluster's one ZooKeeper session and drives every slot's
 * request through the recipe.  Each loop turn:
 *   1. plan: under the slot-table lock, pick the ZooKeeper calls owed
 *      (ZKT_* bits, new and abandoned slots) and advance their states;
 *   2. send: without the lock, issue those calls (async, pipelined);
 *   3. wait: sleep on latch + ZooKeeper socket; the library then runs our
 *      completions and watchers, which only record results and set bits.
 * Library calls are never made while holding the lock: the library may run
 * completions from inside them, and those take the lock.
 *
 * The session itself (opening, resuming, identity, root, cut-off) is in
 * session.c; nodes no request owns are found and deleted in orphans.c;
 * zk_lock_queue()'s live read of a key is in queue_read.c.
 */
#include "postgres.h"

#include <signal.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "zk_lock.h"
#include "zk_client.h"
#include "worker.h"

#define MAX_PARENT_RETRIES	5


typedef enum OpKind
{
	OP_CREATE,
	OP_CHILDREN,
	OP_WATCH,
	OP_DELETE,
	OP_RECOVER,
	OP_STAT,
	OP_VERIFY,
	OP_BARRIER
} OpKind;

typedef struct Op
{
	int			idx;
	uint64		attempt;
	OpKind		kind;
	bool		parents;		/* create root and key nodes first */
	bool		solo;			/* not in a multi: it was rolled back in one */
	bool		batched;		/* sent inside a multi (send_batches) */
} Op;

/*
 * Creates and deletes of several slots sent as one multi: one transaction
 * for the server instead of one each.  A multi is all or nothing, so when
 * one op fails the others were not applied and are simply sent again.
 */
#define BATCH_MAX	32
#define BATCH_POOL	4			/* spare batches kept for reuse */

/*
 * Write requests (creates, deletes, multis) in flight at once.  Under load,
 * what arrives meanwhile waits for a reply and then goes out as one multi:
 * the server's cost is per transaction, so batches grow with the load.  Two
 * let a lone backend's next create go out while its last delete is still
 * under way.
 */
#define WRITE_WINDOW 2

typedef struct Batch
{
	int			n;
	bool		del[BATCH_MAX]; /* a delete (else a create) */
	int			idx[BATCH_MAX];	/* slots */
	void	   *ctx[BATCH_MAX];	/* their reply contexts */
	zoo_op_t	ops[BATCH_MAX];
	zoo_op_result_t results[BATCH_MAX];
	char		names[BATCH_MAX][ZKL_PATH_LEN]; /* ops' paths; created nodes' paths */
} Batch;

static Batch *batch_pool[BATCH_POOL];
static int	batch_pooled = 0;

zhandle_t  *zkl_zh = NULL;
static int	writes_in_flight = 0;	/* creates, deletes and multis unanswered */
static Op  *ops = NULL;
ZkrChild   *zkl_childbuf = NULL;
static int	maxchild = 0;
static zoo_op_result_t *verify_results = NULL;	/* one per slot, alive until the reply */
static const char **mine_buf = NULL;	/* decide(): a backend's nodes, one per slot at most */
static bool *held_buf = NULL;

/* The commit proof's own request (see zkl_proof_note): at most one in flight. */
static bool proof_due = false;	/* plan_ops: send one this turn */
static bool proof_in_flight = false;
static int64 proof_sent = 0;	/* zkl_mono_now */
static uint64 proof_gen = 0;	/* tags it: a new handle makes replies stale */
static zoo_op_result_t proof_result;

static void *
slot_ctx(int idx, uint64 attempt)
{
	return (void *) (uintptr_t) (((attempt & CTX_ATTEMPT_MASK) << CTX_IDX_BITS) | (uint64) idx);
}

/* The slot a reply belongs to, or NULL if it is stale.  Caller holds the lock. */
static ZklSlot *
reply_slot(const void *ctx)
{
	uint64		v = (uint64) (uintptr_t) ctx;
	int			idx = (int) (v & ((1 << CTX_IDX_BITS) - 1));
	ZklSlot    *s;

	if (idx >= zkl_shared->nslots)
		return NULL;
	s = &zkl_shared->slots[idx];
	if (s->zstate == ZKS_FREE || (s->attempt & CTX_ATTEMPT_MASK) != (v >> CTX_IDX_BITS))
		return NULL;
	return s;
}

static const char *
slot_root(const ZklSlot *s)
{
	return zkl_shared->roots[s->root_id];
}

void
zkl_key_path(const ZklSlot *s, char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/%s", slot_root(s), s->key);
}

void
zkl_child_path(const ZklSlot *s, const char *name, char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/%s/%s", slot_root(s), s->key, name);
}

/*
 * The request may or may not have been applied: its reply was lost, or (seen
 * under connection resets) the library could not match it to its request.
 */
bool
zkl_outcome_unknown(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZRUNTIMEINCONSISTENCY;
}

/*
 * Whether the ZooKeeper leader answered a write: it checks the session
 * before anything else, so any of these says the session was alive there
 * after the request was sent.  Connection and session errors do not.
 */
static bool
leader_answered(int rc)
{
	return rc == ZOK || rc == ZNONODE || rc == ZNODEEXISTS || rc == ZBADVERSION ||
		rc == ZNOAUTH || rc == ZNOTEMPTY;
}

/* A write of slot s was answered with rc: maybe a fresher commit proof. */
static void
note_write_reply(const ZklSlot *s, int rc)
{
	if (leader_answered(rc))
		zkl_proof_note(s->sent_at, zkl_shared->session_id);
}

/* Tell the owner its request failed.  Caller holds the lock. */
static void
fail_slot(ZklSlot *s, int sqlstate, ZklZkState zstate, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	s->sqlstate = sqlstate;
	s->zstate = zstate;
	if (s->result == ZKR_PENDING)
		s->result = ZKR_FAILED;
	zkl_wake_owner(s);
	if (s->abandoned && zstate == ZKS_GONE)
		zkl_free_slot(s);
}

/* ZooKeeper refused us under the slot's root.  Caller holds the lock. */
static void
deny_slot(ZklSlot *s)
{
	/* the backend adds auth_info as the detail: a root may not fit errmsg */
	fail_slot(s, ERRCODE_INSUFFICIENT_PRIVILEGE, ZKS_GONE,
			  "ZooKeeper denied access under zk_lock.root");
	snprintf(zkl_shared->auth_info, sizeof(zkl_shared->auth_info),
			 "denied under %s: its nodes belong to another ZooKeeper identity", slot_root(s));
}

/*
 * The slot has a new place in its queue (or none): what it knew of the old
 * place is void.  A predecessor watched from there must neither grant it on
 * its delete (another cluster's waiter may now stand between) nor count as
 * its only blocker.  Caller holds the lock.
 */
static void
forget_place(ZklSlot *s)
{
	s->watch[0] = '\0';
	s->watch_sole = false;
	s->at_head = false;
	s->delayed_until = 0;
}

/* Put a request back at the start, as a fresh request.  Caller holds the lock. */
static void
requeue(ZklSlot *s)
{
	zkl_new_uuid(s->uuid);
	s->zstate = ZKS_NEW;
	s->queued_at = GetCurrentTimestamp();
	s->todo = 0;
	s->retries = 0;
	s->node[0] = '\0';
	forget_place(s);
	s->attempt = ++zkl_shared->next_attempt;
}

/*
 * Connected again (the same session, perhaps through another server).
 * Holders committing meanwhile wait for this.  A grant that waited for a
 * barrier read (predecessor_watch) cannot rely on it now: the new server
 * may not have applied the change the event announced, nor will it resend
 * the presence list's event from the same transaction.  Read the queue
 * instead.  Caller holds the lock.
 */
void
zkl_reconnected(void)
{
	int			i;

	for (i = 0; i < zkl_shared->nused; i++)
	{
		ZklSlot    *s = &zkl_shared->slots[i];

		if (s->zstate == ZKS_HELD)
			zkl_wake_owner(s);
		if (s->todo & ZKT_BARRIER)
			s->todo = (s->todo & ~ZKT_BARRIER) | ZKT_CHILDREN;
	}
	zkl_presence_reconnected();
}

/* One slot's part of zkl_session_lost(). */
static void
forget_node(ZklSlot *s)
{
	switch (s->zstate)
	{
		case ZKS_CREATING:
		case ZKS_RECOVER:
		case ZKS_RECOVERING:
		case ZKS_QUEUED:
			if (s->abandoned)
				zkl_free_slot(s);
			else
				requeue(s);
			break;
		case ZKS_HELD:
			zkl_lose_slot(s);
			break;
		case ZKS_DELETING:
			s->zstate = ZKS_GONE;
			if (s->abandoned)
				zkl_free_slot(s);
			break;
		default:
			break;
	}
}

/* Apply fn to every slot, under the lock. */
static void
each_slot(void (*fn) (ZklSlot *s))
{
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < zkl_shared->nused; i++)
		fn(&zkl_shared->slots[i]);
	LWLockRelease(zkl_shared->lock);
}

/*
 * The session that held our nodes is gone (expired, or closed by us): every
 * node is gone with it.  Waiters queue again in the next session; holders
 * have lost their locks and must not commit.
 */
void
zkl_session_lost(void)
{
	zkl_proof_forget();
	zkl_left_forget();			/* a later worker must not mistake it for a crash's leftover */
	each_slot(forget_node);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->session_id = 0;
	zkl_shared->conn_state = ZKC_CONNECTING;
	zkl_shared->state_since = GetCurrentTimestamp();
	LWLockRelease(zkl_shared->lock);
}

/*
 * A new worker process takes over slots whose calls were in flight in the
 * previous one; it resumes the same session, so redo what may be lost.
 */
static void
redo_in_flight(ZklSlot *s)
{
	switch (s->zstate)
	{
		case ZKS_CREATING:
		case ZKS_RECOVERING:
			s->zstate = ZKS_RECOVER;
			break;
		case ZKS_QUEUED:
			s->todo |= ZKT_CHILDREN;
			break;
		case ZKS_DELETING:
			s->todo |= ZKT_DELETE;
			break;
		default:
			break;
	}
}

/* ---- completions and watchers: record, set bits, never call the library under the lock ---- */

static void
ignore_done(int rc, const char *value, const void *ctx)
{
	if (rc != ZOK && rc != ZNODEEXISTS)
		ereport(DEBUG1, (errmsg_internal("zk_lock: parent create: %s", zerror(rc))));
}

/* The key node's create: refused means the root is someone else's. */
static void
key_node_done(int rc, const char *value, const void *ctx)
{
	ZklSlot    *s;

	if (rc != ZNOAUTH)
		return ignore_done(rc, value, ctx);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);
	if (s != NULL && s->zstate == ZKS_CREATING)
		deny_slot(s);
	LWLockRelease(zkl_shared->lock);
}

/*
 * A create's outcome for its slot (in CREATING).  stat is NULL for a create
 * inside a multi, which returns no Stat: the token is read when asked for.
 * Caller holds the lock.
 */
static void
create_result(ZklSlot *s, int rc, const char *name, const struct Stat *stat)
{
	if (rc == ZOK)
	{
		const char *base = strrchr(name, '/');

		strlcpy(s->node, base ? base + 1 : name, sizeof(s->node));
		s->czxid = stat ? stat->czxid : 0;
		s->zstate = ZKS_QUEUED; /* the pipelined getChildren decides */
		forget_place(s);
	}
	else if (rc == ZNONODE)
	{
		/* no key node yet (or the server just reaped an empty one) */
		if (++s->retries <= MAX_PARENT_RETRIES)
		{
			s->zstate = ZKS_NEW;
			s->todo |= ZKT_PARENTS;
		}
		else
			fail_slot(s, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION, ZKS_GONE,
					  "could not create the ZooKeeper node for the lock under %s", slot_root(s));
	}
	else if (zkl_outcome_unknown(rc))
	{
		s->zstate = ZKS_RECOVER;	/* it may have been made: look for our uuid */
		zkl_shared->counters.recovered++;
	}
	else if (rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE)
		s->zstate = ZKS_NEW;	/* nothing of it survives; send again */
	else if (rc == ZNOAUTH)
		deny_slot(s);
	else
		fail_slot(s, zkc_sqlstate(rc), ZKS_GONE,
				  "could not create the ZooKeeper lock node: %s", zerror(rc));
}

static void
create_done(int rc, const char *name, const struct Stat *stat, const void *ctx)
{
	ZklSlot    *s;
	bool		stray = false;

	writes_in_flight = Max(writes_in_flight - 1, 0);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);
	if (s == NULL || s->zstate != ZKS_CREATING)
		stray = (rc == ZOK);	/* the request moved on: nobody wants this node */
	else
	{
		note_write_reply(s, rc);
		create_result(s, rc, name, stat);
	}
	LWLockRelease(zkl_shared->lock);

	if (stray)
		zoo_adelete(zkl_zh, name, -1, zkl_orphan_deleted, NULL);
}

static bool
same_owner(const ZklSlot *a, const ZklSlot *b)
{
	return a->owner_pid == b->owner_pid && a->owner_procno == b->owner_procno;
}

/*
 * Does the owner of s hold the key shared?  (The upgrade case: it holds a
 * shared lock and asks for exclusive.)  Caller holds the lock.
 */
static bool
holds_shared(const ZklSlot *s)
{
	int			i;

	for (i = 0; i < zkl_shared->nused; i++)
	{
		const ZklSlot *o = &zkl_shared->slots[i];

		if (o != s && o->zstate == ZKS_HELD && o->mode == ZKL_MODE_SHARED &&
			!o->abandoned && same_owner(o, s) && strcmp(o->key, s->key) == 0)
			return true;
	}
	return false;
}

/*
 * Two backends of this cluster that both hold a key shared and both wait to
 * make it exclusive wait for each other forever.  Core would find that
 * deadlock; we find it when the second of them queues, and fail that one.
 * Returns the pid of the other backend, or 0.  Caller holds the lock.
 */
static int
upgrade_deadlock(const ZklSlot *s)
{
	int			i;

	if (s->mode != ZKL_MODE_EXCLUSIVE || !holds_shared(s))
		return 0;
	for (i = 0; i < zkl_shared->nused; i++)
	{
		const ZklSlot *o = &zkl_shared->slots[i];

		if (o != s && o->mode == ZKL_MODE_EXCLUSIVE && o->result == ZKR_PENDING &&
			!o->abandoned && !same_owner(o, s) && strcmp(o->key, s->key) == 0 &&
			holds_shared(o))
			return o->owner_pid;
	}
	return 0;
}

/* Parse and sort a children listing into zkl_childbuf; returns how many. */
int
zkl_collect_children(const struct String_vector *children)
{
	if (children->count > maxchild)
	{
		maxchild = Max(children->count, 64);
		zkl_childbuf = zkl_childbuf ? repalloc(zkl_childbuf, maxchild * sizeof(ZkrChild))
			: MemoryContextAlloc(TopMemoryContext, maxchild * sizeof(ZkrChild));
	}
	return zkr_collect((const char *const *) children->data, children->count, zkl_childbuf);
}

/* How often a waiter with nothing in flight re-reads its queue. */
static long
recheck_ms(void)
{
	return Max(1000, zkl_shared->negotiated_timeout / 2);
}

/* A try-lock never queues: take its node away at once.  Caller holds the lock. */
static void
refuse_try(ZklSlot *s)
{
	if (s->result == ZKR_PENDING)
		s->result = ZKR_NOT_GRANTED;
	s->zstate = ZKS_DELETING;
	s->todo = ZKT_DELETE;
	zkl_wake_owner(s);
}

/*
 * The slot's node is first in line (for its mode).  During a lock-delay
 * (presence.c) the grant waits, and the queue is read again when it ends.
 * A try-lock waits too: it never queues behind a holder, but the delay is
 * no holder, and it ends within zk_lock.lock_delay.  Caller holds the lock.
 */
static void
grant(ZklSlot *s)
{
	int64		until;

	/* a watch event seen before this answer asks for nothing more */
	s->todo &= ~(ZKT_CHILDREN | ZKT_WATCH | ZKT_BARRIER);
	if (s->result == ZKR_PENDING && zkl_grants_paused(zkl_mono_now(), &until))
	{
		s->delayed_until = until;
		return;
	}
	s->zstate = ZKS_HELD;
	if (s->result == ZKR_PENDING)
	{
		s->session_id = zkl_shared->session_id;
		pg_write_barrier();		/* the owner reads it after the result, unlocked */
		s->result = ZKR_GRANTED;
		s->granted_at = GetCurrentTimestamp();
		zkl_shared->counters.grants++;
		zkl_wake_owner(s);
	}
}

/* Run the recipe on a children listing.  Caller holds the lock. */
static void
decide(ZklSlot *s, const struct String_vector *children)
{
	const char **mine = mine_buf;
	bool	   *held = held_buf;
	int			nmine = 0;
	int			n;
	int			own;
	int			watch;
	int			other;
	int			i;

	n = zkl_collect_children(children);

	/*
	 * This backend's other nodes on the key never block it: all of them,
	 * including ones being deleted, or one of its own could count as
	 * another backend's and be waited for for ever.
	 */
	for (i = 0; i < zkl_shared->nused; i++)
	{
		const ZklSlot *o = &zkl_shared->slots[i];

		if (o != s && o->zstate != ZKS_FREE && same_owner(o, s) &&
			strcmp(o->key, s->key) == 0)
		{
			held[nmine] = o->zstate == ZKS_HELD;
			mine[nmine++] = o->uuid;
		}
	}

	switch (zkr_decide(zkl_childbuf, n, s->uuid, mine, held, nmine, &own, &watch))
	{
		case ZKR_ABSENT:
			/* our node was removed behind our back: queue again */
			if (s->abandoned)
			{
				s->zstate = ZKS_GONE;
				zkl_free_slot(s);
			}
			else
				requeue(s);
			break;
		case ZKR_GRANT:
			s->at_head = zkr_foreign_ahead(zkl_childbuf, own, mine, nmine) == 0;
			grant(s);
			break;
		case ZKR_WAIT:
			if (!s->nowait && (other = upgrade_deadlock(s)) != 0)
			{
				/* give up our place; our owner's abort releases its shared lock too */
				fail_slot(s, ERRCODE_T_R_DEADLOCK_DETECTED, ZKS_DELETING,
						  "deadlock detected: processes %d and %d both hold a zk_lock shared and wait to make it exclusive",
						  s->owner_pid, other);
				s->todo = ZKT_DELETE;
			}
			else if (s->nowait)
				refuse_try(s);
			else
			{
				strlcpy(s->watch, zkl_childbuf[watch].name, sizeof(s->watch));
				s->watch_sole = zkr_sole_blocker(zkl_childbuf, own, watch, mine, held, nmine);
				/* granted when the watched node goes: alone at the head only if it was the one other */
				s->at_head = s->watch_sole &&
					zkr_foreign_ahead(zkl_childbuf, own, mine, nmine) == 1;
				s->todo |= ZKT_WATCH;
				if (TimestampDifferenceExceeds(s->requested_at, GetCurrentTimestamp(), recheck_ms()))
					zkl_suspect_blocker(s, s->watch);
			}
			break;
	}
}

static void
children_done(int rc, const struct String_vector *strings, const struct Stat *stat,
			  const void *ctx)
{
	ZklSlot    *s;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);
	if (s != NULL && s->zstate == ZKS_QUEUED)
	{
		if (rc == ZOK)
			decide(s, strings);
		else if (zkl_outcome_unknown(rc))
			s->todo |= ZKT_CHILDREN;	/* again once reconnected */
		else if (rc == ZNONODE)
			requeue(s);			/* key node gone, so is our node */
		/* session errors: zkl_session_lost() re-queues */
	}
	LWLockRelease(zkl_shared->lock);
	zkl_check_suspects();
}

/*
 * The watch on the predecessor is set with a read of its data, not with
 * exists(): on a node that is already gone, exists() would leave a watch
 * for its creation, which never comes (names are unique), for the life of
 * the session.  A data read of a missing node sets no watch.
 */
static void
watch_set(int rc, const char *value, int value_len, const struct Stat *stat,
		  const void *ctx)
{
	ZklSlot    *s;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);

	/*
	 * ZNONODE: the predecessor went away before the watch was set.  A lost
	 * reply may or may not have set the watch.  Either way, look again.
	 */
	if (s != NULL && s->zstate == ZKS_QUEUED &&
		(rc == ZNONODE || zkl_outcome_unknown(rc)))
		s->todo |= ZKT_CHILDREN;
	LWLockRelease(zkl_shared->lock);
}

static void
predecessor_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	ZklSlot    *s;

	/* the library also hands session events to every watcher; not ours */
	if (type == ZOO_SESSION_EVENT)
		return;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);
	if (s != NULL && s->zstate == ZKS_QUEUED)
	{
		char		watched[ZKL_PATH_LEN];

		/*
		 * Our only blocker deleted: the lock is ours without reading the
		 * queue again, once one read of our own node has come back.  The
		 * delete may be a session's death, and the server may send this
		 * event before the one on the sessions' presence list from the same
		 * transaction (presence.c); a reply comes after both, so by then
		 * any lock-delay is known.  Anything else (an older watch, a data
		 * change): read the queue.
		 */
		zkl_child_path(s, s->watch, watched);
		if (type == ZOO_DELETED_EVENT && s->watch_sole && s->watch[0] != '\0' &&
			strcmp(path, watched) == 0)
			s->todo |= ZKT_BARRIER;
		else
			s->todo |= ZKT_CHILDREN;
	}
	LWLockRelease(zkl_shared->lock);
}

/* The read behind a sole blocker's delete event came back: grant, as decided then. */
static void
barrier_done(int rc, const struct Stat *stat, const void *ctx)
{
	ZklSlot    *s;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);
	if (s != NULL && s->zstate == ZKS_QUEUED)
	{
		if (rc == ZOK)
			grant(s);			/* nodes ahead only go: still nothing blocks it */
		else if (rc == ZNONODE)
			requeue(s);			/* our node is gone (a session change re-queues too) */
		else if (zkl_outcome_unknown(rc))
			s->todo |= ZKT_CHILDREN;
	}
	LWLockRelease(zkl_shared->lock);
}

static ZklSlot *successor(const ZklSlot *d);

/* A delete's outcome for its slot (in DELETING).  Caller holds the lock. */
static void
delete_result(ZklSlot *s, int rc)
{
	if (zkl_outcome_unknown(rc))
	{
		s->todo |= ZKT_DELETE;	/* retried until done or the session ends */
		zkl_shared->counters.delete_retries++;
		return;
	}
	if (rc != ZOK && rc != ZNONODE && rc != ZSESSIONEXPIRED && rc != ZCLOSING)
		ereport(WARNING,
				(errmsg("zk_lock: could not delete lock node %s: %s",
						s->node, zerror(rc))));
	else
		zkl_shared->counters.releases++;
	if (rc == ZOK || rc == ZNONODE)
	{
		ZklSlot    *w = successor(s);

		if (w != NULL && w->watch_sole)
			grant(w);			/* see tell_successor() */
	}
	s->zstate = ZKS_GONE;
	if (s->abandoned)
		zkl_free_slot(s);
}

static void
delete_done(int rc, const void *ctx)
{
	ZklSlot    *s;

	writes_in_flight = Max(writes_in_flight - 1, 0);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);
	if (s != NULL && s->zstate == ZKS_DELETING)
	{
		note_write_reply(s, rc);
		delete_result(s, rc);
	}
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

/*
 * An op of a multi that the server refused because another op in it failed:
 * not applied.  Only a definite refusal says so; when the outcome of the
 * multi itself is unknown, so is each op's.
 */
static bool
rolled_back(int rc, int err)
{
	return rc != ZOK && !zkl_outcome_unknown(rc) &&
		rc != ZSESSIONEXPIRED && rc != ZCLOSING && rc != ZINVALIDSTATE &&
		(err == ZOK || err == ZRUNTIMEINCONSISTENCY);
}

static void
multi_done(int rc, const void *data)
{
	Batch	   *b = (Batch *) data;
	bool		stray[BATCH_MAX] = {0};
	bool		noted = false;
	int			i;

	writes_in_flight = Max(writes_in_flight - 1, 0);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < b->n; i++)
	{
		ZklSlot    *s = reply_slot(b->ctx[i]);
		int			err = rc;

		if (s != NULL && !noted)
		{
			note_write_reply(s, rc);	/* one answer for the whole multi */
			noted = true;
		}

		/* a definite refusal names the op at fault; the others were rolled back */
		if (rc != ZOK && !zkl_outcome_unknown(rc) && !rolled_back(rc, b->results[i].err))
			err = b->results[i].err;

		if (b->del[i])
		{
			if (s == NULL || s->zstate != ZKS_DELETING)
				continue;
			if (rolled_back(rc, b->results[i].err))
			{
				s->todo |= ZKT_DELETE | ZKT_SOLO;
				zkl_shared->counters.rolled_back++;
			}
			else
				delete_result(s, err);
		}
		else if (s == NULL || s->zstate != ZKS_CREATING)
			stray[i] = (rc == ZOK);
		else if (rolled_back(rc, b->results[i].err))
		{
			/*
			 * A neighbour failed: send it again, alone, since it may fail
			 * the same way (a new key's node is missing for each new key).
			 */
			s->zstate = ZKS_NEW;
			s->todo |= ZKT_SOLO;
			zkl_shared->counters.rolled_back++;
		}
		else
			create_result(s, err, b->names[i], NULL);
	}
	LWLockRelease(zkl_shared->lock);

	for (i = 0; i < b->n; i++)
		if (stray[i])
			zoo_adelete(zkl_zh, b->names[i], -1, zkl_orphan_deleted, NULL);
	batch_put(b);
}

static void
recover_done(int rc, const struct String_vector *strings, const struct Stat *stat,
			 const void *ctx)
{
	ZklSlot    *s;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);
	if (s != NULL && s->zstate == ZKS_RECOVERING)
	{
		if (zkl_outcome_unknown(rc))
			s->zstate = ZKS_RECOVER;
		else
		{
			const char *found = NULL;
			int			i;

			for (i = 0; rc == ZOK && i < strings->count && !found; i++)
				if (zkr_name_has_uuid(strings->data[i], s->uuid))
					found = strings->data[i];

			if (found)
			{
				/* the create went through: adopt the node once its Stat says it is ours */
				strlcpy(s->node, found, sizeof(s->node));
				forget_place(s);
				s->zstate = ZKS_QUEUED;
				s->todo |= ZKT_STAT;
			}
			else if (rc == ZOK || rc == ZNONODE)
			{
				/* it did not, or not yet: look once more later */
				zkl_remember_ghost(s);
				s->zstate = ZKS_GONE;
				if (s->abandoned)
					zkl_free_slot(s);
				else
					requeue(s);
			}
			else
				fail_slot(s, zkc_sqlstate(rc), ZKS_GONE,
						  "could not look up the ZooKeeper lock node: %s", zerror(rc));
		}
	}
	LWLockRelease(zkl_shared->lock);
}

static void
stat_done(int rc, const struct Stat *stat, const void *ctx)
{
	ZklSlot    *s;
	char		stray[ZKL_PATH_LEN];

	stray[0] = '\0';
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);
	if (s != NULL && s->zstate == ZKS_QUEUED)
	{
		if (rc == ZOK && stat->ephemeralOwner == zkl_shared->session_id)
		{
			s->czxid = stat->czxid; /* the fencing token */
			s->todo |= ZKT_CHILDREN;
		}
		else if (rc == ZOK || rc == ZNONODE)
		{
			/* another session's node, or gone: never adopt it; start over */
			if (rc == ZOK)
				zkl_child_path(s, s->node, stray);
			if (s->abandoned)
			{
				s->zstate = ZKS_GONE;
				zkl_free_slot(s);
			}
			else
				requeue(s);
		}
		else if (zkl_outcome_unknown(rc))
			s->todo |= ZKT_STAT;
	}
	else if (s != NULL && s->zstate == ZKS_HELD)
	{
		/* the token of a lock created inside a multi, asked for by its owner */
		if (rc == ZOK && stat->ephemeralOwner == zkl_shared->session_id)
		{
			s->czxid = stat->czxid;
			zkl_wake_owner(s);
		}
		else if (rc == ZOK || rc == ZNONODE)
			zkl_lose_slot(s);
		else if (zkl_outcome_unknown(rc))
			s->todo |= ZKT_STAT;
	}
	LWLockRelease(zkl_shared->lock);
	if (stray[0] != '\0')
		zoo_adelete(zkl_zh, stray, -1, zkl_orphan_deleted, NULL);
}

static void
verify_done(int rc, const void *ctx)
{
	ZklSlot    *s;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	s = reply_slot(ctx);
	if (s != NULL && s->zstate == ZKS_HELD && s->verify == ZKV_ASKED)
	{
		if (rc == ZOK)
		{
			s->verify = ZKV_OK;
			zkl_wake_owner(s);
		}
		else if (zkl_outcome_unknown(rc))
			s->todo |= ZKT_VERIFY;	/* again once reconnected */
		else if (rc == ZNONODE || rc == ZBADVERSION || rc == ZNOAUTH)
		{
			/* the node is gone: whoever deleted it, the lock is not ours */
			zkl_lose_slot(s);
		}
		/* session errors: zkl_session_lost() marks the lock lost */
	}
	LWLockRelease(zkl_shared->lock);
}

/* ---- plan and send ---- */

/*
 * Follow-up calls a queued or held slot may owe, most urgent first: verify
 * for a committing holder; an adopted node's Stat before any decision; a
 * fresh listing (which makes a pending watch moot); then the watch.
 */
static const struct
{
	uint8		bit;
	uint8		clears;
	OpKind		kind;
}			followups[] =
{
	{ZKT_VERIFY, ZKT_VERIFY, OP_VERIFY},
	{ZKT_STAT, ZKT_STAT, OP_STAT},
	{ZKT_CHILDREN, ZKT_CHILDREN | ZKT_WATCH | ZKT_BARRIER, OP_CHILDREN},
	{ZKT_BARRIER, ZKT_BARRIER | ZKT_WATCH, OP_BARRIER},
	{ZKT_WATCH, ZKT_WATCH, OP_WATCH},
};

/* Fill op with the slot's most urgent follow-up, if any.  Caller holds the lock. */
static bool
next_followup(ZklSlot *s, Op *op)
{
	int			i;

	for (i = 0; i < lengthof(followups); i++)
	{
		if (s->todo & followups[i].bit)
		{
			s->todo &= ~followups[i].clears;
			op->kind = followups[i].kind;
			op->attempt = s->attempt;
			return true;
		}
	}
	return false;
}

/* The local waiter that watches the node of slot d, if any.  Caller holds the lock. */
static ZklSlot *
successor(const ZklSlot *d)
{
	int			i;

	for (i = 0; i < zkl_shared->nused; i++)
	{
		ZklSlot    *w = &zkl_shared->slots[i];

		if (w->zstate == ZKS_QUEUED && !w->abandoned && w->watch[0] != '\0' &&
			strcmp(w->watch, d->node) == 0 && w->root_id == d->root_id &&
			strcmp(w->key, d->key) == 0)
			return w;
	}
	return NULL;
}

/*
 * A delete is being sent.  A local waiter behind its node needs no watch
 * event to learn of it: if that node was its only blocker, the delete's
 * reply grants it (delete_result); otherwise it reads its queue right
 * behind the delete, in the same round trip (the server answers a session
 * in order, so the read sees the node gone).  Either way a hand-over inside
 * the cluster saves a round trip; the watch still fires later and finds the
 * lock held.  Returns whether a read was asked for.
 */
static bool
tell_successor(const ZklSlot *d)
{
	ZklSlot    *w = successor(d);
	int			i;

	if (w == NULL || w->watch_sole)
		return false;

	/*
	 * A node that held the lock exclusively, granted with no other backend's
	 * node ahead of it (not past waiters queued behind its backend's other
	 * node: recipe.c), has none ahead, and none can come later; so once it
	 * goes, nothing blocks the waiter right behind it, unless the holder's
	 * backend has another node on the key (it may be ahead, and it blocks
	 * the waiter).
	 */
	if (d->result == ZKR_GRANTED && d->mode == ZKL_MODE_EXCLUSIVE && d->at_head)
	{
		bool		sibling = false;

		for (i = 0; i < zkl_shared->nused && !sibling; i++)
		{
			const ZklSlot *o = &zkl_shared->slots[i];

			sibling = o != d && o->zstate != ZKS_FREE && same_owner(o, d) &&
				strcmp(o->key, d->key) == 0;
		}
		if (!sibling)
		{
			w->watch_sole = true;
			/* an exclusive waiter watches its immediate predecessor: then it is first */
			w->at_head = w->mode == ZKL_MODE_EXCLUSIVE;
			return false;
		}
	}
	w->todo |= ZKT_CHILDREN;
	return true;
}

/*
 * The commit proof: while this cluster holds locks, keep it younger than
 * half of zk_lock.proof_bound, so that commits need no round trip of their
 * own; and get a fresh one whenever a committing backend asks.  Sets
 * proof_due; returns next_ms, shortened to when the proof gets old.
 * Caller holds the lock.
 */
static long
plan_proof(bool keep_fresh, int64 mono, long next_ms)
{
	int64		session;
	int64		at = zkl_proof_read(&session);
	long		left = -1;

	if (zkl_zh == NULL || zkl_shared->conn_state != ZKC_CONNECTED || proof_in_flight)
		return next_ms;
	if (session != zkl_shared->session_id)
		at = 0;
	if (keep_fresh)
		left = (long) ((at + (int64) zkl_proof_bound * 500 - mono) / 1000);
	proof_due = zkl_shared->proof_wanted || (keep_fresh && left <= 0);
	if (!proof_due && left > 0)
		next_ms = (next_ms < 0) ? left : Min(next_ms, left);
	return next_ms;
}

static void
proof_done(int rc, const void *data)
{
	if ((uintptr_t) data != proof_gen)
		return;					/* sent on a handle that is gone */
	proof_in_flight = false;
	if (leader_answered(rc))
		zkl_proof_note(proof_sent, zkl_shared->session_id);
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

	proof_due = false;
	zoo_check_op_init(&check, zkl_shared->roots[zkl_shared->cur_root], -1);
	proof_sent = zkl_mono_now();
	if (zoo_amulti(zkl_zh, 1, &check, &proof_result, proof_done,
				   (const void *) (uintptr_t) proof_gen) == ZOK)
		proof_in_flight = true;
}

/* Whether the slot has, or may have, a node in ZooKeeper. */
static bool
has_node(const ZklSlot *s)
{
	return s->zstate != ZKS_FREE && s->zstate != ZKS_NEW && s->zstate != ZKS_GONE;
}

/*
 * The root a new request goes under: the current one, unless a request of
 * this cluster for the same key still has a node under an earlier root
 * (zk_lock.root was reloaded meanwhile).  Then that root, so that inside the
 * cluster a held key stays one lock.  Caller holds the lock.
 */
static uint8
root_for(const ZklSlot *s, bool old_roots_live)
{
	int			i;

	for (i = 0; old_roots_live && i < zkl_shared->nused; i++)
	{
		const ZklSlot *o = &zkl_shared->slots[i];

		if (o != s && has_node(o) && o->root_id != zkl_shared->cur_root &&
			strcmp(o->key, s->key) == 0)
			return o->root_id;
	}
	return zkl_shared->cur_root;
}

/* Whether any request still has a node under a root other than the current one. */
static bool
old_roots_in_use(void)
{
	bool		reloaded = false;
	int			i;

	/* no root other than the current one was ever set: nothing to look for */
	for (i = 0; i < ZKL_ROOTS; i++)
		reloaded |= i != zkl_shared->cur_root && zkl_shared->roots[i][0] != '\0';
	for (i = 0; reloaded && i < zkl_shared->nused; i++)
		if (has_node(&zkl_shared->slots[i]) &&
			zkl_shared->slots[i].root_id != zkl_shared->cur_root)
			return true;
	return false;
}

/*
 * Under the lock, pick the calls owed and advance states so that no backend
 * can free those slots meanwhile.  Returns the ms until the earliest
 * connect deadline of an unsent request (-1: none).
 */
static long
plan_ops(int *nops)
{
	bool		connected;
	bool		writes_open;
	bool		successors = false;
	bool		held = false;
	bool		old_roots;
	TimestampTz now = GetCurrentTimestamp();
	int64		mono = zkl_mono_now();
	long		next_ms = -1;
	int			n = 0;
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	connected = zkl_zh != NULL && zkl_shared->conn_state == ZKC_CONNECTED;
	writes_open = writes_in_flight < WRITE_WINDOW;
	old_roots = old_roots_in_use();
	zkl_shared->writes_held = connected && !writes_open;
	for (i = 0; i < zkl_shared->nused; i++)
	{
		ZklSlot    *s = &zkl_shared->slots[i];
		Op		   *op = &ops[n];

		op->idx = i;
		op->parents = false;
		op->solo = false;
		op->batched = false;
		held |= s->zstate == ZKS_HELD;
		switch (s->zstate)
		{
			case ZKS_NEW:
			case ZKS_RECOVER:
				if (s->abandoned && s->zstate == ZKS_NEW)
					zkl_free_slot(s);
				else if (connected && s->zstate == ZKS_NEW && !writes_open)
					;			/* held back for the next multi */
				else if (connected)
				{
					op->kind = (s->zstate == ZKS_NEW) ? OP_CREATE : OP_RECOVER;
					if (op->kind == OP_CREATE)
					{
						zkl_shared->counters.requests++;
						s->root_id = root_for(s, old_roots);
						s->checked_at = now;	/* the pipelined getChildren */
					}
					op->parents = (s->todo & ZKT_PARENTS) != 0;
					op->solo = (s->todo & ZKT_SOLO) != 0;
					s->todo &= ~(ZKT_PARENTS | ZKT_SOLO);
					s->attempt = ++zkl_shared->next_attempt;
					s->sent_at = mono;
					s->zstate = (s->zstate == ZKS_NEW) ? ZKS_CREATING : ZKS_RECOVERING;
					op->attempt = s->attempt;
					n++;
				}
				else if (s->result == ZKR_PENDING && !s->abandoned)
				{
					TimestampTz deadline = TimestampTzPlusMilliseconds(s->queued_at,
																	   zkl_connect_timeout);
					long		left = (long) ((deadline - now) / 1000);

					/* a RECOVER slot stays: its node may exist, we delete it later */
					if (zkl_shared->auth_unusable && s->zstate == ZKS_NEW)
						fail_slot(s, ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION, ZKS_GONE,
								  "zk_lock.auth is unusable");
					else if (left <= 0)
						fail_slot(s, ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
								  s->zstate == ZKS_NEW ? ZKS_GONE : ZKS_RECOVER,
								  "could not connect to ZooKeeper within zk_lock.connect_timeout (%d ms)",
								  zkl_connect_timeout);
					else if (next_ms < 0 || left < next_ms)
						next_ms = left;
				}
				break;
			case ZKS_QUEUED:
			case ZKS_HELD:
				if (s->abandoned)
				{
					s->zstate = ZKS_DELETING;
					s->todo = ZKT_DELETE;
				}
				else if (connected && s->zstate == ZKS_QUEUED && s->todo == 0)
				{
					/*
					 * A waiter with nothing in flight checks its blocker again
					 * now and then: a missed watch event must not leave it
					 * waiting for ever.  Re-setting the watch is enough (a read
					 * of one node); the whole queue is read again only when a
					 * lock-delay ends (while one is in force, nothing is read),
					 * or when the blocker may be a node of ours that no
					 * request owns (which that read lets us find).
					 */
					int64		until;
					long		left = s->delayed_until ?
						(long) ((s->delayed_until - mono + 999) / 1000) :
						TimestampDifferenceMilliseconds(now,
														TimestampTzPlusMilliseconds(s->checked_at, recheck_ms()));

					if (left <= 0 && s->delayed_until && zkl_grants_paused(mono, &until))
					{
						s->delayed_until = until;
						left = (long) ((until - mono + 999) / 1000);
					}
					if (left <= 0)
					{
						bool		recheck_all = s->delayed_until != 0 || s->watch[0] == '\0' ||
							zkl_may_be_orphan(s->watch);

						s->delayed_until = 0;
						s->todo |= recheck_all ? ZKT_CHILDREN : ZKT_WATCH;
					}
					else if (next_ms < 0 || left < next_ms)
						next_ms = left;
				}
				if (!s->abandoned && connected && next_followup(s, op))
				{
					if (op->kind == OP_CHILDREN || op->kind == OP_WATCH)
						s->checked_at = now;
					n++;
					break;
				}
				if (s->zstate != ZKS_DELETING)
					break;
				/* FALLTHROUGH */
			case ZKS_DELETING:
				if (connected && writes_open && (s->todo & ZKT_DELETE))
				{
					op->solo = (s->todo & ZKT_SOLO) != 0;
					s->todo &= ~(ZKT_DELETE | ZKT_SOLO);
					s->sent_at = mono;
					op->kind = OP_DELETE;
					op->attempt = s->attempt;
					n++;
					successors |= tell_successor(s);
				}
				break;
			case ZKS_GONE:
				if (s->abandoned)
					zkl_free_slot(s);
				break;
			default:
				break;
		}
	}
	/* successors told above whose turn in the loop had passed: read now */
	for (i = 0; successors && i < zkl_shared->nused; i++)
	{
		ZklSlot    *s = &zkl_shared->slots[i];

		if (s->zstate == ZKS_QUEUED && !s->abandoned && (s->todo & ZKT_CHILDREN))
		{
			ops[n].idx = i;
			ops[n].parents = ops[n].solo = ops[n].batched = false;
			if (next_followup(s, &ops[n]))
			{
				s->checked_at = now;
				n++;
			}
		}
	}
	if (connected)
		zkl_query_start();
	next_ms = plan_proof(connected && held, mono, next_ms);
	LWLockRelease(zkl_shared->lock);
	*nops = n;
	return next_ms;
}

/* Create every component of an absolute path as a persistent node. */
void
zkl_create_persistent(const char *target)
{
	char		path[ZKL_PATH_LEN];
	char	   *p;

	strlcpy(path, target, sizeof(path));
	for (p = strchr(path + 1, '/');; p = strchr(p + 1, '/'))
	{
		if (p)
			*p = '\0';
		zoo_acreate(zkl_zh, path, NULL, -1, zkl_acl, ZOO_PERSISTENT,
					ignore_done, NULL);
		if (!p)
			break;
		*p = '/';
	}
}

/* Create root path components (persistent) and the key node (container). */
static void
send_parents(const ZklSlot *s, const void *ctx)
{
	char		path[ZKL_PATH_LEN];

	zkl_create_persistent(slot_root(s));
	zkl_key_path(s, path);
	zoo_acreate(zkl_zh, path, NULL, -1, zkl_acl, ZOO_CONTAINER,
				key_node_done, ctx);
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
	char		prefix[ZKL_NODE_BUFLEN];
	char		path[ZKL_PATH_LEN];

	zkl_new_uuid(uuid);
	zkr_node_prefix(s->mode, uuid, GetSystemIdentifier(), s->owner_pid, prefix, sizeof(prefix));
	zkl_child_path(s, prefix, path);
	zoo_acreate(zkl_zh, path, NULL, -1, zkl_acl, ZOO_EPHEMERAL_SEQUENTIAL, ignore_done, NULL);
}

/* Whether a planned op may go inside a multi. */
static bool
batchable(const Op *op)
{
	return (op->kind == OP_CREATE || op->kind == OP_DELETE) &&
		!op->parents && !op->solo && !op->batched;
}

/*
 * Send the planned creates (those that need no parent nodes) and deletes
 * together in multis of up to BATCH_MAX when there are several: each multi
 * is one write transaction for the server, and one round trip serves both
 * the locks being released and those being asked for.  Two creates for one
 * key never share a multi, which would give their nodes the same czxid, so
 * each holder's fencing token stays strictly greater than the one before.
 */
static void
send_batches(int nops)
{
	int			eligible = 0;
	int			i;
	int			j;

	/* the usual light-load case, one op: no multi */
	for (i = 0; i < nops && eligible < 2; i++)
		eligible += batchable(&ops[i]);
	if (eligible < 2)
		return;

	for (;;)
	{
		Batch	   *b = batch_get();

		for (i = 0; i < nops && b->n < BATCH_MAX; i++)
		{
			Op		   *op = &ops[i];
			const ZklSlot *s = &zkl_shared->slots[op->idx];
			bool		del = op->kind == OP_DELETE;
			bool		same_key = false;

			if (!batchable(op))
				continue;
			for (j = 0; j < b->n && !del && !same_key; j++)
				same_key = !b->del[j] && strcmp(zkl_shared->slots[b->idx[j]].key, s->key) == 0;
			if (same_key)
				continue;
			op->batched = true;
			b->del[b->n] = del;
			b->idx[b->n] = op->idx;
			b->ctx[b->n] = slot_ctx(op->idx, op->attempt);
			if (del)
			{
				zkl_child_path(s, s->node, b->names[b->n]);
				zoo_delete_op_init(&b->ops[b->n], b->names[b->n], -1);
			}
			else
			{
				char		prefix[ZKL_NODE_BUFLEN];

				/* names[] is read when the multi is sent, and gets the result */
				zkr_node_prefix(s->mode, s->uuid, GetSystemIdentifier(), s->owner_pid,
								prefix, sizeof(prefix));
				zkl_child_path(s, prefix, b->names[b->n]);
				zoo_create_op_init(&b->ops[b->n], b->names[b->n], s->data, strlen(s->data),
								   zkl_acl, ZOO_EPHEMERAL_SEQUENTIAL,
								   b->names[b->n], ZKL_PATH_LEN);
			}
			b->n++;
		}
		if (b->n < 2)
		{
			/* nothing, or one op, left for a multi: it goes out on its own */
			for (i = 0; i < nops && b->n == 1; i++)
				if (ops[i].batched && ops[i].idx == b->idx[0])
					ops[i].batched = false;
			batch_put(b);
			break;
		}
		if (zoo_amulti(zkl_zh, b->n, b->ops, b->results, multi_done, b) != ZOK)
			elog(ERROR, "zk_lock: could not send a ZooKeeper multi");
		writes_in_flight++;
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		zkl_shared->counters.batched += b->n;
		LWLockRelease(zkl_shared->lock);
		/* each new node's key's children, in the same round trip, as for a single create */
		for (j = 0; j < b->n; j++)
		{
			char		path[ZKL_PATH_LEN];

			if (b->del[j])
				continue;
			zkl_key_path(&zkl_shared->slots[b->idx[j]], path);
			(void) zoo_aget_children2(zkl_zh, path, 0, children_done, b->ctx[j]);
		}
	}
}

/*
 * Issue the planned calls.  The slots' names and data are stable here: the
 * plan moved each into a state that only this process changes.
 */
static void
send_ops(int nops)
{
	char		path[ZKL_PATH_LEN];
	char		parent[ZKL_PATH_LEN];
	int			i;

	send_batches(nops);
	for (i = 0; i < nops; i++)
	{
		const Op   *op = &ops[i];
		const ZklSlot *s = &zkl_shared->slots[op->idx];
		void	   *ctx = slot_ctx(op->idx, op->attempt);
		int			rc = ZOK;

		if (op->batched)
			continue;

		zkl_key_path(s, parent);
		switch (op->kind)
		{
			case OP_CREATE:
				{
					char		prefix[ZKL_NODE_BUFLEN];

					if (op->parents)
						send_parents(s, ctx);
					if (zkl_test_orphan)
						send_test_orphan(s);
					zkr_node_prefix(s->mode, s->uuid, GetSystemIdentifier(), s->owner_pid,
									prefix, sizeof(prefix));
					zkl_child_path(s, prefix, path);
					rc = zoo_acreate2(zkl_zh, path, s->data, strlen(s->data),
									  zkl_acl, ZOO_EPHEMERAL_SEQUENTIAL,
									  create_done, ctx);
					if (rc == ZOK)
						writes_in_flight++;
					/* same round trip: the server answers a session in order */
					if (rc == ZOK)
						rc = zoo_aget_children2(zkl_zh, parent, 0, children_done, ctx);
				}
				break;
			case OP_CHILDREN:
				rc = zoo_aget_children2(zkl_zh, parent, 0, children_done, ctx);
				break;
			case OP_RECOVER:
				rc = zoo_aget_children2(zkl_zh, parent, 0, recover_done, ctx);
				break;
			case OP_STAT:
				zkl_child_path(s, s->node, path);
				rc = zoo_aexists(zkl_zh, path, 0, stat_done, ctx);
				break;
			case OP_BARRIER:
				zkl_child_path(s, s->node, path);
				rc = zoo_aexists(zkl_zh, path, 0, barrier_done, ctx);
				break;
			case OP_VERIFY:
				{
					/* a multi is a write: it goes through the leader, so a
					 * reply proves the session alive there, now */
					zoo_op_t	check;

					zkl_child_path(s, s->node, path);
					zoo_check_op_init(&check, path, -1);
					rc = zoo_amulti(zkl_zh, 1, &check, &verify_results[op->idx], verify_done, ctx);
				}
				break;
			case OP_WATCH:
				zkl_child_path(s, s->watch, path);
				rc = zoo_awget(zkl_zh, path, predecessor_watch, ctx, watch_set, ctx);
				break;
			case OP_DELETE:
				zkl_child_path(s, s->node, path);
				rc = zoo_adelete(zkl_zh, path, -1, delete_done, ctx);
				if (rc == ZOK)
					writes_in_flight++;
				break;
		}

		/*
		 * ZINVALIDSTATE: the session just ended and zkl_session_lost() will
		 * re-queue.  Anything else is a local failure to build a request.
		 */
		if (rc != ZOK && rc != ZINVALIDSTATE)
			elog(ERROR, "zk_lock: could not send a ZooKeeper request: %s", zerror(rc));
	}
}

/* A new handle has nothing in flight. */
void
zkl_forget_writes(void)
{
	writes_in_flight = 0;
	proof_in_flight = false;
	proof_gen++;
	zkl_presence_reset();
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
		zkl_shared->conn_state = ZKC_STOPPED;
		zkl_shared->state_since = GetCurrentTimestamp();
		zkl_shared->writes_held = false;
	}
	LWLockRelease(zkl_shared->lock);
	zkl_flush_wakes();
}

void
zkl_worker_main(Datum arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	if (!claim_worker_role())
		proc_exit(0);			/* exit code 0: not restarted */
	before_shmem_exit(worker_exit, (Datum) 0);
	zkl_defer_wakes();
	zkc_set_settle(zkl_flush_wakes);

	/* at most one op per slot, plus one read per told successor */
	ops = MemoryContextAlloc(TopMemoryContext, 2 * zkl_shared->nslots * sizeof(Op));
	verify_results = MemoryContextAllocZero(TopMemoryContext,
											zkl_shared->nslots * sizeof(zoo_op_result_t));
	mine_buf = MemoryContextAlloc(TopMemoryContext, zkl_shared->nslots * sizeof(char *));
	held_buf = MemoryContextAlloc(TopMemoryContext, zkl_shared->nslots * sizeof(bool));
	each_slot(redo_in_flight);
	ereport(LOG, (errmsg("zk_lock worker started")));
	zkl_session_begin();

	while (!ShutdownRequestPending)
	{
		long		wait_ms;
		long		ghost_ms;
		int			nops;

		zkl_session_tend();
		zkl_presence_tend();
		zkl_left_tend();
		zkl_flush_wakes();		/* owners the session's turn woke */

		wait_ms = plan_ops(&nops);
		if (nops > 1)
		{
			zkc_hold_sends(true);
			send_ops(nops);
			zkc_hold_sends(false);
		}
		else if (nops > 0)
			send_ops(nops);
		if (proof_due)
			send_proof();
		ghost_ms = zkl_send_ghosts();
		if (ghost_ms >= 0)
			wait_ms = (wait_ms < 0) ? ghost_ms : Min(wait_ms, ghost_ms);
		zkl_query_send();
		wait_ms = zkl_session_wait_ms(wait_ms);

		/* data read on a connection that stays up came from the server */
		if ((zkc_wait(zkl_zh, wait_ms) & WL_SOCKET_READABLE) && zkl_zh != NULL &&
			zoo_state(zkl_zh) == ZOO_CONNECTED_STATE)
			zkl_shared->last_heard = GetCurrentTimestamp();
	}

	/*
	 * Closing the session makes ZooKeeper drop our nodes at once, so other
	 * clusters need not wait a session timeout.  Our holders lose their locks.
	 */
	zkl_session_end();
	ereport(LOG, (errmsg("zk_lock worker stopped")));
	proc_exit(1);				/* exit code 1: restarted unless shutting down */
}
