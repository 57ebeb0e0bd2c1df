/*
 * core_batch.h — which planned writes go out together in one multi
 * (core_batch.c).
 * Pure; its types are core.h's.
 */
#ifndef ZK_LOCK_CORE_BATCH_H
#define ZK_LOCK_CORE_BATCH_H

#include "core.h"

/*
 * Group planned creates and deletes into one multi: fills members[] with up
 * to ZKL_BATCH_MAX op indices and returns how many (0: none left worth a
 * multi).  Call until it returns 0, then send the ops not batched one by one.
 */
#define ZKL_BATCH_MAX	32
extern bool zc_core_batch_wanted(const ZklCore *c);
extern int	zc_core_next_batch(ZklCore *c, int *members);

#endif
