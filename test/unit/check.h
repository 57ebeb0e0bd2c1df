/*
 * check.h — the unit tests' one assertion: count, and say what failed where.
 */
#ifndef ZK_LOCK_TEST_CHECK_H
#define ZK_LOCK_TEST_CHECK_H

#include <stdio.h>

/* defined once per program, beside its main() */
extern int	passed;
extern int	failed;

#define CHECK(cond, what) \
	do { \
		if (cond) passed++; \
		else { failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, what); } \
	} while (0)

#endif
