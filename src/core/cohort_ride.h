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

#endif
