/*
 * clean_stop.h — the steps of a clean stop (worker.c's stop_cleanly), pure:
 * serve until every slot is free, then ask for the tombstone that says the
 * session holds nothing, and end once it is answered, the session is gone,
 * or the time is up.  The simulator takes the same steps.
 */
#ifndef ZK_LOCK_CLEAN_STOP_H
#define ZK_LOCK_CLEAN_STOP_H

#include <stdbool.h>

typedef enum ZklStopStep
{
	ZKL_STOP_SERVE,				/* a turn of the loop: requests still end */
	ZKL_STOP_BEGIN,				/* every slot is free: nothing is planned any more, the
								 * session is not resumed; ask for the tombstone */
	ZKL_STOP_ASK,				/* ask for it again, or wait for its answer */
	ZKL_STOP_END				/* answered, out of time, or the session is not the one
								 * the stop began with, or not connected */
} ZklStopStep;

/*
 * in_time: the stop's time is not up; session_on: the session the stop began
 * with is the worker's, connected; answered: the tombstone's create was
 * answered (made, or refused for good); marking: BEGIN was returned already.
 */
extern ZklStopStep zc_stop_step(bool in_time, bool session_on, bool answered, bool marking,
								bool table_empty);

#endif
