/*
 * slot_state.h — a slot's state machine: every change of ZklSlot.zstate
 * goes through zc_slot_move, which knows the legal transitions.  Pure.
 */
#ifndef ZK_LOCK_SLOT_STATE_H
#define ZK_LOCK_SLOT_STATE_H

#include "slot.h"

/*
 * Move s to `to`.  An illegal transition calls zc_slot_illegal (the host's:
 * PostgreSQL raises an error naming it), or, with none set, aborts with
 * the transition on stderr (unit tests, the simulator).
 */
extern void zc_slot_move(ZklSlot *s, ZklZkState to);

/* Whether from -> to is a legal transition. */
extern bool zc_slot_legal(ZklZkState from, ZklZkState to);

/* The state's name, as the docs and the views say it. */
extern const char *zc_slot_name(ZklZkState state);

extern void (*zc_slot_illegal) (const ZklSlot *s, ZklZkState to);

#endif
