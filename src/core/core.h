/*
 * core.h — the worker's decisions, with no I/O: which ZooKeeper calls a
 * request needs next, and what each reply, watch event and session change
 * means for it (granted, failed, lost, queued again).
 *
 * Events in: the host (the worker process, worker.c; or the simulator,
 * test/sim) calls zc_core_plan() to learn the calls owed, sends them, and
 * hands every reply and watch event back through the zc_core_*_reply and
 * zc_core_*_event functions, all under the slot-table lock.  Actions out: the
 * planned ops (ZklOp), and the host hooks in ZklCoreEnv (wake an owner,
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
	OP_UNMARK					/* setData(slot->node): zc_core_node_data(), the mark gone */
} ZklOpKind;

typedef struct ZklOp
{
	int			idx;			/* slot */
	uint64_t	attempt;		/* slot's attempt when planned: zc_core_tag() */
	ZklOpKind	kind;
	bool		parents;		/* create root and key nodes first */
	bool		solo;			/* not in a multi: it was rolled back in one */
	bool		batched;		/* goes inside a multi (zc_core_next_batch) */
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

	int			nops;			/* planned by the last zc_core_plan() */
	int			writes_in_flight;	/* creates, deletes and multis unanswered */
	bool		proof_due;		/* zc_core_plan: send a proof request now */
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
extern uint64_t zc_core_tag(int idx, uint64_t attempt);
extern int	zc_core_tag_idx(uint64_t tag);

/* The request may or may not have been applied: its reply was lost. */
extern bool zc_core_outcome_unknown(int rc);

/* The slot's key node and a child of it, as full paths. */
#define ZKL_PATH_LEN		2048
extern void zc_core_key_path(const ZklTable *t, const ZklSlot *s, char *out);
extern void zc_core_child_path(const ZklTable *t, const ZklSlot *s, const char *name, char *out);

/* The host sent (or failed to send) a write: creates, deletes, multis. */
extern void zc_core_write_sent(ZklCore *c);

/* Session events. */
extern void zc_core_session_lost(ZklCore *c);	/* every node is gone */
extern void zc_core_reconnected(ZklCore *c);	/* same session, maybe another server */
extern void zc_core_new_handle(ZklCore *c);	/* nothing is in flight any more */
extern void zc_core_worker_restarted(ZklCore *c); /* a previous worker's calls may be lost */

#endif
