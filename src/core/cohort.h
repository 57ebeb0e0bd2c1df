/*
 * cohort.h — local hand-over of locks (cohort.c), below core.c:
 * core.c calls it and hands it the few steps of its own that a hand-over
 * takes (ZklCohortHost).  Pure, like core.c.
 */
#ifndef ZK_LOCK_COHORT_H
#define ZK_LOCK_COHORT_H

#include "slot.h"

/* core.c's steps that a hand-over takes too; arg is passed back to each */
typedef struct ZklCohortHost
{
	void	   *arg;
	void		(*grant) (void *arg, ZklSlot *s);
	void		(*lose) (void *arg, ZklSlot *s);	/* a held lock is gone */
	void		(*requeue) (void *arg, ZklSlot *s); /* a fresh request again */
	void		(*wake) (void *arg, ZklSlot *s);
	bool		(*grants_paused) (void *arg, int64_t mono);
} ZklCohortHost;

/* Settings (the host sets the first block) and the table. */
typedef struct ZklCohort
{
	bool		handover;		/* zk_lock.local_handover */
	int			handover_limit; /* zk_lock.local_handover_limit */
	int			linger_ms;		/* zk_lock.linger */
	ZklTable   *t;
	const ZklCohortHost *host;
} ZklCohort;

/* ZklSlot.peek: what the slot knows of nodes queued behind its own */
#define COH_PEEK_NONE	0		/* nothing: a listing must come first */
#define COH_PEEK_ASKED	1		/* that listing (with a child watch) is in flight */
#define COH_PEEK_ARMED	2		/* a watched listing came back; no child event since */
#define COH_PEEK_WANTED	3		/* that listing is owed (ZKT_CHILDREN), not sent yet */

/* Runs first in every zcore_plan(): joins, hand-overs, lingers.  Returns ms until due again (-1: never). */
extern long zcoh_plan(ZklCohort *c, bool connected, int64_t now, int64_t mono);

/* An abandoned holder whose node waits for a hand-over decision: not deleted yet. */
extern bool zcoh_keeps(const ZklCohort *c, const ZklSlot *s);

/* A listing of s's key came back (rc ZOK); watched: it set a child watch. */
extern void zcoh_listed(ZklCohort *c, ZklSlot *s, const ZkrChild *kids, int n, bool watched);

/* A listing of s's key failed with rc; transient: its outcome is unknown, or the session ended. */
extern void zcoh_listing_failed(ZklCohort *c, ZklSlot *s, int rc, bool transient);

/* A child event on a lock key's node; returns whether path is one of our lock keys. */
extern bool zcoh_event(ZklCohort *c, const char *path);

/* Slot s has a new node, or none: what hand-over knew of the old one is void. */
extern void zcoh_new_node(ZklSlot *s);

/* core.c plans slot s's listing now: a wanted one goes out with the watch. */
extern void zcoh_listing_planned(ZklSlot *s);

/* Connected again: events for what changed meanwhile are still to come. */
extern void zcoh_disarm(ZklCohort *c);

/* The request whose node a writer waiting for a local hand-over (ZKS_COHORT) waits for, or NULL. */
extern const ZklSlot *zcoh_waits_behind(ZklCohort *c, const ZklSlot *s);

/* Whether a new node of s is created with the linger mark (zcore_node_data). */
extern bool zcoh_marks_linger(const ZklCohort *c, const ZklSlot *s);

/* A clean stop: no node lingers any longer, nor will (its delete is owed now). */
extern void zcoh_stop_lingering(ZklCohort *c);

/* A new worker process: the child watches were the old process's. */
extern void zcoh_forget_watches(ZklCohort *c);

/*
 * Whether local readers of other backends than s's ride o's shared node:
 * then it is not the node of o's backend alone (core's same-backend rule).
 */
extern bool zcoh_ridden_by_others(const ZklCohort *c, const ZklSlot *o, const ZklSlot *s);

/* Slot s held a node that is gone: so is every local hold through it. */
extern void zcoh_node_lost(ZklCohort *c, const ZklSlot *s);

/* Whether a listing of s's key sets a child watch (see zcore_listing_watches). */
extern bool zcoh_listing_watches(const ZklCohort *c, const ZklSlot *s);


#endif
