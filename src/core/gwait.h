/*
 * gwait.h — deadlocks across clusters, decided with no I/O.
 *
 * Each cluster whose backends wait on zk locks for longer than
 * deadlock_timeout publishes those waits in ZooKeeper (gwaits.c does the
 * I/O): one document per session, under <root>/.waits, with one entry per
 * long-waiting backend: what it waits for (a node of another cluster, or a
 * backend of its own cluster) and the nodes it holds or queues with.  Every
 * cluster's detector reads all documents and joins them into one wait-for
 * graph whose vertices are (session, pid): an edge to a node leads to every
 * backend that published it as its own.  In each strongly connected part
 * that spans two sessions or more, the youngest backend is the victim: the
 * one whose transaction's oldest node has the greatest czxid (ZooKeeper's
 * order, the same for every reader; a node made inside a multi has none
 * known and counts as the youngest), ties broken by session and pid, among
 * the backends with a wait across sessions inside the part.  Only
 * the victim's own cluster acts on it, so detectors in every cluster agree
 * on one victim without talking; a cycle inside one cluster is left to
 * deadlock.c.
 *
 * The edges are the waits each worker sees: the node a queued request
 * watches (the nearest one it cannot share), the local backends it waits
 * for (deadlock.c), the holder a hand-over waits for.  A cycle through a
 * node further ahead is found once the nearer nodes are gone.
 */
#ifndef ZK_LOCK_GWAIT_H
#define ZK_LOCK_GWAIT_H

#include <stddef.h>
#include <stdint.h>

#include "cohort.h"
#include "slot.h"

#define ZGW_DOC_LEN		32768	/* one cluster's document (ZooKeeper allows 1 MB) */
#define ZGW_NAME_LEN	(ZKL_KEY_BUFLEN + ZKL_NODE_BUFLEN + 1)	/* "<key>/<node>" */
#define ZGW_MAX_CHECKS	32		/* nodes a claim checks: those of the cycle's waits */
#define ZGW_DETAIL_LEN	1536
#define ZGW_CLUSTER_LEN	64

/*
 * This cluster's document: its backends whose zk_lock wait (deadlock.h's
 * kind) is at least timeout_ms old at `now` (wall), under the current root.
 * Returns its length; 0 when no wait is that old (nothing to publish).
 */
extern int	zgw_format(ZklCohort *coh, int64_t now, int timeout_ms, const char *cluster,
					   int64_t session, char *out, size_t len);

/* When the oldest wait under the current root is timeout_ms old (wall; 0: none waits). */
extern int64_t zgw_next_due(const ZklTable *t, int timeout_ms);

/*
 * A cheap summary of which requests wait that long and on what: when it
 * changes, the published document is out of date (a wait ended, or moved).
 */
extern uint64_t zgw_fingerprint(const ZklTable *t, int64_t now, int timeout_ms);

/* What this cluster must do about a cycle it found. */
typedef struct ZgwVictim
{
	int			pid;			/* the local backend to fail with 40P01 */
	char		node[ZGW_NAME_LEN];	/* its waiting node, "<key>/<node>" ("": a hand-over wait) */
	int			nchecks;		/* nodes that must still exist for the cycle to stand */
	char		checks[ZGW_MAX_CHECKS][ZGW_NAME_LEN];
	int			nsessions;		/* whose documents it was read from (their versions are checked) */
	int64_t		sessions[ZGW_MAX_CHECKS];
	char		detail[ZGW_DETAIL_LEN];	/* each step of the cycle, for the error and the log */
} ZgwVictim;

/*
 * Join the documents (ndocs of them, each NUL-terminated; this cluster's
 * own among them) and look for a cycle across sessions whose victim is a
 * backend of session `self`.  Returns whether there is one, described in *v.
 */
extern bool zgw_decide(const char *const *docs, int ndocs, int64_t self, ZgwVictim *v);

#endif
