/*
 * resume.h — a resumed ZooKeeper session, pure: whether the session a
 * connection comes back to is still this worker's, and what the check of
 * its presence node says.  session.c does the I/O; the simulator applies
 * the same.
 *
 * ZooKeeper derives a session's password from its id, and builds an id from
 * a member's id and that member's clock at its start, so after a member's
 * host restarts an expired session's id may be handed out again.  A handle
 * that resumes the id (the library reconnecting, or a restarted worker) is
 * then attached to that other, live session: the worker would take its own
 * for alive, and its holders, whose locks went with the old session, could
 * commit while another cluster holds them.  The ephemeral nodes of a
 * session go in the transaction that ends it, so this incarnation's presence
 * node (<id>.<nonce>, presence.c), looked at first thing on the connection
 * behind a sync (the server's view then includes all the leader had when it
 * got the sync, which came after the reconnection), tells them apart: there,
 * owned by the id, the session is ours; gone, it ended.  Until then the
 * connection counts as not made: nothing is planned or granted, no commit
 * proof is noted, and no presence node is created (one made now would be the
 * other session's, and would pass the look).
 */
#ifndef ZK_LOCK_RESUME_H
#define ZK_LOCK_RESUME_H

#include <stdbool.h>
#include <stdint.h>

typedef enum ZklConnected
{
	ZKL_CONN_NEW,				/* a new session: a new incarnation (a nonce drawn) */
	ZKL_CONN_CONFIRM			/* the id resumed: ours only once its presence node is seen */
} ZklConnected;

/*
 * A connected event of the worker's handle: fresh, the handle was opened
 * for a new session; ours, the session id the worker had (0: none); id, the
 * handle's now.  *old_lost: the session the worker had is over (a new one
 * replaces it, or ZooKeeper gave another id than the one resumed).
 */
extern ZklConnected zc_resume_connected(bool fresh, int64_t ours, int64_t id, bool *old_lost);

typedef enum ZklConfirm
{
	ZKL_CONFIRM_OURS,			/* the node is there: the session is ours, serve on */
	ZKL_CONFIRM_ENDED,			/* it is not: the session ended, as on an expiry */
	ZKL_CONFIRM_AGAIN,			/* no answer: ask again while connected */
	ZKL_CONFIRM_WAIT			/* the session is ending: its own event decides */
} ZklConfirm;

/*
 * The answer to the look at this incarnation's presence node (exists, behind
 * a sync): rc, and the node's ephemeral owner when rc is ZOK; session, the id
 * resumed.
 */
extern ZklConfirm zc_resume_confirmed(int rc, int64_t owner, int64_t session);

#endif
