/*
 * zk_client.h — thin wrapper over libzookeeper_st for the worker.
 */
#ifndef ZK_LOCK_ZK_CLIENT_H
#define ZK_LOCK_ZK_CLIENT_H

#include <zookeeper/zookeeper.h>

#include "core.h"

/* After a failed open, or a session that ended, the next open waits this long. */
#define ZKC_REOPEN_DELAY_MS		1000

/*
 * The worker's one handle (NULL while none) and the ACL of the nodes it
 * creates.  session.c sets both; the worker's other files only read them.
 */
extern zhandle_t *zw_client_handle(void);
extern void zw_client_set_handle(zhandle_t *zh);
extern struct ACL_vector *zw_client_acl(void);
extern void zw_client_set_acl(struct ACL_vector *acl);

/*
 * The library's calls, on the worker's handle (zk_client.c is the only file
 * that calls libzookeeper): creates carry the nodes' ACL, reads set no
 * watch but through zw_client_get_watched.
 */
extern int	zw_client_create(const char *path, const char *value, int len, int flags,
							 string_completion_t done, const void *ctx);
extern int	zw_client_create_stat(const char *path, const char *value, int len, int flags,
								  string_stat_completion_t done, const void *ctx);
extern int	zw_client_delete(const char *path, int version, void_completion_t done, const void *ctx);
extern int	zw_client_exists(const char *path, stat_completion_t done, const void *ctx);
extern int	zw_client_get(const char *path, data_completion_t done, const void *ctx);
extern int	zw_client_get_watched(const char *path, watcher_fn watcher, void *watcher_ctx,
								  data_completion_t done, const void *ctx);
extern int	zw_client_children(const char *path, strings_completion_t done, const void *ctx);
extern int	zw_client_children_stat(const char *path, strings_stat_completion_t done,
									const void *ctx);
extern int	zw_client_children_watched(const char *path, watcher_fn watcher, void *watcher_ctx,
									   strings_stat_completion_t done, const void *ctx);
extern int	zw_client_set(const char *path, const char *value, int len, int version,
						  stat_completion_t done, const void *ctx);
extern int	zw_client_multi(int count, const zoo_op_t *ops, zoo_op_result_t *results,
							void_completion_t done, const void *ctx);
extern int	zw_client_sync(const char *path, string_completion_t done, const void *ctx);
extern int	zw_client_get_acl(const char *path, acl_completion_t done, const void *ctx);
extern int	zw_client_add_auth(const char *scheme, const char *cert, int len,
							   void_completion_t done, const void *ctx);
extern int	zw_client_set_servers(const char *hosts);
extern bool zw_client_connected(void);
extern void zw_client_op_check(zoo_op_t *op, const char *path, int version);
extern void zw_client_op_create(zoo_op_t *op, const char *path, const char *value, int len,
								int flags, char *name, int namelen);
extern void zw_client_op_delete(zoo_op_t *op, const char *path, int version);
extern void zw_client_op_set(zoo_op_t *op, const char *path, const char *value, int len,
							 int version);
extern const char *zw_client_strerror(int rc);
extern const clientid_t *zw_client_session(zhandle_t *zh);
extern int	zw_client_timeout(zhandle_t *zh);
extern const char *zw_client_server(zhandle_t *zh);

/* Completions for requests whose reply nobody needs: a create (parents, say) and a sync. */
extern void zw_client_create_answered(int rc, const char *value, const void *ctx);
extern void zw_client_sync_answered(int rc, const char *value, const void *ctx);

/* Create every component of an absolute path as a persistent node (no reply needed). */
extern void zw_client_create_persistent(const char *path);

extern zhandle_t *zw_client_open(const char *hosts, int session_timeout_ms,
						   const clientid_t *resume, watcher_fn watcher);
extern void zw_client_close(zhandle_t *zh);
/* the same without ending its session, which is another's (zk_drop.c) */
extern void zw_client_abandon(zhandle_t *zh);
extern int	zw_client_wait(zhandle_t *zh, long max_wait_ms);
extern void zw_client_set_settle(void (*settle) (void));
extern void zw_client_hold_sends(bool hold);
extern int	zw_client_sqlstate(int zrc);

/* The library's last error line (a failed connect, say), without its prefix; "" once taken. */
extern bool zw_client_take_error(char *out, size_t outlen);

/* auth.c: the ACL of every node we create */
extern struct ACL_vector *zw_node_acl(bool authenticated);

#endif
