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



extern void zc_cohort_ask_peek(ZklSlot *o, bool connected);
extern ZklSlot * zc_cohort_carrier_of(ZklCohort *c, const ZklSlot *s);
extern bool zc_cohort_carries(const ZklCohort *c, const ZklSlot *o);
extern bool zc_cohort_eligible(const ZklCohort *c, const ZklSlot *s);
extern bool zc_cohort_eligible_x(const ZklCohort *c, const ZklSlot *s);
extern void zc_cohort_end_linger(ZklSlot *o);
extern void zc_cohort_barrier_passes(const ZklSlot *from, ZklSlot *to);
extern ZklSlot * zc_cohort_first_waiter(ZklCohort *c, const ZklSlot *o);
extern void zc_cohort_join(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono);
extern bool zc_cohort_older_joiner(ZklCohort *c, const ZklSlot *s, ZklSlot *o);
extern bool zc_cohort_may_pass(const ZklCohort *c, const ZklSlot *o, bool connected, int64_t mono);
extern void zc_cohort_move_place(ZklCohort *c, ZklSlot *from, ZklSlot *to);
extern bool zc_cohort_owner_other(const ZklCohort *c, const ZklSlot *o, bool decided);
extern void zc_cohort_readers_learn(ZklCohort *c, ZklSlot *s, const ZkrChild *kids, int n);
extern void zc_cohort_release(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono);
extern void zc_cohort_ride(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono);
extern bool zc_cohort_same_key(const ZklSlot *a, const ZklSlot *b);
extern bool zc_cohort_heads(const ZklSlot *o);
extern bool zc_cohort_may_take(ZklCohort *c, const ZklSlot *s, const ZklSlot *o, bool connected, int64_t mono);
extern void zc_cohort_take(ZklCohort *c, ZklSlot *o, ZklSlot *s);
extern bool zc_cohort_writer_here(const ZklCohort *c, const ZklSlot *o);
extern const ZklSlot *zc_cohort_reader_coming(ZklCohort *c, const ZklSlot *s);
extern bool zc_cohort_other_node(const ZklCohort *c, const ZklSlot *o);
extern void zc_cohort_linger_reader(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono, bool reader_waits);
extern bool zc_cohort_may_pass_but_peek(const ZklCohort *c, const ZklSlot *o, bool connected, int64_t mono);
extern void zc_cohort_linger_readers(ZklCohort *c, bool connected, int64_t mono);
extern void zc_cohort_readers_keep_place(ZklCohort *c);
extern void zc_cohort_tend_riders(ZklCohort *c);
extern void zc_cohort_turn_off(ZklCohort *c);
extern void zc_cohort_unmark(ZklSlot *s);

#endif
