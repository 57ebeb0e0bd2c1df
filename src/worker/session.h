/*
 * session.h — the worker's ZooKeeper session (session.c).  Worker process
 * only.  It tells the worker of session changes through the events it is
 * given, and never calls back into the worker otherwise.
 */
#ifndef ZK_LOCK_SESSION_H
#define ZK_LOCK_SESSION_H

typedef struct ZklSessionEvents
{
	void		(*lost) (void);	/* every node of the session is gone */
	void		(*reconnected) (void);	/* same session, new connection; lock held */
	void		(*new_handle) (void);	/* nothing is in flight any more (under the lock) */
} ZklSessionEvents;

/*
 * session.c's process memory: zw_session points at the worker's one copy;
 * the simulator gives each cluster its own.
 */
typedef struct ZwSession ZwSession;
extern ZwSession *zw_session;
extern ZwSession *zw_session_new(void);

extern void zw_session_begin(const ZklSessionEvents *events);
extern void zw_session_tend(void);
extern long zw_session_wait_ms(long wait_ms);
extern void zw_session_end(void);

#endif
