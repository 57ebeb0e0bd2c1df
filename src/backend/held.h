/*
 * held.h — this backend's locks (held.c): the book, losses.  Backends
 * only.
 */
#ifndef ZK_LOCK_HELD_H
#define ZK_LOCK_HELD_H

#include "postgres.h"

#include "book.h"

#define ZKL_LOST_HINT	"Retry the transaction."

extern void zb_local_add(int slot, const char *key, char mode, int64 session, bool session_level);
extern bool zb_local_stack(const char *key, char mode, bool session_level);
extern bool zb_local_held(const char *key, char mode);
extern bool zb_local_unlock(const char *key, char mode, bool session_level);
extern void zb_local_unlock_all(bool session_level);
extern void zb_check_losses(void);
extern void zb_acknowledge_losses(const char *key, char mode);
extern void zb_discard_all(void);
extern void zb_explain_cancel(MemoryContext cxt);
extern void zb_run_explained(void (*fn) (void *arg), void *arg);
extern void zb_check_for_interrupts(void);
extern void zb_set_pending(const int *slots, int n);
extern int	zb_local_slot(const char *key, char mode);
extern int	zb_local_key_slots(const char *key, int *out, int max);
extern void zb_lost_error(const char *key) pg_attribute_noreturn();

extern ZklBook *zb_held_book(void);
extern bool zb_held_init(bool make);
extern const char *zb_lost_key(bool *session_level);
extern bool zb_held_committing(bool on);
extern bool zb_held_past_check(void);
extern void zb_session_lost_error(const char *key, bool acknowledged) pg_attribute_noreturn();

#endif
