/*
 * table.h — claiming and releasing slots (backends).
 * Pure: the caller holds the slot-table lock and supplies clock and ids.
 */
#ifndef ZK_LOCK_TABLE_H
#define ZK_LOCK_TABLE_H

#include "slot.h"

/* A new request's identity and settings, from its backend. */
typedef struct ZklRequest
{
	const char *key;			/* encoded */
	char		mode;			/* ZKL_MODE_* */
	int			holders;		/* a semaphore's; 0 for a lock */
	uint64_t	group;			/* a multi-key request's slots share it (0: none) */
	bool		nowait;			/* try-lock */
	uint8_t		scope;			/* ZKL_SCOPE_*: the level it is asked at */
	const char *data;			/* node data */
	int			procno;
	int			pid;
	int64_t		now;			/* wall */
	const char *uuid;			/* a fresh request id */
} ZklRequest;

/* The lowest free slot, or -1 when the table is full. */
extern int	zc_table_find_free(const ZklTable *t);

/* Fill slot idx (free) for the request. */
extern void zc_table_claim(ZklTable *t, int idx, const ZklRequest *r);

/*
 * The owner is done with the slot.  Returns whether the worker must be
 * woken for it: not while it waits for write replies (it plans again on the
 * next one), nor when the slot is freed at once (nothing exists or is under
 * way in ZooKeeper).
 */
extern bool zc_table_abandon(ZklTable *t, ZklSlot *s);

/*
 * Whether slot a's node was created before slot b's, under one key's
 * node: false when the keys or roots differ or a name is unknown or does
 * not parse (the caller then keeps what it would have given up).  Sequence
 * numbers only order nodes under one instance of the key node.
 */
extern bool zc_table_node_before(const ZklTable *t, int a, int b);

/*
 * The two reads an owner may ask of the worker for its own slot, the only
 * changes a backend makes to the worker's `todo` (slot.h): its node's Stat
 * (the fencing token of a node made inside a multi), and at commit a check
 * of its node through the leader (zk_lock.verify_on_commit).  Return
 * whether the worker must be woken for it.
 */
extern bool zc_table_ask_stat(ZklSlot *s);
extern bool zc_table_ask_verify(ZklSlot *s);

/*
 * The slot through which s's backend holds s's key in a kind that others
 * may hold beside it and s's kind conflicts with (s is an upgrade: shared,
 * then exclusive), or -1.
 */
extern int	zc_table_upgraded(const ZklTable *t, const ZklSlot *s);

/* A tag of a node name (never 0), to tell whether a slot's watch changed. */
extern uint64_t zc_table_name_tag(const char *name);

/*
 * The node of s's wait across clusters (gwait_doc.c): its `edge` while it
 * was decided with its present watch (an upgrade over a node other local
 * readers hold too), else its watch.  "": none.
 */
extern const char *zc_table_wait_edge(const ZklSlot *s);

/*
 * The name prefix of s's create (recipe.h), uuid its request's: an
 * upgrade's names the sequence of the node of zc_table_upgraded.  Returns
 * the prefix's length, or -1 if it does not fit.
 */
extern int	zc_table_node_prefix(const ZklTable *t, const ZklSlot *s, const char *uuid, uint64_t sysid,
								 char *out, size_t outlen);

/*
 * The first slot from index `from` on of another backend that holds s's key
 * (lock kinds) in a mode that conflicts with s's, or -1.  No grant to s
 * beside it (core.c): the recipe lets an upgrade pass a local waiter, whose
 * later turn in ZooKeeper's queue then waits for the upgrader, and the
 * deadlock searches count that wait (deadlock.c).
 */
extern int	zc_table_conflicting_holder(const ZklTable *t, const ZklSlot *s, int from);

/*
 * A deadlock's victim (the worker's): keep the steps of the circle s's
 * request is failed to break, for its owner's error DETAIL; and the
 * owner's look: the steps kept for s's request, or NULL (another victim's
 * came since, or none was kept).
 */
extern void zc_table_keep_deadlock(ZklTable *t, const ZklSlot *s, const char *detail);
extern const char *zc_table_deadlock_detail(const ZklTable *t, const ZklSlot *s);

/*
 * What names a session's incarnation for the commit check and local
 * hand-over: its id and the nonce drawn for it (never 0 for a session).
 * ZooKeeper may hand an id out again, after a member's host restarts, even
 * to the same cluster: a lock granted by the id's earlier incarnation must
 * not pass for one of the next (holds.c), nor be handed over in it.
 */
extern int64_t zc_table_session_tag(int64_t session_id, uint64_t nonce);

/*
 * s's node is first in line and nothing holds s back: s is held, and its
 * owner told so unless it was already (the session that grants it before
 * the result, which the owner reads unlocked).  Returns whether the owner
 * was told now: its wake-up is the caller's.
 */
extern bool zc_table_grant(ZklTable *t, ZklSlot *s, int64_t wall);

/* Back to FREE; nused shrinks past trailing free slots. */
extern void zc_table_free(ZklTable *t, ZklSlot *s);

/* The lock-delay in force: longer than every cluster's proof bound (this one's at least). */
extern int	zc_table_lock_delay_ms(int lock_delay_ms, int proof_bound_ms);

#endif
