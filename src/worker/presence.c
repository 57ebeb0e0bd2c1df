/*
 * presence.c — lock-delay: no grant soon after a session that may have held
 * a lock died.
 *
 * A holder whose session died (expired, or closed by its worker) may still
 * commit until its cluster's commit proof runs out (zk_lock.proof_bound,
 * xact.c).  So no cluster grants any lock for zk_lock.lock_delay (longer than
 * that bound) after it learns that a session died.  Releases hand over at
 * once: only deaths pause.
 *
 * Each worker keeps a presence node for its session,
 *     <root>/.sessions/<session id>.<nonce>     EPHEMERAL
 * (both in 16 hex digits; the nonce is drawn for each new session, never 0,
 * see below) and a child watch on <root>/.sessions.  A dying session's
 * presence node goes in the same transaction as its lock nodes, and
 * ZooKeeper delivers a watch event before any reply that reflects the
 * change, so by the time a reply shows a holder's node gone, the worker has
 * already seen its session's presence node go and paused.  This covers a waiter behind the
 * dead holder as well as a request that arrives after the node vanished.
 * Until the worker has listed the sessions (its own among them) it knows of
 * no death, so it pauses from its session's start too; and from a watch
 * event until the listing that says what changed.
 *
 * After a crash-restart, the new worker closes the session left over from
 * before it (left_session.c), whose holders are all dead.  It first creates
 * a tombstone <root>/.sessions/<that id>.<its nonce>.dead, owned by its new
 * session; a session that vanishes with its tombstone present needs no
 * lock-delay.
 *
 * A clean stop (worker.c) gives every node of its session back while the
 * session lives, and only then creates <root>/.sessions/<own id>.<own
 * nonce>.closed, PERSISTENT (it must outlive the session it speaks for),
 * and closes the session.  That session's end leaves no holder that could
 * still commit: each one's transaction had ended before its node was
 * deleted, and the leader answered the tombstone's create, after those
 * deletes, while the session lived.  So it needs no lock-delay either.  A
 * session already dead gets no tombstone (the create fails) and is delayed
 * for.
 *
 * A tombstone speaks for one incarnation of a session id: the presence
 * node of the same id and nonce.  ZooKeeper builds an id from a member's
 * id and clock, so an id comes back after a member's host restarts; a
 * tombstone matched by id alone would let the new session's expiry skip the
 * lock-delay while its holders may still commit.  Any worker deletes a
 * tombstone of either kind once it has listed it for a minute while the
 * incarnation it speaks for was not listed.  An earlier version's names
 * (<id>, <id>.closed, <id>.dead) carry no nonce: its presence nodes count as
 * sessions, its tombstones speak for none (their sessions are delayed for,
 * the safe side), and they are swept alike.  Such a version counts our
 * names as unexplained changes of the list, and delays: safe too.
 * Part of the worker: runs in its process only.
 */
#include "postgres.h"

#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shmem.h"
#include "zk_client.h"
#include "presence.h"
#include "lock_delay.h"

#define SESSIONS_DIR	".sessions"


static void *
host_grow(void *arg, void *p, size_t size)
{
	return p ? repalloc(p, size) : MemoryContextAlloc(TopMemoryContext, size);
}

static void
host_release(void *arg, void *p)
{
	pfree(p);
}

/*
 * Publish the pause in the slot table, where the worker's core reads it
 * (zw_grants_paused), if it changed: called after each call into
 * lock_delay.c that may change it (each turn: no lock taken for nothing);
 * `locked`: the caller holds the table lock.
 */
static void
publish(bool locked)
{
	/* the worker is its only writer: its last copy may be read without the lock */
	if (memcmp(&zkl_shared->t.pause, &zw_presence->pres.pause, sizeof(ZldPause)) == 0)
		return;
	if (!locked)
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->t.pause = zw_presence->pres.pause;
	if (!locked)
		LWLockRelease(zkl_shared->lock);
}

static int64_t
host_delay_us(void *arg)
{
	return (int64) zkl_effective_lock_delay() * 1000;
}

static void
host_new_pause(void *arg)
{
	zkl_shared->t.counters.lock_delay_pauses++;
}

static void host_sweep(void *arg, const ZklSessionName *tombstone);

static const ZldHost host = {NULL, host_grow, host_release, host_delay_us, host_new_pause, host_sweep};

static ZwPresence own = {.last_logged = ZOK, .mark = ZKL_MARK_PENDING, .sweep_logged = ZOK,
	.pres = {.host = &host, .last_cversion = -1}};
ZwPresence *zw_presence = &own;

/* A fresh copy of this file's memory, as a new worker process has it. */
ZwPresence *
zw_presence_new(void)
{
	ZwPresence *p = MemoryContextAllocZero(TopMemoryContext, sizeof(ZwPresence));

	p->last_logged = ZOK;
	p->mark = ZKL_MARK_PENDING;
	p->sweep_logged = ZOK;
	zc_delay_init(&p->pres, &host);
	return p;
}

/*
 * A new worker: nothing listed yet, so grants wait.  Its pause replaces
 * whatever an earlier worker of the cluster left published.
 */
void
zw_presence_start(void)
{
	publish(false);
}

static void
sessions_path(char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" SESSIONS_DIR, zw_presence->for_root);
}

/*
 * A create or listing failed (lock_delay.c tries again later): say so once
 * (connection and session errors are the session's business, not ours).
 */
static void
failed(int rc, const char *what)
{
	if (zc_core_outcome_unknown(rc) || rc == ZSESSIONEXPIRED || rc == ZCLOSING ||
		rc == ZINVALIDSTATE || rc == zw_presence->last_logged)
		return;
	zw_presence->last_logged = rc;
	ereport(LOG, (errmsg("zk_lock: could not %s under zk_lock.root: %s; no lock is granted until it works",
						 what, zw_client_strerror(rc))));
}

/* A child event on the sessions node: list again (the watch is one-shot). */
static void
sessions_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	if (type != ZOO_SESSION_EVENT)
	{
		zc_delay_watch_fired(&zw_presence->pres, (uintptr_t) ctx);
		publish(false);
	}
}

/* Another cluster may have swept it first; one not allowed to says so, once. */
static void
swept(int rc, const void *data)
{
	if (rc == ZOK || rc == ZNONODE || zc_core_outcome_unknown(rc) || rc == zw_presence->sweep_logged)
		return;
	zw_presence->sweep_logged = rc;
	ereport(LOG, (errmsg("zk_lock: could not delete an ended session's tombstone under zk_lock.root: %s",
						 zw_client_strerror(rc))));
}

/* One of the sessions' names: its path. */
static void
name_path(char *out, const ZklSessionName *name)
{
	char		leaf[ZLD_NAME_LEN];

	zc_delay_format_name(leaf, sizeof(leaf), name);
	snprintf(out, ZKL_PATH_LEN, "%s/" SESSIONS_DIR "/%s", zw_presence->for_root, leaf);
}

/* A tombstone the rules say every cluster has listed: delete it. */
static void
host_sweep(void *arg, const ZklSessionName *tombstone)
{
	char		path[ZKL_PATH_LEN];

	name_path(path, tombstone);
	(void) zw_client_delete(path, -1, swept, NULL);
}

/* A listing of the sessions: lock_delay.c judges it. */
static void
sessions_listed(int rc, const struct String_vector *children, const struct Stat *stat,
				const void *ctx)
{
	ZldListed	what = zc_delay_listed(&zw_presence->pres, (uintptr_t) ctx, rc,
								  rc == ZOK ? (const char *const *) children->data : NULL,
								  rc == ZOK ? children->count : 0,
								  rc == ZOK ? stat->cversion : 0, zkl_mono_now());

	publish(false);
	if (what == ZLD_LIST_FAILED)
		failed(rc, "list the sessions");
	if (what == ZLD_DIED)
		ereport(LOG,
				(errmsg("zk_lock: a ZooKeeper session that may have held locks ended; no lock is granted for zk_lock.lock_delay (%d ms)",
						zkl_effective_lock_delay())));
	if (what != ZLD_STALE_REPLY && what != ZLD_LIST_FAILED && zw_presence->pres.present)
		zw_presence->last_logged = ZOK;	/* it works again: a new failure is logged */
}

static void
presence_created(int rc, const char *value, const void *ctx)
{
	if (rc == ZOK || rc == ZNODEEXISTS)
		return;
	zc_delay_presence_failed(&zw_presence->pres, (uintptr_t) ctx, zkl_mono_now());
	publish(false);
	if ((uintptr_t) ctx == zw_presence->pres.gen)
		failed(rc, "create the session's presence node");
}

/* Our presence node (and the path to it). */
static void
send_presence(void)
{
	char		dir[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN];
	ZklSessionName self = {zw_presence->pres.for_session, zw_presence->pres.for_nonce,
	ZKL_NAME_PRESENCE};

	sessions_path(dir);
	zw_client_create_persistent(dir);
	name_path(path, &self);
	zw_client_create(path, NULL, -1, ZOO_EPHEMERAL, presence_created,
					 (const void *) (uintptr_t) zw_presence->pres.gen);
}

/*
 * Each loop turn, while connected: send what lock_delay.c asks for (again
 * after a new session or a root reload, blind until listed: clusters sharing
 * locks switch roots together, drained).
 */
void
zw_presence_tend(void)
{
	int64		session = zkl_shared->t.session_id;
	const char *root = zkl_shared->t.roots[zkl_shared->t.cur_root];
	bool		new_root;
	int			send;
	char		dir[ZKL_PATH_LEN];

	if (zw_client_handle() == NULL || zkl_shared->t.conn_state != ZKC_CONNECTED || session == 0)
		return;
	new_root = strcmp(root, zw_presence->for_root) != 0;
	strlcpy(zw_presence->for_root, root, sizeof(zw_presence->for_root));
	send = zc_delay_tend(&zw_presence->pres, session, zkl_shared->session_nonce, new_root,
						 zkl_mono_now());
	publish(false);
	if (send & ZLD_SEND_PRESENCE)
		send_presence();
	if (send & ZLD_SEND_LIST)
	{
		sessions_path(dir);
		if (zw_client_children_watched(dir, sessions_watch, (void *) (uintptr_t) zw_presence->pres.gen,
									   sessions_listed, (const void *) (uintptr_t) zw_presence->pres.gen) != ZOK)
		{
			zc_delay_list_not_sent(&zw_presence->pres);
			publish(false);
		}
	}
}

/* A new handle: calls in flight on the old one will not be answered.  Caller holds the lock. */
void
zw_presence_reset(void)
{
	zc_delay_reset(&zw_presence->pres);
	publish(true);
	if (zw_presence->mark == ZKL_MARK_PENDING && zw_presence->mark_name.id != 0)
		zw_presence->mark = ZKL_MARK_FAILED;
}

/* Caller holds the lock. */
void
zw_presence_reconnected(void)
{
	zc_delay_reconnected(&zw_presence->pres);
	publish(true);
}

/*
 * A resumed session (session.c, resume.h): look at this incarnation's
 * presence node, behind a sync (the server we reached may lag the leader),
 * for its owner.  The look goes out only once the sync succeeded: a sync the
 * server turned away (throttled, say) orders nothing, and a lagging server
 * could still show the node of a session the leader has closed.  exists
 * reads no ACL, so an identity changed since it was made does not matter.
 * Under the root it was made under (this process's presence), else the
 * current one (a restarted worker's).  One look of each kind at a time.
 */

static void
look_synced(int rc, const char *value, const void *data)
{
	const ZwPresenceLook *l = (const ZwPresenceLook *) data;

	if (rc == ZOK)
		rc = zw_client_exists(l->path, l->done, l->ctx);
	if (rc != ZOK)
		l->done(rc, NULL, l->ctx);
}

static int
look(ZwPresenceLook *l, int64 session, uint64 nonce, stat_completion_t done, const void *ctx)
{
	ZklSessionName self = {session, nonce, ZKL_NAME_PRESENCE};
	char		leaf[ZLD_NAME_LEN];

	zc_delay_format_name(leaf, sizeof(leaf), &self);
	snprintf(l->path, sizeof(l->path), "%s/" SESSIONS_DIR "/%s",
			 zw_presence->for_root[0] != '\0' ? zw_presence->for_root :
			 zkl_shared->t.roots[zkl_shared->t.cur_root], leaf);
	l->done = done;
	l->ctx = ctx;
	return zw_client_sync(l->path, look_synced, l);
}

int
zw_presence_confirm(int64 session, uint64 nonce, stat_completion_t done, const void *ctx)
{
	return look(&zw_presence->confirm, session, nonce, done, ctx);
}

/*
 * The same look at a crash's left-over session (left_session.c), on our own
 * session, while a handle of its own holds the one that has the id now.
 */
int
zw_presence_look_left(int64 session, uint64 nonce, stat_completion_t done, const void *ctx)
{
	return look(&zw_presence->left, session, nonce, done, ctx);
}

/* This session's presence node exists and the sessions were listed. */
bool
zw_presence_listed(void)
{
	return zw_presence->pres.pause.listed;
}

/* The reply to the tombstone asked for last (ctx: its mark_gen), or to an older one. */
static void
tombstone_created(int rc, const char *value, const void *ctx)
{
	if (zw_presence->mark == ZKL_MARK_PENDING && (uintptr_t) ctx == zw_presence->mark_gen)
		zw_presence->mark = (rc == ZOK || rc == ZNODEEXISTS) ? ZKL_MARK_DONE : ZKL_MARK_FAILED;
}

/* Create a tombstone, once: returns how far that got. */
static ZklMarkState
send_mark(int64 session, uint64 nonce, int kind, int flags)
{
	char		path[ZKL_PATH_LEN];

	if (zw_presence->mark_name.id == session && zw_presence->mark_name.nonce == nonce &&
		zw_presence->mark_name.kind == kind)
		return zw_presence->mark;
	zw_presence->mark_name.id = session;
	zw_presence->mark_name.nonce = nonce;
	zw_presence->mark_name.kind = kind;
	zw_presence->mark = ZKL_MARK_PENDING;
	zw_presence->mark_gen++;
	name_path(path, &zw_presence->mark_name);
	if (zw_client_create(path, NULL, -1, flags, tombstone_created,
						 (const void *) (uintptr_t) zw_presence->mark_gen) != ZOK)
		zw_presence->mark = ZKL_MARK_FAILED;
	return zw_presence->mark;
}

/*
 * Say that the holders of a session's incarnation (id and nonce) are all
 * dead before closing it: a tombstone owned by our session.
 */
ZklMarkState
zw_presence_mark_dead(int64 session, uint64 nonce)
{
	return send_mark(session, nonce, ZKL_NAME_DEAD, ZOO_EPHEMERAL);
}

/* Whether the last listing shows this incarnation of `session` (id and nonce) live. */
bool
zw_presence_incarnation_listed(int64 session, uint64 nonce)
{
	return zc_delay_incarnation_listed(&zw_presence->pres, session, nonce);
}

/*
 * A clean stop: the caller has seen every node of our session deleted.  A
 * tombstone that outlives the session says its end needs no lock-delay.
 */
ZklMarkState
zw_presence_mark_closed(void)
{
	if (!zw_presence->pres.pause.listed)
		return ZKL_MARK_FAILED;	/* the root of our presence node is not known to be set up */
	return send_mark(zw_presence->pres.for_session, zw_presence->pres.for_nonce, ZKL_NAME_CLOSED,
					 ZOO_PERSISTENT);
}

/*
 * Whether grants must wait, and until when (zkl_mono_now; a time to look
 * again: while the listing is missing or out of date, that is a guess).
 */
bool
zw_grants_paused(int64 now, int64 *until)
{
	return zc_delay_pause_holds(&zkl_shared->t.pause, now, until);
}
