/*
 * left_session.h — the session a crash left behind (left_session.c).
 * Worker process only.
 */
#ifndef ZK_LOCK_LEFT_SESSION_H
#define ZK_LOCK_LEFT_SESSION_H

#include <zookeeper/zookeeper.h>

/*
 * left_session.c's process memory: zw_left points at the worker's one copy;
 * the simulator gives each cluster its own.
 */
typedef struct ZwLeft ZwLeft;
extern ZwLeft *zw_left;
extern ZwLeft *zw_left_new(void);

extern void zw_left_save(const clientid_t *id, uint64 nonce);
extern void zw_left_begin(void);
extern void zw_left_tend(void);
extern void zw_left_forget(void);
extern void zw_left_end(void);

#endif
