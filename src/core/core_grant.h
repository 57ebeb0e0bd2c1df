/*
 * core_grant.h — the worker's decisions on a queue read; a lingering node's
 * mark (core_grant.c).
 * Pure; its types are core.h's.
 */
#ifndef ZK_LOCK_CORE_GRANT_H
#define ZK_LOCK_CORE_GRANT_H

#include "core.h"
#include "recipe.h"

/*
 * What the recipe is told of s's backend besides the listing (recipe.h):
 * its other nodes on s's key, which it holds, and the local waiters it may
 * pass.  Points into c's scratch arrays, valid until the next call.
 */
extern void zc_core_backend_of(ZklCore *c, const ZklSlot *s, ZkrBackend *b);


/*
 * Whether a listing of s's key sets a child watch on the key node: a
 * semaphore's (its waiters' wake-up), and that of an exclusive lock's holder
 * while local hand-over is on (cohort.c: who queues behind our node).
 */
extern bool zc_core_listing_watches(const ZklCore *c, const ZklSlot *s);

/*
 * A node's data: the owner's (slot->data), with the linger mark when the
 * node may linger (zk_lock.linger: ZklSlot.may_linger).  Another cluster's
 * try-lock that finds only such a node ahead waits a moment for it to go
 * (core.c, linger_wait) instead of answering false.
 */
#define ZKL_NODE_DATA_LEN	(ZKL_DATA_LEN + 16)
extern void zc_core_node_data(const ZklSlot *s, char *out);
extern bool zc_core_data_lingers(const char *data, int len);

#endif
