/*
 * cutoff.c — the worker's cut-off clock (cutoff.h).
 */
#include "cutoff.h"

long
zco_ms_left(bool connecting, int64_t session_id, int timeout_ms, int64_t last_heard, int64_t now)
{
	int64_t		left;

	if (!connecting || session_id == 0 || timeout_ms <= 0)
		return -1;
	left = last_heard + (int64_t) timeout_ms * 1000 * 11 / 12 - now;
	/* rounded up: a wait of 0 ms must mean the time has come */
	return left <= 0 ? 0 : (long) ((left + 999) / 1000);
}
