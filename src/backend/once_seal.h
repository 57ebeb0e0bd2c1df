/*
 * once_seal.h — the periods a transaction does (zk_once, once.c): kept
 * until its end, recorded in ZooKeeper at its commit (once_seal.c).
 */
#ifndef ZK_LOCK_ONCE_SEAL_H
#define ZK_LOCK_ONCE_SEAL_H

#include "datatype/timestamp.h"

#include "keys.h"
#include "once.h"

/* Microseconds from the Unix epoch to PostgreSQL's. */
#define UNIX_TO_PG_US ((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

/* A period this transaction must do: sealed at its commit, forgotten at its end. */
typedef struct OncePending
{
	char		name[ZKL_KEY_BUFLEN];	/* the job's text key: its record's name */
	char		claim[ZKL_KEY_BUFLEN];	/* its claim's key */
	char	   *shown;			/* the job's name, for messages */
	int32		version;		/* of the record read (or made) */
	int64		period;			/* as the call gave them */
	int64		anchor;
	ZkoRecord	rec;
	int64		start;			/* the period owed (Unix us) */
	int64		skipped;
} OncePending;

/* This transaction's period of the job `name` (its text key), while its claim is held; or NULL. */
extern OncePending *zb_once_pending(const char *name);

/* Keep a copy of p until the transaction ends. */
extern void zb_once_remember(const OncePending *p);

/*
 * At commit: record this transaction's periods.  At any end: forget them.
 * A savepoint rolled back: forget those whose claim went with it.
 */
extern bool zb_once_any(void);	/* a period pending: no PREPARE */
extern void zb_once_at_commit(void);
extern void zb_once_forget(void);
extern void zb_once_subxact_abort(void);

#endif
