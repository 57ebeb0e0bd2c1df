/*
 * sim_host.h — how the shipped worker files run inside the simulator.
 *
 * The worker's ZooKeeper calls (zk_client.h) are answered by the model
 * (sim_zk.c); what it takes from PostgreSQL comes from sim_pg.c.  Both
 * serve the cluster whose worker code runs now, which sim.c chooses
 * (simpg_enter, and the simh_* calls below).  Free of PostgreSQL's headers
 * so that sim.c stays so too.
 */
#ifndef SIM_HOST_H
#define SIM_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "slot.h"
#include "zkmodel.h"

#ifndef C_H
/* PostgreSQL's names, which the worker's headers use (c.h's, where it is included) */
typedef int64_t int64;
typedef uint64_t uint64;
#endif

/* sim_pg.c: a cluster's shared memory (a ZklShared), and which one the worker code sees */
extern void *simpg_shared_new(void);
extern void simpg_shared_free(void *shared);
extern ZklTable *simpg_table(void *shared);
extern void simpg_enter(void *shared, void *proc, int session_timeout, void *fs, int pm_pid,
						int64_t pm_start, char *hosts, bool reload);
extern void simpg_cluster(int deadlock_timeout, int id);	/* its settings, its name c<id> */
extern void *simpg_fs_new(void);	/* a cluster's data directory */
extern void simpg_fs_free(void *fs);
extern int64_t *simpg_last_heard(void *shared);
extern int64_t *simpg_closing_tag(void *shared);
extern void *simpg_proc_new(void);	/* a worker process's memory */
extern void simpg_proc_end(void *proc);	/* it exits: its memory goes */
extern uint64_t *simpg_session_nonce(void *shared);

/*
 * sim_pg_once.c: a cluster's once area (shmem.h's ZklOnceArea), as a
 * backend takes it, asks and reads the answer (backend/once_call.c).
 */
typedef enum SimOnceOp
{
	SIMO_READ,
	SIMO_MAKE,
	SIMO_SEAL
} SimOnceOp;

typedef enum SimOnceResult
{
	SIMO_OK,
	SIMO_NONODE,
	SIMO_EXISTS,
	SIMO_BADVERSION,
	SIMO_FAILED
} SimOnceResult;

#define SIMO_DATA_LEN	512

typedef struct SimOnceAnswer
{
	SimOnceResult result;
	bool		claim_gone;
	int32_t		version;
	int			len;			/* -1: a record too long for the area */
	char		data[SIMO_DATA_LEN];
} SimOnceAnswer;

extern bool simpg_once_ask(void *shared, int pid, SimOnceOp op, const char *name, int slot,
						   int32_t version, const char *data, int len);
extern bool simpg_once_answered(void *shared, SimOnceAnswer *out);
extern void simpg_once_release(void *shared, int pid);
extern void simpg_once_reset(void *shared);	/* new shared memory */
extern void simpg_once_worker_restarted(void);	/* worker.c's start: once_io.c's zw_once_restarted */

/* sim.c: the current cluster's clocks, system identifier, log and connection */
extern int64_t simh_mono(void);
extern int64_t simh_wall(void);
extern uint64_t simh_sysid(void);
extern void simh_log(bool error, const char *line);
extern bool simh_connected(void);
extern bool simh_has_handle(void);
extern int	simh_lock_delay_ms(void);	/* zkl_effective_lock_delay */
extern int64_t simh_proof_read(int64_t *session);	/* zkl_proof_read */
extern void simh_proof_forget(void);	/* zkl_proof_forget */
extern void simh_new_uuid(char *out);	/* zkl_new_uuid */
extern uint64_t simh_nonce(void);		/* pg_strong_random */
extern bool zkl_test_orphan;	/* settings.h: before each lock node, one no request owns */
/* a handle of the client library: open (-1: none) and close, and the session watcher it was given */
extern void simh_reloaded(void);	/* ProcessConfigFile: the worker reads its settings again */
extern int	simh_set_servers(const char *hosts);	/* zoo_set_servers: the same ensemble, a new list */
extern int	simh_open(int timeout_ms, int64_t resume, void (*watcher) (void));
extern void simh_close(int client);
extern void simh_abandon(int client);	/* let go of it, its session not ended */
extern int	simh_wait(int client, long max_wait_ms);	/* zw_client_wait on a handle of its own */
extern void simh_set_client(int client);
extern int	simh_client(void);
extern int64_t simh_session_of(int client);
extern int	simh_timeout_of(int client);

/*
 * A completion the worker gave the client library with a request: sim.c
 * keeps it with the request and hands it back with the model's answer.
 */
typedef enum SimCallKind
{
	SC_VOID,
	SC_STAT,
	SC_STRING,
	SC_STRINGS,
	SC_STRINGS_STAT,
	SC_DATA,
	SC_STRING_STAT,
	SC_MULTI
} SimCallKind;

typedef struct SimCall
{
	SimCallKind kind;
	void		(*fn) (void);	/* of the kind's type (zookeeper.h), cast back to call */
	const void *ctx;
	void		(*watcher) (void);	/* a watcher_fn the read sets (NULL: none) */
	void	   *wctx;
	/* SC_MULTI: its ops' results, and each create's buffer for its node's path (as the library keeps) */
	int			nops;
	void	   *results;		/* zoo_op_result_t[nops] */
	char	   *bufs[ZKM_MULTI];	/* NULL: not a create */
	int			buflens[ZKM_MULTI];
} SimCall;

/*
 * sim.c: send r for the current cluster, setting call's watch if it names
 * one; false (ZINVALIDSTATE) when it has no handle.
 */
extern bool simh_send(const ZkmReq *req, const SimCall *call);

/* sim_zk.c: the answer (msg), or the library's own (rc, msg NULL) */
extern void simzk_answer(const SimCall *call, const ZkmMsg *msg, int rc);

#endif
