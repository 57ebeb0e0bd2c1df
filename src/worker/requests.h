/*
 * requests.h — the ZooKeeper requests core.c plans (requests.c).  Worker
 * process only.
 */
#ifndef ZK_LOCK_REQUESTS_H
#define ZK_LOCK_REQUESTS_H

#include "core.h"

extern void zw_requests_init(ZklCore *core, int nslots);
extern long zw_requests_plan(void);
extern void zw_requests_send(void);
extern void zw_requests_send_proof(void);

#endif
