/*
 * sigterm.c — what the worker makes of a SIGTERM (sigterm.h).
 */
#include "sigterm.h"

ZklTermAction
zc_term_action(bool by_postmaster, bool by_other, bool pm_stopping, bool clients_remain)
{
	if (by_postmaster)
		return ZKL_TERM_CLOSE;
	if (!by_other)
		return ZKL_TERM_SERVE;
	if (!pm_stopping)
		return ZKL_TERM_RESTART;
	return clients_remain ? ZKL_TERM_SERVE : ZKL_TERM_CLOSE;
}
