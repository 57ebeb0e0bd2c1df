/*
 * take_here.h — a backend takes its cluster's lingering node by itself.
 * Pure: the caller holds the slot-table lock and gives the clocks.
 */
#ifndef ZK_LOCK_TAKE_HERE_H
#define ZK_LOCK_TAKE_HERE_H

#include "slot.h"

/*
 * Right after claiming slot s (one key, not yet seen by the worker): take
 * the node lingering for s's key if the worker's own rules would pass it to
 * s at once (zc_cohort_take_here), judged on what the worker last published
 * in t.  Returns whether s is granted; mono is zkl_mono_now()'s clock, wall
 * the grant's time.
 */
extern bool zc_take_here(ZklTable *t, ZklSlot *s, int64_t mono, int64_t wall);

#endif
