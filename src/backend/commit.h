/*
 * commit.h — the commit check (commit.c).  Backends only.
 */
#ifndef ZK_LOCK_COMMIT_H
#define ZK_LOCK_COMMIT_H

extern void zb_commit_check(void);

#endif
