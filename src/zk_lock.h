/*
 * zk_lock.h — shared structures, states and GUCs of the zk_lock extension.
 *
 * A slot is one lock request of one backend.  Two parties touch it, always
 * under ZklShared->lock:
 *   - the owning backend claims it (FREE -> NEW), reads `result`, and finally
 *     abandons it (sets `abandoned`, or frees it outright when no ZooKeeper
 *     work was ever started or is left);
 *   - the worker drives `zstate` (the ZooKeeper side) and sets `result`.
 * A slot returns to FREE only when its owner has abandoned it and no node or
 * create is left in ZooKeeper, so nothing is ever orphaned by a backend
 * giving up early.
 */
#ifndef ZK_LOCK_H
#define ZK_LOCK_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"

#include "keys.h"
#include "recipe.h"

/* ZooKeeper-side progress of a slot; changed by the worker only (but see FREE/NEW). */
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
	ZKS_GONE					/* no node: deleted, failed, or lost */
} ZklZkState;

/* What the owning backend is told; set by the worker. */
typedef enum ZklResult
{
	ZKR_PENDING = 0,
	ZKR_GRANTED,
	ZKR_NOT_GRANTED,			/* try-lock found the lock taken */
	ZKR_FAILED,					/* see errcode/errmsg */
	ZKR_LOST					/* granted, then the session that granted it ended */
} ZklResult;

/* Follow-up ZooKeeper calls the worker owes a slot (bits of ZklSlot.todo). */
#define ZKT_CHILDREN	0x01	/* re-read the key's children and decide */
#define ZKT_WATCH		0x02	/* set a watch on `watch` (the predecessor) */
#define ZKT_DELETE		0x04	/* (re)send the delete of our node */
#define ZKT_PARENTS		0x08	/* create root and key nodes, then the node */
#define ZKT_STAT		0x10	/* read an adopted node's Stat: owner, token */
#define ZKT_VERIFY		0x20	/* prove the node (so the session) alive, via the leader */
#define ZKT_SOLO		0x40	/* send the next create or delete on its own, not in a multi */
#define ZKT_BARRIER		0x80	/* read once more, then grant (see predecessor_watch) */

/* zk_lock.verify_on_commit progress of a held slot (ZklSlot.verify) */
#define ZKV_NONE	0
#define ZKV_ASKED	1
#define ZKV_OK		2

#define ZKL_MAX_ROOT_LEN 512
#define ZKL_ROOTS		4		/* zk_lock.root values in use at once (reloads) */
#define ZKL_NODE_BUFLEN	96		/* own node name (child of the key node) */
#define ZKL_ERRMSG_LEN	160
#define ZKL_AUTH_INFO_LEN 1024	/* may quote a root or a file path in full */
#define ZKL_DATA_LEN	256		/* node data: who holds it, for humans */

typedef struct ZklSlot
{
	ZklZkState	zstate;
	ZklResult	result;
	bool		abandoned;		/* owner is done with it */
	bool		nowait;			/* try-lock: do not queue */
	bool		watch_sole;		/* `watch` is the only node ahead that blocks us */
	bool		at_head;		/* worker only: once granted, no other backend's node is ahead */
	uint8		todo;			/* ZKT_* bits */
	uint8		retries;		/* parent re-creations, to bound a loop */
	uint8		verify;			/* ZKV_*, for zk_lock.verify_on_commit */
	char		mode;			/* ZKL_MODE_* */
	uint8		root_id;		/* index in ZklShared.roots of its key's root */
	int			owner_procno;
	int			owner_pid;
	uint64		attempt;		/* tags ZooKeeper calls; stale replies differ */
	int64		czxid;			/* fencing token once created */
	TimestampTz requested_at;	/* when the owner asked */
	TimestampTz queued_at;		/* when it last became NEW: connect deadlines */
	TimestampTz checked_at;		/* when the worker last read the key's queue for it */
	TimestampTz granted_at;
	int64		sent_at;		/* worker only: when its create or delete went out (zkl_mono_now) */
	int64		delayed_until;	/* worker only: its grant waits for lock-delay (zkl_mono_now) */
	int64		session_id;		/* the session that granted it (set before result) */
	int			sqlstate;		/* with ZKR_FAILED */
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
	int64		requests;		/* lock nodes asked for (creates sent) */
	int64		grants;
	int64		releases;		/* lock nodes deleted */
	int64		lost;			/* granted locks whose session ended */
	int64		reconnects;		/* connections (re)established */
	int64		expirations;	/* sessions expired or refused */
	int64		recovered;		/* creates whose reply was lost, looked up by uuid */
	int64		delete_retries; /* deletes whose reply was lost, sent again */
	int64		batched;		/* creates and deletes sent inside multis */
	int64		rolled_back;	/* ops of a multi sent again: a neighbour failed */
} ZklCounters;

#define ZKL_SERVER_LEN 64

typedef struct ZklShared
{
	LWLock	   *lock;
	int			worker_procno;	/* -1 while no worker runs */
	pid_t		worker_pid;
	ZklConnState conn_state;
	int64		session_id;		/* current session, kept so a restarted worker resumes it */
	char		session_passwd[16];
	TimestampTz state_since;
	TimestampTz last_heard;		/* last reply from the server; worker only */
	int			negotiated_timeout;	/* ms, as the server granted it */
	char		server[ZKL_SERVER_LEN]; /* server we are connected to */
	ZklCounters counters;
	bool		auth_unusable;	/* zk_lock.auth set but unusable: fail requests at once */
	char		auth_info[ZKL_AUTH_INFO_LEN];	/* identity and its state; never the secret */
	uint8		cur_root;		/* roots[] entry new locks use */
	char		roots[ZKL_ROOTS][ZKL_MAX_ROOT_LEN + 1];
	uint64		next_attempt;
	bool		writes_held;	/* worker waits for write replies, then plans again */

	/*
	 * The commit proof (xact.c): the send time (zkl_mono_now) of the latest
	 * request that the ZooKeeper leader answered for session proof_session,
	 * so the session was alive there after that time.  The worker writes both
	 * (zkl_proof_note); backends read them without the lock
	 * (zkl_proof_read).  A committing backend that finds the proof too old
	 * sets proof_wanted and sleeps on proof_cv; the worker sends a
	 * leader-checked request, clears proof_wanted and broadcasts.
	 */
	pg_atomic_uint64 proof_at;
	int64		proof_session;
	bool		proof_wanted;
	ConditionVariable proof_cv;

	int			nused;			/* slots at and above this index are free */
	int			nslots;
	ZklSlot		slots[FLEXIBLE_ARRAY_MEMBER];
} ZklShared;

/*
 * One live read of a key's queue in ZooKeeper (zk_lock_queue), asked by one
 * backend at a time: IDLE -> ASKED (backend) -> RUNNING -> DONE (worker) ->
 * IDLE (backend).  Waiters for the area or the answer sleep on `cv`.
 */
#define ZKL_QUEUE_MAX	128

typedef enum ZklQueryState
{
	ZKQ_IDLE = 0,
	ZKQ_ASKED,
	ZKQ_RUNNING,
	ZKQ_DONE
} ZklQueryState;

typedef struct ZklQueueEntry
{
	bool		have_data;		/* false if the node vanished before getData */
	char		node[ZKL_NODE_BUFLEN];
	char		data[ZKL_DATA_LEN];
} ZklQueueEntry;

typedef struct ZklQuery
{
	ConditionVariable cv;
	ZklQueryState state;
	int			asker_pid;
	uint64		attempt;		/* tags the worker's calls for this query */
	int			pending;		/* getData replies still due */
	int			nentries;
	bool		truncated;		/* more than ZKL_QUEUE_MAX nodes */
	int			sqlstate;		/* non-zero: failed, see errmsg */
	char		errmsg[ZKL_ERRMSG_LEN];
	char		key[ZKL_KEY_BUFLEN];
	ZklQueueEntry entries[ZKL_QUEUE_MAX];
} ZklQuery;

/* GUCs (zk_lock.c) */
extern char *zkl_hosts;
extern char *zkl_root;
extern char *zkl_auth;
extern int	zkl_session_timeout;
extern int	zkl_connect_timeout;
extern int	zkl_max_locks;
extern bool zkl_verify_on_commit;
extern int	zkl_proof_bound;
extern int	zkl_lock_delay;
extern bool zkl_test_fail_worker;
extern bool zkl_test_orphan;

/* shmem.c */
extern ZklShared *zkl_shared;
extern ZklQuery *zkl_query;
extern void zkl_shmem_request(void);
extern void zkl_shmem_startup(void);
extern void zkl_require_shared(void);
extern int	zkl_claim_slot(const char *key, char mode, bool nowait, const char *data);
extern ZklResult zkl_abandon_slot(int idx);
extern void zkl_abandon_slots(const int *idx, int n);
extern ZklResult zkl_cancel_slot(int idx);
extern void zkl_new_uuid(char out[ZKL_UUID_LEN + 1]);
extern void zkl_wake_worker(void);
extern void zkl_wake_owner(ZklSlot *slot);
extern void zkl_defer_wakes(void);
extern void zkl_flush_wakes(void);
extern void zkl_free_slot(ZklSlot *slot);
extern void zkl_lose_slot(ZklSlot *slot);
extern int64 zkl_mono_now(void);
extern void zkl_proof_note(int64 sent_at, int64 session);
extern void zkl_proof_forget(void);
extern int64 zkl_proof_read(int64 *session);
extern int	zkl_effective_lock_delay(void);

/* worker.c */
extern PGDLLEXPORT void zkl_worker_main(Datum arg);

/* xact.c */
extern void zkl_xact_init(void);
extern void zkl_local_add(int slot, const char *key, char mode, int64 session);
extern bool zkl_local_stack(const char *key, char mode);
extern bool zkl_local_unlock(const char *key, char mode);
extern void zkl_local_unlock_all(void);
extern void zkl_set_pending(int slot);
extern int	zkl_local_slot(const char *key, char mode);
extern void zkl_lost_error(const char *key) pg_attribute_noreturn();

/* auth.c */
typedef enum ZklAuthResult
{
	ZKL_AUTH_NONE,
	ZKL_AUTH_OK,
	ZKL_AUTH_UNUSABLE
} ZklAuthResult;

extern const char *zkl_show_auth(void);
extern void zkl_auth_init(void);
extern ZklAuthResult zkl_load_credential(char *cred, size_t credlen, char *user, size_t userlen,
										 const char **why);

/*
 * One C entry point per SQL signature: NAME_text and NAME_int8 call
 * IMPL(fcinfo, key kind, ARG).  A function's argument types are never read
 * from fn_expr, which a fast-path call (libpq's PQfn) does not have.
 */
#define ZKL_KEYED_ENTRIES(name, impl, arg) \
PG_FUNCTION_INFO_V1(name##_text); \
PG_FUNCTION_INFO_V1(name##_int8); \
Datum name##_text(PG_FUNCTION_ARGS) { return impl(fcinfo, ZKL_KEY_TEXT, arg); } \
Datum name##_int8(PG_FUNCTION_ARGS) { return impl(fcinfo, ZKL_KEY_BIGINT, arg); }

/* lockfuncs.c */
/* Slack before a backend decides the worker is not serving requests at all. */
#define WORKER_GRACE_MS 2000
extern char *zkl_display_key(const char *encoded);
extern void zkl_key_arg(FunctionCallInfo fcinfo, char kind, char *out);
extern void zkl_check_usable(void);

#endif
