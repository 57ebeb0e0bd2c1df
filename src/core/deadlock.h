/*
 * deadlock.h — deadlocks among the backends of one cluster, found in the
 * slot table with no I/O: a backend whose zk_lock request has waited longer
 * than deadlock_timeout, and that waits (through ZooKeeper's queue or for a
 * local hand-over) for a backend that waits, in the end, for it.  The
 * youngest waiting request of the cycle is the victim (40P01), as core
 * PostgreSQL breaks a cycle by cancelling one wait.
 *
 * Edges are the waits the worker can see: a queued request waits for every
 * other local backend with a node ahead of its own on the key in a mode it
 * cannot share (readers riding a node count as holders of it); a writer
 * waiting for a local hand-over waits for the holder of the cluster's node.
 * A backend's own nodes never block it.  A cycle through another cluster's
 * node, a row lock or a semaphore is not seen here: the detector across
 * clusters (gwait.c) finds those (docs/architecture.md, Deadlock detection).
 */
#ifndef ZK_LOCK_DEADLOCK_H
#define ZK_LOCK_DEADLOCK_H

#include <stddef.h>

#include "cohort.h"
#include "slot.h"

/* Paths of waits longer than this are not followed. */
#define ZDL_MAX_CYCLE	64

/*
 * A waiting slot of a cycle among local backends in which some request has
 * waited at least timeout_ms (now: wall time), the youngest request of the
 * cycle; or -1.  Names the cycle's backends in msg (the victim's error) and
 * each of its steps in detail, a line each (its DETAIL).  Try-locks and
 * semaphores take no part (a try is answered soon).
 */
extern int	zc_deadlock_find_victim(ZklCohort *coh, int64_t now, int timeout_ms, char *msg, size_t len,
									char *detail, size_t dlen);

/* A request that waits: not granted yet, still wanted, not a try-lock nor a semaphore. */
extern bool zc_deadlock_waiting(const ZklSlot *s);
/* A semaphore's request that waits (the other kind, for deadlocks across clusters: gwait.h). */
extern bool zc_deadlock_sem_waiting(const ZklSlot *s);

/*
 * The other local backends waiting request s waits for (its edges above),
 * each once, at most max of them into pids; returns how many.
 */
extern int	zc_deadlock_blockers(ZklCohort *coh, const ZklSlot *s, int *pids, int max);

/* The wall time when the oldest waiting request reaches timeout_ms (0: nobody waits). */
extern int64_t zc_deadlock_next_due(const ZklTable *t, int timeout_ms);
/* The same for the requests `counts` says, of any kind (gwait.c's). */
extern int64_t zc_deadlock_oldest_due(const ZklTable *t, int timeout_ms,
							  bool (*counts) (const ZklTable *t, const ZklSlot *s));

#endif
