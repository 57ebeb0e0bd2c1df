/*
 * presence.h — lock-delay (presence.c).  Worker process only.
 */
#ifndef ZK_LOCK_PRESENCE_H
#define ZK_LOCK_PRESENCE_H

#include <zookeeper/zookeeper.h>

typedef enum ZklMarkState
{
	ZKL_MARK_PENDING,
	ZKL_MARK_DONE,
	ZKL_MARK_FAILED
} ZklMarkState;

extern void zw_presence_tend(void);
extern void zw_presence_reset(void);
extern void zw_presence_reconnected(void);
extern int	zw_presence_confirm(int64 session, uint64 nonce, stat_completion_t done, const void *ctx);
extern bool zw_presence_listed(void);
extern ZklMarkState zw_presence_mark_dead(int64 session, uint64 nonce);
extern bool zw_presence_incarnation_listed(int64 session, uint64 nonce);
extern ZklMarkState zw_presence_mark_closed(void);
extern bool zw_grants_paused(int64 now, int64 *until);

#endif
