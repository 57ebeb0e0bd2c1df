/*
 * core_plan.h — the worker's plan each turn (core_plan.c).
 * Pure; its types are core.h's.
 */
#ifndef ZK_LOCK_CORE_PLAN_H
#define ZK_LOCK_CORE_PLAN_H

#include "core.h"

/*
 * Pick the calls owed and advance states so that no backend can free those
 * slots meanwhile: c->ops[0 .. c->nops).  `connected`: a session is up;
 * proof_at: send time (mono) of the current session's latest commit proof
 * (0: none).  Returns the ms until the worker must plan again without news
 * (-1: never).
 */
extern long zc_core_plan(ZklCore *c, bool connected, int64_t proof_at);

/*
 * A deadlock across clusters (gwait.c) names backend pid's wait through
 * `node` ("<key>/<node>"; "" for a wait for a local hand-over) as the
 * victim: fail that request with 40P01 and msg, detail (the cycle's steps)
 * kept for its error (ZklTable.deadlock_detail).  False if that wait is
 * over.  The host plans again soon: the victim's node is to be deleted.
 */
extern bool zc_core_fail_deadlock(ZklCore *c, int pid, const char *node, const char *msg,
								  const char *detail);

#endif
