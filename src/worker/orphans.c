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

#include "zk_lock.h"
#include "zk_client.h"
#include "orphans.h"

/* Completion of a stray node's delete: only a failure is worth a word. */
void
zkl_orphan_deleted(int rc, const void *ctx)
{
	if (rc != ZOK && rc != ZNONODE)
		ereport(LOG, (errmsg("zk_lock: could not delete a stray lock node: %s", zerror(rc))));
}

/* Delete a node no request owns, saying why in the server log. */
static void
delete_orphan(const char *path, const char *why)
{
	ereport(LOG, (errmsg("zk_lock: deleting lock node %s: %s", path, why)));
	zoo_adelete(zkc_handle(), path, -1, zkl_orphan_deleted, NULL);
}

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
		delete_orphan(path, "no request of this cluster owns it");
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
 */
#define GHOST_DELAY_MS	1000

typedef struct Ghost
{
	TimestampTz due;
	char		uuid[ZKL_UUID_LEN + 1];
	char		key_path[ZKL_PATH_LEN];
} Ghost;

static List *ghosts = NIL;		/* waiting for their due time */

/* Caller holds the lock. */
void
zkl_remember_ghost(const ZklSlot *s)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	Ghost	   *g = palloc(sizeof(Ghost));

	g->due = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), GHOST_DELAY_MS);
	strlcpy(g->uuid, s->uuid, sizeof(g->uuid));
	zcore_key_path(&zkl_shared->t, s, g->key_path);
	ghosts = lappend(ghosts, g);
	MemoryContextSwitchTo(old);
}

static void
ghost_children_done(int rc, const struct String_vector *strings, const void *data)
{
	Ghost	   *g = (Ghost *) data;
	int			i;

	if (zcore_outcome_unknown(rc))
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		ghosts = lappend(ghosts, g);	/* again once reconnected */
		MemoryContextSwitchTo(old);
		return;
	}
	for (i = 0; rc == ZOK && i < strings->count; i++)
	{
		if (zkr_name_has_uuid(strings->data[i], g->uuid))
		{
			char		path[ZKL_PATH_LEN];

			snprintf(path, sizeof(path), "%s/%s", g->key_path, strings->data[i]);
			delete_orphan(path, "its create was given up for lost");
		}
	}
	pfree(g);
}

/* List the keys of ghosts that are due; returns ms until the next one, or -1. */
long
zkl_send_ghosts(void)
{
	TimestampTz now;
	long		next_ms = -1;
	ListCell   *lc;

	if (ghosts == NIL)
		return -1;				/* the usual case, every loop turn */
	now = GetCurrentTimestamp();
	if (zkc_handle() == NULL || zoo_state(zkc_handle()) != ZOO_CONNECTED_STATE)
		return ZKC_REOPEN_DELAY_MS;
	foreach(lc, ghosts)
	{
		Ghost	   *g = (Ghost *) lfirst(lc);
		long		left = TimestampDifferenceMilliseconds(now, g->due);

		if (left > 0)
		{
			next_ms = (next_ms < 0 || left < next_ms) ? left : next_ms;
			continue;
		}
		ghosts = foreach_delete_current(ghosts, lc);
		/* after a sync, as for the first lookup (worker.c): a lagging server misses it */
		(void) zoo_async(zkc_handle(), g->key_path, zkc_sync_answered, NULL);
		if (zoo_aget_children(zkc_handle(), g->key_path, 0, ghost_children_done, g) != ZOK)
			pfree(g);
	}
	return next_ms;
}
