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
 * One live read of a key's queue in ZooKeeper (zk_lock_queue), or of every
 * cluster's published waits (zk_lock_waits, gwait.h), asked by one
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
	bool		waits;			/* read <root>/.waits (zk_lock_waits), not a key's queue */
	int			text_used;
	ZklQueueEntry entries[ZKL_QUEUE_MAX];
	char		text[ZKL_WAITS_TEXT];	/* the documents of a read of waits, NUL-ended */
} ZklQuery;

extern ZklShared *zkl_shared;
extern ZklQuery *zkl_query;
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
