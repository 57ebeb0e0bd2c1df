/*
 * lock_delay.h — lock-delay's decisions, pure: whether a session that may
 * have held locks died between two listings of the sessions' presence
 * nodes, and whether grants are paused.  presence.c does the I/O; the
 * simulator applies the same.
 */
#ifndef ZK_LOCK_LOCK_DELAY_H
#define ZK_LOCK_LOCK_DELAY_H

#include <stdbool.h>
#include <stdint.h>

/* One listing of <root>/.sessions: live sessions, tombstones, the node's cversion. */
typedef struct ZklListing
{
	const int64_t *live;
	int			nlive;
	const int64_t *dead;		/* sessions closed with a tombstone: their holders are dead */
	int			ndead;
	int32_t		cversion;
} ZklListing;

/*
 * Whether a session may have died between `before` (NULL: no listing yet,
 * which cannot tell what died just before it) and `now`: one that was live
 * is gone without a tombstone, or the list changed more often than the
 * difference shows (a session came and went between the two).
 */
extern bool zld_died(const ZklListing *before, const ZklListing *now);

/*
 * Whether grants are paused at `now`, and until when: while the sessions are
 * not listed, or the listing is out of date (poll_us more, at least), and
 * until paused_until.
 */
extern bool zld_paused(bool listed, bool stale, int64_t paused_until, int64_t now,
					   int64_t poll_us, int64_t *until);

#endif
