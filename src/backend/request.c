/*
 * request.c — a backend's lock request, every kind, from the claim to the
 * answer: backends never talk to ZooKeeper; they claim a slot per key
 * (shmem.c), wake the worker and sleep on their own latch until it has an
 * answer, checking for interrupts so that statement_timeout,
 * pg_cancel_backend and pg_terminate_backend work; lock_timeout, a timed
 * try's bound and the deadline that prevents a hang are applied here.  The
 * SQL functions (lockfuncs.c) parse their arguments and call
 * zb_request_locks.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "common/string.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "catalog/pg_type_d.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "request.h"
#include "settings.h"
#include "shmem.h"
#include "held.h"
#include "xact.h"
#include "key_text.h"
#include "table.h"
#include "request.h"

/*
 * The part of the node data that is the same for every request of this
 * backend: with the names, and without them for when they make it too long.
 */
static char *data_head[2] = {NULL, NULL};

static const char *
node_data_head(bool names)
{
	if (data_head[names] == NULL)
	{
		StringInfoData buf;
		char	   *db = get_database_name(MyDatabaseId);
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&buf);
		appendStringInfoString(&buf, "{\"cluster\":");
		escape_json(&buf, names && cluster_name ? cluster_name : "");
		appendStringInfo(&buf, ",\"sysid\":\"" UINT64_FORMAT "\",\"pid\":%d,\"db\":",
						 GetSystemIdentifier(), MyProcPid);
		escape_json(&buf, names && db ? db : "");
		data_head[names] = buf.data;
		MemoryContextSwitchTo(old);
	}
	return data_head[names];
}

/* v in d digits, zero-padded, at p: returns their end */
static char *
put_digits(char *p, int v, int d)
{
	int			i;

	for (i = d - 1; i >= 0; i--, v /= 10)
		p[i] = (char) ('0' + v % 10);
	return p + d;
}

/*
 * A request's time as a JSON string in UTC ("2026-11-30 10:55:04.123456+00"),
 * which zk_lock_queue's `since` reads back as a timestamptz: every claim
 * builds it, and timestamptz_to_str's time-zone work was a visible share of a
 * cycle that takes a lingering node (bench/README.md).
 */
static void
append_since(StringInfo buf, TimestampTz ts)
{
	char		s[40];
	char	   *p = s;
	int64		days = ts / USECS_PER_DAY;
	int64		us = ts % USECS_PER_DAY;
	int			y;
	int			m;
	int			d;

	if (us < 0)
	{
		us += USECS_PER_DAY;
		days--;
	}
	j2date((int) (days + POSTGRES_EPOCH_JDATE), &y, &m, &d);
	if (y < 1 || y > 9999)
	{
		escape_json(buf, timestamptz_to_str(ts));
		return;
	}
	*p++ = '"';
	p = put_digits(p, y, 4);
	*p++ = '-';
	p = put_digits(p, m, 2);
	*p++ = '-';
	p = put_digits(p, d, 2);
	*p++ = ' ';
	p = put_digits(p, (int) (us / USECS_PER_HOUR), 2);
	*p++ = ':';
	p = put_digits(p, (int) (us / USECS_PER_MINUTE % MINS_PER_HOUR), 2);
	*p++ = ':';
	p = put_digits(p, (int) (us / USECS_PER_SEC % SECS_PER_MINUTE), 2);
	*p++ = '.';
	p = put_digits(p, (int) (us % USECS_PER_SEC), 6);
	memcpy(p, "+00\"", 4);
	appendBinaryStringInfo(buf, s, (int) (p + 4 - s));
}

/* Node data: who asked, as JSON, for humans and tools reading ZooKeeper. */
static char *
node_data(char mode, bool session)
{
	StringInfoData buf;
	bool		names = true;
	char		xid[12];
	int			xid_len = pg_ultoa_n(XidFromFullTransactionId(GetTopFullTransactionIdIfAny()), xid);
	TimestampTz now = GetCurrentTimestamp();

	initStringInfo(&buf);
	for (;;)
	{
		resetStringInfo(&buf);
		appendStringInfoString(&buf, node_data_head(names));
		appendStringInfoString(&buf, ",\"xid\":");
		appendBinaryStringInfo(&buf, xid, xid_len);
		appendStringInfoString(&buf, ",\"mode\":\"");
		appendStringInfoChar(&buf, mode);
		appendStringInfoString(&buf, session ? "\",\"scope\":\"session\",\"since\":" : "\",\"since\":");
		append_since(&buf, now);
		appendStringInfoChar(&buf, '}');
		/* never cut JSON short: long names are left out instead */
		if (buf.len < ZKL_DATA_LEN - ZKL_DATA_ROOM || !names)
			break;
		names = false;
	}
	return buf.data;
}

/*
 * The worker's answer to our request.  It is one word, written by the worker
 * before it sets our latch, and the slot stays ours until we abandon it, so
 * no lock is needed: the barrier orders this read after the latch's reset.
 */
static ZklResult
slot_result(int idx)
{
	pg_read_barrier();
	return zkl_shared->t.slots[idx].ans.result;
}

/* How far an unanswered request got, for the deadline that prevents a hang. */
static void
read_progress(int idx, ZklZkState *zstate, TimestampTz *queued_at)
{
	ZklSlot    *slot = &zkl_shared->t.slots[idx];

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	*zstate = slot->zstate;
	*queued_at = slot->req.queued_at;
	LWLockRelease(zkl_shared->lock);
}

/*
 * Give up a request (every slot of it) unless all of it was granted
 * meanwhile: returns ZKL_RESULT_GRANTED then (the slots stay pending, for the
 * caller to take), else ZKL_RESULT_PENDING with every slot abandoned.
 */
static ZklResult
give_up(const int *idx, int n)
{
	if (zkl_cancel_slots(idx, n))
		return ZKL_RESULT_GRANTED;
	zb_set_pending(NULL, 0);
	return ZKL_RESULT_PENDING;
}

/* "process 12 still waiting for zk_lock ... after 1000.1 ms", as core words its own. */
static void
log_wait(int idx, const char *what, TimestampTz start)
{
	const ZklSlot *s = &zkl_shared->t.slots[idx];
	char		key[ZKL_KEY_BUFLEN];
	char		kind;
	long		secs;
	int			usecs;

	/* the key and mode are the owner's own, set at claim: no lock needed */
	if (zc_keys_decode_key(s->key, &kind, key, sizeof(key)) < 0)
		strlcpy(key, s->key, sizeof(key));
	TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
	ereport(LOG,
			(errmsg("process %d %s %s zk_lock on key \"%s\" after %ld.%03d ms",
					MyProcPid, what, zc_kind_noun(s->req.mode), key,
					secs * 1000 + usecs / 1000, usecs % 1000)));
}

/*
 * The worker's answers to a request so far: ZKL_RESULT_GRANTED once every slot is
 * granted, ZKL_RESULT_PENDING while one is not answered (*slow: the first), or
 * the first answer other than a grant (*which: its slot).
 */
static ZklResult
answers(const int *idx, int n, int *slow, int *which)
{
	int			i;

	*slow = -1;
	for (i = 0; i < n; i++)
	{
		ZklResult	r = slot_result(idx[i]);

		if (r == ZKL_RESULT_PENDING && *slow < 0)
			*slow = i;
		else if (r != ZKL_RESULT_PENDING && r != ZKL_RESULT_GRANTED)
		{
			*which = i;
			return r;
		}
	}
	return *slow < 0 ? ZKL_RESULT_GRANTED : ZKL_RESULT_PENDING;
}

/*
 * The worker fails unsent requests after connect_timeout, and answers a
 * try-lock as soon as ZooKeeper does (and any lock-delay is over).  Past
 * that (plus slack) no worker is serving us or ZooKeeper is not answering:
 * never hang.  Returns the ms left until then; fails the request after it.
 */
static long
serving_left(const int *idx, int n, ZklZkState zstate, TimestampTz queued_at, long elapsed)
{
	/* a try-lock may also wait out a lock-delay (worker.c, grant) */
	long		limit = zkl_connect_timeout + WORKER_GRACE_MS +
		(zstate == ZKS_NEW ? 0 : zkl_effective_lock_delay());

	/* unsent: measured from when it (re)entered the queue */
	if (zstate == ZKS_NEW)
		elapsed = (long) ((GetCurrentTimestamp() - queued_at) / 1000);
	if (elapsed >= limit && give_up(idx, n) == ZKL_RESULT_PENDING)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 zstate == ZKS_NEW ?
				 errmsg("zk_lock background worker is not serving requests") :
				 errmsg("ZooKeeper did not answer within zk_lock.connect_timeout (%d ms)",
						zkl_connect_timeout),
				 errhint("Check the server log for the zk_lock worker.")));
	return limit - elapsed;
}

/*
 * The one sleep of a backend waiting for the worker: on its latch (which
 * the worker sets with an answer), at most ms (-1: no bound), then
 * interrupts, a cancel a lost lock explains failing with that loss.
 */
void
zb_request_sleep(long ms)
{
	int			rc = WaitLatch(MyLatch,
							   WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (ms >= 0 ? WL_TIMEOUT : 0),
							   ms, PG_WAIT_EXTENSION);

	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);
	zb_check_for_interrupts();
}

/*
 * Sleep until the worker has answered every slot of a request (or one of
 * them with other than a grant: its index goes to *which), or until our own
 * deadline.  Returns ZKL_RESULT_PENDING only after the request was given up
 * (abandoned) on timeout.
 */
static ZklResult
wait_for_answer(const int *idx, int n, ZklWaitKind kind, int timeout_ms, bool *lock_timed_out,
				int *which)
{
	TimestampTz start = GetCurrentTimestamp();

	/* just claimed: unsent and queued now, as far as the deadline goes */
	ZklZkState	zstate = ZKS_NEW;
	TimestampTz queued_at = start;
	bool		fresh = true;
	bool		logged = false;

	*lock_timed_out = false;
	for (;;)
	{
		int			slow;		/* the first slot still unanswered */
		long		elapsed;
		long		sleep_ms = -1;
		ZklResult	r = answers(idx, n, &slow, which);

		if (r == ZKL_RESULT_GRANTED && logged)
			log_wait(idx[0], "acquired", start);
		if (r != ZKL_RESULT_PENDING)
			return r;
		if (!fresh)
			read_progress(idx[slow], &zstate, &queued_at);
		fresh = false;

		elapsed = (long) ((GetCurrentTimestamp() - start) / 1000);
		if (kind == ZKL_WAIT_BOUNDED)
		{
			if (elapsed >= timeout_ms)
				return give_up(idx, n);
			sleep_ms = timeout_ms - elapsed;
		}
		else if (kind == ZKL_WAIT_FOREVER && LockTimeout > 0)
		{
			if (elapsed >= LockTimeout)
			{
				ZklResult	r = give_up(idx, n);

				*lock_timed_out = (r == ZKL_RESULT_PENDING);
				return r;
			}
			sleep_ms = LockTimeout - elapsed;
		}

		/* log_lock_waits: as core logs a wait as long as deadlock_timeout */
		if (log_lock_waits && kind != ZKL_WAIT_NONE && !logged && DeadlockTimeout > 0)
		{
			if (elapsed >= DeadlockTimeout)
			{
				log_wait(idx[slow], "still waiting for", start);
				logged = true;
			}
			else
				sleep_ms = (sleep_ms < 0) ? DeadlockTimeout - elapsed :
					Min(sleep_ms, DeadlockTimeout - elapsed);
		}

		if (zstate == ZKS_NEW || kind == ZKL_WAIT_NONE)
		{
			long		left = serving_left(idx, n, zstate, queued_at, elapsed);

			sleep_ms = (sleep_ms < 0) ? left : Min(sleep_ms, left);
		}

		zb_request_sleep(sleep_ms);
	}
}

/*
 * A transaction-bound lock taken in autocommit ends with its statement: legal,
 * and right for a one-statement critical section, but rarely what was meant.
 * Core warns the same way about SET LOCAL.
 */
static void
warn_if_autocommit(FunctionCallInfo fcinfo)
{
	if (IsTransactionBlock())
		return;
	ereport(WARNING,
			(errcode(ERRCODE_NO_ACTIVE_SQL_TRANSACTION),
			 errmsg("%s() outside a transaction block holds the lock only until the statement ends",
					get_func_name(fcinfo->flinfo->fn_oid)),
			 errhint("Call it after BEGIN: the lock is then held until COMMIT or ROLLBACK.")));
}

/* Stacking a semaphore asks for the holders it was taken with. */
static void
check_stacked_holders(const char *key, int holders)
{
	int			idx = zb_local_slot(key, ZKL_MODE_SEMAPHORE);
	int			have = idx < 0 ? holders : zkl_shared->t.slots[idx].req.holders;

	if (have != holders)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zk_semaphore holders %d differ from %d of a live request on the same key",
						holders, have),
				 errdetail("This transaction holds semaphore \"%s\" with holders %d.",
						   zb_display_key(key), have)));
}

/* Give up every slot of a request that was not granted. */
static void
abandon_all(const int *idx, int n)
{
	zb_set_pending(NULL, 0);
	zkl_abandon_slots(idx, n);
}

/* A request failed at slot idx[which]: give all of it up and report why. */
static void
report_failure(const int *idx, int n, int which)
{
	ZklSlot    *slot = &zkl_shared->t.slots[idx[which]];
	char		msg[ZKL_ERRMSG_LEN];
	char		detail[Max(ZKL_AUTH_INFO_LEN, ZKL_DETAIL_LEN)];
	const char *steps;
	int			sqlstate;
	bool		auth;
	bool		conn;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	strlcpy(msg, slot->errmsg, sizeof(msg));
	sqlstate = slot->ans.sqlstate;
	auth = sqlstate == ERRCODE_INSUFFICIENT_PRIVILEGE ||
		sqlstate == ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION;
	conn = sqlstate == ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION ||
		sqlstate == ERRCODE_CONNECTION_FAILURE;
	/* a deadlock's victim: the worker named each step of the circle */
	steps = sqlstate == ERRCODE_T_R_DEADLOCK_DETECTED ? zc_table_deadlock_detail(&zkl_shared->t, slot) : NULL;
	if (steps != NULL)
		strlcpy(detail, steps, sizeof(detail));
	else if (auth)
		strlcpy(detail, zkl_shared->auth_info, sizeof(detail));
	else if (conn)
		snprintf(detail, sizeof(detail), "ZooKeeper hosts: %s; last connection error: %s",
				 zkl_shared->hosts[0] ? zkl_shared->hosts : zkl_hosts,
				 zkl_shared->conn_error[0] ? zkl_shared->conn_error : "none seen yet");
	else
		detail[0] = '\0';
	LWLockRelease(zkl_shared->lock);
	abandon_all(idx, n);
	ereport(ERROR,
			(errcode(sqlstate ? sqlstate : ERRCODE_INTERNAL_ERROR),
			 errmsg("%s", msg),
			 detail[0] ? (sqlstate == ERRCODE_T_R_DEADLOCK_DETECTED ?
						  errdetail_internal("%s", detail) : errdetail("%s.", detail)) : 0,
			 sqlstate == ERRCODE_INSUFFICIENT_PRIVILEGE ?
			 errhint("zk_lock.auth must name the ZooKeeper identity that owns zk_lock.root.") :
			 sqlstate == ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION ?
			 errhint("Fix zk_lock.auth (a credential file must be owned by the server's user, mode 0600), then reload.") : 0));
}

/*
 * Take n distinct encoded keys, all or nothing: the ones this backend holds
 * in the mode already stack (as core does), the others are asked for as one
 * request (one slot each, created in one multi when several).  Returns false
 * when a try or a bounded wait did not get all of them: then none is held,
 * and none is queued.
 */
bool
zb_request_locks(FunctionCallInfo fcinfo, char (*keys)[ZKL_KEY_BUFLEN], int n, const ZklAsk *ask)
{
	const char *fresh[ZKL_MULTI_KEYS];
	bool		stack[ZKL_MULTI_KEYS];
	int			idx[ZKL_MULTI_KEYS];
	int			nfresh = 0;
	int			which = 0;
	bool		lock_timed_out;
	ZklResult	r;
	int			i;

	zb_xact_init();
	zb_check_losses();
	if (!ask->session && !ask->one_statement)
		warn_if_autocommit(fcinfo);
	for (i = 0; i < n; i++)
	{
		if (ask->holders > 0)
			check_stacked_holders(keys[i], ask->holders);
		/* one already held but lost fails here, before anything is asked */
		stack[i] = zb_local_held(keys[i], ask->mode);
		if (!stack[i])
			fresh[nfresh++] = keys[i];
	}
	if (nfresh > 0)
	{
		zkl_claim_slots(fresh, nfresh, ask->mode, ask->holders, ask->wait == ZKL_WAIT_NONE,
						ask->session, node_data(ask->mode, ask->session), idx);
		zb_set_pending(idx, nfresh);
		r = wait_for_answer(idx, nfresh, ask->wait, ask->timeout_ms, &lock_timed_out, &which);
		switch (r)
		{
			case ZKL_RESULT_GRANTED:
				break;
			case ZKL_RESULT_LOST:
				/* granted and lost before we saw it: the lock is not ours */
				abandon_all(idx, nfresh);
				zb_lost_error(fresh[which]);
			case ZKL_RESULT_PENDING:	/* gave up on our own deadline: all of it */
				if (lock_timed_out)
					ereport(ERROR,
							(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
							 errmsg("canceling statement due to lock timeout")));
				return false;
			case ZKL_RESULT_NOT_GRANTED:
				abandon_all(idx, nfresh);
				return false;
			default:
				report_failure(idx, nfresh, which);
		}
		/* a key that stacks may have been lost meanwhile: then take none */
		for (i = 0; i < n; i++)
			if (stack[i])
				(void) zb_local_held(keys[i], ask->mode);
		/* the worker wrote the granting session before the result */
		pg_read_barrier();
		for (i = 0; i < nfresh; i++)
			zb_local_add(idx[i], fresh[i], ask->mode, zkl_shared->t.slots[idx[i]].ans.session_id,
						  ask->session);
	}
	for (i = 0; i < n; i++)
		if (stack[i])
			(void) zb_local_stack(keys[i], ask->mode, ask->session);
	return true;
}
