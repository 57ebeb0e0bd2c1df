/*
 * held.h — this backend's locks (held.c): the book, losses.  Backends
 * only.
 */
#ifndef ZK_LOCK_HELD_H
#define ZK_LOCK_HELD_H

#include "postgres.h"

#include "book.h"

#define ZKL_LOST_HINT	"Retry the transaction."

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
extern void zkl_set_pending(const int *slots, int n);
extern int	zkl_local_slot(const char *key, char mode);
extern int	zkl_local_key_slots(const char *key, int *out, int max);
extern void zkl_lost_error(const char *key) pg_attribute_noreturn();

extern ZklBook *zkl_held_book(void);
extern bool zkl_held_init(bool make);
extern const char *zkl_lost_key(bool *session_level);
extern void zkl_session_lost_error(const char *key, bool acknowledged) pg_attribute_noreturn();

#endif
