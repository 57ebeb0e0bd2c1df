/*
 * core.h — the worker's decisions, with no I/O: which ZooKeeper calls a
 * request needs next, and what each reply, watch event and session change
 * means for it (granted, failed, lost, queued again).
 *
 * Events in: the host (the worker process, worker.c; or the simulator,
 * test/sim) calls zcore_plan() to learn the calls owed, sends them, and
 * hands every reply and watch event back through the zcore_*_reply and
 * zcore_*_event functions, all under the slot-table lock.  Actions out: the
 * planned ops (zcore_op), and the host hooks in ZklCoreEnv (wake an owner,
 * interrupt it, note a commit proof, ...).  ZooKeeper result codes are
 * those of <zookeeper/zookeeper.h>; nothing of that library is called here.
 */
#ifndef ZK_LOCK_CORE_H
#define ZK_LOCK_CORE_H

#include "cohort.h"
#include "slot.h"

/* What a planned op asks of ZooKeeper, on the slot's key (see worker.c for each call). */
typedef enum ZklOpKind
{
	OP_CREATE,					/* ephemeral-sequential node + getChildren of the key */
	OP_CHILDREN,				/* getChildren of the key */
	OP_WATCH,					/* getData with a watch on slot->watch */
	OP_DELETE,					/* delete slot->node */
	OP_RECOVER,					/* getChildren, to look for our uuid */
	OP_STAT,					/* exists(slot->node): owner and token */
	OP_VERIFY,					/* a check of slot->node inside a multi (through the leader) */
	OP_BARRIER,					/* exists(slot->node), then grant */
	OP_UNMARK					/* setData(slot->node): zcore_node_data(), the mark gone */
} ZklOpKind;

typedef struct ZklOp
{
	int			idx;			/* slot */
	uint64_t	attempt;		/* slot's attempt when planned: zcore_tag() */
	ZklOpKind	kind;
	bool		parents;		/* create root and key nodes first */
	bool		solo;			/* not in a multi: it was rolled back in one */
	bool		batched;		/* goes inside a multi (zcore_next_batch) */
} ZklOp;

/* Hooks the host provides.  arg is passed back to each. */
typedef struct ZklCoreEnv
{
	void	   *arg;
	int64_t		(*wall_now) (void *arg);	/* microseconds, TimestampTz scale */
	int64_t		(*mono_now) (void *arg);	/* microseconds, monotonic */
	void		(*new_uuid) (void *arg, char out[ZKL_UUID_LEN + 1]);
	void		(*wake) (void *arg, ZklSlot *s);	/* set the owner's latch */
	void		(*interrupt) (void *arg, ZklSlot *s);	/* lost: cancel its statement */
	void		(*denied) (void *arg, const ZklSlot *s);	/* ZooKeeper refused us under its root */
	/* lock-delay (presence.c): no grant before *until while true */
	bool		(*grants_paused) (void *arg, int64_t mono, int64_t *until);
	/* nodes no request owns (orphans.c) */
	void		(*suspect) (void *arg, const ZklSlot *s, const char *name);
	bool		(*may_be_orphan) (void *arg, const char *name);
	void		(*ghost) (void *arg, const ZklSlot *s);
	/* the leader answered a request of `session` sent at sent_at (mono) */
	void		(*proof_note) (void *arg, int64_t sent_at, int64_t session);
	/* wording of a ZooKeeper result code, and its SQLSTATE (MAKE_SQLSTATE form) */
	const char *(*rc_text) (int rc);
	int			(*rc_sqlstate) (int rc);
	void		(*warn) (void *arg, const char *msg);
} ZklCoreEnv;

/* The worker's own state besides the table.  Host sets the first block. */
typedef struct ZklCore
{
	ZklTable   *t;
	const ZklCoreEnv *env;
	int			connect_timeout;	/* ms: zk_lock.connect_timeout */
	int			proof_bound;	/* ms: zk_lock.proof_bound */
	int			deadlock_timeout;	/* ms: PostgreSQL's deadlock_timeout (0: no search) */
	ZklOp	   *ops;			/* 2 * nslots */
	const char **mine;			/* nslots */
	bool	   *held;			/* nslots */
	ZklCohort	cohort;			/* local hand-over: host sets its settings (cohort.h) */

	int			nops;			/* planned by the last zcore_plan() */
	int			writes_in_flight;	/* creates, deletes and multis unanswered */
	bool		proof_due;		/* zcore_plan: send a proof request now */
	bool		proof_in_flight;
	int64_t		deadlock_at;	/* wall: the next search for a local deadlock, at the earliest */
	int64_t		proof_sent;		/* mono */
	uint64_t	proof_gen;		/* tags it: a new handle makes replies stale */
	ZklCohortHost cohort_host;	/* core.c's steps, for cohort.c */
} ZklCore;

/* SQLSTATE codes in PostgreSQL's packed form (utils/errcodes.h). */
#define ZKL_SIXBIT(ch) (((ch) - '0') & 0x3F)
#define ZKL_SQLSTATE(a,b,c,d,e) \
	(ZKL_SIXBIT(a) + (ZKL_SIXBIT(b) << 6) + (ZKL_SIXBIT(c) << 12) + \
	 (ZKL_SIXBIT(d) << 18) + (ZKL_SIXBIT(e) << 24))

/* A reply's tag: slot index in the low bits, the slot's attempt above. */
#define ZKL_TAG_IDX_BITS	20
/* The tag of a key's child watch: no slot's (attempts start at 1); routed by path. */
#define ZKL_KEY_WATCH_TAG	0
extern uint64_t zcore_tag(int idx, uint64_t attempt);
extern int	zcore_tag_idx(uint64_t tag);

/* The request may or may not have been applied: its reply was lost. */
extern bool zcore_outcome_unknown(int rc);

/*
 * Whether a listing of s's key sets a child watch on the key node: a
 * semaphore's (its waiters' wake-up), and that of an exclusive lock's holder
 * while local hand-over is on (cohort.c: who queues behind our node).
 */
extern bool zcore_listing_watches(const ZklCore *c, const ZklSlot *s);

/*
 * A node's data: the owner's (slot->data), with the linger mark when the
 * node may linger (zk_lock.linger: ZklSlot.may_linger).  Another cluster's
 * try-lock that finds only such a node ahead waits a moment for it to go
 * (core.c, linger_wait) instead of answering false.
 */
#define ZKL_NODE_DATA_LEN	(ZKL_DATA_LEN + 16)
extern void zcore_node_data(const ZklSlot *s, char *out);
extern bool zcore_data_lingers(const char *data, int len);

/* The slot's key node and a child of it, as full paths. */
#define ZKL_PATH_LEN		2048
extern void zcore_key_path(const ZklTable *t, const ZklSlot *s, char *out);
extern void zcore_child_path(const ZklTable *t, const ZklSlot *s, const char *name, char *out);

/*
 * Pick the calls owed and advance states so that no backend can free those
 * slots meanwhile: c->ops[0 .. c->nops).  `connected`: a session is up;
 * proof_at: send time (mono) of the current session's latest commit proof
 * (0: none).  Returns the ms until the worker must plan again without news
 * (-1: never).
 */
extern long zcore_plan(ZklCore *c, bool connected, int64_t proof_at);

/*
 * Group planned creates and deletes into one multi: fills members[] with up
 * to ZKL_BATCH_MAX op indices and returns how many (0: none left worth a
 * multi).  Call until it returns 0, then send the ops not batched one by one.
 */
#define ZKL_BATCH_MAX	32
extern bool zcore_batch_wanted(const ZklCore *c);
extern int	zcore_next_batch(ZklCore *c, int *members);

/* The host sent (or failed to send) a write: creates, deletes, multis. */
extern void zcore_write_sent(ZklCore *c);

/* Replies.  Each returns what the host must do outside the lock, if anything. */
/* Returns true if the created node `name` belongs to nobody: delete it. */
extern bool zcore_create_reply(ZklCore *c, uint64_t tag, int rc, const char *name,
							   bool have_stat, int64_t czxid);
extern void zcore_key_node_reply(ZklCore *c, uint64_t tag, int rc);
/* watched: the listing set a child watch (zcore_listing_watches said so when it was sent) */
extern void zcore_children_reply(ZklCore *c, uint64_t tag, int rc,
								 const ZkrChild *kids, int n, bool watched);
/* data: the watched node's (len bytes; NULL unless rc is ZOK) */
extern void zcore_watch_set_reply(ZklCore *c, uint64_t tag, int rc, const char *data, int len);
extern void zcore_unmark_reply(ZklCore *c, uint64_t tag, int rc);
extern void zcore_watch_event(ZklCore *c, uint64_t tag, bool deleted, const char *path);
extern void zcore_barrier_reply(ZklCore *c, uint64_t tag, int rc);
extern void zcore_delete_reply(ZklCore *c, uint64_t tag, int rc);
extern void zcore_recover_reply(ZklCore *c, uint64_t tag, int rc,
								const char *const *names, int n);
/* Returns true with the stray node's path in `stray` when it must be deleted. */
extern bool zcore_stat_reply(ZklCore *c, uint64_t tag, int rc, int64_t owner,
							 int64_t czxid, char *stray);
extern void zcore_verify_reply(ZklCore *c, uint64_t tag, int rc);

/*
 * A multi's reply: op i was tags[i], a delete if del[i]; errs[i] its own
 * result; names[i] the created node's path.  Sets stray[i] for created
 * nodes nobody wants.
 */
extern void zcore_multi_reply(ZklCore *c, int n, const uint64_t *tags, const bool *del,
							  const char *const *names, int rc, const int *errs,
							  bool *stray);

/* The commit proof's own request; gen is c->proof_gen when it was sent. */
extern void zcore_proof_sent(ZklCore *c, bool ok);
extern void zcore_proof_reply(ZklCore *c, uint64_t gen, int rc);

/*
 * A deadlock across clusters (gwait.c) names backend pid's wait through
 * `node` ("<key>/<node>"; "" for a wait for a local hand-over) as the
 * victim: fail that request with 40P01 and msg.  False if that wait is over.
 * The host plans again soon: the victim's node is to be deleted.
 */
extern bool zcore_fail_deadlock(ZklCore *c, int pid, const char *node, const char *msg);

/* Session events. */
extern void zcore_session_lost(ZklCore *c);	/* every node is gone */
extern void zcore_reconnected(ZklCore *c);	/* same session, maybe another server */
extern void zcore_new_handle(ZklCore *c);	/* nothing is in flight any more */
extern void zcore_worker_restarted(ZklCore *c); /* a previous worker's calls may be lost */

#endif
