/*
 * cohort_ride.h — readers riding a reader's node (cohort_ride.c).
 * Pure; its types are cohort.h's.
 */
#ifndef ZK_LOCK_COHORT_RIDE_H
#define ZK_LOCK_COHORT_RIDE_H

#include "cohort.h"

/*
 * Whether local readers of other backends than s's ride o's shared node:
 * then it is not the node of o's backend alone (core's same-backend rule).
 */
extern bool zc_cohort_ridden_by_others(const ZklCohort *c, const ZklSlot *o, const ZklSlot *s);

/*
 * A backend's new shared request s rides a local reader's granted node by
 * itself, with no worker turn (take_here.c): only where the worker's own
 * pass (zc_cohort_ride) would let it ride at once.  Returns whether it did:
 * s is granted then, through c's host.
 */
extern bool zc_cohort_ride_here(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono);

/*
 * A backend is done with held reader slot s (abandoned): a rider goes, and
 * a node with a rider left passes to it, at once, as the worker's next
 * pass would (zc_cohort_tend_riders).  Returns whether it did; *told: a
 * local waiter of the key now owes a listing (the worker must turn).
 */
extern bool zc_cohort_riders_release_here(ZklCohort *c, ZklSlot *s, bool *told);

#endif
