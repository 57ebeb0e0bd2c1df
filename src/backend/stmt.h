/*
 * stmt.h — around each statement (stmt.c).  Backends only.
 */
#ifndef ZK_LOCK_STMT_H
#define ZK_LOCK_STMT_H

extern void zb_stmt_hooks_init(void);

#endif
