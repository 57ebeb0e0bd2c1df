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
 * for (deadlock.c), the holder a hand-over waits for, and the lock
 * manager's waits of backends that hold zk locks (a row lock between two
 * zk locks: such a backend is a vertex, never the victim), and a
 * semaphore's waiter, which goes on once enough of the nodes ahead of it
 * are gone, any of them ("S need" before them: a backend is deadlocked only
 * if too few of them can ever go).  A cycle through
 * a node further ahead is found once the nearer nodes are gone.  A cycle
 * inside one cluster through a lock manager's wait is found here too
 * (neither core's detector nor deadlock.c sees both kinds).
 */
#ifndef ZK_LOCK_GWAIT_H
#define ZK_LOCK_GWAIT_H

#include <stddef.h>
#include <stdint.h>

#include "cohort.h"
#include "slot.h"

#define ZGW_WAITS_DIR	".waits"	/* under the root: a document per session */
#define ZGW_DOC_LEN		32768	/* one cluster's document (ZooKeeper allows 1 MB) */
#define ZGW_NAME_LEN	(ZKL_KEY_BUFLEN + ZKL_NODE_BUFLEN + 1)	/* "<key>/<node>" */
#define ZGW_MAX_CHECKS	32		/* nodes a claim checks: those of the cycle's waits */
#define ZGW_DETAIL_LEN	ZKL_DETAIL_LEN
#define ZGW_CLUSTER_LEN	64

#define ZGW_MAX_BLOCKERS 16

/*
 * A backend of this cluster that holds a zk lock and waits for a row or
 * table lock (the lock manager's wait, for at least deadlock_timeout) held
 * or asked before it by others: the local edges a cycle can go through.
 * The host reads them (pg_blocking_pids); mode 'L' in the document.
 */
typedef struct ZgwHeavy
{
	int			pid;
	int64_t		since;			/* wall: when its wait began */
	int			nblockers;
	int			blockers[ZGW_MAX_BLOCKERS];
} ZgwHeavy;

/*
 * A semaphore's waiter goes on once `need` of the nodes ahead of its own
 * are gone (any of them): what a listing of its key says (zc_gwait_sem_wait).
 */
#define ZGW_MAX_AHEAD	32
typedef struct ZgwSemWait
{
	int			slot;
	uint64_t	attempt;		/* the slot's, when listed */
	int			need;
	int			nahead;			/* at most ZGW_MAX_AHEAD of them named */
	char		ahead[ZGW_MAX_AHEAD][ZKL_NODE_BUFLEN];
} ZgwSemWait;

/* What this cluster's document is made of. */
typedef struct ZgwLocal
{
	ZklCohort  *coh;			/* the slot table, and local hand-overs */
	int64_t		now;			/* wall */
	int			timeout_ms;		/* deadlock_timeout */
	const char *cluster;		/* cluster_name */
	int64_t		session;
	const ZgwHeavy *heavy;		/* lock manager waits, nheavy of them */
	int			nheavy;
	const ZgwSemWait *sem;		/* semaphore waits as last listed, nsem of them */
	int			nsem;
	uint64_t	confirms;		/* a claim this cluster was asked to confirm (0: none) */
} ZgwLocal;

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
 * The claim's confirmations.  A document says how things stood when it was
 * written, and a wait that ends through a local hand-over changes nothing
 * in ZooKeeper that a claim could check: the victim's cluster, holding the
 * claim, asks every other cluster of the cycle for a document written
 * after the claim.  The claim's data names the claim (a nonce) and those
 * sessions; each of them, looking for a claim while it publishes,
 * writes its document again with a line "K <nonce>" (zc_gwait_format,
 * ZgwLocal.confirms); the victim's cluster reads those and decides again
 * on them alone.
 */
#define ZGW_MAX_CONFIRMS 255	/* sessions a claim names */
#define ZGW_CLAIM_LEN	(32 + 20 * ZGW_MAX_CONFIRMS)

/*
 * Join the documents (ndocs of them, each NUL-terminated; this cluster's
 * own among them) and look for a cycle across sessions whose victim is a
 * backend of session `self`.  Returns whether there is one, described in *v.
 */
extern bool zc_gwait_decide(const char *const *docs, int ndocs, int64_t self, ZgwVictim *v);

/*
 * Append one step of a circle of waits to a 40P01's DETAIL at out[*n]
 * (zc_gwait_put: the whole line or none): backend pid (placed by `where`,
 * "" inside one cluster) waits for encoded key in mode, blocked by backend
 * `blocker` (placed by `b_where`).  deadlock.c's victims use it too.
 */
extern void zc_gwait_put_step(char *out, size_t len, size_t *n, int pid, const char *where, char mode,
							  const char *key, int blocker, const char *b_where);

/* One wait edge of the joined documents (zk_lock_waits). */
typedef struct ZgwEdgeRow
{
	int64_t		w_session;
	char		w_cluster[ZGW_CLUSTER_LEN];
	int			w_pid;
	char		w_mode;			/* ZKL_MODE_*, or 'L': a row or table lock */
	char		w_key[ZKL_KEY_BUFLEN];	/* as given ("" for a row or table lock) */
	int64_t		w_since;		/* wall, the waiting cluster's clock */
	int64_t		b_session;		/* 0: no cluster published the blocker */
	char		b_cluster[ZGW_CLUSTER_LEN];
	int			b_pid;			/* 0: unknown (no cluster published it) */
	char		b_mode;			/* of the node waited for (0: a backend of its cluster) */
	char		b_key[ZKL_KEY_BUFLEN];
	char		b_node[ZKL_NODE_BUFLEN];	/* the node waited for ("": a backend) */
} ZgwEdgeRow;

typedef void (*ZgwEdgeFn) (void *arg, const ZgwEdgeRow *row);

#endif
