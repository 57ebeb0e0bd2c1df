/*
 * orphans.c — nodes of this cluster's session that no request owns.
 *
 * Such a node blocks its key for as long as the session lives.  Two things
 * leave one behind, and each has its own check:
 *   - a create whose reply was lost and that a lookup by uuid did not find
 *     can still be applied after that lookup (a "ghost"): its key is listed
 *     once more a little later and a node with that request's uuid deleted;
 *   - anything else: a waiter that has waited long and is blocked by such a
 *     node ("suspect") deletes it once its owner is seen to be our session.
 * Part of the worker: runs in its process only.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shmem.h"
#include "zk_client.h"
#include "orphans.h"

/*
 * Nodes of this cluster's session that no slot knows of would block their
 * key for as long as the session lives.  A waiter that has waited long and
 * is blocked by a node with our system identifier whose uuid no slot
 * carries suspects it.  Only the blocking node is looked at: a node that
 * blocks nobody yet does no harm, and becomes some waiter's blocker before
 * it can.  It is deleted only after an exists() shows our session owns it
 * (a promoted standby shares our system identifier).
 */
#define MAX_SUSPECTS 8
static char suspects[MAX_SUSPECTS][ZKL_PATH_LEN];
static int	nsuspects = 0;

/* Whether some request of this cluster carries the uuid of node `name`.  Caller holds the lock. */
static bool
uuid_is_live(const char *name)
{
	int			j;

	for (j = 0; j < zkl_shared->t.nused; j++)
		if (zkl_shared->t.slots[j].zstate != ZKS_FREE &&
			zkr_name_has_uuid(name, zkl_shared->t.slots[j].uuid))
			return true;
	return false;
}

/* Whether a node that blocks a waiter may be one no request owns.  Caller holds the lock. */
bool
zkl_may_be_orphan(const char *name)
{
	return zkr_name_has_sysid(name, GetSystemIdentifier()) && !uuid_is_live(name);
}

/* Caller holds the lock. */
void
zkl_suspect_blocker(const ZklSlot *s, const char *name)
{
	int			i;
	char		path[ZKL_PATH_LEN];

	if (nsuspects >= MAX_SUSPECTS || !zkl_may_be_orphan(name))
		return;
	zcore_child_path(&zkl_shared->t, s, name, path);
	for (i = 0; i < nsuspects; i++)
		if (strcmp(suspects[i], path) == 0)
			return;
	strlcpy(suspects[nsuspects++], path, ZKL_PATH_LEN);
}

static void
suspect_stat_done(int rc, const struct Stat *stat, const void *data)
{
	char	   *path = (char *) data;
	bool		ours;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	ours = rc == ZOK && stat->ephemeralOwner == zkl_shared->t.session_id;
	LWLockRelease(zkl_shared->lock);
	if (ours)
		zkl_delete_stray(path, "no request of this cluster owns it");
	pfree(path);
}

/* Send what zkl_suspect_blocker() found; without the lock. */
void
zkl_check_suspects(void)
{
	int			i;

	for (i = 0; i < nsuspects; i++)
	{
		char	   *path = MemoryContextStrdup(TopMemoryContext, suspects[i]);

		if (zoo_aexists(zkc_handle(), path, 0, suspect_stat_done, path) != ZOK)
			pfree(path);
	}
	nsuspects = 0;
}

/*
 * A create whose reply was lost, and whose node a later listing did not
 * show, can still be applied after that listing: the server handles a
 * session's old and new connections on different threads.  Its node would
 * block the key for as long as the session lives, so the key is listed once
 * more a little later and a node with that request's uuid is deleted.
 *
 * Both that listing and a stray node's delete are done again a little later
 * until an answer says how things stand: a lost reply, or a refusal (an
 * operator's ACL on the key node), says nothing.  Each is for the session
 * that made the node: once it ends, so do its nodes and the looking.  One
 * look per node, at most MAX_LOOKS (more are not kept: the suspects above
 * still find a node that blocks a waiter of ours).  Process memory: a worker
 * that dies forgets them, and the suspects are what is left then.
 */
#define LOOK_DELAY_MS	1000
#define MAX_LOOKS		1024

typedef struct Look
{
	int64		due;			/* zkl_mono_now() */
	int64		session;		/* whose node it is */
	bool		stray;			/* delete `path`; else list the key `path` for `uuid` */
	bool		in_flight;		/* sent, not answered yet */
	bool		said;			/* a refusal was logged */
	char		uuid[ZKL_UUID_LEN + 1];
	char		path[ZKL_PATH_LEN];
} Look;

static List *looks = NIL;		/* waiting for their due time, or in flight */

static int64
our_session(void)
{
	int64		id;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	id = zkl_shared->t.session_id;
	LWLockRelease(zkl_shared->lock);
	return id;
}

/*
 * A look at path (for uuid: a ghost's; "": a stray's delete), or NULL when
 * the same one waits already or too many are under way.
 */
static Look *
new_look(const char *path, const char *uuid, int64 session)
{
	MemoryContext old;
	ListCell   *lc;
	Look	   *l;

	foreach(lc, looks)
	{
		l = (Look *) lfirst(lc);
		if (strcmp(l->path, path) == 0 && strcmp(l->uuid, uuid) == 0)
			return NULL;
	}
	if (list_length(looks) >= MAX_LOOKS)
		return NULL;
	l = MemoryContextAllocZero(TopMemoryContext, sizeof(Look));
	l->stray = uuid[0] == '\0';
	l->session = session;
	strlcpy(l->path, path, sizeof(l->path));
	strlcpy(l->uuid, uuid, sizeof(l->uuid));
	old = MemoryContextSwitchTo(TopMemoryContext);
	looks = lappend(looks, l);
	MemoryContextSwitchTo(old);
	return l;
}

static void
end_look(Look *l)
{
	looks = list_delete_ptr(looks, l);
	pfree(l);
}

static void
look_again(Look *l)
{
	l->in_flight = false;
	l->due = zkl_mono_now() + LOOK_DELAY_MS * 1000;
}

/* Whether an answer settles it: done, or gone with the session. */
static bool
settled(int rc)
{
	return rc == ZOK || rc == ZNONODE || rc == ZSESSIONEXPIRED || rc == ZCLOSING ||
		rc == ZINVALIDSTATE;
}

/* A refusal is worth a word, once per node; a lost reply is not. */
static void
say_refused(Look *l, int rc, const char *what)
{
	if (l->said || zcore_outcome_unknown(rc))
		return;
	l->said = true;
	ereport(LOG, (errmsg("zk_lock: could not %s %s: %s; trying again", what, l->path, zerror(rc))));
}

static void
stray_deleted(int rc, const void *ctx)
{
	Look	   *l = (Look *) ctx;

	if (settled(rc))
	{
		end_look(l);
		return;
	}
	say_refused(l, rc, "delete the stray lock node");
	look_again(l);
}

static void
send_stray(Look *l)
{
	l->in_flight = true;
	if (zoo_adelete(zkc_handle(), l->path, -1, stray_deleted, l) != ZOK)
		look_again(l);
}

/* Delete a node of ours no request owns; why, if given, goes to the server log. */
void
zkl_delete_stray(const char *path, const char *why)
{
	Look	   *l = new_look(path, "", our_session());

	if (l == NULL)
		return;					/* its delete is under way */
	if (why != NULL)
		ereport(LOG, (errmsg("zk_lock: deleting lock node %s: %s", path, why)));
	send_stray(l);
}

/* Caller holds the lock. */
void
zkl_remember_ghost(const ZklSlot *s)
{
	char		key_path[ZKL_PATH_LEN];
	Look	   *l;

	zcore_key_path(&zkl_shared->t, s, key_path);
	l = new_look(key_path, s->uuid, zkl_shared->t.session_id);
	if (l != NULL)
		look_again(l);
}

static void
ghost_children_done(int rc, const struct String_vector *strings, const void *data)
{
	Look	   *l = (Look *) data;
	int			i;

	if (!settled(rc))
	{
		say_refused(l, rc, "list the lock queue");
		look_again(l);
		return;
	}
	for (i = 0; rc == ZOK && i < strings->count; i++)
	{
		if (zkr_name_has_uuid(strings->data[i], l->uuid))
		{
			char		path[ZKL_PATH_LEN];

			snprintf(path, sizeof(path), "%s/%s", l->path, strings->data[i]);
			zkl_delete_stray(path, "its create was given up for lost");
		}
	}
	end_look(l);
}

/* Send the looks that are due; returns ms until the next one, or -1. */
long
zkl_send_looks(void)
{
	int64		now;
	int64		session;
	long		next_ms = -1;
	ListCell   *lc;

	if (looks == NIL)
		return -1;				/* the usual case, every loop turn */
	now = zkl_mono_now();
	session = our_session();
	if (zkc_handle() == NULL || zoo_state(zkc_handle()) != ZOO_CONNECTED_STATE)
		return ZKC_REOPEN_DELAY_MS;
	foreach(lc, looks)
	{
		Look	   *l = (Look *) lfirst(lc);
		long		left = (long) ((l->due - now) / 1000);

		if (l->in_flight)
			continue;
		if (l->session != session)
		{
			looks = foreach_delete_current(looks, lc);	/* its nodes went with its session */
			pfree(l);
			continue;
		}
		if (left > 0)
		{
			next_ms = (next_ms < 0 || left < next_ms) ? left : next_ms;
			continue;
		}
		if (l->stray)
			send_stray(l);
		/* after a sync, as for the first lookup (worker.c): a lagging server misses it */
		else
		{
			l->in_flight = true;
			if (zoo_async(zkc_handle(), l->path, zkc_sync_answered, NULL) != ZOK ||
				zoo_aget_children(zkc_handle(), l->path, 0, ghost_children_done, l) != ZOK)
				look_again(l);
		}
	}
	return next_ms;
}
