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
 *     <root>/.sessions/<session id in hex>     EPHEMERAL
 * and a child watch on <root>/.sessions.  A dying session's presence node
 * goes in the same transaction as its lock nodes, and ZooKeeper delivers a
 * watch event before any reply that reflects the change, so by the time a
 * reply shows a holder's node gone, the worker has already seen its
 * session's presence node go and paused.  This covers a waiter behind the
 * dead holder as well as a request that arrives after the node vanished.
 * Until the worker has listed the sessions (its own among them) it knows of
 * no death, so it pauses from its session's start too; and from a watch
 * event until the listing that says what changed.
 *
 * After a crash-restart, the new worker closes the session left over from
 * before it (left_session.c), whose holders are all dead.  It first creates
 * a tombstone <root>/.sessions/<that id>.dead, owned by its new session;
 * a session that vanishes with its tombstone present needs no lock-delay.
 *
 * A clean stop (worker.c) gives every node of its session back while the
 * session lives, and only then creates <root>/.sessions/<own id>.closed,
 * PERSISTENT (it must outlive the session it speaks for), and closes the
 * session.  That session's end leaves no holder that could still commit:
 * each one's transaction had ended before its node was deleted, and the
 * leader answered the tombstone's create, after those deletes, while the
 * session lived.  So it needs no lock-delay either.  A session already
 * dead gets no tombstone (the create fails) and is delayed for.  Any worker
 * deletes such a tombstone once it has listed it for CLOSED_KEEP_MS, whose
 * session is gone.  Versions that do not know the suffix count its node as
 * an unexplained change of the list, and delay: safe.
 * Part of the worker: runs in its process only.
 */
#include "postgres.h"

#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "zk_lock.h"
#include "zk_client.h"
#include "presence.h"
#include "lock_delay.h"

#define SESSIONS_DIR	".sessions"
#define DEAD_SUFFIX		".dead"
#define CLOSED_SUFFIX	".closed"
#define CLOSED_KEEP_MS	60000	/* a clean stop's tombstone, for every cluster to list */
#define STALE_POLL_MS	20		/* a listing is one round trip away */
#define RETRY_MS		100		/* after a failed create or listing */

static int64 for_session = 0;	/* the session whose presence we set up */
static char for_root[ZKL_MAX_ROOT_LEN + 1]; /* and the root it is under */
static bool listed = false;		/* a listing of this session arrived */
static bool stale = false;		/* the watch fired: the listing is out of date */
static bool presence_due = false;	/* (re)create our presence node */
static bool list_due = false;	/* (re)list the sessions, with a watch */
static bool list_in_flight = false;
static int64 next_try = 0;		/* no retry before (zkl_mono_now) */
static int	last_logged = ZOK;	/* the failure last logged, so it is logged once */
static uint64 gen = 0;			/* tags calls: a new session makes replies stale */
static int64 paused_until = 0;	/* zkl_mono_now */
static int64 *known = NULL;		/* sessions of the last listing, sorted */
static int	nknown = 0;
static int64 *dead = NULL;		/* tombstones of the last listing, sorted */
static int	ndead = 0;
static int32 last_cversion = -1;	/* the sessions node's, at the last listing */
static ZklMarkState mark = ZKL_MARK_PENDING;
static int64 mark_session = 0;	/* tombstone asked for (0: none) */
static uintptr_t mark_gen = 0;	/* tells its reply from an older one's */
static int64 sweep_at = 0;		/* list again then (zkl_mono_now; 0: no tombstone waits) */
static int	sweep_logged = ZOK;
static int64 *closed = NULL;	/* clean stops' tombstones of the last listing, sorted */
static int64 *closed_since = NULL;	/* when this worker first listed each (zkl_mono_now) */
static int	nclosed = 0;

/* What parse_listing collects. */
typedef enum ChildKind
{
	CHILD_LIVE,					/* a presence node */
	CHILD_TOMBSTONE,			/* a tombstone of either kind */
	CHILD_CLOSED				/* a clean stop's tombstone */
} ChildKind;

static void
sessions_path(char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" SESSIONS_DIR, for_root);
}

/* No grant before `until` (extends, never shortens, the pause). */
static void
pause_until(int64 until)
{
	if (until <= paused_until)
		return;
	if (paused_until <= zkl_mono_now())
		zkl_shared->t.counters.lock_delay_pauses++;	/* a new pause, not a longer one */
	paused_until = until;
}

static void
pause_for_delay(void)
{
	pause_until(zkl_mono_now() + (int64) zkl_effective_lock_delay() * 1000);
}

/*
 * A create or listing failed: try again a little later, and say so once
 * (connection and session errors are the session's business, not ours).
 */
static void
failed(int rc, const char *what)
{
	next_try = zkl_mono_now() + RETRY_MS * 1000;
	if (zcore_outcome_unknown(rc) || rc == ZSESSIONEXPIRED || rc == ZCLOSING ||
		rc == ZINVALIDSTATE || rc == last_logged)
		return;
	last_logged = rc;
	ereport(LOG, (errmsg("zk_lock: could not %s under zk_lock.root: %s; no lock is granted until it works",
						 what, zerror(rc))));
}

static int
cmp_session(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

static bool
known_has(const int64 *list, int n, int64 id)
{
	return bsearch(&id, list, n, sizeof(int64), cmp_session) != NULL;
}

/* A child event on the sessions node: list again (the watch is one-shot). */
static void
sessions_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	if (type == ZOO_SESSION_EVENT || (uintptr_t) ctx != gen)
		return;
	list_due = true;
	stale = true;
}

/* Parse a listing into sorted session ids of one kind. */
static int64 *
parse_listing(const struct String_vector *children, ChildKind kind, int *n)
{
	int64	   *ids = MemoryContextAlloc(TopMemoryContext,
										 Max(children->count, 1) * sizeof(int64));
	int			i;

	*n = 0;
	for (i = 0; i < children->count; i++)
	{
		char	   *end;
		unsigned long long id = strtoull(children->data[i], &end, 16);

		if (end == children->data[i])
			continue;
		if (kind == CHILD_LIVE ? *end == '\0' :
			strcmp(end, CLOSED_SUFFIX) == 0 || (kind == CHILD_TOMBSTONE && strcmp(end, DEAD_SUFFIX) == 0))
			ids[(*n)++] = (int64) id;
	}
	qsort(ids, *n, sizeof(int64), cmp_session);
	return ids;
}

/* Another cluster may have swept it first; one not allowed to says so, once. */
static void
swept(int rc, const void *data)
{
	if (rc == ZOK || rc == ZNONODE || zcore_outcome_unknown(rc) || rc == sweep_logged)
		return;
	sweep_logged = rc;
	ereport(LOG, (errmsg("zk_lock: could not delete a stopped session's tombstone under zk_lock.root: %s",
						 zerror(rc))));
}

/*
 * A clean stop's tombstone, whose session is gone, once listed here for
 * CLOSED_KEEP_MS: delete it (every connected cluster has listed it by then;
 * one that lists only later sees the session gone without it, and delays).
 */
static void
sweep_closed(const struct String_vector *children, const int64 *live, int nlive)
{
	int			n;
	int64	   *ids = parse_listing(children, CHILD_CLOSED, &n);
	int64	   *since = MemoryContextAlloc(TopMemoryContext, Max(n, 1) * sizeof(int64));
	int64		now = zkl_mono_now();
	int			i;

	sweep_at = 0;
	for (i = 0; i < n; i++)
	{
		int64	   *was = closed ? bsearch(&ids[i], closed, nclosed, sizeof(int64), cmp_session) : NULL;
		int64		due;
		char		path[ZKL_PATH_LEN];

		since[i] = was ? closed_since[was - closed] : now;
		due = since[i] + (int64) CLOSED_KEEP_MS * 1000;
		if (known_has(live, nlive, ids[i]) || now < due)
		{
			/* no listing may come for long: ask for one when it is due */
			if (sweep_at == 0 || due < sweep_at)
				sweep_at = Max(due, now + (int64) CLOSED_KEEP_MS * 1000 / 4);
			continue;
		}
		snprintf(path, sizeof(path), "%s/" SESSIONS_DIR "/%016llx" CLOSED_SUFFIX, for_root,
				 (unsigned long long) ids[i]);
		(void) zoo_adelete(zkc_handle(), path, -1, swept, NULL);
	}
	if (closed)
	{
		pfree(closed);
		pfree(closed_since);
	}
	closed = ids;
	closed_since = since;
	nclosed = n;
}

/*
 * A listing of the sessions.  One that was known and is gone, without a
 * tombstone, died (or was closed while its holders live): pause.  So does
 * the first listing, which cannot tell what died just before it, and one
 * after which the list changed more often than the difference shows (the
 * sessions node's cversion counts its children's changes): a session that
 * came and went between two listings may have held a lock.
 */
static void
sessions_listed(int rc, const struct String_vector *children, const struct Stat *stat,
				const void *ctx)
{
	int64	   *now_known;
	int64	   *now_dead;
	int			n;
	int			nnow_dead;
	bool		died;
	ZklListing	before;
	ZklListing	after;

	if ((uintptr_t) ctx != gen)
		return;
	list_in_flight = false;
	if (rc != ZOK)
	{
		list_due = true;		/* still paused meanwhile */
		presence_due |= rc == ZNONODE;	/* the sessions' node is missing */
		failed(rc, "list the sessions");
		return;
	}
	now_known = parse_listing(children, CHILD_LIVE, &n);
	now_dead = parse_listing(children, CHILD_TOMBSTONE, &nnow_dead);
	sweep_closed(children, now_known, n);
	before.live = known;
	before.nlive = nknown;
	before.dead = dead;
	before.ndead = ndead;
	before.cversion = last_cversion;
	after.live = now_known;
	after.nlive = n;
	after.dead = now_dead;
	after.ndead = nnow_dead;
	after.cversion = stat->cversion;
	died = zld_died(listed ? &before : NULL, &after);
	last_cversion = stat->cversion;
	if (dead)
		pfree(dead);
	dead = now_dead;
	ndead = nnow_dead;
	if (died)
		pause_for_delay();
	if (died && listed)
		ereport(LOG,
				(errmsg("zk_lock: a ZooKeeper session that may have held locks ended; no lock is granted for zk_lock.lock_delay (%d ms)",
						zkl_effective_lock_delay())));
	if (known)
		pfree(known);
	known = now_known;
	nknown = n;
	/* our own presence node must be there before we grant anything */
	if (known_has(known, nknown, for_session))
	{
		listed = true;
		last_logged = ZOK;
		stale = list_due;		/* the watch may have fired meanwhile */
	}
	else
	{
		presence_due = true;	/* its create failed: again, then list again */
		next_try = zkl_mono_now() + RETRY_MS * 1000;
	}
}

static void
presence_created(int rc, const char *value, const void *ctx)
{
	if ((uintptr_t) ctx != gen || rc == ZOK || rc == ZNODEEXISTS)
		return;
	presence_due = true;
	failed(rc, "create the session's presence node");
}

/* Our presence node (and the path to it), then a listing behind it. */
static void
send_presence(void)
{
	char		dir[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN];

	sessions_path(dir);
	zkc_create_persistent(dir);
	snprintf(path, sizeof(path), "%s/%016llx", dir, (unsigned long long) for_session);
	zoo_acreate(zkc_handle(), path, NULL, -1, zkc_acl(), ZOO_EPHEMERAL, presence_created,
				(const void *) (uintptr_t) gen);
	presence_due = false;
	list_due = true;
}

/*
 * Each loop turn, while connected: set up this session's presence node under
 * the current root (again after a new session or a root reload, blind until
 * listed: clusters sharing locks switch roots together, drained), retry what
 * failed, and list the sessions whenever the watch fired.
 */
void
zkl_presence_tend(void)
{
	int64		session = zkl_shared->t.session_id;
	const char *root = zkl_shared->t.roots[zkl_shared->t.cur_root];
	char		dir[ZKL_PATH_LEN];

	if (zkc_handle() == NULL || zkl_shared->t.conn_state != ZKC_CONNECTED || session == 0)
		return;
	if (session != for_session || strcmp(root, for_root) != 0)
	{
		gen++;
		for_session = session;
		strlcpy(for_root, root, sizeof(for_root));
		listed = false;
		stale = false;
		list_in_flight = false;
		presence_due = true;
		next_try = 0;
		last_cversion = -1;
		pause_for_delay();
	}
	if (zkl_mono_now() < next_try)
		return;
	if (sweep_at != 0 && zkl_mono_now() >= sweep_at)
	{
		sweep_at = 0;
		list_due = true;		/* a tombstone to sweep: the listing does it */
	}
	if (presence_due)
		send_presence();
	if (list_due && !list_in_flight)
	{
		sessions_path(dir);
		list_due = false;
		if (zoo_awget_children2(zkc_handle(), dir, sessions_watch, (void *) (uintptr_t) gen,
								sessions_listed, (const void *) (uintptr_t) gen) == ZOK)
			list_in_flight = true;
		else
			list_due = true;
	}
}

/* A new handle: calls in flight on the old one will not be answered. */
void
zkl_presence_reset(void)
{
	gen++;
	for_session = 0;
	listed = false;
	list_in_flight = false;
	if (mark == ZKL_MARK_PENDING && mark_session != 0)
		mark = ZKL_MARK_FAILED;
}

/*
 * A new connection of the same session: events may have been lost with the
 * old one, so the list is out of date until read again through this one.
 */
void
zkl_presence_reconnected(void)
{
	stale = true;
	list_due = true;
}

/* This session's presence node exists and the sessions were listed. */
bool
zkl_presence_listed(void)
{
	return listed;
}

/* The reply to the tombstone asked for last (ctx: its mark_gen), or to an older one. */
static void
tombstone_created(int rc, const char *value, const void *ctx)
{
	if (mark == ZKL_MARK_PENDING && (uintptr_t) ctx == mark_gen)
		mark = (rc == ZOK || rc == ZNODEEXISTS) ? ZKL_MARK_DONE : ZKL_MARK_FAILED;
}

/* Create session's tombstone, once: returns how far that got. */
static ZklMarkState
send_mark(int64 session, const char *suffix, int flags)
{
	char		dir[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN];

	if (mark_session == session)
		return mark;
	mark_session = session;
	mark = ZKL_MARK_PENDING;
	mark_gen++;
	sessions_path(dir);
	snprintf(path, sizeof(path), "%s/%016llx%s", dir, (unsigned long long) session, suffix);
	if (zoo_acreate(zkc_handle(), path, NULL, -1, zkc_acl(), flags, tombstone_created,
					(const void *) (uintptr_t) mark_gen) != ZOK)
		mark = ZKL_MARK_FAILED;
	return mark;
}

/*
 * Say that a session's holders are all dead before closing it: a tombstone
 * owned by our session.
 */
ZklMarkState
zkl_presence_mark_dead(int64 session)
{
	return send_mark(session, DEAD_SUFFIX, ZOO_EPHEMERAL);
}

/*
 * A clean stop: the caller has seen every node of our session deleted.  A
 * tombstone that outlives the session says its end needs no lock-delay.
 */
ZklMarkState
zkl_presence_mark_closed(void)
{
	if (!listed)
		return ZKL_MARK_FAILED;	/* the root of our presence node is not known to be set up */
	return send_mark(for_session, CLOSED_SUFFIX, ZOO_PERSISTENT);
}

/*
 * Whether grants must wait, and until when (zkl_mono_now; a time to look
 * again: while the listing is missing or out of date, that is a guess).
 */
bool
zkl_grants_paused(int64 now, int64 *until)
{
	return zld_paused(listed, stale, paused_until, now, STALE_POLL_MS * 1000, until);
}
