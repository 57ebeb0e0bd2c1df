/*
 * slot_state.h — a slot's state machine: every change of ZklSlot.zstate
 * goes through zks_move, which knows the legal transitions.  Pure.
 */
#ifndef ZK_LOCK_SLOT_STATE_H
#define ZK_LOCK_SLOT_STATE_H

#include "slot.h"

/*
 * Move s to `to`.  An illegal transition calls zks_illegal (the host's:
 * PostgreSQL raises an error naming it), or, with none set, aborts with
 * the transition on stderr (unit tests, the simulator).
 */
extern void zks_move(ZklSlot *s, ZklZkState to);

/* Whether from -> to is a legal transition. */
extern bool zks_legal(ZklZkState from, ZklZkState to);

/* The state's name, as the docs and the views say it. */
extern const char *zks_name(ZklZkState state);

extern void (*zks_illegal) (const ZklSlot *s, ZklZkState to);

#endif
