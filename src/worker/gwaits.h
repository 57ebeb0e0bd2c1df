/*
 * gwaits.h — deadlocks across clusters, the worker's I/O (gwaits.c).
 * Worker process only.
 */
#ifndef ZK_LOCK_GWAITS_H
#define ZK_LOCK_GWAITS_H

#include "core.h"

extern long zw_gwaits_tend(ZklCore *core);
extern void zw_gwaits_reset(void);

#endif
