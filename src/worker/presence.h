/*
 * presence.h — lock-delay (presence.c).  Worker process only.
 */
#ifndef ZK_LOCK_PRESENCE_H
#define ZK_LOCK_PRESENCE_H

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
extern ZklMarkState zkl_presence_mark_closed(void);
extern bool zkl_grants_paused(int64 now, int64 *until);

#endif
