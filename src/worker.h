/*
 * worker.h — what the zk_lock worker's files share (worker.c, session.c,
 * left_session.c, orphans.c, queue_read.c, presence.c).  Everything here runs in the worker process only.
 */
#ifndef ZK_LOCK_WORKER_H
#define ZK_LOCK_WORKER_H

#include <zookeeper/zookeeper.h>

#include "zk_lock.h"

/* A reply's context: slot index in the low bits, the slot's attempt above. */
#define CTX_IDX_BITS	20
#define CTX_ATTEMPT_MASK ((UINT64CONST(1) << (64 - CTX_IDX_BITS)) - 1)

#define ZKL_PATH_LEN		2048
#define REOPEN_DELAY_MS		1000

/* worker.c */
extern zhandle_t *zkl_zh;		/* the session's handle; NULL while none */
extern ZkrChild *zkl_childbuf;	/* the last listing, parsed and sorted */
extern int	zkl_collect_children(const struct String_vector *children);
extern bool zkl_outcome_unknown(int rc);
extern void zkl_key_path(const ZklSlot *s, char *out);
extern void zkl_child_path(const ZklSlot *s, const char *name, char *out);
extern void zkl_session_lost(void);
extern void zkl_reconnected(void);
extern void zkl_forget_writes(void);
extern void zkl_create_persistent(const char *path);

/* presence.c */
typedef enum ZklMarkState
{
	ZKL_MARK_PENDING,
	ZKL_MARK_DONE,
	ZKL_MARK_FAILED
} ZklMarkState;

extern void zkl_presence_tend(void);
extern void zkl_presence_reset(void);
extern void zkl_presence_reconnected(void);
extern bool zkl_presence_listed(void);
extern ZklMarkState zkl_presence_mark_dead(int64 session);
extern bool zkl_grants_paused(int64 now, int64 *until);

/* left_session.c */
extern void zkl_left_save(const clientid_t *id);
extern void zkl_left_begin(void);
extern void zkl_left_tend(void);
extern void zkl_left_forget(void);

/* session.c */
extern struct ACL_vector *zkl_acl;
extern void zkl_session_begin(void);
extern void zkl_session_tend(void);
extern long zkl_session_wait_ms(long wait_ms);
extern void zkl_session_end(void);

/* orphans.c */
extern void zkl_orphan_deleted(int rc, const void *ctx);
extern bool zkl_may_be_orphan(const char *name);
extern void zkl_suspect_blocker(const ZklSlot *s, const char *name);
extern void zkl_check_suspects(void);
extern void zkl_remember_ghost(const ZklSlot *s);
extern long zkl_send_ghosts(void);

/* queue_read.c */
extern void zkl_query_start(void);
extern void zkl_query_send(void);

#endif
