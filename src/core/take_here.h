/*
 * take_here.h — a backend takes its cluster's lingering node by itself, and
 * lets a released one linger by itself.
 * Pure: the caller holds the slot-table lock and gives the clocks.
 */
#ifndef ZK_LOCK_TAKE_HERE_H
#define ZK_LOCK_TAKE_HERE_H

#include "slot.h"

/*
 * Right after claiming slot s (one key, not yet seen by the worker): take
 * the node lingering for s's key if the worker's own rules would pass it to
 * s at once (zc_cohort_take_here), or ride a local reader's node where they
 * would let s ride at once (zc_cohort_ride_here), judged on what the worker
 * last published in t.  Returns whether s is granted; mono is zkl_mono_now()'s clock, wall
 * the grant's time.
 */
extern bool zc_take_here(ZklTable *t, ZklSlot *s, int64_t mono, int64_t wall);

/*
 * The owner is done with slot s (zc_table_abandon): where the worker's
 * release would, a rider goes, a reader's node passes to a rider, or a
 * node passes at once to the first local writer waiting
 * behind it (zc_cohort_pass_here: granted at `wall`, its owner woken by
 * wake_owner), or lingers (zc_cohort_linger_here).  Returns whether the
 * worker must be woken: for the release, or because it would sleep past the
 * linger's end (ZklTable.worker_due).
 */
/*
 * Right after claiming writer s (one key) when zc_take_here did not grant
 * it, while a worker runs: where a local backend holds s's key, s waits
 * behind it here
 * (zc_cohort_join_here), or a try-lock is refused, with no worker turn.
 * Returns whether it did; *wake: whether the worker must be woken (to arm
 * the holder's child watch, or to check deadlocks in time).
 */
extern bool zc_join_here(ZklTable *t, ZklSlot *s, int64_t mono, int64_t wall, bool *wake);

extern bool zc_release_here(ZklTable *t, ZklSlot *s, int64_t mono, int64_t wall,
							void (*wake_owner) (ZklSlot *s));

/*
 * The worker goes to sleep for wait_ms (-1: until woken): returns that wait
 * shortened to the end of every linger (one a backend began since the
 * worker's plan too) and to deadlock_timeout while a local waiter waits
 * (one a backend joined, zc_join_here), and publishes when it is due
 * (ZklTable.worker_due).
 */
extern long zc_take_here_sleep(ZklTable *t, int64_t mono, long wait_ms);

#endif
