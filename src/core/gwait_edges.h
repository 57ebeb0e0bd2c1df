/*
 * gwait_edges.h — the joined graph's edges for zk_lock_waits (gwait_edges.c).
 * Pure; its types are gwait.h's.
 */
#ifndef ZK_LOCK_GWAIT_EDGES_H
#define ZK_LOCK_GWAIT_EDGES_H

#include "gwait.h"

/*
 * Every wait edge of the documents, to fn: one row per blocker (a node
 * several backends hold gives a row for each; one nobody published, a row
 * with its name only).  Returns how many.
 */
extern int	zc_gwait_edges(const char *const *docs, int ndocs, ZgwEdgeFn fn, void *arg);

#endif
