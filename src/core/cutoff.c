/*
 * cutoff.c — the worker's cut-off clock (cutoff.h).
 */
#include "cutoff.h"
#include "invariant.h"

#include <limits.h>

long
zc_cutoff_ms_left(bool connecting, int64_t session_id, int timeout_ms, int64_t last_heard, int64_t now)
{
	int64_t		left;

	if (!connecting || session_id == 0 || timeout_ms <= 0)
		return -1;
	/* a clock that runs back (a wall clock stepped) would keep a lost session alive */
	ZC_ASSERT(now >= last_heard);
	/* whole milliseconds of 11/12, then rounded up, as TimestampDifferenceMilliseconds */
	left = last_heard + (int64_t) (timeout_ms * 11 / 12) * 1000 - now;
	if (left <= 0)
		return 0;
	if (left >= (int64_t) INT_MAX * 1000 - 999)
		return INT_MAX;
	return (long) ((left + 999) / 1000);
}
