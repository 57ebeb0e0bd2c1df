/*
 * views.c — introspection: zk_locks (this cluster's lock requests, like
 * pg_locks), zk_lock_status() (the worker's session and counters) and
 * zk_lock_counters (every counter, one a row) read shared memory; zk_lock_queue() asks the worker for a live read of one
 * key's queue in ZooKeeper, every cluster's contenders included.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "settings.h"
#include "shmem.h"
#include "lockfuncs.h"
#include "key_text.h"
#include "gwait_edges.h"
#include "once.h"
#include "once_seal.h"

PG_FUNCTION_INFO_V1(zk_lock_requests);
PG_FUNCTION_INFO_V1(zk_lock_status);
PG_FUNCTION_INFO_V1(zk_lock_counters);
PG_FUNCTION_INFO_V1(zk_lock_wait_rows);
PG_FUNCTION_INFO_V1(zk_once_claim_raw);
PG_FUNCTION_INFO_V1(zk_once_records);

/* Every counter the worker keeps, as rows of the zk_lock_counters view. */
typedef struct CounterRow
{
	const char *name;
	size_t		offset;
	const char *meaning;
} CounterRow;

#define COUNTER(field, name, meaning) {name, offsetof(ZklCounters, field), meaning}
static const CounterRow counter_rows[] = {
	COUNTER(requests, "requests", "lock nodes asked for (creates sent)"),
	COUNTER(grants, "grants", "requests granted"),
	COUNTER(releases, "releases", "lock nodes deleted"),
	COUNTER(lost, "lost", "granted locks whose ZooKeeper session ended"),
	COUNTER(reconnects, "connects", "connections to ZooKeeper (re)established"),
	COUNTER(expirations, "expirations", "ZooKeeper sessions expired or refused"),
	COUNTER(recovered, "recovered", "creates whose reply was lost, looked up by request id"),
	COUNTER(delete_retries, "delete_retries", "deletes sent again: the reply was lost, or an ACL refused it"),
	COUNTER(batched, "batched", "creates and deletes sent inside multis"),
	COUNTER(rolled_back, "rolled_back", "operations of a multi sent again: a neighbour failed"),
	COUNTER(handovers, "handovers", "grants passed inside the cluster with no ZooKeeper round trip"),
	COUNTER(lingers, "lingers", "released nodes kept for this cluster's next request (zk_lock.linger)"),
	COUNTER(lock_delay_pauses, "lock_delay_pauses", "grants paused for another session's death (zk_lock.lock_delay)"),
	COUNTER(deadlocks, "deadlocks", "requests failed with 40P01 to break a deadlock"),
	COUNTER(upgrades_ahead, "upgrades_ahead", "upgrades (shared held, exclusive asked) granted ahead of this cluster's waiters they held up"),
	COUNTER(held_for_local, "held_for_local", "turns in ZooKeeper's queue held while a local backend holds the key in a conflicting mode"),
	COUNTER(upgrades_across, "upgrades_across", "upgrades granted past requests of other clusters made before them, which wait behind the writers the upgrade held up"),
	COUNTER(committed_past_loss, "committed_past_loss", "commits that went on because their commit check had passed, though a lock was lost before they ended (the commit window: fencing tokens guard other systems there)"),
	COUNTER(taken_here, "taken_here", "of the handovers, those backends made themselves, with no turn of the worker: a lingering node taken (zk_lock.linger), a released node passed to the next local waiter, a reader joining a local reader's node"),
	COUNTER(joined_here, "joined_here", "requests that began to wait behind this cluster's holder of the key (or were refused, a try) at once, with no turn of the worker"),
};

/* Each counter with its meaning; every one that ZklCounters has. */
Datum
zk_lock_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ZklCounters snap;
	int			i;

	StaticAssertStmt(lengthof(counter_rows) * sizeof(int64) == sizeof(ZklCounters),
					 "a counter of ZklCounters is missing from counter_rows");
	zkl_require_shared();
	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	snap = zkl_shared->t.counters;
	LWLockRelease(zkl_shared->lock);
	for (i = 0; i < lengthof(counter_rows); i++)
	{
		Datum		values[3];
		bool		nulls[3] = {0};
		int			natts = 0;

		values[natts++] = CStringGetTextDatum(counter_rows[i].name);
		values[natts++] = Int64GetDatum(*(const int64 *) ((const char *) &snap + counter_rows[i].offset));
		values[natts++] = CStringGetTextDatum(counter_rows[i].meaning);
		Assert(natts == lengthof(values));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static const char *
slot_state(const ZklSlot *s)
{
	if (s->ans.result == ZKL_RESULT_LOST)
		return "lost";
	if (s->zstate == ZKS_LINGER)
		return "lingering";
	if (s->own.abandoned || s->ans.result == ZKL_RESULT_NOT_GRANTED || s->ans.result == ZKL_RESULT_FAILED)
		return "releasing";
	if (s->ans.result == ZKL_RESULT_GRANTED)
		return "granted";
	return "waiting";
}

static const char *
scope_name(uint8 scope)
{
	switch (scope)
	{
		case ZKL_SCOPE_SESSION:
			return "session";
		case ZKL_SCOPE_SESSION | ZKL_SCOPE_XACT:
			return "session and transaction";
		case ZKL_SCOPE_XACT:
			return "transaction";
		default:
			/* released, but its node stays while the key is held in the other mode */
			return "kept";
	}
}

/* A kind's name for the views; a slot's mode is always a kind's, but never print NULL. */
static const char *
mode_name(char mode)
{
	const char *name = zc_kind_name(mode);

	return name != NULL ? name : "unknown";
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
	copy = palloc(sizeof(ZklSlot) * zkl_shared->t.nslots);
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	for (i = 0; i < zkl_shared->t.nslots; i++)
		if (zkl_shared->t.slots[i].zstate != ZKS_FREE)
			copy[n++] = zkl_shared->t.slots[i];
	LWLockRelease(zkl_shared->lock);

	for (i = 0; i < n; i++)
	{
		const ZklSlot *s = &copy[i];
		Datum		values[12];
		bool		nulls[12] = {0};
		bool		semaphore = zc_kind_counted(s->req.mode);
		bool		granted = s->ans.result == ZKL_RESULT_GRANTED && !s->own.abandoned;

		/* a lingering node belongs to no backend */
		if (s->req.owner_pid != 0)
			values[0] = Int32GetDatum(s->req.owner_pid);
		else
			nulls[0] = true;
		values[1] = CStringGetTextDatum(zb_display_key(s->key));
		values[2] = CStringGetTextDatum(zc_keys_is_once_key(s->key) ? "once" :
										s->key[semaphore] == ZKL_KEY_BIGINT ? "bigint" :
										s->key[semaphore] == ZKL_KEY_PAIR ? "integer pair" : "text");
		values[3] = CStringGetTextDatum(mode_name(s->req.mode));
		values[4] = CStringGetTextDatum(slot_state(s));
		if (s->node[0] != '\0')
			values[5] = CStringGetTextDatum(s->node);
		else
			nulls[5] = true;
		/* the fencing token: from the node's czxid, known once created */
		if (granted && s->zk.czxid != 0 && zc_recipe_fencing_token(s->zk.czxid, s->zk.handed) >= 0)
			values[6] = Int64GetDatum(zc_recipe_fencing_token(s->zk.czxid, s->zk.handed));
		else
			nulls[6] = true;
		values[7] = TimestampTzGetDatum(s->req.requested_at);
		if (granted)
			values[8] = TimestampTzGetDatum(s->ans.granted_at);
		else
			nulls[8] = true;
		values[9] = CStringGetTextDatum(scope_name(s->own.scope));
		values[10] = CStringGetTextDatum(semaphore ? "semaphore" : "lock");
		values[11] = Int32GetDatum(s->req.holders);
		nulls[11] = !semaphore;
		/* the 1.0 definition has no scope column: the tuple takes the columns it has */
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
	Datum		values[19];
	bool		nulls[19] = {0};
	TimestampTz now = GetCurrentTimestamp();

	zkl_require_shared();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	memcpy(&snap, zkl_shared, offsetof(ZklShared, slot_array));
	LWLockRelease(zkl_shared->lock);

	if (snap.worker_pid != 0)
		values[0] = Int32GetDatum(snap.worker_pid);
	else
		nulls[0] = true;
	values[1] = CStringGetTextDatum(conn_state_name(snap.t.conn_state));
	if (snap.t.session_id != 0)
		values[2] = CStringGetTextDatum(psprintf("0x%llx", (unsigned long long) snap.t.session_id));
	else
		nulls[2] = true;
	if (snap.t.conn_state == ZKC_CONNECTED && snap.server[0] != '\0')
		values[3] = CStringGetTextDatum(snap.server);
	else
		nulls[3] = true;
	if (snap.t.conn_state == ZKC_CONNECTED)
		values[4] = Int32GetDatum(snap.t.negotiated_timeout);
	else
		nulls[4] = true;
	if (snap.state_since != 0)
		values[5] = DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(now),
										TimestampTzGetDatum(snap.state_since));
	else
		nulls[5] = true;
	values[6] = Int32GetDatum(snap.t.nslots);
	values[7] = Int64GetDatum(snap.t.counters.requests);
	values[8] = Int64GetDatum(snap.t.counters.grants);
	values[9] = Int64GetDatum(snap.t.counters.releases);
	values[10] = Int64GetDatum(snap.t.counters.lost);
	values[11] = Int64GetDatum(snap.t.counters.reconnects);
	values[12] = Int64GetDatum(snap.t.counters.expirations);
	values[13] = Int64GetDatum(snap.t.counters.recovered);
	values[14] = Int64GetDatum(snap.t.counters.delete_retries);
	values[15] = Int64GetDatum(snap.t.counters.batched);
	values[16] = Int64GetDatum(snap.t.counters.rolled_back);
	/* the list the worker uses (a reload takes effect there), else the setting */
	values[17] = CStringGetTextDatum(snap.hosts[0] ? snap.hosts : (zkl_hosts ? zkl_hosts : ""));
	if (snap.auth_info[0] != '\0')
		values[18] = CStringGetTextDatum(snap.auth_info);
	else
		nulls[18] = true;

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* Give the query area back (also on ERROR or FATAL while we hold it). */
static void
release_query(int code, Datum arg)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (zkl_query->asker_pid == MyProcPid)
	{
		/* replies still due carry the old attempt and are ignored */
		zkl_query->state = ZKQ_IDLE;
		zkl_query->asker_pid = 0;
	}
	LWLockRelease(zkl_shared->lock);
	ConditionVariableBroadcast(&zkl_query->cv);
}

/* Sleep on the query's condition variable until deadline; error past it. */
static void
sleep_until(TimestampTz deadline, const char *what)
{
	long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

	if (left <= 0 || ConditionVariableTimedSleep(&zkl_query->cv, left, PG_WAIT_EXTENSION))
	{
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("zk_lock_queue: %s within zk_lock.connect_timeout (%d ms)",
							what, zkl_connect_timeout)));
	}
}

/*
 * Have the worker read the queue of an encoded key (or, key NULL, the
 * documents of folder `dir` under the root, their text into *text);
 * returns its nodes, in queue order, and how many in *n.
 */
static ZklQueueEntry *
read_query(const char *key, const char *dir, int *n, char **text)
{
	TimestampTz deadline;
	ZklQueueEntry *entries;
	int			sqlstate;
	char		errmsg_buf[ZKL_ERRMSG_LEN];

	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   zkl_connect_timeout + WORKER_GRACE_MS);

	/* one read at a time per cluster: wait for the area */
	ConditionVariablePrepareToSleep(&zkl_query->cv);
	for (;;)
	{
		bool		mine = false;

		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		if (zkl_query->state == ZKQ_IDLE)
		{
			zkl_query->state = ZKQ_ASKED;
			zkl_query->asker_pid = MyProcPid;
			zkl_query->docs = key == NULL;
			strlcpy(zkl_query->dir, dir ? dir : "", sizeof(zkl_query->dir));
			strlcpy(zkl_query->key, key ? key : "", sizeof(zkl_query->key));
			mine = true;
		}
		LWLockRelease(zkl_shared->lock);
		if (mine)
			break;
		sleep_until(deadline, "another read of a lock queue did not finish");
	}

	PG_ENSURE_ERROR_CLEANUP(release_query, (Datum) 0);
	{
		zkl_wake_worker();
		for (;;)
		{
			ZklQueryState st;

			LWLockAcquire(zkl_shared->lock, LW_SHARED);
			st = zkl_query->state;
			LWLockRelease(zkl_shared->lock);
			if (st == ZKQ_DONE)
				break;
			sleep_until(deadline, "ZooKeeper did not answer");
		}
	}
	PG_END_ENSURE_ERROR_CLEANUP(release_query, (Datum) 0);
	ConditionVariableCancelSleep();

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	*n = zkl_query->nentries;
	sqlstate = zkl_query->sqlstate;
	strlcpy(errmsg_buf, zkl_query->errmsg, sizeof(errmsg_buf));
	entries = palloc(Max(*n, 1) * sizeof(ZklQueueEntry));
	memcpy(entries, zkl_query->entries, *n * sizeof(ZklQueueEntry));
	if (text != NULL)
	{
		*text = palloc(zkl_query->text_used + 1);
		memcpy(*text, zkl_query->text, zkl_query->text_used);
		(*text)[zkl_query->text_used] = '\0';
	}
	if (zkl_query->truncated)
		ereport(NOTICE,
				(key ? errmsg("zk_lock_queue shows the first %d contenders only", ZKL_QUEUE_MAX) :
				 errmsg("%s shows some only: more than fit",
						strcmp(dir, ZGW_WAITS_DIR) == 0 ? "zk_lock_waits" : "zk_once_jobs")));
	LWLockRelease(zkl_shared->lock);
	release_query(0, (Datum) 0);

	if (sqlstate != 0)
		ereport(ERROR, (errcode(sqlstate), errmsg("%s", errmsg_buf)));
	return entries;
}

/* Whether entries[i] holds the lock, by the recipe's rule (entries ahead are decided). */
static bool
lock_entry_granted(const ZklQueueEntry *entries, const ZkrChild *kids, int n, int i,
				   const bool *granted)
{
	const char **mine = palloc(Max(n, 1) * sizeof(char *));
	bool	   *held = palloc(Max(n, 1) * sizeof(bool));
	char		uuid[ZKL_UUID_LEN + 1];
	ZkrBackend	b = {0};
	int			nmine = 0;
	int			own;
	int			watch;
	int			j;

	for (j = 0; j < n; j++)
	{
		if (j != i && zc_recipe_same_owner(entries[i].node, entries[j].node))
		{
			char	   *u = palloc(ZKL_UUID_LEN + 1);

			(void) zc_recipe_uuid_of(entries[j].node, u);
			mine[nmine] = u;
			held[nmine] = j < i && granted[j];
			nmine++;
		}
	}
	(void) zc_recipe_uuid_of(entries[i].node, uuid);
	b.mine = mine;
	b.held = held;
	b.nmine = nmine;
	return zc_recipe_decide(kids, n, uuid, &b, &own, &watch) == ZKR_GRANT;
}

/*
 * One row per node of the key's queue, in queue order: position, mode,
 * granted (by the recipe's own rule), node name, the node's data, and a
 * semaphore's holders (the 1.0 lock queue's row type has no such column:
 * the tuple takes the columns it has).  `what` is the semaphore mode for a
 * semaphore's queue, ZKL_KEY_ONCE for a zk_once job's claim.
 */
static Datum
queue_raw(FunctionCallInfo fcinfo, char keykind, char what)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char		key[ZKL_KEY_BUFLEN];
	bool		semaphore = zc_kind_counted(what);
	ZklQueueEntry *entries;
	ZkrChild   *kids;
	bool	   *granted;
	int			n;
	int			i;
	int			k;

	zb_check_usable();
	zb_key_arg(fcinfo, keykind, key);
	if (semaphore)
		(void) zc_keys_semaphore_key(key);
	else if (what == ZKL_KEY_ONCE)
		(void) zc_keys_once_key(key);	/* a zk_once job's claim, by the job's name */
	InitMaterializedSRF(fcinfo, 0);
	entries = read_query(key, NULL, &n, NULL);

	kids = palloc(Max(n, 1) * sizeof(ZkrChild));
	granted = palloc0(Max(n, 1) * sizeof(bool));
	/* zc_recipe_collect kept only lock nodes, but a name too long for an entry was cut: leave it out */
	for (i = 0, k = 0; i < n; i++)
		if (zc_recipe_parse_child(entries[i].node, &kids[0]))
			entries[k++] = entries[i];
	n = k;
	for (i = 0; i < n; i++)
		(void) zc_recipe_parse_child(entries[i].node, &kids[i]);
	for (i = 0; i < n; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {0};
		char		uuid[ZKL_UUID_LEN + 1];
		int			own;
		int			other;

		if (!entries[i].have_data)
			continue;			/* released while we read */
		(void) zc_recipe_uuid_of(entries[i].node, uuid);
		granted[i] = semaphore ?
			zc_recipe_decide_semaphore(kids, n, uuid, &own, &other) == ZKR_GRANT :
			lock_entry_granted(entries, kids, n, i, granted);
		values[0] = Int32GetDatum(i + 1);
		values[1] = CStringGetTextDatum(mode_name(kids[i].mode));
		values[2] = BoolGetDatum(granted[i]);
		values[3] = CStringGetTextDatum(entries[i].node);
		values[4] = CStringGetTextDatum(entries[i].data);
		values[5] = Int32GetDatum(kids[i].holders);
		nulls[5] = !semaphore;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

ZKL_KEYED_ENTRIES(zk_lock_queue_raw, queue_raw, 0)
ZKL_TEXT_INT8_ENTRIES(zk_semaphore_queue_raw, queue_raw, ZKL_MODE_SEMAPHORE)

Datum
zk_once_claim_raw(PG_FUNCTION_ARGS)
{
	return queue_raw(fcinfo, ZKL_KEY_TEXT, ZKL_KEY_ONCE);
}

/* ---- zk_once_jobs: every job's record (once.h) ---- */

static Datum
us_interval(int64 us)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = us;
	return IntervalPGetDatum(iv);
}

/*
 * One row per record under <root>/.once: the job's name, period and
 * anchor, the first period owed, the last done, by whom and when (on the
 * committer's clock), and the periods `latest` passed over.  A record this
 * version cannot read shows its name only.
 */
Datum
zk_once_records(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ZklQueueEntry *entries;
	char	   *text;
	int			n;
	int			i;

	zb_check_usable();
	InitMaterializedSRF(fcinfo, 0);
	entries = read_query(NULL, ZKO_DIR, &n, &text);
	for (i = 0; i < n; i++)
	{
		Datum		values[9];
		bool		nulls[9];
		ZkoRecord	r;
		bool		ok;

		memset(nulls, true, sizeof(nulls));
		values[0] = CStringGetTextDatum(zb_display_key(entries[i].node));
		nulls[0] = false;
		ok = entries[i].have_data &&
			zc_once_parse(text + entries[i].text_at, strlen(text + entries[i].text_at), &r) == ZKO_PARSE_OK;
		if (ok)
		{
			values[1] = us_interval(r.period);
			values[2] = TimestampTzGetDatum(r.anchor - UNIX_TO_PG_US);
			values[3] = TimestampTzGetDatum(r.first - UNIX_TO_PG_US);
			values[4] = TimestampTzGetDatum(r.done - UNIX_TO_PG_US);
			values[5] = Int64GetDatum(r.skipped);
			values[6] = CStringGetTextDatum(r.by.cluster);
			values[7] = Int32GetDatum(r.by.pid);
			values[8] = TimestampTzGetDatum(r.by.at - UNIX_TO_PG_US);
			nulls[1] = nulls[2] = nulls[3] = nulls[5] = false;
			nulls[4] = !r.has_done;
			nulls[6] = nulls[7] = nulls[8] = !r.has_by;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* ---- zk_lock_waits: every cluster's published waits (gwait.h) ---- */

static const char *
wait_mode_name(char mode)
{
	/* 'L': a backend of that cluster waits for core's lock, not ours */
	return mode == 'L' ? "row or table lock" : zc_kind_name(mode);
}

/* Text from another cluster's document: NULL when empty or not valid here. */
static void
put_text(Datum *values, bool *nulls, int i, const char *text)
{
	if (text == NULL || text[0] == '\0' || !pg_verifymbstr(text, strlen(text), true))
		nulls[i] = true;
	else
		values[i] = CStringGetTextDatum(text);
}

static void
wait_row(void *arg, const ZgwEdgeRow *r)
{
	ReturnSetInfo *rsinfo = arg;
	Datum		values[12];
	bool		nulls[12] = {0};
	int			i = 0;

	put_text(values, nulls, i++, r->w_cluster);
	values[i++] = CStringGetTextDatum(psprintf("0x%llx", (unsigned long long) r->w_session));
	values[i++] = Int32GetDatum(r->w_pid);
	put_text(values, nulls, i++, r->w_key);
	put_text(values, nulls, i++, wait_mode_name(r->w_mode));
	if (r->w_since != 0)
		values[i] = TimestampTzGetDatum((TimestampTz) r->w_since);
	else
		nulls[i] = true;
	i++;
	put_text(values, nulls, i++, r->b_session != 0 ? r->b_cluster : NULL);
	if (r->b_session != 0)
		values[i] = CStringGetTextDatum(psprintf("0x%llx", (unsigned long long) r->b_session));
	else
		nulls[i] = true;
	i++;
	if (r->b_pid != 0)
		values[i] = Int32GetDatum(r->b_pid);
	else
		nulls[i] = true;
	i++;
	put_text(values, nulls, i++, r->b_key);
	put_text(values, nulls, i++, wait_mode_name(r->b_mode));
	put_text(values, nulls, i++, r->b_node);
	Assert(i == lengthof(values));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * One row per wait edge that any cluster published: backends whose zk_lock
 * wait is deadlock_timeout old (and the row or table lock waits of backends
 * holding zk locks), read live from ZooKeeper by the worker.
 */
Datum
zk_lock_wait_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ZklQueueEntry *entries;
	const char **docs;
	char	   *text;
	int			n;
	int			ndocs = 0;
	int			i;

	zb_check_usable();
	InitMaterializedSRF(fcinfo, 0);
	entries = read_query(NULL, ZGW_WAITS_DIR, &n, &text);
	docs = palloc(Max(n, 1) * sizeof(char *));
	for (i = 0; i < n; i++)
		if (entries[i].have_data)
			docs[ndocs++] = text + entries[i].text_at;
	(void) zc_gwait_edges(docs, ndocs, wait_row, rsinfo);
	return (Datum) 0;
}
