/*
 * zk_resolve.h — when the ZooKeeper client library resolves zk_lock.hosts.
 */
#ifndef ZK_LOCK_ZK_RESOLVE_H
#define ZK_LOCK_ZK_RESOLVE_H

#include <zookeeper/zookeeper.h>

/* the library's routine resolution while connected: -1, none */
#define ZK_RESOLVE_DELAY_MS	(-1)

extern void zk_resolve_only_to_connect(zhandle_t *zh);

#endif
