/*
 * cohort_plan.h — local hand-over each turn, and what listings and events
 * mean (cohort_plan.c).
 * Pure; its types are cohort.h's.
 */
#ifndef ZK_LOCK_COHORT_PLAN_H
#define ZK_LOCK_COHORT_PLAN_H

#include "cohort.h"

/* Runs first in every zc_core_plan(): joins, hand-overs, lingers.  Returns ms until due again (-1: never). */
extern long zc_cohort_plan(ZklCohort *c, bool connected, int64_t now, int64_t mono);

/* An abandoned holder whose node waits for a hand-over decision: not deleted yet. */
extern bool zc_cohort_keeps(const ZklCohort *c, const ZklSlot *s);

/* s's node is gone from under it (a listing or a read of it said so): held, lost; lingering, freed. */
extern void zc_cohort_node_gone(ZklCohort *c, ZklSlot *s);

/* A listing of s's key came back (rc ZOK); watched: it set a child watch. */
extern void zc_cohort_listed(ZklCohort *c, ZklSlot *s, const ZkrChild *kids, int n, bool watched);

/* A listing of s's key failed with rc; transient: its outcome is unknown, or the session ended. */
extern void zc_cohort_listing_failed(ZklCohort *c, ZklSlot *s, int rc, bool transient);

/* A child event on a lock key's node; returns whether path is one of our lock keys. */
extern bool zc_cohort_event(ZklCohort *c, const char *path);

/* Connected again: events for what changed meanwhile are still to come. */
extern void zc_cohort_disarm(ZklCohort *c);

/* A new worker process: the child watches were the old process's. */
extern void zc_cohort_forget_watches(ZklCohort *c);

/* Slot s held a node that is gone: so is every local hold through it. */
extern void zc_cohort_node_lost(ZklCohort *c, const ZklSlot *s);

#endif
