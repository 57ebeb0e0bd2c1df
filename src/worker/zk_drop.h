/*
 * zk_drop.h — let go of a ZooKeeper handle without ending its session.
 */
#ifndef ZK_LOCK_ZK_DROP_H
#define ZK_LOCK_ZK_DROP_H

#include <zookeeper/zookeeper.h>

extern void zk_drop_handle(zhandle_t *zh);

#endif
