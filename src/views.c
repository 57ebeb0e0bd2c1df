/*
 * views.c — introspection of this cluster: zk_locks (one row per lock
 * request in the slot table, like pg_locks) and zk_lock_status() (the
 * worker's session and counters).  Both read shared memory only.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "zk_lock.h"

PG_FUNCTION_INFO_V1(zk_lock_requests);
PG_FUNCTION_INFO_V1(zk_lock_status);

static const char *
slot_state(const ZklSlot *s)
{
	if (s->result == ZKR_LOST)
		return "lost";
	if (s->abandoned || s->result == ZKR_NOT_GRANTED || s->result == ZKR_FAILED)
		return "releasing";
	if (s->result == ZKR_GRANTED)
		return "granted";
	return "waiting";
}

Datum
zk_lock_requests(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ZklSlot    *copy;
	int			n = 0;
	int			i;

	zkl_require_shared();
	InitMaterializedSRF(fcinfo, 0);

	/* copy under the lock, format without it */
	copy = palloc(sizeof(ZklSlot) * zkl_shared->nslots);
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	for (i = 0; i < zkl_shared->nslots; i++)
		if (zkl_shared->slots[i].zstate != ZKS_FREE)
			copy[n++] = zkl_shared->slots[i];
	LWLockRelease(zkl_shared->lock);

	for (i = 0; i < n; i++)
	{
		const ZklSlot *s = &copy[i];
		Datum		values[9];
		bool		nulls[9] = {0};
		bool		granted = s->result == ZKR_GRANTED && !s->abandoned;

		values[0] = Int32GetDatum(s->owner_pid);
		values[1] = CStringGetTextDatum(zkl_display_key(s->key));
		values[2] = CStringGetTextDatum(s->key[0] == ZKL_KEY_BIGINT ? "bigint" : "text");
		values[3] = CStringGetTextDatum(s->mode == ZKL_MODE_SHARED ? "shared" : "exclusive");
		values[4] = CStringGetTextDatum(slot_state(s));
		if (s->node[0] != '\0')
			values[5] = CStringGetTextDatum(s->node);
		else
			nulls[5] = true;
		/* the fencing token is the node's czxid, known once created */
		if (granted && s->czxid != 0)
			values[6] = Int64GetDatum(s->czxid);
		else
			nulls[6] = true;
		values[7] = TimestampTzGetDatum(s->requested_at);
		if (granted)
			values[8] = TimestampTzGetDatum(s->granted_at);
		else
			nulls[8] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static const char *
conn_state_name(ZklConnState st)
{
	switch (st)
	{
		case ZKC_CONNECTED:
			return "connected";
		case ZKC_CONNECTING:
			return "connecting";
		default:
			return "stopped";
	}
}

Datum
zk_lock_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	ZklShared	snap;
	Datum		values[14];
	bool		nulls[14] = {0};
	TimestampTz now = GetCurrentTimestamp();

	zkl_require_shared();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	memcpy(&snap, zkl_shared, offsetof(ZklShared, slots));
	LWLockRelease(zkl_shared->lock);

	if (snap.worker_pid != 0)
		values[0] = Int32GetDatum(snap.worker_pid);
	else
		nulls[0] = true;
	values[1] = CStringGetTextDatum(conn_state_name(snap.conn_state));
	if (snap.session_id != 0)
		values[2] = CStringGetTextDatum(psprintf("0x%llx", (unsigned long long) snap.session_id));
	else
		nulls[2] = true;
	if (snap.conn_state == ZKC_CONNECTED && snap.server[0] != '\0')
		values[3] = CStringGetTextDatum(snap.server);
	else
		nulls[3] = true;
	if (snap.conn_state == ZKC_CONNECTED)
		values[4] = Int32GetDatum(snap.negotiated_timeout);
	else
		nulls[4] = true;
	if (snap.state_since != 0)
		values[5] = DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(now),
										TimestampTzGetDatum(snap.state_since));
	else
		nulls[5] = true;
	values[6] = Int32GetDatum(snap.nslots);
	values[7] = Int64GetDatum(snap.counters.requests);
	values[8] = Int64GetDatum(snap.counters.grants);
	values[9] = Int64GetDatum(snap.counters.releases);
	values[10] = Int64GetDatum(snap.counters.lost);
	values[11] = Int64GetDatum(snap.counters.reconnects);
	values[12] = Int64GetDatum(snap.counters.expirations);
	values[13] = CStringGetTextDatum(zkl_hosts ? zkl_hosts : "");

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
