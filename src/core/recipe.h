/*
 * recipe.h — the ZooKeeper lock recipe as pure decisions.
 *
 * Lock nodes are children of one key node, named
 *     <mode>-<uuid>-<system identifier>-<pid>.r-<10-digit sequence>
 * where mode is the letter of a kind (kinds.h).  An upgrade (a backend
 * that holds the key shared asks it exclusive) names the sequence of the
 * shared node it upgrades instead of "r":
 *     x-<uuid>-<system identifier>-<pid>.u<that node's sequence>-<sequence>
 * and every cluster orders it right behind that node (zc_recipe_collect).
 * Both marks say that the node's cluster lists its queue again before a
 * grant where an upgrade may have come to stand ahead, and honours those
 * places (upgrade_passes in recipe.c relies on it); an earlier version's
 * nodes carry neither (<pid>-<sequence>) and are never passed that way.
 * A counted kind's nodes (a semaphore's, under a key of their own key
 * space) carry the request's holders after the pid:
 *     c-<uuid>-<system identifier>-<pid>.<holders>-<10-digit sequence>
 * so that every cluster sees what each live request asked for without a
 * read per node.  Nothing here does I/O.
 */
#ifndef ZK_LOCK_RECIPE_H
#define ZK_LOCK_RECIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kinds.h"

/* Most holders a semaphore may have (ten digits fit the node name). */
#define ZKL_MAX_HOLDERS		1000000

#define ZKL_UUID_LEN	36

typedef struct ZkrChild
{
	const char *name;			/* points into the caller's string */
	char		mode;
	int32_t		seq;			/* ZooKeeper's signed 32-bit counter */
	int32_t		holders;		/* a semaphore node's; 0 for a lock node */
	bool		relists;		/* its cluster follows upgrades' places (see above) */
	bool		upgrade;		/* it names the shared node it upgrades: */
	int32_t		anchor;			/* that node's sequence */
	bool		placed;			/* that node is listed ahead: this one stands right behind it */
} ZkrChild;

typedef enum ZkrVerdict
{
	ZKR_ABSENT,					/* our own node is not among the children */
	ZKR_GRANT,					/* nothing before us conflicts */
	ZKR_WAIT,					/* watch children[*watch] and decide again */
	ZKR_MISMATCH				/* semaphore: an older live request has other holders */
} ZkrVerdict;

/* Parse one child name; false for names that are not lock nodes. */
extern bool zc_recipe_parse_child(const char *name, ZkrChild *out);

/* Does this lock node name carry the given request uuid? */
extern bool zc_recipe_name_has_uuid(const char *name, const char *uuid);

/* Whether two lock nodes belong to one backend (same system identifier and pid). */
extern bool zc_recipe_same_owner(const char *a, const char *b);

/* The request uuid a lock node's name carries; false if it is not one. */
extern bool zc_recipe_uuid_of(const char *name, char out[ZKL_UUID_LEN + 1]);

/* Whether a node name carries this system identifier (made by this cluster). */
extern bool zc_recipe_name_has_sysid(const char *name, uint64_t sysid);

/*
 * Order of two sequence numbers (<0, 0, >0) as serial numbers: the counter
 * wraps from 2^31 - 1 to -2^31, and a queue spans far less than 2^31
 * creates, so the difference taken modulo 2^32 says which came first.
 */
extern int	zc_recipe_seq_cmp(int32_t a, int32_t b);

/*
 * Parse and sort the given names into out, skipping names that are not lock
 * nodes; returns how many were kept.  The order is the queue's: by
 * sequence (as a serial number), except that an upgrade whose shared node
 * is listed stands right behind that node (placed), so that a waiter
 * queued behind the shared node counts the upgrade as ahead of it, also
 * when the upgrade was made after it.  The upgrade itself waits for the
 * nodes made before it (zc_recipe_decide).
 */
extern int	zc_recipe_collect(const char *const *names, int n, ZkrChild *out);

/*
 * What the deciding backend's cluster knows beyond the listing.  Nodes whose
 * uuid is in mine[] belong to the backend and never block it; held[k] (NULL:
 * none) says mine[k] is granted.  waits[] names nodes of other backends of
 * the same cluster whose requests are known not to be granted (the worker's
 * own table says so, and it grants nothing beside a conflicting local
 * holder: core.c); NULL when not known.
 */
typedef struct ZkrBackend
{
	const char *const *mine;
	const bool *held;
	int			nmine;
	const char *const *waits;
	int			nwaits;
	/*
	 * Whether the node of this name is an upgrade of this cluster not
	 * granted (NULL: none known): it stands where it was made for the
	 * backend's request, as core's upgrade stands behind a request that
	 * came first, since this cluster grants nothing beside a conflicting
	 * local holder (core.c) and an upgrade passes only the local requests
	 * known to wait.
	 */
	bool		(*pending) (void *arg, const char *name);
	void	   *arg;
} ZkrBackend;

/*
 * Decide for the request whose node carries own_uuid, given the sorted
 * children.  An exclusive request waits for its immediate predecessor; a
 * shared one only for the last exclusive node before it.  Only that one
 * node is watched, so a release wakes exactly one waiter (no herd).
 * The backend's own nodes never block it, and neither does a node queued
 * behind a granted node of the backend that waits for the backend: one it
 * conflicts with, or one of this cluster known to wait (core's rule: a
 * holder's further requests on its key, in either mode, never wait for the
 * holder's own waiters; so a shared holder's upgrade goes ahead of the local
 * waiters it holds up, whatever they wait for).  A placed upgrade waits for
 * every node made before it that may hold the key: it passes, besides, a
 * node of any cluster that relists and stands behind a node of another
 * backend, made after the upgraded one and before it, that conflicts with
 * both: such a node waits for that one, which waits for our shared node,
 * and once that node goes it finds the upgrade ahead of it.
 */
extern ZkrVerdict zc_recipe_decide(const ZkrChild *children, int n,
								   const char *own_uuid, const ZkrBackend *b,
								   int *own, int *watch);

/*
 * Whether children[i] blocks a request of backend b in the given mode: the
 * one test zc_recipe_decide waits on, for the deadlock searches (deadlock.c,
 * gwait_doc.c) to see exactly the edges the recipe waits on.  n: how many
 * children stand ahead of the request.
 */
extern bool zc_recipe_blocks(const ZkrChild *children, int n, int i, char mode,
							 const ZkrBackend *b);

/*
 * The rule behind both: a request of a backend that holds a node in
 * held_mode passes a node of the given mode queued behind it when that node
 * waits for the backend: it conflicts with the held node, or it is known to
 * wait (waits: a node of this cluster not granted).  The deadlock searches
 * ask it of the slot table (deadlock.c, gwait_doc.c).
 */
extern bool zc_recipe_passes(char held_mode, char mode, bool waits);

/*
 * After ZKR_WAIT: whether the watched node is the only one ahead of ours
 * that blocks it.  Nodes made earlier can only go, so once that one is
 * deleted the request holds the lock, and no second read of the queue is
 * needed to know it: unless an upgrade may come to stand ahead
 * (zc_recipe_upgrade_may_come).
 */
extern bool zc_recipe_sole_blocker(const ZkrChild *children, int own, int watch,
								   const ZkrBackend *b);

/*
 * Whether an upgrade made later may stand ahead of children[own] (it is
 * ordered behind the shared node it upgrades): another backend's shared
 * node stands ahead, other than the watched one (which stays while its
 * upgrade lives).  Then the queue is read again before a grant.  An
 * upgrade itself always reads it again: what it passed may change.
 */
extern bool zc_recipe_upgrade_may_come(const ZkrChild *children, int own, int watch,
									   const ZkrBackend *b);

/*
 * Whether an upgrade placed ahead of children[watch] (behind its shared
 * node) was made after the watched node and before ours: once its shared
 * node goes, it stands by its own sequence, between the two, though
 * nothing new was made.  Not the backend's own (they never block it).
 */
extern bool zc_recipe_upgrade_may_fall(const ZkrChild *children, int own, int watch,
									   const ZkrBackend *b);

/*
 * Whether children[i] stands ahead of children[own] in own's queue: before
 * it in the sorted order, or, for a placed upgrade (which waits for what
 * was made before it), made before it.
 */
extern bool zc_recipe_ahead(const ZkrChild *children, int own, int i);

/*
 * Whether children[i] waits behind children[own]: it stands after it in
 * the sorted order, or it was made after it (an upgrade placed ahead of
 * own waits for own all the same).
 */
extern bool zc_recipe_behind(const ZkrChild *children, int own, int i);

/*
 * How many nodes ahead of children[own] (zc_recipe_ahead) are not the
 * backend's own.  A node granted with none ahead holds the key alone (in
 * its mode); one granted past other clusters' waiters (see
 * zc_recipe_decide) does not.
 */
extern int	zc_recipe_foreign_ahead(const ZkrChild *children, int n, int own, const ZkrBackend *b);

/*
 * How many nodes of a kind that holds its key alone (zc_kind_alone) stand ahead
 * of children[own], the backend's own included.  A shared node granted with
 * none ahead shares the key with shared holders only, so other local
 * readers may join it (cohort.c).
 */
extern int	zc_recipe_alone_ahead(const ZkrChild *children, int n, int own);

/*
 * A semaphore request (children of a semaphore key): granted while fewer
 * than its `holders` nodes stand ahead of it.  Nodes ahead only go, so a
 * listing that is out of date can only hold a grant back, never give one
 * too many.  Every node ahead must have the request's holders, or it fails
 * (ZKR_MISMATCH, *other = the first that differs).  There is no one
 * node to watch: any node ahead may go first, so the caller watches the key's
 * children (one watch per cluster and key: core.c).
 */
extern ZkrVerdict zc_recipe_decide_semaphore(const ZkrChild *children, int n,
									   const char *own_uuid, int *own, int *other);

/*
 * The fencing token of a holder: its node's czxid times ZKL_HANDOVER_MAX,
 * plus the local hand-overs of that node before this holder (cohort.c).
 * czxids grow across the ensemble, so every hand-over of a node outranks
 * the holders before it, and a node created later outranks them all.
 * Returns -1 when czxid is too large for the scale (an epoch of 2^19).
 */
#define ZKL_TOKEN_SHIFT		12
#define ZKL_HANDOVER_MAX	(1 << ZKL_TOKEN_SHIFT)	/* holders of one node */
extern int64_t zc_recipe_fencing_token(int64_t czxid, int handed);

/* Format a request uuid (36 chars + NUL) from 16 random bytes (RFC 4122 v4). */
extern void zc_recipe_format_uuid(const unsigned char bytes[16], char out[ZKL_UUID_LEN + 1]);

/*
 * Node name prefix for a request; ZooKeeper appends the sequence.  holders:
 * a semaphore request's (mode 'c'), 0 for a lock.  anchor: for an upgrade,
 * the sequence of the shared node it upgrades; NULL otherwise.
 */
extern int	zc_recipe_node_prefix(char mode, const char *uuid, uint64_t sysid, int pid,
							int holders, const int32_t *anchor, char *out, size_t outlen);

#endif
