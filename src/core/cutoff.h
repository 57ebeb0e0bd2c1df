/*
 * cutoff.h — the worker's cut-off clock, pure: how long a disconnected
 * worker may still count its session as alive.  session.c applies it to
 * shared memory; the simulator applies the same.
 */
#ifndef ZK_LOCK_CUTOFF_H
#define ZK_LOCK_CUTOFF_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Milliseconds left before a disconnected worker treats its session as
 * expired (0: now), or -1 when the clock is not running (connected, no
 * session, or no timeout negotiated yet).  last_heard and now are on the
 * monotonic clock, in microseconds (never run back); the session can end no sooner than a timeout
 * after the last reply from the server, and the worker acts a little
 * early, at 11/12 of it, so that it is never the last to know.
 */
extern long zc_cutoff_ms_left(bool connecting, int64_t session_id, int timeout_ms,
						int64_t last_heard, int64_t now);

#endif
