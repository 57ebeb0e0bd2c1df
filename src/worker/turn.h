/*
 * turn.h — one turn of the worker's loop, and a clean stop's, between two
 * waits (turn.c).  Worker process only.
 */
#ifndef ZK_LOCK_TURN_H
#define ZK_LOCK_TURN_H

#include "core.h"
#include "clean_stop.h"
#include "presence.h"
#include "session.h"

#define ZW_CLEAN_STOP_MS	3000	/* a clean stop's wait for every lock to be given back */

/* A clean stop under way (zw_stop_*). */
typedef struct ZwStop
{
	int64		deadline;		/* zkl_mono_now: a plain close then */
	int64		tag;			/* the session's incarnation when it began: ids come back */
	ZklMarkState mark;			/* the tombstone's */
	bool		marking;		/* asked for: nothing is planned any more */
} ZwStop;

/* the worker's core, which the session's events act on (the simulator points it at each cluster's) */
extern ZklCore *zw_turn_core;
extern const ZklSessionEvents zw_session_events;

extern long zw_turn(ZklCore *core, bool draining, void (*take_settings) (ZklCore *core));
extern void zw_stop_begin(ZwStop *st, ZklCore *core, int bound_ms);
extern ZklStopStep zw_stop_turn(ZwStop *st);
extern void zw_stop_report(const ZwStop *st);

#endif
