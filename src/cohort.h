/*
 * cohort.h — local hand-over of exclusive locks (cohort.c), and the few
 * steps of core.c it shares.  Internal to the worker's decisions: only
 * core.c and cohort.c include it.
 */
#ifndef ZK_LOCK_COHORT_H
#define ZK_LOCK_COHORT_H

#include "core.h"

/* ZklSlot.peek: what the slot knows of nodes queued behind its own */
#define COH_PEEK_NONE	0		/* nothing: a listing must come first */
#define COH_PEEK_ASKED	1		/* that listing (with a child watch) is in flight */
#define COH_PEEK_ARMED	2		/* a watched listing came back; no child event since */
#define COH_PEEK_WANTED	3		/* that listing is owed (ZKT_CHILDREN), not sent yet */

/* Runs first in every zcore_plan(): joins, hand-overs, lingers.  Returns ms until due again (-1: never). */
extern long zcoh_plan(ZklCore *c, bool connected, int64_t now, int64_t mono);

/* An abandoned holder whose node waits for a hand-over decision: not deleted yet. */
extern bool zcoh_keeps(const ZklCore *c, const ZklSlot *s);

/* A listing of s's key came back (rc ZOK); watched: it set a child watch. */
extern void zcoh_listed(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n, bool watched);

/* A listing of s's key failed with rc. */
extern void zcoh_listing_failed(ZklCore *c, ZklSlot *s, int rc);

/* A child event on a lock key's node; returns whether path is one of our lock keys. */
extern bool zcoh_event(ZklCore *c, const char *path);

/* Slot s has a new node, or none: what hand-over knew of the old one is void. */
extern void zcoh_new_node(ZklSlot *s);

/* core.c plans slot s's listing now: a wanted one goes out with the watch. */
extern void zcoh_listing_planned(ZklSlot *s);

/* A new worker process: the child watches were the old process's. */
extern void zcoh_forget_watches(ZklCore *c);

/* core.c's steps that cohort.c takes too */
extern void zcore_grant_slot(ZklCore *c, ZklSlot *s);
extern void zcore_lose_slot(ZklCore *c, ZklSlot *s);
extern void zcore_requeue_slot(ZklCore *c, ZklSlot *s);
extern void zcore_wake_owner(ZklCore *c, ZklSlot *s);

#endif
