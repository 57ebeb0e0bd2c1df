/*
 * gwaits.h — deadlocks across clusters, the worker's I/O (gwaits.c).
 * Worker process only.
 */
#ifndef ZK_LOCK_GWAITS_H
#define ZK_LOCK_GWAITS_H

#include "core.h"

typedef struct ZklGwState ZklGwState;

/* the worker's (the simulator points it at each cluster's) */
extern ZklGwState *zw_gw;

extern long zw_gwaits_tend(ZklCore *core);
extern ZklGwState *zw_gwaits_new(void);
extern void zw_gwaits_reset(void);

#endif
