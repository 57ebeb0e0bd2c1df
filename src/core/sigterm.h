/*
 * sigterm.h — what the worker makes of a SIGTERM, pure.  worker.c finds the
 * facts (who sent it, whether the postmaster is shutting down, whether
 * client backends remain) and does what this says.
 */
#ifndef ZK_LOCK_SIGTERM_H
#define ZK_LOCK_SIGTERM_H

#include <stdbool.h>

typedef enum ZklTermAction
{
	ZKL_TERM_SERVE,				/* go on serving: the stop has not come yet */
	ZKL_TERM_RESTART,			/* exit keeping the session: the next worker resumes it */
	ZKL_TERM_CLOSE				/* stop cleanly and close the session */
} ZklTermAction;

/*
 * by_postmaster: a SIGTERM came from the postmaster; by_other: one came from
 * anyone else (pg_terminate_backend, kill, a service manager signalling the
 * process group); pm_stopping: the postmaster has begun to shut down;
 * clients_remain: client backends are still connected.
 *
 * The postmaster sends a background worker its SIGTERM only when client
 * backends are gone (a smart shutdown waits for them, for hours if need be)
 * or told to go (a fast one signals them and us at once): then the session
 * is closed.  Anyone else's SIGTERM outside a shutdown restarts the worker
 * on the same session, so the cluster's holders keep their locks.  During a
 * shutdown it never closes the session while client backends remain: the
 * worker serves them until they have exited.  The postmaster's own SIGTERM
 * may have come merged into that one (standard signals do not queue), so
 * once they have exited the session is closed all the same.  Not a restart
 * meanwhile: the postmaster starts no worker once it has told them to stop,
 * and a session left open would cost the other clusters an expiry.
 */
extern ZklTermAction zc_term_action(bool by_postmaster, bool by_other, bool pm_stopping,
									bool clients_remain);

#endif
