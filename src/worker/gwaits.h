/*
 * gwaits.h — deadlocks across clusters, the worker's I/O (gwaits.c).
 * Worker process only.
 */
#ifndef ZK_LOCK_GWAITS_H
#define ZK_LOCK_GWAITS_H

#include "core.h"

extern long zkl_gwaits_tend(ZklCore *core);
extern void zkl_gwaits_reset(void);

#endif
