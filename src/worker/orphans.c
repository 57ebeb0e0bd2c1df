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
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shmem.h"
#include "zk_client.h"
#include "orphans.h"
#include "looks.h"

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

/*
 * This file's process memory, in one place: the worker has one copy, the
 * simulator one per simulated cluster (it points zw_orphans at each).
 */
struct ZwOrphans
{
	char		suspects[MAX_SUSPECTS][ZKL_PATH_LEN];
	int			nsuspects;
	ZlkLooks	looks;			/* the looks (below); their rules: looks.c */
};

/* Whether some request of this cluster carries the uuid of node `name`.  Caller holds the lock. */
static bool
uuid_is_live(const char *name)
{
	int			j;

	for (j = 0; j < zkl_shared->t.nused; j++)
		if (zkl_shared->t.slots[j].zstate != ZKS_FREE &&
			zc_recipe_name_has_uuid(name, zkl_shared->t.slots[j].uuid))
			return true;
	return false;
}

/* Whether a node that blocks a waiter may be one no request owns.  Caller holds the lock. */
bool
zw_may_be_orphan(const char *name)
{
	return zc_recipe_name_has_sysid(name, GetSystemIdentifier()) && !uuid_is_live(name);
}

/* Caller holds the lock. */
void
zw_suspect_blocker(const ZklSlot *s, const char *name)
{
	int			i;
	char		path[ZKL_PATH_LEN];

	if (zw_orphans->nsuspects >= MAX_SUSPECTS || !zw_may_be_orphan(name))
		return;
	zc_core_child_path(&zkl_shared->t, s, name, path);
	for (i = 0; i < zw_orphans->nsuspects; i++)
		if (strcmp(zw_orphans->suspects[i], path) == 0)
			return;
	strlcpy(zw_orphans->suspects[zw_orphans->nsuspects++], path, ZKL_PATH_LEN);
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
		zw_delete_stray(path, "no request of this cluster owns it");
	pfree(path);
}

/* Send what zw_suspect_blocker() found; without the lock. */
void
zw_check_suspects(void)
{
	int			i;

	for (i = 0; i < zw_orphans->nsuspects; i++)
	{
		char	   *path = MemoryContextStrdup(TopMemoryContext, zw_orphans->suspects[i]);

		if (zw_client_exists(path, suspect_stat_done, path) != ZOK)
			pfree(path);
	}
	zw_orphans->nsuspects = 0;
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
 * look per node, at most ZLK_MAX (more are not kept: the suspects above
 * still find a node that blocks a waiter of ours).  Process memory: a worker
 * that dies forgets them, and the suspects are what is left then.  The
 * looks' rules are looks.c's (the simulator runs them too).
 */
static bool send_look(void *arg, ZlkLook *l);

static void *
looks_alloc(void *arg, size_t size)
{
	return MemoryContextAllocZero(TopMemoryContext, size);
}

static void
looks_release(void *arg, void *p)
{
	pfree(p);
}

static const ZlkHost looks_host = {NULL, looks_alloc, looks_release, send_look};

static ZwOrphans own = {.looks = {&looks_host}};
ZwOrphans  *zw_orphans = &own;

/* A fresh copy of this file's memory, as a new worker process has it. */
ZwOrphans *
zw_orphans_new(void)
{
	ZwOrphans  *o = MemoryContextAllocZero(TopMemoryContext, sizeof(ZwOrphans));

	o->looks.host = &looks_host;
	return o;
}

static int64
our_session(void)
{
	int64		id;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	id = zkl_shared->t.session_id;
	LWLockRelease(zkl_shared->lock);
	return id;
}

/* An answer to look l: settled, or again later (a refusal said once). */
static bool
answered(ZlkLook *l, int rc, const char *what)
{
	char		path[ZKL_PATH_LEN];

	strlcpy(path, l->path, sizeof(path));	/* a settled look is freed */
	switch (zc_looks_answered(&zw_orphans->looks, l, rc, zkl_mono_now()))
	{
		case ZLK_DONE:
			return true;
		case ZLK_AGAIN_SAY:
			ereport(LOG, (errmsg("zk_lock: could not %s %s: %s; trying again", what, path,
								 zw_client_strerror(rc))));
			break;
		case ZLK_AGAIN:
			break;
	}
	return false;
}

static void
stray_deleted(int rc, const void *ctx)
{
	(void) answered((ZlkLook *) ctx, rc, "delete the stray lock node");
}

/* Delete a node of ours no request owns; why, if given, goes to the server log. */
void
zw_delete_stray(const char *path, const char *why)
{
	ZlkLook    *l = zc_looks_new(&zw_orphans->looks, path, "", our_session());

	if (l == NULL)
		return;					/* its delete is under way */
	if (why != NULL)
		ereport(LOG, (errmsg("zk_lock: deleting lock node %s: %s", path, why)));
	zc_looks_send(&zw_orphans->looks, l, zkl_mono_now());
}

/* Caller holds the lock. */
void
zw_remember_ghost(const ZklSlot *s)
{
	char		key_path[ZKL_PATH_LEN];
	ZlkLook    *l;

	zc_core_key_path(&zkl_shared->t, s, key_path);
	l = zc_looks_new(&zw_orphans->looks, key_path, s->uuid, zkl_shared->t.session_id);
	if (l != NULL)
		zc_looks_again(l, zkl_mono_now());
}

static void
ghost_children_done(int rc, const struct String_vector *strings, const void *data)
{
	ZlkLook    *l = (ZlkLook *) data;
	char		key_path[ZKL_PATH_LEN];
	char		uuid[ZKL_UUID_LEN + 1];
	int			i;

	strlcpy(key_path, l->path, sizeof(key_path));
	strlcpy(uuid, l->uuid, sizeof(uuid));
	if (!answered(l, rc, "list the lock queue"))
		return;
	for (i = 0; rc == ZOK && i < strings->count; i++)
	{
		if (zc_recipe_name_has_uuid(strings->data[i], uuid))
		{
			char		path[ZKL_PATH_LEN];

			snprintf(path, sizeof(path), "%s/%s", key_path, strings->data[i]);
			zw_delete_stray(path, "its create was given up for lost");
		}
	}
}

/* Send what look l asks (looks.c's host): a stray's delete, or a ghost's listing after a sync. */
static bool
send_look(void *arg, ZlkLook *l)
{
	if (l->stray)
		return zw_client_delete(l->path, -1, stray_deleted, l) == ZOK;
	/* after a sync, as for the first lookup (worker.c): a lagging server misses it */
	return zw_client_sync(l->path, zw_client_sync_answered, NULL) == ZOK &&
		zw_client_children(l->path, ghost_children_done, l) == ZOK;
}

/* Send the looks that are due; returns ms until the next one, or -1. */
long
zw_send_looks(void)
{
	int64		next;

	if (zw_orphans->looks.n == 0)
		return -1;				/* the usual case, every loop turn */
	if (!zw_client_connected())
		return ZKC_REOPEN_DELAY_MS;
	next = zc_looks_tend(&zw_orphans->looks, zkl_mono_now(), our_session());
	return next < 0 ? -1 : (long) ((next + 999) / 1000);
}
