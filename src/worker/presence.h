/*
 * presence.h — lock-delay (presence.c).  Worker process only.
 */
#ifndef ZK_LOCK_PRESENCE_H
#define ZK_LOCK_PRESENCE_H

#include <zookeeper/zookeeper.h>

#include "lock_delay.h"

typedef enum ZklMarkState
{
	ZKL_MARK_PENDING,
	ZKL_MARK_DONE,
	ZKL_MARK_FAILED
} ZklMarkState;

/* A look at one incarnation's presence node, behind a sync: one at a time each. */
typedef struct ZwPresenceLook
{
	char		path[ZKL_PATH_LEN];
	stat_completion_t done;
	const void *ctx;
} ZwPresenceLook;

/*
 * presence.c's process memory: the worker has one copy, the simulator one
 * per simulated cluster (it points zw_presence at each).
 */
typedef struct ZwPresence
{
	char		for_root[ZKL_MAX_ROOT_LEN + 1];	/* the root our presence is under */
	int			last_logged;	/* the failure last logged, so it is logged once */
	ZklMarkState mark;
	ZklSessionName mark_name;	/* tombstone asked for (id 0: none) */
	uintptr_t	mark_gen;		/* tells its reply from an older one's */
	int			sweep_logged;
	ZldPresence pres;			/* the list's state (lock_delay.c) */
	ZwPresenceLook confirm;		/* a resumed session's (zw_presence_confirm) */
	ZwPresenceLook left;		/* a crash's left-over session's (zw_presence_look_left) */
} ZwPresence;

extern ZwPresence *zw_presence;
extern ZwPresence *zw_presence_new(void);

extern void zw_presence_start(void);
extern void zw_presence_tend(void);
extern void zw_presence_reset(void);
extern void zw_presence_reconnected(void);
extern int	zw_presence_confirm(int64 session, uint64 nonce, stat_completion_t done, const void *ctx);
extern int	zw_presence_look_left(int64 session, uint64 nonce, stat_completion_t done, const void *ctx);
extern bool zw_presence_listed(void);
extern ZklMarkState zw_presence_mark_dead(int64 session, uint64 nonce);
extern bool zw_presence_incarnation_listed(int64 session, uint64 nonce);
extern ZklMarkState zw_presence_mark_closed(void);
extern bool zw_grants_paused(int64 now, int64 *until);

#endif
