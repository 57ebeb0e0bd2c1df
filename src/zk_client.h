/*
 * zk_client.h — thin wrapper over libzookeeper_st for the worker.
 */
#ifndef ZK_LOCK_ZK_CLIENT_H
#define ZK_LOCK_ZK_CLIENT_H

#include <zookeeper/zookeeper.h>

extern zhandle_t *zkc_open(const char *hosts, int session_timeout_ms,
						   const clientid_t *resume, watcher_fn watcher);
extern void zkc_close(zhandle_t *zh);
extern int	zkc_wait(zhandle_t *zh, long max_wait_ms);
extern void zkc_set_settle(void (*settle) (void));
extern void zkc_hold_sends(bool hold);
extern int	zkc_sqlstate(int zrc);

/* auth.c: the ACL of every node we create */
extern struct ACL_vector *zkl_node_acl(bool authenticated);

#endif
