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
extern void simpg_enter(void *shared);
extern uint64_t *simpg_session_nonce(void *shared);

/* sim.c: the current cluster's clocks, system identifier, log and connection */
extern int64_t simh_mono(void);
extern int64_t simh_wall(void);
extern uint64_t simh_sysid(void);
extern void simh_log(bool error, const char *line);
extern bool simh_connected(void);
extern bool simh_has_handle(void);
extern int	simh_lock_delay_ms(void);	/* zkl_effective_lock_delay */

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
	SC_DATA
} SimCallKind;

typedef struct SimCall
{
	SimCallKind kind;
	void		(*fn) (void);	/* of the kind's type (zookeeper.h), cast back to call */
	const void *ctx;
	void		(*watcher) (void);	/* a watcher_fn the read sets (NULL: none) */
	void	   *wctx;
} SimCall;

/*
 * sim.c: send r for the current cluster, setting call's watch if it names
 * one; false (ZINVALIDSTATE) when it has no handle.
 */
extern bool simh_send(const ZkmReq *req, const SimCall *call);

/* sim_zk.c: the answer (msg), or the library's own (rc, msg NULL) */
extern void simzk_answer(const SimCall *call, const ZkmMsg *msg, int rc);

#endif
