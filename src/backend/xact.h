/*
 * xact.h — a backend's locks bound to its transactions and session
 * (xact.c): the book, losses, the commit check.  Backends only.
 */
#ifndef ZK_LOCK_XACT_H
#define ZK_LOCK_XACT_H

#include "postgres.h"

extern void zkl_xact_init(void);
extern void zkl_local_add(int slot, const char *key, char mode, int64 session, bool session_level);
extern bool zkl_local_stack(const char *key, char mode, bool session_level);
extern bool zkl_local_held(const char *key, char mode);
extern bool zkl_local_unlock(const char *key, char mode, bool session_level);
extern void zkl_local_unlock_all(bool session_level);
extern void zkl_check_losses(void);
extern void zkl_acknowledge_losses(const char *key, char mode);
extern void zkl_discard_all(void);
extern void zkl_explain_cancel(MemoryContext cxt);
extern void zkl_run_explained(void (*fn) (void *arg), void *arg);
extern void zkl_check_for_interrupts(void);
extern void zkl_xact_check_first(void);
extern void zkl_set_pending(const int *slots, int n);
extern int	zkl_local_slot(const char *key, char mode);
extern int	zkl_local_key_slots(const char *key, int *out, int max);
extern void zkl_lost_error(const char *key) pg_attribute_noreturn();

#endif
