/*
 * invariant.h — what must hold in the pure core, stated where it matters.
 *
 * ZC_ASSERT(cond) checks cond where ZC_ASSERTS is defined: the unit tests,
 * the simulator and PostgreSQL builds with --enable-cassert (the Makefile
 * defines it there).  A broken one calls zc_invariant_broken (the host's:
 * PostgreSQL raises an internal error naming it), or, with none set, aborts
 * naming it on stderr.  Elsewhere it costs nothing; a slot's illegal state
 * change is caught in every build (slot_state.c).
 */
#ifndef ZK_LOCK_INVARIANT_H
#define ZK_LOCK_INVARIANT_H

#ifdef ZC_ASSERTS
#define ZC_ASSERT(cond) \
	((cond) ? (void) 0 : zc_invariant_fail(#cond, __FILE__, __LINE__))
#else
#define ZC_ASSERT(cond) ((void) 0)
#endif

extern void zc_invariant_fail(const char *cond, const char *file, int line);
extern void (*zc_invariant_broken) (const char *cond, const char *file, int line);

#endif
