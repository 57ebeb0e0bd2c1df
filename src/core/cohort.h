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

/* Slot s has a new node, or none: what hand-over knew of the old one is void. */
extern void zc_cohort_new_node(ZklSlot *s);

/* core.c plans slot s's listing now: a wanted one goes out with the watch. */
extern void zc_cohort_listing_planned(ZklSlot *s);

/* The request whose node a writer waiting for a local hand-over (ZKS_COHORT) waits for, or NULL. */
extern const ZklSlot *zc_cohort_waits_behind(ZklCohort *c, const ZklSlot *s);

/* Whether a new node of s is created with the linger mark (zc_core_node_data). */
extern bool zc_cohort_marks_linger(const ZklCohort *c, const ZklSlot *s);

/* A clean stop: no node lingers any longer, nor will (its delete is owed now). */
extern void zc_cohort_stop_lingering(ZklCohort *c);

/* Whether a listing of s's key sets a child watch (see zc_core_listing_watches). */
extern bool zc_cohort_listing_watches(const ZklCohort *c, const ZklSlot *s);

/*
 * A backend's new request s takes the node lingering for its key by itself,
 * with no worker turn (take_here.c): only where the worker's own join would
 * pass that node to s at once, and where nothing else of the key is in the
 * table (no holder, waiter, rider or earlier request here).  Returns
 * whether it did: s is granted then, through c's host.
 */
extern bool zc_cohort_take_here(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono);

/*
 * A backend's new writer s behind a node a local backend holds (and is not
 * done with): zc_cohort_join's rule, applied at the claim with no worker
 * turn (take_here.c): s waits here for the node (ZKS_COHORT), or a
 * try-lock is refused.  Returns the holder's slot, or NULL where the
 * worker decides (anything else: a lingering node, a request on its way,
 * an upgrade, a reader, an older new writer of the key not placed yet).
 */
extern ZklSlot *zc_cohort_join_here(ZklCohort *c, ZklSlot *s, bool connected, int64_t mono);

/*
 * A backend is done with its held slot o (abandoned): o's node lingers at
 * once, with no worker turn (take_here.c), only where the worker's release
 * would let it linger and nothing else of the key is in the table, with no
 * call owed for it.  Returns whether it did.
 */
extern bool zc_cohort_linger_here(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono);

/*
 * The same release: o's node passes at once to the first local writer
 * waiting behind it, where the worker's release would pass it
 * (zc_cohort_release's first rule), with nothing owed for it.  Returns that
 * waiter (granted through c's host, which wakes its owner), or NULL.
 */
extern ZklSlot *zc_cohort_pass_here(ZklCohort *c, ZklSlot *o, bool connected, int64_t mono);

#endif
