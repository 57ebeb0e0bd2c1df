/*
 * request.h — a backend's lock request (request.c).  Backends only.
 */
#ifndef ZK_LOCK_REQUEST_H
#define ZK_LOCK_REQUEST_H

#include "fmgr.h"

#include "keys.h"


typedef enum ZklWaitKind
{
	ZKL_WAIT_FOREVER,			/* zk_lock: lock_timeout applies */
	ZKL_WAIT_NONE,				/* zk_try_lock(key): the worker answers at once */
	ZKL_WAIT_BOUNDED			/* zk_try_lock(key, timeout_ms) */
} ZklWaitKind;

/* What a lock function asks for, besides its keys. */
typedef struct ZklAsk
{
	char		mode;			/* ZKL_MODE_* */
	ZklWaitKind	wait;
	int			timeout_ms;		/* ZKL_WAIT_BOUNDED */
	bool		session;		/* session-level */
	int			holders;		/* a semaphore's; 0 for a lock */
	bool		one_statement;	/* a transaction of one statement is meant (zk_once): no warning */
} ZklAsk;

/*
 * Take n distinct encoded keys, all or nothing (see request.c).  Returns
 * false when a try or a bounded wait did not get all of them.
 */
extern bool zb_request_locks(FunctionCallInfo fcinfo, char (*keys)[ZKL_KEY_BUFLEN], int n,
							  const ZklAsk *ask);

/* The one sleep of a backend waiting for the worker (latch, interrupts, at most ms; -1: no bound). */
extern void zb_request_sleep(long ms);

#endif
