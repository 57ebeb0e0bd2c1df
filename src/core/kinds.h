/*
 * kinds.h — the lock kinds as rows of one table.
 *
 * A kind is the letter its nodes' names start with, the kinds it conflicts
 * with, how a request of it is granted, and which of the cluster-local
 * shortcuts (cohort.c) it takes.  Code asks the table ("do these two
 * conflict", "is it counted", "does its node pass from holder to holder")
 * instead of comparing letters, so the rules live in one place.  Nothing
 * here does I/O.
 */
#ifndef ZK_LOCK_KINDS_H
#define ZK_LOCK_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The letters (lower-case: a set of them is a bit mask); the rows are in kinds.c. */
#define ZKL_MODE_EXCLUSIVE	'x'
#define ZKL_MODE_SHARED		's'
#define ZKL_MODE_SEMAPHORE	'c'

typedef enum ZklGrantRule
{
	/*
	 * Granted when no node ahead conflicts; the request watches the nearest
	 * one that does (one watcher per node: no herd).
	 */
	ZKL_GRANT_ORDER,

	/*
	 * Granted while fewer nodes than the request's capacity stand ahead
	 * (the capacity is in the node's name); any node ahead may go first, so
	 * the request watches the key's children.  Such a kind has a key space
	 * of its own (keys.h: ZKL_KEY_SEMAPHORE).
	 */
	ZKL_GRANT_COUNT
} ZklGrantRule;

typedef enum ZklLocalShare
{
	ZKL_LOCAL_NONE,				/* every request has a node of its own */
	ZKL_LOCAL_HANDOVER,			/* a released node passes to the next local waiter */
	ZKL_LOCAL_RIDE				/* local requests join a granted node of the kind */
} ZklLocalShare;

/* A set of kinds, by letter: ZKK_SET('x') | ZKK_SET('s'). */
#define ZKK_SET(letter)	((uint32_t) 1 << ((letter) - 'a'))

typedef struct ZklKind
{
	char		mode;			/* first letter of its nodes' names */
	const char *name;			/* the views' mode column */
	const char *noun;			/* in messages: "... exclusive zk_lock on key" */
	const char *a_name;			/* the same with its article */
	uint32_t	conflicts;		/* the kinds it conflicts with: ZKK_SET of their letters */
	ZklGrantRule grant;
	ZklLocalShare local;
} ZklKind;

/* The rows, for code that goes through every kind (views, checks); at most ZKL_MAX_KINDS. */
#define ZKL_MAX_KINDS	8
extern const ZklKind zc_kinds[];
extern const int zc_nkinds;

/*
 * The questions are inline: the recipe asks them for every node of a queue,
 * and the table is three rows.
 */

/* The row of a letter; NULL for one that is no kind's. */
static inline const ZklKind *
zc_kind_of(char mode)
{
	int			i;

	for (i = 0; i < zc_nkinds; i++)
		if (zc_kinds[i].mode == mode)
			return &zc_kinds[i];
	return NULL;
}

/* Whether nodes of kinds a and b keep each other waiting (false if either is unknown). */
static inline bool
zc_kind_conflict(char a, char b)
{
	const ZklKind *k = zc_kind_of(a);

	return k != NULL && b >= 'a' && b <= 'z' && (k->conflicts & ZKK_SET(b)) != 0 &&
		zc_kind_of(b) != NULL;
}

/*
 * Whether the kind conflicts with every kind granted in order (an exclusive
 * one): a waiter of it waits for its immediate predecessor, and a holder
 * granted with none ahead holds its key alone.
 */
extern bool zc_kind_alone(char mode);

/* Whether requests of the kind are granted by count (ZKL_GRANT_COUNT). */
static inline bool
zc_kind_counted(char mode)
{
	const ZklKind *k = zc_kind_of(mode);

	return k != NULL && k->grant == ZKL_GRANT_COUNT;
}

/* How local requests of the kind share a node (ZKL_LOCAL_NONE for an unknown letter). */
static inline ZklLocalShare
zc_kind_local(char mode)
{
	const ZklKind *k = zc_kind_of(mode);

	return k != NULL ? k->local : ZKL_LOCAL_NONE;
}

/* Whether a released node of the kind passes to a local waiter. */
static inline bool
zc_kind_hands_over(char mode)
{
	return zc_kind_local(mode) == ZKL_LOCAL_HANDOVER;
}

/* Whether local requests of the kind join one granted node. */
static inline bool
zc_kind_rides(char mode)
{
	return zc_kind_local(mode) == ZKL_LOCAL_RIDE;
}

/* Names for views and messages (NULL for an unknown letter). */
extern const char *zc_kind_name(char mode);
extern const char *zc_kind_noun(char mode);
extern const char *zc_kind_a_name(char mode);

#endif
