/*
 * lock_delay.h — lock-delay's decisions, pure: whether a session that may
 * have held locks died between two listings of the sessions' presence
 * nodes, and whether grants are paused.  presence.c does the I/O; the
 * simulator applies the same.
 */
#ifndef ZK_LOCK_LOCK_DELAY_H
#define ZK_LOCK_LOCK_DELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A name under <root>/.sessions: a session's presence node or a tombstone.
 * A worker draws a nonce for each session it opens (never 0), so that a
 * session id ZooKeeper hands out again (a member's host restarted) names
 * another incarnation: presence <id>.<nonce>, tombstones <id>.<nonce>.closed
 * and <id>.<nonce>.dead, ids and nonces in 16 hex digits.  An earlier
 * version's names (<id>, <id>.closed, <id>.dead) read as nonce 0.
 */
typedef enum ZklNameKind
{
	ZKL_NAME_PRESENCE,
	ZKL_NAME_CLOSED,			/* a clean stop's tombstone, persistent */
	ZKL_NAME_DEAD				/* a crash-restart's mark of its old session */
} ZklNameKind;

typedef struct ZklSessionName
{
	int64_t		id;
	uint64_t	nonce;			/* 0: an earlier version's, unmarked */
	int			kind;			/* ZklNameKind */
} ZklSessionName;

#define ZLD_NAME_LEN	48		/* "%016x.%016x.closed" and its NUL */

/* A name's parts (false: not a name of ours; counts as an unexplained change). */
extern bool zc_delay_parse_name(const char *name, ZklSessionName *out);
extern void zc_delay_format_name(char *out, size_t len, const ZklSessionName *n);

/*
 * Whether tombstone t speaks for presence node p: the incarnation that wrote
 * it, the same id and nonce.  One without a nonce speaks for none (the id
 * may have come back since).
 */
extern bool zc_delay_tombstone_for(const ZklSessionName *t, const ZklSessionName *p);

/* One listing of <root>/.sessions: presence nodes, tombstones, the node's cversion. */
typedef struct ZklListing
{
	const ZklSessionName *live;
	int			nlive;
	const ZklSessionName *dead; /* tombstones of either kind */
	int			ndead;
	int32_t		cversion;
} ZklListing;

/*
 * Whether a session may have died between `before` (NULL: no listing yet,
 * which cannot tell what died just before it) and `now`: one that was live
 * is gone without a tombstone that speaks for it, or the list changed more
 * often than the difference shows (a session came and went between the two).
 */
extern bool zc_delay_died(const ZklListing *before, const ZklListing *now);

/*
 * Whether grants are paused at `now`, and until when: while the sessions are
 * not listed, or the listing is out of date (poll_us more, at least), and
 * until paused_until.
 */
extern bool zc_delay_paused(bool listed, bool stale, int64_t paused_until, int64_t now,
					   int64_t poll_us, int64_t *until);

/*
 * Lock-delay's pause: what decides whether grants wait (zc_delay_paused).
 * The worker keeps it in its ZldPresence and publishes a copy in the slot
 * table (ZklTable.pause), under the table's lock, after each change.
 */
typedef struct ZldPause
{
	bool		listed;			/* a listing with our presence node in it arrived */
	bool		stale;			/* the watch fired: the listing is out of date */
	int64_t		paused_until;
} ZldPause;

/* Whether grants are paused at `now` by z, and until when (zc_delay_paused). */
extern bool zc_delay_pause_holds(const ZldPause *z, int64_t now, int64_t *until);

/*
 * What a worker knows of <root>/.sessions while its session lives: its own
 * presence node, the last listing (sorted ids), and the pause.  presence.c
 * keeps one and does the I/O it asks for; the simulator runs the same.
 * Times are the host's monotonic clock, in microseconds.
 */
typedef struct ZldHost
{
	void	   *arg;
	void	   *(*grow) (void *arg, void *p, size_t size);	/* realloc (p NULL: alloc); never NULL */
	void		(*release) (void *arg, void *p);
	int64_t		(*delay_us) (void *arg);	/* the lock-delay now (reloadable) */
	void		(*new_pause) (void *arg);	/* a pause began (not a longer one) */
	void		(*sweep) (void *arg, const ZklSessionName *tombstone);	/* delete it */
} ZldHost;

typedef struct ZldPresence
{
	const ZldHost *host;
	int64_t		for_session;	/* the session whose presence is set up (0: none) */
	uint64_t	for_nonce;		/* and its nonce */
	uint64_t	gen;			/* tags calls: a new session or handle makes replies stale */
	ZldPause	pause;			/* listed, stale, paused_until */
	bool		present;		/* and the last listing had it */
	bool		presence_due;	/* (re)create our presence node */
	bool		list_due;		/* (re)list the sessions, with a watch */
	bool		list_in_flight;
	int64_t		next_try;		/* no retry before */
	int64_t		sweep_at;		/* list again then (0: no tombstone waits) */
	int32_t		last_cversion;	/* the sessions node's, at the last listing */
	ZklSessionName *live;		/* presence nodes of the last listing, sorted */
	int			nlive;
	ZklSessionName *dead;		/* its tombstones of either kind, sorted */
	int64_t    *dead_since;		/* when each was first listed here */
	int			ndead;
	int			cap;			/* of each array */
} ZldPresence;

/* What zc_delay_tend asks the host to send now (bits). */
#define ZLD_SEND_PRESENCE	1	/* the sessions node, then our ephemeral presence node */
#define ZLD_SEND_LIST		2	/* list the sessions with a child watch (tagged gen) */

/* What a listing told (zc_delay_listed). */
typedef enum ZldListed
{
	ZLD_STALE_REPLY,			/* for an older gen: ignored */
	ZLD_LIST_FAILED,			/* listed again later; still paused meanwhile */
	ZLD_LISTED,					/* (paused if it is the first: it cannot tell what died) */
	ZLD_DIED					/* since the last listing, a session that may have held
								 * locks ended: paused */
} ZldListed;

#define ZLD_KEEP_US		(60 * INT64_C(1000000))	/* a tombstone, for all to list */
#define ZLD_RETRY_US		(100 * INT64_C(1000))	/* after a failed create or listing */
#define ZLD_STALE_POLL_US	(20 * INT64_C(1000))	/* a listing is one round trip away */

extern void zc_delay_init(ZldPresence *p, const ZldHost *host);
extern int	zc_delay_tend(ZldPresence *p, int64_t session, uint64_t nonce, bool new_root,
						  int64_t now);
extern void zc_delay_list_not_sent(ZldPresence *p);
extern ZldListed zc_delay_listed(ZldPresence *p, uint64_t gen, int rc, const char *const *names,
							int n, int32_t cversion, int64_t now);
extern void zc_delay_presence_failed(ZldPresence *p, uint64_t gen, int64_t now);
extern void zc_delay_watch_fired(ZldPresence *p, uint64_t gen);
extern void zc_delay_reconnected(ZldPresence *p);
extern void zc_delay_reset(ZldPresence *p);
extern bool zc_delay_grants_paused(const ZldPresence *p, int64_t now, int64_t *until);
extern bool zc_delay_incarnation_listed(const ZldPresence *p, int64_t session, uint64_t nonce);
extern void zc_delay_free(ZldPresence *p);

#endif
