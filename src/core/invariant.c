/*
 * invariant.c — a broken invariant of the pure core (invariant.h).
 */
#include "invariant.h"

#include <stdio.h>
#include <stdlib.h>

void		(*zc_invariant_broken) (const char *cond, const char *file, int line) = NULL;

void
zc_invariant_fail(const char *cond, const char *file, int line)
{
	if (zc_invariant_broken)
		zc_invariant_broken(cond, file, line);
	fprintf(stderr, "zk_lock: broken invariant at %s:%d: %s\n", file, line, cond);
	abort();
}
