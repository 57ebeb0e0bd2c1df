/*
 * once.c — zk_once(): a job done once per period across clusters.
 *
 * A call takes the job's claim (an exclusive try-lock on the job's key in
 * the once key space, bound to the transaction), reads the job's record in
 * ZooKeeper (<root>/.once/<job's text key>), and asks once.c in the core
 * which period is owed.  The period counts as done only when the
 * transaction commits: after the local commit, before the claim goes, the
 * backend seals the record with a multi that writes it only if the claim's
 * node is still there and the record is the version it read.  So the next
 * holder of the claim, here or in another cluster, sees the seal.
 *
 * The seal is once_seal.c's; the calls to ZooKeeper go through the worker
 * (once_call.c, worker/once_io.c), one at a time per cluster.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "once.h"
#include "once_call.h"
#include "once_seal.h"
#include "held.h"
#include "lockfuncs.h"
#include "request.h"
#include "settings.h"
#include "shmem.h"

PG_FUNCTION_INFO_V1(zk_once);

/* The arguments, checked: the job's text key, its period and anchor in us. */
static void
once_args(FunctionCallInfo fcinfo, char *name, char **shown, int64 *period, int64 *anchor)
{
	static const char *const what[] = {"name", "period", "anchor", "latest"};
	char	   *raw;
	char	   *utf8;
	Interval   *iv;
	TimestampTz at;
	int			i;

	for (i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("zk_once %s must not be NULL", what[i])));
	raw = text_to_cstring(PG_GETARG_TEXT_PP(0));
	utf8 = pg_server_to_any(raw, strlen(raw), PG_UTF8);
	iv = PG_GETARG_INTERVAL_P(1);
	at = PG_GETARG_TIMESTAMPTZ(2);
	switch (zc_once_check_args(strlen(utf8), iv->month, iv->day, iv->time, !TIMESTAMP_NOT_FINITE(at),
							   period))
	{
		case ZKO_ARGS_OK:
			break;
		case ZKO_NAME_EMPTY:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("zk_once name must not be empty")));
			break;
		case ZKO_NAME_TOO_LONG:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("zk_once name is too long"),
					 errdetail("The name takes %zu bytes in UTF-8; the limit is %d.",
							   strlen(utf8), ZKO_MAX_NAME_BYTES)));
			break;
		case ZKO_PERIOD_HAS_MONTHS:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("zk_once period must not count months"),
					 errdetail("A month has no fixed length; give the period in days or less.")));
			break;
		case ZKO_PERIOD_TOO_LONG:
		case ZKO_PERIOD_NOT_POSITIVE:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("zk_once period must be positive and finite")));
			break;
		case ZKO_ANCHOR_NOT_FINITE:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("zk_once anchor must be finite")));
			break;
	}
	if (zc_keys_encode_text_key(utf8, strlen(utf8), name, ZKL_KEY_BUFLEN) < 0)
		elog(ERROR, "could not encode zk_once name");
	*shown = raw;
	*anchor = at + UNIX_TO_PG_US;
}

static char *
interval_text(int64 us)
{
	Interval	iv;

	iv.time = us;
	iv.day = 0;
	iv.month = 0;
	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(&iv)));
}

static Datum
period_datum(int64 start)
{
	return TimestampTzGetDatum(start - UNIX_TO_PG_US);
}

/* The job's record: ZKO_PARSE_OK with *rec, or absent (false). */
static bool
read_record(const char *name, int slot, const char *shown, ZkoRecord *rec, int32 *version)
{
	ZklOnceCall call;

	zb_once_call(ZKL_ONCE_READ, name, slot, 0, NULL, 0, true, zb_once_deadline(false), &call);
	if (call.result == ZKL_ONCE_NONODE)
		return false;
	if (call.result != ZKL_ONCE_OK)
		ereport(ERROR,
				(errcode(call.sqlstate),
				 errmsg("could not read the record of zk_once job \"%s\": %s", shown, call.errmsg)));
	switch (call.len < 0 ? ZKO_PARSE_BAD : zc_once_parse(call.data, call.len, rec))
	{
		case ZKO_PARSE_OK:
			break;
		case ZKO_PARSE_LATER:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the record of zk_once job \"%s\" was written by a later version of zk_lock",
							shown),
					 errhint("Update zk_lock in this cluster.")));
			break;
		case ZKO_PARSE_BAD:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the record of zk_once job \"%s\" is not a zk_once record", shown)));
			break;
	}
	*version = call.version;
	return true;
}

/*
 * A new job's record, whose first owed period is `first`.  False if there
 * is one: only the claim's holder makes it, so that is this call's own
 * create, sent again after its answer was lost: read it.
 */
static bool
make_record(const char *name, int slot, const char *shown, ZkoRecord *rec, int64 period, int64 anchor,
			int64 first)
{
	ZklOnceCall call;
	char		text[ZKO_RECORD_LEN];
	int			len;

	zc_once_baseline(rec, period, anchor, first);
	len = zc_once_format(rec, text, sizeof(text));
	if (len < 0)
		elog(ERROR, "zk_once record does not fit");
	zb_once_call(ZKL_ONCE_MAKE, name, slot, 0, text, len, true, zb_once_deadline(false), &call);
	if (call.result == ZKL_ONCE_EXISTS)
		return false;
	if (call.result != ZKL_ONCE_OK)
		ereport(ERROR,
				(errcode(call.sqlstate),
				 errmsg("could not make the record of zk_once job \"%s\": %s", shown, call.errmsg)));
	return true;
}

/*
 * zk_once(name, period, anchor, latest): the start of the period this
 * transaction must do, or NULL when none is owed or another call is doing
 * one.
 */
Datum
zk_once(PG_FUNCTION_ARGS)
{
	char		name[ZKL_KEY_BUFLEN];
	char		claim[1][ZKL_KEY_BUFLEN];
	char	   *shown;
	int64		period;
	int64		anchor;
	int64		now;
	bool		latest;
	ZklAsk		ask = {ZKL_MODE_EXCLUSIVE, ZKL_WAIT_NONE, -1, false, 0, true};
	ZkoRecord	rec;
	int32		version = 0;
	int64		start = 0;
	int64		skipped = 0;
	int			slot;
	OncePending *p;
	OncePending p_new;

	once_args(fcinfo, name, &shown, &period, &anchor);
	latest = PG_GETARG_BOOL(3);
	zb_check_usable();
	/* a repeat call in the transaction that does the period: the same answer */
	if ((p = zb_once_pending(name)) != NULL)
	{
		if (p->period != period || p->anchor != anchor)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("zk_once job \"%s\" was called with another period or anchor in this transaction",
							shown)));
		PG_RETURN_DATUM(period_datum(p->start));
	}
	now = GetCurrentTimestamp() + UNIX_TO_PG_US;
	strlcpy(claim[0], name, ZKL_KEY_BUFLEN);
	(void) zc_keys_once_key(claim[0]);
	if (!zb_request_locks(fcinfo, claim, 1, &ask))
		PG_RETURN_NULL();		/* another call does a period of the job now */

	slot = zb_local_slot(claim[0], ZKL_MODE_EXCLUSIVE);
	if (!read_record(name, slot, shown, &rec, &version))
	{
		/* a new job: the period begun now is owed from now on, done or not */
		if (zc_once_decide(NULL, period, anchor, now, latest, &start, &skipped) != ZKO_DUE)
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("zk_once job \"%s\": its periods are out of range", shown)));
		if (!make_record(name, slot, shown, &rec, period, anchor, start) &&
			!read_record(name, slot, shown, &rec, &version))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("the record of zk_once job \"%s\" came and went meanwhile", shown)));
	}
	switch (zc_once_decide(&rec, period, anchor, now, latest, &start, &skipped))
	{
		case ZKO_DUE:
			break;
		case ZKO_NOT_DUE:
			(void) zb_local_unlock(claim[0], ZKL_MODE_EXCLUSIVE, false);
			PG_RETURN_NULL();
		case ZKO_OTHER_PERIOD:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("zk_once job \"%s\" has another period or anchor", shown),
					 errdetail("Its record says a period of %s, anchored at %s.", interval_text(rec.period),
							   timestamptz_to_str(rec.anchor - UNIX_TO_PG_US))));
			break;
		case ZKO_OUT_OF_RANGE:
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("zk_once job \"%s\": its periods are out of range", shown)));
			break;
	}
	if (!IS_VALID_TIMESTAMP(start - UNIX_TO_PG_US))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("zk_once job \"%s\": its periods are out of range", shown)));

	/*
	 * A recorded period's commit must be on disk when its record lands: a
	 * crash could otherwise lose the commit and keep the record (whatever
	 * synchronous_commit says, now or later in the transaction).
	 */
	ForceSyncCommit();
	memset(&p_new, 0, sizeof(p_new));
	strlcpy(p_new.name, name, sizeof(p_new.name));
	strlcpy(p_new.claim, claim[0], sizeof(p_new.claim));
	p_new.shown = shown;
	p_new.version = version;
	p_new.period = period;
	p_new.anchor = anchor;
	p_new.rec = rec;
	p_new.start = start;
	p_new.skipped = skipped;
	zb_once_remember(&p_new);
	PG_RETURN_DATUM(period_datum(start));
}

