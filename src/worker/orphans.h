/*
 * orphans.h — nodes of this cluster's session that no request owns
 * (orphans.c).  Worker process only.
 */
#ifndef ZK_LOCK_ORPHANS_H
#define ZK_LOCK_ORPHANS_H

#include "slot.h"

extern void zkl_delete_stray(const char *path, const char *why);
extern bool zkl_may_be_orphan(const char *name);
extern void zkl_suspect_blocker(const ZklSlot *s, const char *name);
extern void zkl_check_suspects(void);
extern void zkl_remember_ghost(const ZklSlot *s);
extern long zkl_send_looks(void);

#endif
