/*
 * orphans.h — nodes of this cluster's session that no request owns
 * (orphans.c).  Worker process only.
 */
#ifndef ZK_LOCK_ORPHANS_H
#define ZK_LOCK_ORPHANS_H

#include "slot.h"

extern void zw_delete_stray(const char *path, const char *why);
extern bool zw_may_be_orphan(const char *name);
extern void zw_suspect_blocker(const ZklSlot *s, const char *name);
extern void zw_check_suspects(void);
extern void zw_remember_ghost(const ZklSlot *s);
extern long zw_send_looks(void);

/*
 * This file's process memory (suspects and looks): zw_orphans points at the
 * worker's one copy; the simulator gives each cluster its own.
 */
typedef struct ZwOrphans ZwOrphans;
extern ZwOrphans *zw_orphans;
extern ZwOrphans *zw_orphans_new(void);

#endif
