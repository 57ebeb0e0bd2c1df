/*
 * requests.h — the ZooKeeper requests core.c plans (requests.c).  Worker
 * process only.
 */
#ifndef ZK_LOCK_REQUESTS_H
#define ZK_LOCK_REQUESTS_H

#include "core.h"

/*
 * requests.c's process memory: zw_requests points at the worker's one copy;
 * the simulator gives each cluster its own (zw_requests_new, then init).
 */
typedef struct ZwRequests ZwRequests;
extern ZwRequests *zw_requests;
extern ZwRequests *zw_requests_new(void);
extern void zw_requests_init(ZklCore *core, int nslots);
extern long zw_requests_plan(void);
extern void zw_requests_send(void);
extern void zw_requests_send_proof(void);

#endif
