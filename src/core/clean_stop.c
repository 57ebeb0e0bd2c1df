/*
 * clean_stop.c — the steps of a clean stop (clean_stop.h).
 */
#include "clean_stop.h"

ZklStopStep
zc_stop_step(bool in_time, bool session_on, bool answered, bool marking, bool table_empty)
{
	if (!in_time || !session_on || answered)
		return ZKL_STOP_END;
	if (marking)
		return ZKL_STOP_ASK;
	/* a request that came after this would get a node after the tombstone: none is planned */
	return table_empty ? ZKL_STOP_BEGIN : ZKL_STOP_SERVE;
}
