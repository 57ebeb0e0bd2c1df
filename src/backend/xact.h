/*
 * xact.h — binding this backend's locks to its transactions (xact.c).
 * Backends only.
 */
#ifndef ZK_LOCK_XACT_H
#define ZK_LOCK_XACT_H

/* Before a backend's first lock: the book, and the transaction callbacks. */
extern void zb_xact_init(void);
/* After each statement: the commit check first among the transaction callbacks. */
extern void zb_xact_check_first(void);

#endif
