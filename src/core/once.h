/*
 * once.h — zk_once's rules, without I/O (once.c): which period of a job a
 * call must do, its arguments' checks, and the job's record as ZooKeeper
 * keeps it.  docs/design-zk_once.md says where each is used.
 *
 * Times are microseconds since the Unix epoch (anchor, period starts) or
 * microseconds (a period).
 */
#ifndef ZK_LOCK_ONCE_H
#define ZK_LOCK_ONCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The records' folder under the root (a leading '.' never meets a key). */
#define ZKO_DIR			".once"

/* The record's format version this code writes and reads. */
#define ZKO_VERSION		1

/* Longest job name, in bytes of its UTF-8 form (a text key's bound). */
#define ZKO_MAX_NAME_BYTES	256

/* Room for a cluster's name in a record (longer ones are cut). */
#define ZKO_CLUSTER_LEN	64

/* Room for a record's text: a few lines of numbers and the committer. */
#define ZKO_RECORD_LEN	512

/* What is wrong with zk_once's arguments (ZKO_ARGS_OK: nothing). */
typedef enum ZkoArgs
{
	ZKO_ARGS_OK = 0,
	ZKO_NAME_EMPTY,
	ZKO_NAME_TOO_LONG,
	ZKO_PERIOD_NOT_POSITIVE,
	ZKO_PERIOD_HAS_MONTHS,		/* a month has no fixed length: the grid would move */
	ZKO_PERIOD_TOO_LONG,		/* more microseconds than 64 bits hold */
	ZKO_ANCHOR_NOT_FINITE
} ZkoArgs;

/* Who sealed a period, and when (on the committer's clock). */
typedef struct ZkoBy
{
	uint64_t	sysid;
	int			pid;
	uint32_t	xid;
	char		uuid[37];		/* the claim's request uuid */
	char		cluster[ZKO_CLUSTER_LEN];	/* cluster_name, blanks as '_' ("-": none) */
	int64_t		at;
} ZkoBy;

/* A job's record: persistent, one per job, changed only by versioned writes. */
typedef struct ZkoRecord
{
	int64_t		period;
	int64_t		anchor;
	int64_t		first;			/* the first period owed (the baseline) */
	bool		has_done;
	int64_t		done;			/* the latest period done, if has_done */
	int64_t		skipped;		/* periods passed over by `latest` calls */
	bool		has_by;
	ZkoBy		by;				/* who did `done`, if has_by */
} ZkoRecord;

typedef enum ZkoParse
{
	ZKO_PARSE_OK = 0,
	ZKO_PARSE_LATER,			/* written by a later version: not ours to change */
	ZKO_PARSE_BAD				/* not a record, or one that breaks its own rules */
} ZkoParse;

typedef enum ZkoVerdict
{
	ZKO_DUE = 0,				/* *start is owed, and the caller must do it */
	ZKO_NOT_DUE,				/* nothing owed yet */
	ZKO_OTHER_PERIOD,			/* the record's period or anchor is another */
	ZKO_OUT_OF_RANGE			/* the times do not fit in 64 bits */
} ZkoVerdict;

/*
 * zk_once's arguments: the name's length in bytes, the period's parts as
 * an interval has them (months apart), and whether the anchor is finite.
 */
extern ZkoArgs zc_once_check_args(size_t name_len, int32_t months, int32_t days, int64_t time_us,
								  bool anchor_finite, int64_t *period);

/*
 * The latest period that has begun at `now`: anchor + k * period, the
 * largest such start <= now (k may be negative).  False when it does not
 * fit in 64 bits.
 */
extern bool zc_once_latest_due(int64_t now, int64_t period, int64_t anchor, int64_t *start);

/*
 * Which period a call at `now` must do, from the record (NULL: the job has
 * none yet).  With `latest`, the latest one begun, passing over older owed
 * ones (counted in *skipped); otherwise the earliest owed.  *skipped is the
 * record's count after this call.
 */
extern ZkoVerdict zc_once_decide(const ZkoRecord *rec, int64_t period, int64_t anchor, int64_t now,
								 bool latest, int64_t *start, int64_t *skipped);

/* The record of a new job whose first owed period is `first`. */
extern void zc_once_baseline(ZkoRecord *rec, int64_t period, int64_t anchor, int64_t first);

/*
 * The record once period `start` is done by `by` (skipped: the count
 * zc_once_decide gave).  False if that would not move `done` forward.
 */
extern bool zc_once_sealed(const ZkoRecord *rec, int64_t start, int64_t skipped, const ZkoBy *by,
						   ZkoRecord *out);

/* The record's text; returns its length, or -1 if it does not fit. */
extern int	zc_once_format(const ZkoRecord *rec, char *out, size_t len);

/* A record's text (len bytes, not NUL-terminated) into *rec. */
extern ZkoParse zc_once_parse(const char *data, size_t len, ZkoRecord *rec);

#endif
