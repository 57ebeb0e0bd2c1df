/*
 * gwait_doc.h — this cluster's document of its long waits, a claim's data and
 * its confirmations (gwait_doc.c).
 * Pure; its types are gwait.h's.
 */
#ifndef ZK_LOCK_GWAIT_DOC_H
#define ZK_LOCK_GWAIT_DOC_H

#include "gwait.h"

/*
 * This cluster's document: its backends whose zk_lock wait (deadlock.h's
 * kind) is at least timeout_ms old at `now` (wall), under the current root,
 * and the lock manager's waiters given.  Returns its length; 0 when no zk
 * wait is that old (nothing to publish).
 */
extern int	zc_gwait_format(const ZgwLocal *in, char *out, size_t len);

/*
 * The semaphore requests of this cluster that wait that long: their slots
 * (at most max), whose keys the host lists for zc_gwait_sem_wait.
 */
extern int	zc_gwait_sem_waiters(const ZklTable *t, int64_t now, int timeout_ms, int *slots, int max);

/*
 * From a listing of semaphore slot s's key (names, n of them): the nodes
 * ahead of its own and how many must go.  False if it is not blocked (or
 * its node is not there).
 */
extern bool zc_gwait_sem_wait(const ZklTable *t, int slot, const char *const *names, int n,
						 ZgwSemWait *out);

/*
 * Backends with a node under the current root and no zk wait: those the
 * host asks the lock manager about (each once, at most max into pids).
 */
extern int	zc_gwait_holders(const ZklTable *t, int *pids, int max);

/*
 * Whether a slot still has node `name` ("<key>/<node>"), or its delete is
 * still on its way: a victim's claim is kept until it is not.
 */
extern bool zc_gwait_node_live(const ZklTable *t, const char *name);

/* When the oldest wait under the current root is timeout_ms old (wall; 0: none waits). */
extern int64_t zc_gwait_next_due(const ZklTable *t, int timeout_ms);

/*
 * A cheap summary of which requests wait that long and on what: when it
 * changes, the published document is out of date (a wait ended, or moved).
 */
extern uint64_t zc_gwait_fingerprint(const ZklTable *t, int64_t now, int timeout_ms);

/*
 * The claim's data: its nonce and the sessions that must confirm: every
 * one whose document the decision was made on, but self (not only the
 * cycle's: whether a semaphore's waiter can go on depends on others).
 */
extern int	zc_gwait_claim_format(uint64_t nonce, const int64_t *sessions, int n, int64_t self,
							 char *out, size_t len);

/* The claim's nonce if it asks `session` to confirm, else 0. */
extern uint64_t zc_gwait_claim_asks(const char *data, int len, int64_t session);

/* The claim's sessions that must confirm (at most max into out). */
extern int	zc_gwait_claim_sessions(const char *data, int len, int64_t *out, int max);

/* Whether a document was written for claim `nonce` (it has the line "K <nonce>"). */
extern bool zc_gwait_confirms(const char *doc, uint64_t nonce);

#endif
