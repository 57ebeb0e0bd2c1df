/*
 * shmem.h — the cluster's zk_lock state in shared memory (shmem.c): the
 * slot table (slot.h says which process writes which field), the worker's
 * session state, the commit proof and the query area; claiming slots,
 * latches and the clock.
 */
#ifndef ZK_LOCK_SHMEM_H
#define ZK_LOCK_SHMEM_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"

#include "keys.h"
#include "recipe.h"
#include "slot.h"
#include "gwait.h"

#define ZKL_AUTH_INFO_LEN 1024	/* may quote a root or a file path in full */

/* Slack before a backend decides the worker is not serving requests at all. */
#define WORKER_GRACE_MS 2000

#define ZKL_SERVER_LEN 64
#define ZKL_HOSTS_LEN 1024

/*
 * The cluster's zk_lock state in shared memory.  `t` is the slot table and
 * what the worker tells backends (slot.h says who writes what); the rest is
 * the worker's, except where noted.  Everything but proof_at is read and
 * written under `lock`.
 */
typedef struct ZklShared
{
	LWLock	   *lock;
	int			worker_procno;	/* -1 while no worker runs */
	pid_t		worker_pid;
	char		session_passwd[16]; /* of t.session_id, so a restarted worker resumes it */
	uint64		session_nonce;	/* drawn for t.session_id's incarnation (presence.c) */
	int64		closing_tag;	/* the incarnation (session tag) a clean stop's tombstone
								 * speaks for: never resumed */
	TimestampTz state_since;
	int64		last_heard;		/* last reply from the server (zkl_mono_now); worker only */
	char		server[ZKL_SERVER_LEN]; /* server we are connected to */
	char		hosts[ZKL_HOSTS_LEN];	/* the host list the worker's handle uses */
	char		conn_error[ZKL_ERRMSG_LEN];	/* last failure to connect, until connected */
	char		auth_info[ZKL_AUTH_INFO_LEN];	/* identity and its state; never the secret */

	/*
	 * The commit proof (xact.c): the send time (zkl_mono_now) of the latest
	 * request that the ZooKeeper leader answered for session proof_session,
	 * so the session was alive there after that time.  The worker writes both
	 * (zkl_proof_note); backends read them without the lock
	 * (zkl_proof_read).  A committing backend that finds the proof too old
	 * sets t.proof_wanted and sleeps on proof_cv; the worker sends a
	 * leader-checked request, clears t.proof_wanted and broadcasts.
	 */
	pg_atomic_uint64 proof_at;
	int64		proof_session;
	ConditionVariable proof_cv;

	ZklTable	t;
	ZklSlot		slot_array[FLEXIBLE_ARRAY_MEMBER];	/* t.slots */
} ZklShared;

/*
 * One live read of a key's queue in ZooKeeper (zk_lock_queue), or of the
 * documents of a folder under the root (every cluster's published waits,
 * zk_lock_waits, gwait.h; zk_once's records, zk_once_jobs), asked by one
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
	int			text_at;		/* a read of waits: its document in ZklQuery.text */
} ZklQueueEntry;

#define ZKL_WAITS_TEXT	65536	/* every cluster's waits, read for zk_lock_waits */

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
	bool		docs;			/* read a folder's documents (dir), not a key's queue */
	char		dir[16];		/* its name under the root: .waits (zk_lock_waits), .once */
	int			text_used;
	ZklQueueEntry entries[ZKL_QUEUE_MAX];
	char		text[ZKL_WAITS_TEXT];	/* the documents of a read of waits, NUL-ended */
} ZklQuery;

/*
 * zk_once's calls to ZooKeeper (backend/once.c asks, worker/once_io.c
 * sends), one at a time per cluster as the query area's: IDLE -> ASKED
 * (backend) -> RUNNING -> DONE (worker) -> IDLE (backend).  A call whose
 * outcome is unknown (the connection dropped) is sent again once
 * connected: each is safe to repeat (once_io.c says why).
 */
typedef enum ZklOnceOp
{
	ZKL_ONCE_READ,				/* getData of the job's record */
	ZKL_ONCE_MAKE,				/* create it (and <root>/.once) with `data` */
	ZKL_ONCE_SEAL				/* multi: the claim's node still there, setData at `version` */
} ZklOnceOp;

#define ZKL_ONCE_DATA_LEN	512		/* a record's text (once.h: ZKO_RECORD_LEN) */

/* What ZooKeeper answered a zk_once call (of a SEAL's multi, the failing op). */
typedef enum ZklOnceResult
{
	ZKL_ONCE_OK = 0,
	ZKL_ONCE_NONODE,			/* no record (READ); the claim's node or the record gone (SEAL) */
	ZKL_ONCE_EXISTS,			/* MAKE: there is one */
	ZKL_ONCE_BADVERSION,		/* SEAL: the record changed since it was read */
	ZKL_ONCE_FAILED				/* anything else: sqlstate, errmsg */
} ZklOnceResult;

typedef struct ZklOnceArea
{
	ConditionVariable cv;
	ZklQueryState state;
	int			asker_pid;
	uint64		attempt;		/* tags the worker's calls for this one */
	ZklOnceOp	op;
	char		name[ZKL_KEY_BUFLEN];	/* the record's node name: the job's text key */
	int			claim_slot;		/* SEAL: the claim's slot, whose node must be there */
	int32		version;		/* SEAL: the version read; READ: the version found */
	ZklOnceResult result;
	bool		claim_gone;		/* SEAL: refused because the claim's node is gone */
	int			sqlstate;		/* FAILED: ZooKeeper's error, as SQL reports it */
	char		errmsg[ZKL_ERRMSG_LEN];
	int64		mtime;			/* READ: when ZooKeeper last wrote it (ms since the epoch) */
	int			len;
	char		data[ZKL_ONCE_DATA_LEN];	/* MAKE, SEAL: to write; READ: what was read */
	/* commits waiting to take the area, which goes to them first until (zkl_mono_now) */
	int			commits_waiting;
	int64		commits_until;
} ZklOnceArea;

/*
 * A backend takes the once area, if it is free, and asks its call there
 * (once_call.c; the simulator's backends too).  Caller holds the lock.
 */
static inline bool
zkl_once_take(ZklOnceArea *a, int pid, ZklOnceOp op, const char *name, int slot, int32 version,
			  const char *data, int len)
{
	if (a->state != ZKQ_IDLE)
		return false;
	a->state = ZKQ_ASKED;
	a->asker_pid = pid;
	a->op = op;
	strlcpy(a->name, name, sizeof(a->name));
	a->claim_slot = slot;
	a->version = version;
	a->len = len;
	if (len > 0)
		memcpy(a->data, data, len);
	return true;
}

extern ZklShared *zkl_shared;
extern ZklQuery *zkl_query;
extern ZklOnceArea *zkl_once;
extern void zkl_shmem_request(void);
extern void zkl_shmem_startup(void);
extern void zkl_require_shared(void);
extern void zkl_claim_slots(const char *const *keys, int n, char mode, int holders, bool nowait,
							bool session, const char *data, int *idx);
extern ZklResult zkl_abandon_slot(int idx);
extern void zkl_abandon_slots(const int *idx, int n);
extern bool zkl_cancel_slots(const int *idx, int n);
extern void zkl_new_uuid(char out[ZKL_UUID_LEN + 1]);
extern void zkl_wake_worker(void);
extern void zkl_wake_owner(ZklSlot *slot);
extern void zkl_defer_wakes(void);
extern void zkl_flush_wakes(void);
extern int64 zkl_mono_now(void);
extern void zkl_proof_note(int64 sent_at, int64 session);
extern void zkl_proof_forget(void);
extern int64 zkl_proof_read(int64 *session);
extern int	zkl_effective_lock_delay(void);

#endif
