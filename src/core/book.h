/*
 * book.h — a backend's book of its granted locks, with no I/O: which lock
 * stacks on which, what a level's end, an unlock, a savepoint's rollback or
 * an acknowledgement gives up, and what the transaction's commit must prove
 * (holds.h holds the rules).  xact.c keeps one per backend and the
 * simulator one per simulated backend, so the simulator runs the shipped
 * bookkeeping.
 *
 * The host gives the book its memory and its view of the slot table: which
 * slot the worker marked lost, where a lock's levels are published, and how
 * slots are given up.  Every function that allocates does so before it
 * changes anything, so an allocation that fails (the server raises an
 * error) leaves the book as it was.
 */
#ifndef ZK_LOCK_BOOK_H
#define ZK_LOCK_BOOK_H

#include <stddef.h>
#include <stdint.h>

#include "holds.h"
#include "slot.h"

typedef struct ZkbHost
{
	void	   *arg;
	void	   *(*alloc) (void *arg, size_t size);	/* never NULL: it raises instead */
	void	   *(*grow) (void *arg, void *p, size_t size);
	void		(*release) (void *arg, void *p);
	bool		(*lost) (void *arg, int slot);	/* ZooKeeper took the slot's lock away */
	void		(*scope) (void *arg, int slot, uint8_t scope);	/* ZKL_SCOPE_* it is held at */
	void		(*abandon) (void *arg, const int *slots, int n);	/* give the slots up */
	ZkhNodeBefore node_before;	/* slot a's node older than slot b's (holds.h) */
} ZkbHost;

/* Transaction-level acquisitions of a lock taken in one subtransaction. */
typedef struct ZkbDepth
{
	uint32_t	subid;
	int			count;
} ZkbDepth;

/* What the book keeps of a lock besides its ZklHold. */
typedef struct ZkbExtra
{
	char	   *key;			/* the book's copy (ZklHold.key points here) */
	int64_t		session;		/* the ZooKeeper session that granted it */
	bool		keep;			/* release_empty's scratch */
	int			ndepth;
	int			maxdepth;
	ZkbDepth   *depth;			/* by subtransaction, innermost last */
} ZkbExtra;

typedef struct ZklBook
{
	const ZkbHost *host;
	int			n;
	int			max;
	ZklHold    *h;				/* n locks (their keys the book's own copies) */
	ZkbExtra   *x;				/* and what goes with each */
	int			pending[ZKL_MULTI_KEYS];	/* slots of the request waited for */
	int			npending;
	ZklXactProof proof;			/* what this transaction's commit must prove */
	char		lost_key[ZKL_KEY_BUFLEN];	/* proof.lost_key points here */
} ZklBook;

/* The lock of key in mode (held or kept for its other mode), or -1. */
extern int	zc_book_find(const ZklBook *b, const char *key, char mode);
/* The same, only while held at some level. */
extern int	zc_book_find_held(const ZklBook *b, const char *key, char mode);

/* The slots of the request waited for; a grant or its end takes them off. */
extern void zc_book_set_pending(ZklBook *b, const int *slots, int n);

/*
 * Slot was granted by `session`: a new lock, held once at the level asked
 * (`subid`: the current subtransaction).  The slot stops being pending.
 */
extern void zc_book_add(ZklBook *b, int slot, const char *key, char mode, int64_t session,
					bool session_level, uint32_t subid);
/* A further acquisition of lock i (zc_book_find), as core stacks them. */
extern void zc_book_stack(ZklBook *b, int i, bool session_level, uint32_t subid);

/* One acquisition of key in mode at that level undone; false if none is held. */
extern bool zc_book_unlock(ZklBook *b, const char *key, char mode, bool session_level);
/* Every acquisition at that level (session: not the transaction's). */
extern void zc_book_unlock_all(ZklBook *b, bool session_level);
/* The end of a level: the request waited for and every acquisition (session: both levels). */
extern void zc_book_release_level(ZklBook *b, bool session_level);
/* Commit or abort: transaction-level locks go, and what the proof had seen. */
extern void zc_book_xact_end(ZklBook *b);
/* A subtransaction aborted: what it took goes; committed: its parent has it. */
extern void zc_book_subxact_abort(ZklBook *b, uint32_t subid);
extern void zc_book_subxact_commit(ZklBook *b, uint32_t subid, uint32_t parent);

/* The first lost session-level lock not acknowledged yet, or -1 (holds.h). */
extern int	zc_book_unacknowledged_loss(const ZklBook *b);

/*
 * zk_session_unlock(key) in mode, or key NULL: zk_session_unlock_all (every
 * session-level lock goes).  Acknowledges the losses among them; returns
 * whether there was one, the first one's key in `first` (ZKL_KEY_BUFLEN).
 * Not transactional, as core's unlock: the caller then raises an error.
 */
extern bool zc_book_acknowledge(ZklBook *b, const char *key, char mode, char *first);

/*
 * DISCARD ALL: every lock goes, lost ones acknowledged.  `alone`: its
 * transaction ran nothing else, so nothing ran under what went.
 */
extern void zc_book_discard_all(ZklBook *b, bool alone);

extern bool zc_book_holds_xact_locks(const ZklBook *b);

/* Before the commit rule: the transaction ran under every session-level lock held now. */
extern void zc_book_at_commit(ZklBook *b);

/* Frees what the book allocated (the simulator's backends end; a backend's book lives on). */
extern void zc_book_free(ZklBook *b);

#endif
