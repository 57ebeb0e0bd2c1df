/*
 * slot.h — the slot table: one slot per lock request of a backend, and the
 * state the worker shares with backends.  Plain C, no PostgreSQL or
 * ZooKeeper types, so the worker's decisions (core.c) and the backends'
 * claim and release (table.c) run unchanged in the simulator.
 *
 * Who writes what.  Every write happens under the slot-table lock (in the
 * server ZklShared->lock; the simulator runs one step at a time):
 *   - the owning backend claims a slot (FREE -> NEW, every field: `req`),
 *     later writes `own`, and finally abandons it (sets `own.abandoned`,
 *     or frees it outright when no ZooKeeper work was ever started or is
 *     left: table.c);
 *   - the worker drives everything else: zstate, `ans`, `zk`, `coh`, node,
 *     watch (core.c, cohort.c); an owner only asks for two reads of its
 *     own slot through table.c (zc_table_ask_stat, zc_table_ask_verify: bits of
 *     zk.todo, and own.verify);
 *   - a backend that commits sets proof_wanted and reads the rest;
 *   - as it claims a slot, a backend may take its cluster's lingering node
 *     for the key into it, by the worker's own rules (take_here.c): the new
 *     slot's worker fields and answer, the lingering slot freed, the
 *     counters; what those rules read of the worker's is in ZklTable.
 * A slot returns to FREE only when its owner has abandoned it and no node or
 * create is left in ZooKeeper, so nothing is ever orphaned by a backend
 * giving up early.  Backends read `ans.result` without the lock: the worker
 * sets ans.session_id before it, behind a write barrier.
 */
#ifndef ZK_LOCK_SLOT_H
#define ZK_LOCK_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "lock_delay.h"
#include "recipe.h"

/* ZooKeeper-side progress of a slot. */
typedef enum ZklZkState
{
	ZKS_FREE = 0,				/* unused */
	ZKS_NEW,					/* claimed, nothing sent yet */
	ZKS_CREATING,				/* create (+ pipelined getChildren) in flight */
	ZKS_RECOVER,				/* create's reply lost: node may exist, look it up */
	ZKS_RECOVERING,				/* that lookup is in flight */
	ZKS_QUEUED,					/* node exists, not granted yet */
	ZKS_HELD,					/* node exists, granted */
	ZKS_DELETING,				/* delete in flight */
	ZKS_GONE,					/* no node: deleted, failed, or lost */
	ZKS_COHORT,					/* no node: waits for a local holder's hand-over (cohort.c) */
	ZKS_LINGER					/* owner gone, node kept for a repeat request (zk_lock.linger) */
} ZklZkState;

/* What the owning backend is told. */
typedef enum ZklResult
{
	ZKL_RESULT_PENDING = 0,
	ZKL_RESULT_GRANTED,
	ZKL_RESULT_NOT_GRANTED,		/* try-lock found the lock taken */
	ZKL_RESULT_FAILED,			/* see errcode/errmsg */
	ZKL_RESULT_LOST				/* granted, then the session that granted it ended */
} ZklResult;

/* Follow-up ZooKeeper calls the worker owes a slot (bits of ZklSlot.todo). */
#define ZKT_CHILDREN	0x01	/* re-read the key's children and decide */
#define ZKT_WATCH		0x02	/* set a watch on `watch` (the predecessor) */
#define ZKT_DELETE		0x04	/* (re)send the delete of our node */
#define ZKT_PARENTS		0x08	/* create root and key nodes, then the node */
#define ZKT_STAT		0x10	/* read an adopted node's Stat: owner, token */
#define ZKT_VERIFY		0x20	/* prove the node (so the session) alive, via the leader */
#define ZKT_SOLO		0x40	/* send the next create or delete on its own, not in a multi */
#define ZKT_BARRIER		0x80	/* read once more, then grant (see core.c) */
#define ZKT_UNMARK		0x100	/* rewrite the node's data without the linger mark (cohort.c) */

/* zk_lock.verify_on_commit progress of a held slot (ZklSlot.verify) */
#define ZKV_NONE	0
#define ZKV_ASKED	1
#define ZKV_OK		2

/* levels a granted slot is held at (ZklSlot.scope), for zk_locks */
#define ZKL_SCOPE_XACT		0x01
#define ZKL_SCOPE_SESSION	0x02

#define ZKL_MAX_ROOT_LEN 512
#define ZKL_ROOTS		4		/* zk_lock.root values in use at once (reloads) */
#define ZKL_NODE_BUFLEN	96		/* own node name (child of the key node) */
#define ZKL_ERRMSG_LEN	160
#define ZKL_DETAIL_LEN	1536	/* a deadlock's steps (ZklTable.deadlock_detail) */
#define ZKL_DATA_LEN	256		/* node data: who holds it, for humans */
#define ZKL_DATA_ROOM	16		/* of it, left for the worker's linger mark (core.c) */
#define ZKL_MULTI_KEYS	32		/* keys of one multi-key request (one ZooKeeper multi) */

/*
 * A slot is one request of one backend: its parts below are split by the
 * process that writes them (docs/architecture.md, the ownership table).
 * Times are microseconds: `wall` ones on PostgreSQL's TimestampTz scale,
 * `mono` ones of zkl_mono_now().
 */

/*
 * The request: set by its owner when it claims the slot (table.c), read by
 * all; the worker sets attempt, ticket, queued_at (and the slot's uuid)
 * afresh when it queues the request again, and clears the owner when the
 * node lingers (nobody's) or the slot is freed.
 */
typedef struct ZklSlotRequest
{
	char		mode;			/* ZKL_MODE_* (kinds.h) */
	int			holders;		/* a semaphore's (mode 'c'); 0 for a lock */
	bool		nowait;			/* try-lock, do not queue */
	uint64_t	group;			/* a multi-key request's slots share it (0: none) */
	int			owner_procno;
	int			owner_pid;
	uint64_t	attempt;		/* tags ZooKeeper calls; stale replies differ */
	uint64_t	ticket;			/* its attempt when it last became NEW (a reader queued again
								 * from waiting to join keeps it): local FIFO order (a
								 * counter, since a wall clock may step back) */
	int64_t		requested_at;	/* wall: when the owner asked */
	int64_t		queued_at;		/* wall: when it last became NEW: connect deadlines */
} ZklSlotRequest;

/*
 * The owner's, later: giving it up, the levels it is held at, a verify
 * asked (the worker answers it; it clears `abandoned` as it frees the
 * slot).  The worker's todo bits, the owner sets only through table.c.
 */
typedef struct ZklSlotOwner
{
	bool		abandoned;		/* it is done with it */
	uint8_t		scope;			/* ZKL_SCOPE_* bits, the levels it is held at */
	uint8_t		verify;			/* ZKV_*; owner asks (ASKED), worker answers */
	bool		committing;		/* its owner's commit check passed (set under the
								 * table's lock): a loss must not cancel the rest */
} ZklSlotOwner;

/* What the owner is told: the worker's, result last (behind a barrier). */
typedef struct ZklSlotAnswer
{
	ZklResult	result;
	int64_t		session_id;		/* the session that granted it, as ZklTable.session_tag
								 * names it (set before result) */
	int64_t		granted_at;		/* wall */
	int			sqlstate;		/* with ZKL_RESULT_FAILED */
} ZklSlotAnswer;

/* The worker's: its progress in ZooKeeper and its decisions. */
typedef struct ZklSlotWorker
{
	uint16_t	todo;			/* ZKT_* bits */
	uint8_t		root_id;		/* index in ZklTable.roots of its key's root */
	int64_t		czxid;			/* its node's, once known: the fencing token's high part */
	uint16_t	handed;			/* hand-overs of its node before this holder: the low part */
	bool		watch_sole;		/* `watch` is the only node ahead that blocks us */
	bool		at_head;		/* once granted, no other backend's node is ahead */
	bool		upgrade_falls;	/* an upgrade may come between `watch` and us
								 * (zc_recipe_upgrade_may_fall) */
	bool		first;			/* once granted, no node at all is ahead */
	bool		clear;			/* once granted, no node of a kind that holds alone is ahead */
	bool		rides;			/* holds shared through a local node of another slot
								 * (`node`), none of its own (cohort.c) */
	uint8_t		retries;		/* parent re-creations, to bound a loop */
	uint8_t		rechecks;		/* a waiter's re-checks (plan_recheck) */
	bool		own_check;		/* its STAT is a re-check's look at its own node */
	bool		barrier_out;	/* a read of its own node is on its way (OP_BARRIER): a
								 * local slot that takes the node meanwhile looks at
								 * it again (cohort.c's take_node) */
	bool		delete_refused; /* its delete was refused (an ACL): sent again later */
	bool		lose_after_commit;	/* a session-level lock whose owner was past its commit
									 * check when the node it leans on was lost: lost once
									 * that commit is over (zc_core_lose_slot) */
	bool		key_denied;		/* its key node's create was refused (ZNOAUTH) */
	int64_t		checked_at;		/* wall: when the worker last read the key's queue for it */
	int64_t		sent_at;		/* mono: when its create or delete went out */
	int64_t		delayed_until;	/* mono: its grant waits for lock-delay */
	int64_t		try_until;		/* mono: a try-lock waits for a lingering node no longer
								 * (0: it has not met one) */
	/*
	 * An upgrade whose backend holds the key through a node other local
	 * readers hold too (it rides one, or they ride its own) waits for them
	 * and for what the recipe would watch were that node its own: that
	 * node ("": nothing of another cluster), its wait across clusters
	 * (gwait_doc.c), while `watch` is what it was decided with
	 * (edge_for: zc_table_name_tag of it; 0: no such upgrade).
	 */
	uint64_t	edge_for;
	char		edge[ZKL_NODE_BUFLEN];
} ZklSlotWorker;

/* The worker's too: its node's local hand-over (cohort.c), passed on with the node. */
typedef struct ZklSlotCohort
{
	uint16_t	node_handed;	/* hand-overs and joins of its node so far */
	bool		foreign;		/* a node queued behind ours was seen: the bound counts */
	uint8_t		peek;			/* COH_PEEK_*: the child watch that tells of such nodes */
	bool		kept;			/* released, its node kept until that listing is back */
	uint16_t	since_foreign;	/* hand-overs since */
	int64_t		linger_until;	/* mono, a LINGER slot's end */
	bool		may_linger;		/* its node's data bears the linger mark, so it may linger */
} ZklSlotCohort;

typedef struct ZklSlot
{
	ZklSlotRequest req;
	ZklSlotOwner own;
	ZklSlotAnswer ans;
	ZklZkState	zstate;			/* the worker's; changed only by zc_slot_move (slot_state.c) */
	ZklSlotWorker zk;
	ZklSlotCohort coh;

	/*
	 * Strings: errmsg and uuid are zeroed at claim with everything above;
	 * key and data are the owner's (set at claim), node and watch the
	 * worker's.
	 */
	char		errmsg[ZKL_ERRMSG_LEN];
	char		uuid[ZKL_UUID_LEN + 1];
	char		key[ZKL_KEY_BUFLEN];	/* encoded key = name of the key node */
	char		node[ZKL_NODE_BUFLEN];	/* own node, once known */
	char		watch[ZKL_NODE_BUFLEN]; /* predecessor to watch */
	char		data[ZKL_DATA_LEN];
} ZklSlot;

typedef enum ZklConnState
{
	ZKC_STOPPED = 0,
	ZKC_CONNECTING,
	ZKC_CONNECTED
} ZklConnState;

/* Worker counters since the postmaster started, for zk_lock_status(). */
typedef struct ZklCounters
{
	int64_t		requests;		/* lock nodes asked for (creates sent) */
	int64_t		grants;
	int64_t		releases;		/* lock nodes deleted */
	int64_t		lost;			/* granted locks whose session ended */
	int64_t		reconnects;		/* connections (re)established */
	int64_t		expirations;	/* sessions expired or refused */
	int64_t		recovered;		/* creates whose reply was lost, looked up by uuid */
	int64_t		delete_retries; /* deletes sent again: reply lost, or refused */
	int64_t		batched;		/* creates and deletes sent inside multis */
	int64_t		rolled_back;	/* ops of a multi sent again: a neighbour failed */
	int64_t		handovers;		/* grants passed inside the cluster, no round trip */
	int64_t		lingers;		/* released nodes kept for the cluster's next request */
	int64_t		lock_delay_pauses;	/* grants paused for another session's death */
	int64_t		deadlocks;		/* requests failed with 40P01 to break a deadlock */
	int64_t		upgrades_ahead; /* upgrades granted ahead of local requests they held up */
	int64_t		held_for_local; /* turns in ZooKeeper's queue held for a local conflicting holder */
	int64_t		upgrades_across;	/* upgrades granted past other clusters' requests made before them */
	int64_t		committed_past_loss;	/* commits that went on past their check, a lock lost meanwhile */
	int64_t		taken_here;		/* of the hand-overs, those backends made themselves (take_here.c) */
	int64_t		joined_here;	/* requests that began to wait behind a local holder at their claim */
} ZklCounters;

/*
 * The worker's hand-over settings, as its last plan had them (core_plan.c),
 * for a backend that takes a lingering node by itself (take_here.c).
 */
typedef struct ZklTableCohort
{
	bool		handover;		/* zk_lock.local_handover */
	int			handover_limit; /* zk_lock.local_handover_limit */
	int			linger_ms;		/* zk_lock.linger */
	int			deadlock_ms;	/* deadlock_timeout: a wait joined here is checked in time */
	bool		sending;		/* the plan's calls are on their way: the worker reads
								 * their slots without the lock (requests.c clears it) */
} ZklTableCohort;

/*
 * The table and what the worker tells backends about its session.  All of it
 * is written by the worker (its session module sets the session fields and
 * roots), except slots as described above, next_attempt (taken by whoever
 * claims or re-queues a slot) and proof_wanted (set by a committing backend,
 * cleared by the worker).
 */
typedef struct ZklTable
{
	ZklConnState conn_state;
	int64_t		session_id;		/* current session (0: none) */
	int64_t		session_tag;	/* this incarnation of it (zc_table_session_tag; 0: none) */
	int			negotiated_timeout;	/* ms, as the server granted it */
	bool		auth_unusable;	/* zk_lock.auth set but unusable: fail requests at once */
	bool		writes_held;	/* worker waits for write replies, then plans again */
	bool		proof_wanted;	/* a committing backend waits for a fresh proof */
	uint8_t		cur_root;		/* roots[] entry new locks use */
	char		roots[ZKL_ROOTS][ZKL_MAX_ROOT_LEN + 1];
	uint64_t	next_attempt;
	ZklCounters counters;
	ZldPause	pause;			/* lock-delay's, as the worker last published it (presence.c) */
	ZklTableCohort cohort;		/* its hand-over settings, for a backend's own take */
	int64_t		worker_due;		/* mono: the worker's next turn at the latest, as it went to
								 * sleep (0: none set; take_here.c) */
	int			nused;			/* slots at and above this index are free */
	int			nslots;
	ZklSlot    *slots;			/* nslots of them */

	/*
	 * The last deadlock's victim (its slot's attempt, never used twice) and
	 * each step of the circle its request was failed to break, for the
	 * owner's error DETAIL: table.c's zc_table_*_deadlock.  One at a time:
	 * a victim failed before the last one's owner read it leaves that
	 * owner's error without a DETAIL, never with another circle's.
	 */
	uint64_t	deadlock_attempt;
	char		deadlock_detail[ZKL_DETAIL_LEN];
} ZklTable;

#endif
