/*
 * cohort_int.h — what the files of local hand-over share (cohort.c,
 * cohort_ride.c, cohort_plan.c), and nothing else includes.
 */
#ifndef ZK_LOCK_COHORT_INT_H
#define ZK_LOCK_COHORT_INT_H

#include "cohort.h"
#include "slot_state.h"

#include <stdio.h>
#include <string.h>

#include "zk_result.h"		/* ZooKeeper's result codes, not its library */

#include "table.h"



extern void zcoh_ask_peek(ZklSlot *o, bool connected);
extern ZklSlot * zcoh_carrier_of(ZklCohort *c, const ZklSlot *s);
extern bool zcoh_carries(const ZklCohort *c, const ZklSlot *o);
extern bool zcoh_eligible(const ZklCohort *c, const ZklSlot *s);
extern bool zcoh_eligible_x(const ZklCohort *c, const ZklSlot *s);
extern void zcoh_end_linger(ZklSlot *o);
extern ZklSlot * zcoh_first_waiter(ZklCohort *c, const ZklSlot *o);
extern void zcoh_join(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono);
extern bool zcoh_may_pass(const ZklCohort *c, const ZklSlot *o, bool connected, int64_t mono);
extern void zcoh_move_place(ZklCohort *c, ZklSlot *from, ZklSlot *to);
extern bool zcoh_owner_other(const ZklCohort *c, const ZklSlot *o, bool decided);
extern void zcoh_readers_learn(ZklCohort *c, ZklSlot *s, const ZkrChild *kids, int n);
extern void zcoh_release(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono);
extern void zcoh_ride(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono);
extern bool zcoh_same_key(const ZklSlot *a, const ZklSlot *b);
extern void zcoh_tend_riders(ZklCohort *c);
extern void zcoh_turn_off(ZklCohort *c);
extern void zcoh_unmark(ZklSlot *s);

#endif
