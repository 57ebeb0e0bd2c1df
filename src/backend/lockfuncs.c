/*
 * lockfuncs.c — the SQL-callable lock functions and the backend's wait loop.
 *
 * Backends never talk to ZooKeeper: they claim a slot, wake the worker and
 * sleep on their own latch until the worker has an answer, checking for
 * interrupts so that statement_timeout, pg_cancel_backend and
 * pg_terminate_backend work; lock_timeout is applied here, as core does.
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
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "zk_lock.h"

PG_FUNCTION_INFO_V1(zk_unlock_all);
PG_FUNCTION_INFO_V1(zk_session_unlock_all);


typedef enum WaitKind
{
	WAIT_FOREVER,				/* zk_lock: lock_timeout applies */
	WAIT_NONE,					/* zk_try_lock(key): the worker answers at once */
	WAIT_BOUNDED				/* zk_try_lock(key, timeout_ms) */
} WaitKind;

/* How many arguments the key takes: two for (key1 int, key2 int). */
int
zkl_key_nargs(char kind)
{
	return kind == ZKL_KEY_PAIR ? 2 : 1;
}

/* A text key, encoded: the same bytes in every cluster, whatever the database's encoding. */
static void
encode_text(text *t, char *out)
{
	char	   *raw = text_to_cstring(t);
	char	   *utf8 = pg_server_to_any(raw, strlen(raw), PG_UTF8);
	size_t		ulen = strlen(utf8);

	if (ulen == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zk_lock key must not be empty")));
	if (ulen > ZKL_MAX_KEY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zk_lock key is too long"),
				 errdetail("The key takes %zu bytes in UTF-8; the limit is %d.",
						   ulen, ZKL_MAX_KEY_BYTES)));
	if (zkl_encode_text_key(utf8, ulen, out, ZKL_KEY_BUFLEN) < 0)
		elog(ERROR, "could not encode key");
}

void
zkl_key_arg(FunctionCallInfo fcinfo, char kind, char *out)
{
	if (PG_ARGISNULL(0) || (kind == ZKL_KEY_PAIR && PG_ARGISNULL(1)))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("zk_lock key must not be NULL")));

	if (kind == ZKL_KEY_PAIR)
	{
		if (zkl_encode_pair_key(PG_GETARG_INT32(0), PG_GETARG_INT32(1), out, ZKL_KEY_BUFLEN) < 0)
			elog(ERROR, "could not encode (int, int) key");
	}
	else if (kind == ZKL_KEY_BIGINT)
	{
		if (zkl_encode_bigint_key(PG_GETARG_INT64(0), out, ZKL_KEY_BUFLEN) < 0)
			elog(ERROR, "could not encode bigint key");
	}
	else
		encode_text(PG_GETARG_TEXT_PP(0), out);
}

void
zkl_check_usable(void)
{
	zkl_require_shared();
	if (zkl_hosts == NULL || zkl_hosts[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zk_lock.hosts is not set"),
				 errhint("Set zk_lock.hosts to the ZooKeeper ensemble, e.g. 'zk1:2181,zk2:2181', and reload.")));
}

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

/* Node data: who asked, as JSON, for humans and tools reading ZooKeeper. */
static char *
node_data(char mode, bool session)
{
	StringInfoData buf;
	bool		names = true;

	initStringInfo(&buf);
	for (;;)
	{
		resetStringInfo(&buf);
		appendStringInfoString(&buf, node_data_head(names));
		appendStringInfo(&buf, ",\"xid\":%u,\"mode\":\"%c\",%s\"since\":",
						 XidFromFullTransactionId(GetTopFullTransactionIdIfAny()), mode,
						 session ? "\"scope\":\"session\"," : "");
		escape_json(&buf, timestamptz_to_str(GetCurrentTimestamp()));
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
	return zkl_shared->t.slots[idx].result;
}

/* How far an unanswered request got, for the deadline that prevents a hang. */
static void
read_progress(int idx, ZklZkState *zstate, TimestampTz *queued_at)
{
	ZklSlot    *slot = &zkl_shared->t.slots[idx];

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	*zstate = slot->zstate;
	*queued_at = slot->queued_at;
	LWLockRelease(zkl_shared->lock);
}

/*
 * Give up a request (every slot of it) unless all of it was granted
 * meanwhile: returns ZKR_GRANTED then (the slots stay pending, for the
 * caller to take), else ZKR_PENDING with every slot abandoned.
 */
static ZklResult
give_up(const int *idx, int n)
{
	if (zkl_cancel_slots(idx, n))
		return ZKR_GRANTED;
	zkl_set_pending(NULL, 0);
	return ZKR_PENDING;
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
	if (zkl_decode_key(s->key, &kind, key, sizeof(key)) < 0)
		strlcpy(key, s->key, sizeof(key));
	TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
	ereport(LOG,
			(errmsg("process %d %s %s zk_lock on key \"%s\" after %ld.%03d ms",
					MyProcPid, what, s->mode == ZKL_MODE_EXCLUSIVE ? "exclusive" :
					s->mode == ZKL_MODE_SHARED ? "shared" : "semaphore", key,
					secs * 1000 + usecs / 1000, usecs % 1000)));
}

/*
 * The worker's answers to a request so far: ZKR_GRANTED once every slot is
 * granted, ZKR_PENDING while one is not answered (*slow: the first), or
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

		if (r == ZKR_PENDING && *slow < 0)
			*slow = i;
		else if (r != ZKR_PENDING && r != ZKR_GRANTED)
		{
			*which = i;
			return r;
		}
	}
	return *slow < 0 ? ZKR_GRANTED : ZKR_PENDING;
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
	if (elapsed >= limit && give_up(idx, n) == ZKR_PENDING)
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
 * Sleep until the worker has answered every slot of a request (or one of
 * them with other than a grant: its index goes to *which), or until our own
 * deadline.  Returns ZKR_PENDING only after the request was given up
 * (abandoned) on timeout.
 */
static ZklResult
wait_for_answer(const int *idx, int n, WaitKind kind, int timeout_ms, bool *lock_timed_out,
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
		int			rc;
		ZklResult	r = answers(idx, n, &slow, which);

		if (r == ZKR_GRANTED && logged)
			log_wait(idx[0], "acquired", start);
		if (r != ZKR_PENDING)
			return r;
		if (!fresh)
			read_progress(idx[slow], &zstate, &queued_at);
		fresh = false;

		elapsed = (long) ((GetCurrentTimestamp() - start) / 1000);
		if (kind == WAIT_BOUNDED)
		{
			if (elapsed >= timeout_ms)
				return give_up(idx, n);
			sleep_ms = timeout_ms - elapsed;
		}
		else if (kind == WAIT_FOREVER && LockTimeout > 0)
		{
			if (elapsed >= LockTimeout)
			{
				ZklResult	r = give_up(idx, n);

				*lock_timed_out = (r == ZKR_PENDING);
				return r;
			}
			sleep_ms = LockTimeout - elapsed;
		}

		/* log_lock_waits: as core logs a wait as long as deadlock_timeout */
		if (log_lock_waits && kind != WAIT_NONE && !logged && DeadlockTimeout > 0)
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

		if (zstate == ZKS_NEW || kind == WAIT_NONE)
		{
			long		left = serving_left(idx, n, zstate, queued_at, elapsed);

			sleep_ms = (sleep_ms < 0) ? left : Min(sleep_ms, left);
		}

		rc = WaitLatch(MyLatch,
					   WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (sleep_ms >= 0 ? WL_TIMEOUT : 0),
					   sleep_ms, PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
			ResetLatch(MyLatch);
		zkl_check_for_interrupts();
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

/*
 * A semaphore's holders argument (right after the key), checked; and its
 * key, moved to the semaphores' key space.
 */
static int
semaphore_arg(FunctionCallInfo fcinfo, char keykind, char *key)
{
	int			harg = zkl_key_nargs(keykind);
	int			holders;

	if (PG_ARGISNULL(harg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("zk_semaphore holders must not be NULL")));
	holders = PG_GETARG_INT32(harg);
	if (holders < 1 || holders > ZKL_MAX_HOLDERS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zk_semaphore holders must be between 1 and %d", ZKL_MAX_HOLDERS)));
	(void) zkl_semaphore_key(key);
	return holders;
}

/* Stacking a semaphore asks for the holders it was taken with. */
static void
check_stacked_holders(const char *key, int holders)
{
	int			idx = zkl_local_slot(key, ZKL_MODE_SEMAPHORE);
	int			have = idx < 0 ? holders : zkl_shared->t.slots[idx].holders;

	if (have != holders)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zk_semaphore holders %d differ from %d of a live request on the same key",
						holders, have),
				 errdetail("This transaction holds semaphore \"%s\" with holders %d.",
						   zkl_display_key(key), have)));
}

/* What a lock function asks for, besides its keys. */
typedef struct Ask
{
	char		mode;			/* ZKL_MODE_* */
	WaitKind	wait;
	int			timeout_ms;		/* WAIT_BOUNDED */
	bool		session;		/* session-level */
	int			holders;		/* a semaphore's; 0 for a lock */
} Ask;

/* The timeout argument at position targ, checked; 0 means no wait. */
static void
timeout_arg(FunctionCallInfo fcinfo, int targ, Ask *ask)
{
	if (ask->wait != WAIT_BOUNDED)
		return;
	if (PG_ARGISNULL(targ))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("zk_lock timeout must not be NULL")));
	ask->timeout_ms = PG_GETARG_INT32(targ);
	if (ask->timeout_ms < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zk_lock timeout must not be negative")));
	if (ask->timeout_ms == 0)
		ask->wait = WAIT_NONE;
}

/* Give up every slot of a request that was not granted. */
static void
abandon_all(const int *idx, int n)
{
	zkl_set_pending(NULL, 0);
	zkl_abandon_slots(idx, n);
}

/* A request failed at slot idx[which]: give all of it up and report why. */
static void
report_failure(const int *idx, int n, int which)
{
	ZklSlot    *slot = &zkl_shared->t.slots[idx[which]];
	char		msg[ZKL_ERRMSG_LEN];
	char		detail[Max(ZKL_AUTH_INFO_LEN, ZGW_DETAIL_LEN)];
	int			sqlstate;
	bool		auth;
	bool		conn;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	strlcpy(msg, slot->errmsg, sizeof(msg));
	sqlstate = slot->sqlstate;
	auth = sqlstate == ERRCODE_INSUFFICIENT_PRIVILEGE ||
		sqlstate == ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION;
	conn = sqlstate == ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION ||
		sqlstate == ERRCODE_CONNECTION_FAILURE;
	if (sqlstate == ERRCODE_T_R_DEADLOCK_DETECTED && zkl_shared->deadlock_pid == MyProcPid &&
		strcmp(msg, "deadlock detected across clusters") == 0)
	{
		/* a cycle across clusters: gwaits.c named each of its steps */
		strlcpy(detail, zkl_shared->deadlock_detail, sizeof(detail));
		zkl_shared->deadlock_pid = 0;	/* only we write it back (an aligned int) */
	}
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
static bool
acquire_keys(FunctionCallInfo fcinfo, char (*keys)[ZKL_KEY_BUFLEN], int n, const Ask *ask)
{
	const char *fresh[ZKL_MULTI_KEYS];
	bool		stack[ZKL_MULTI_KEYS];
	int			idx[ZKL_MULTI_KEYS];
	int			nfresh = 0;
	int			which = 0;
	bool		lock_timed_out;
	ZklResult	r;
	int			i;

	zkl_xact_init();
	zkl_check_losses();
	if (!ask->session)
		warn_if_autocommit(fcinfo);
	for (i = 0; i < n; i++)
	{
		if (ask->holders > 0)
			check_stacked_holders(keys[i], ask->holders);
		/* one already held but lost fails here, before anything is asked */
		stack[i] = zkl_local_held(keys[i], ask->mode);
		if (!stack[i])
			fresh[nfresh++] = keys[i];
	}
	if (nfresh > 0)
	{
		zkl_claim_slots(fresh, nfresh, ask->mode, ask->holders, ask->wait == WAIT_NONE,
						ask->session, node_data(ask->mode, ask->session), idx);
		zkl_set_pending(idx, nfresh);
		r = wait_for_answer(idx, nfresh, ask->wait, ask->timeout_ms, &lock_timed_out, &which);
		switch (r)
		{
			case ZKR_GRANTED:
				break;
			case ZKR_LOST:
				/* granted and lost before we saw it: the lock is not ours */
				abandon_all(idx, nfresh);
				zkl_lost_error(fresh[which]);
			case ZKR_PENDING:	/* gave up on our own deadline: all of it */
				if (lock_timed_out)
					ereport(ERROR,
							(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
							 errmsg("canceling statement due to lock timeout")));
				return false;
			case ZKR_NOT_GRANTED:
				abandon_all(idx, nfresh);
				return false;
			default:
				report_failure(idx, nfresh, which);
		}
		/* a key that stacks may have been lost meanwhile: then take none */
		for (i = 0; i < n; i++)
			if (stack[i])
				(void) zkl_local_held(keys[i], ask->mode);
		/* the worker wrote the granting session before the result */
		pg_read_barrier();
		for (i = 0; i < nfresh; i++)
			zkl_local_add(idx[i], fresh[i], ask->mode, zkl_shared->t.slots[idx[i]].session_id,
						  ask->session);
	}
	for (i = 0; i < n; i++)
		if (stack[i])
			(void) zkl_local_stack(keys[i], ask->mode, ask->session);
	return true;
}

/* A lock or semaphore function on one key (text, bigint or a pair). */
static bool
acquire(FunctionCallInfo fcinfo, char keykind, char mode, WaitKind kind, bool session)
{
	char		key[1][ZKL_KEY_BUFLEN];
	Ask			ask = {mode, kind, -1, session, 0};

	zkl_check_usable();
	zkl_key_arg(fcinfo, keykind, key[0]);
	if (mode == ZKL_MODE_SEMAPHORE)
		ask.holders = semaphore_arg(fcinfo, keykind, key[0]);
	timeout_arg(fcinfo, zkl_key_nargs(keykind) + (ask.holders > 0), &ask);
	return acquire_keys(fcinfo, key, 1, &ask);
}

static int
key_cmp(const void *a, const void *b)
{
	return strcmp((const char *) a, (const char *) b);
}

/*
 * The keys of a text[] or bigint[] argument, encoded, sorted, each once;
 * returns how many (1 to ZKL_MULTI_KEYS).
 */
static int
key_array_arg(FunctionCallInfo fcinfo, char keykind, char (*keys)[ZKL_KEY_BUFLEN])
{
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	int			n = 0;
	int			i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("zk_lock keys must not be NULL")));
	arr = PG_GETARG_ARRAYTYPE_P(0);
	if (keykind == ZKL_KEY_TEXT)
		deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &nelems);
	else
		deconstruct_array(arr, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &nelems);
	if (nelems == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zk_lock keys must not be empty")));
	for (i = 0; i < nelems; i++)
	{
		char		key[ZKL_KEY_BUFLEN];

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("zk_lock key must not be NULL")));
		if (keykind == ZKL_KEY_TEXT)
			encode_text(DatumGetTextPP(elems[i]), key);
		else if (zkl_encode_bigint_key(DatumGetInt64(elems[i]), key, sizeof(key)) < 0)
			elog(ERROR, "could not encode bigint key");
		/* each key once: a duplicate counts once */
		if (n > 0 && bsearch(key, keys, n, ZKL_KEY_BUFLEN, key_cmp) != NULL)
			continue;
		if (n == ZKL_MULTI_KEYS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("zk_lock takes at most %d keys at once", ZKL_MULTI_KEYS)));
		strlcpy(keys[n++], key, ZKL_KEY_BUFLEN);
		qsort(keys, n, ZKL_KEY_BUFLEN, key_cmp);
	}
	return n;
}

/* A lock function on a text[] or bigint[] of keys: all of them, or none. */
static bool
acquire_array(FunctionCallInfo fcinfo, char keykind, char mode, WaitKind kind, bool session)
{
	char		(*keys)[ZKL_KEY_BUFLEN] = palloc(ZKL_MULTI_KEYS * ZKL_KEY_BUFLEN);
	Ask			ask = {mode, kind, -1, session, 0};
	int			n;

	zkl_check_usable();
	n = key_array_arg(fcinfo, keykind, keys);
	timeout_arg(fcinfo, 1, &ask);
	return acquire_keys(fcinfo, keys, n, &ask);
}

static bool
release(FunctionCallInfo fcinfo, char keykind, char mode, bool session)
{
	char		key[ZKL_KEY_BUFLEN];

	zkl_require_shared();
	zkl_key_arg(fcinfo, keykind, key);
	if (mode == ZKL_MODE_SEMAPHORE)
		(void) zkl_semaphore_key(key);
	zkl_xact_init();
	if (session)
		zkl_acknowledge_losses(key, mode);
	zkl_check_losses();
	if (zkl_local_unlock(key, mode, session))
		return true;
	if (mode == ZKL_MODE_SEMAPHORE)
		ereport(WARNING,
				(errmsg("you don't hold zk_lock semaphore \"%s\"", zkl_display_key(key))));
	else
		ereport(WARNING,
				(errmsg("you don't own a zk_lock %s%s lock on key \"%s\"",
						session ? "session-level " : "",
						mode == ZKL_MODE_SHARED ? "shared" : "exclusive",
						zkl_display_key(key))));
	return false;
}

/*
 * Entry points: ARG is the mode letter, upper-case for the zk_session_*
 * functions (ZKL_KEYED_ENTRIES passes one char).
 */
#define SESSION_LEVEL(mode)	((char) ((mode) - 'a' + 'A'))
#define IS_SESSION(arg)		((arg) >= 'A' && (arg) <= 'Z')
#define MODE_OF(arg)		((char) (IS_SESSION(arg) ? (arg) - 'A' + 'a' : (arg)))

static Datum
lock_wait(FunctionCallInfo fcinfo, char keykind, char arg)
{
	acquire(fcinfo, keykind, MODE_OF(arg), WAIT_FOREVER, IS_SESSION(arg));
	PG_RETURN_VOID();
}

static Datum
lock_try(FunctionCallInfo fcinfo, char keykind, char arg)
{
	PG_RETURN_BOOL(acquire(fcinfo, keykind, MODE_OF(arg), WAIT_NONE, IS_SESSION(arg)));
}

static Datum
lock_try_within(FunctionCallInfo fcinfo, char keykind, char arg)
{
	PG_RETURN_BOOL(acquire(fcinfo, keykind, MODE_OF(arg), WAIT_BOUNDED, IS_SESSION(arg)));
}

static Datum
locks_wait(FunctionCallInfo fcinfo, char keykind, char arg)
{
	acquire_array(fcinfo, keykind, MODE_OF(arg), WAIT_FOREVER, IS_SESSION(arg));
	PG_RETURN_VOID();
}

static Datum
locks_try(FunctionCallInfo fcinfo, char keykind, char arg)
{
	PG_RETURN_BOOL(acquire_array(fcinfo, keykind, MODE_OF(arg), WAIT_NONE, IS_SESSION(arg)));
}

static Datum
locks_try_within(FunctionCallInfo fcinfo, char keykind, char arg)
{
	PG_RETURN_BOOL(acquire_array(fcinfo, keykind, MODE_OF(arg), WAIT_BOUNDED, IS_SESSION(arg)));
}

static Datum
unlock_one(FunctionCallInfo fcinfo, char keykind, char arg)
{
	PG_RETURN_BOOL(release(fcinfo, keykind, MODE_OF(arg), IS_SESSION(arg)));
}

/* Every transaction-level lock of this backend, both modes. */
Datum
zk_unlock_all(PG_FUNCTION_ARGS)
{
	zkl_require_shared();
	zkl_xact_init();
	zkl_check_losses();
	zkl_local_unlock_all(false);
	PG_RETURN_VOID();
}

/* Every session-level lock of this backend, both modes. */
Datum
zk_session_unlock_all(PG_FUNCTION_ARGS)
{
	zkl_require_shared();
	zkl_xact_init();
	zkl_acknowledge_losses(NULL, 0);	/* unlocks all, and fails if one was lost */
	PG_RETURN_VOID();
}

/*
 * The encoded key whose token zk_lock_token(key) gives: the lock's, else a
 * semaphore's of that name (its own node's czxid, the same rule with one
 * node).  Fails unless this transaction holds one.
 */
static void
token_key(FunctionCallInfo fcinfo, char keykind, char *key)
{
	zkl_key_arg(fcinfo, keykind, key);
	if (zkl_local_slot(key, ZKL_MODE_EXCLUSIVE) < 0 && zkl_local_slot(key, ZKL_MODE_SHARED) < 0 &&
		keykind != ZKL_KEY_PAIR)
	{
		char		semkey[ZKL_KEY_BUFLEN];

		strlcpy(semkey, key, sizeof(semkey));
		(void) zkl_semaphore_key(semkey);
		if (zkl_local_slot(semkey, ZKL_MODE_SEMAPHORE) >= 0)
			strlcpy(key, semkey, ZKL_KEY_BUFLEN);
	}
	if (zkl_local_slot(key, ZKL_MODE_EXCLUSIVE) < 0 && zkl_local_slot(key, ZKL_MODE_SHARED) < 0 &&
		zkl_local_slot(key, ZKL_MODE_SEMAPHORE) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this transaction holds no zk_lock lock on key \"%s\"",
						zkl_display_key(key))));
}

/*
 * Fencing token of the key for this transaction: that of its oldest node on
 * the key, from the node's czxid and the hand-overs before this holder
 * (zkr_fencing_token).  czxids grow across the whole ensemble; a request
 * granted past another cluster's waiter (an upgrade: holds.h, recipe.c)
 * passes only waiters queued behind that older node of ours; and a node is
 * handed over only while it is at the head of the queue.  So each later
 * exclusive holder's token is greater.
 */
static Datum
lock_token(FunctionCallInfo fcinfo, char keykind, char unused)
{
	char		key[ZKL_KEY_BUFLEN];
	int			slots[2];
	int			n;
	TimestampTz deadline;

	zkl_require_shared();
	zkl_check_losses();
	token_key(fcinfo, keykind, key);
	n = zkl_local_key_slots(key, slots, lengthof(slots));

	/* a lock created inside a multi learns its czxid only when asked */
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   zkl_session_timeout + WORKER_GRACE_MS);
	for (;;)
	{
		bool		ask = false;
		bool		lost = false;
		int64		token = 0;
		int			known = 0;
		int			i;

		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		for (i = 0; i < n; i++)
		{
			ZklSlot    *slot = &zkl_shared->t.slots[slots[i]];

			lost |= slot->result == ZKR_LOST;
			if (slot->czxid != 0)
			{
				int64		t = zkr_fencing_token(slot->czxid, slot->handed);

				if (t < 0)
				{
					LWLockRelease(zkl_shared->lock);
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("fencing token of key \"%s\" is out of range: ZooKeeper's zxid epoch is too large",
									zkl_display_key(key))));
				}
				token = (known++ == 0) ? t : Min(token, t);
			}
			else if (!(slot->todo & ZKT_STAT))
			{
				slot->todo |= ZKT_STAT;
				ask = true;
			}
		}
		LWLockRelease(zkl_shared->lock);
		if (lost)
			zkl_lost_error(key);
		if (known == n)
			PG_RETURN_INT64(token);
		if (ask)
			zkl_wake_worker();
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("ZooKeeper did not answer for the fencing token of key \"%s\"",
							zkl_display_key(key))));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		zkl_check_for_interrupts();
	}
}

/*
 * One C entry point per SQL signature (zk_lock.h): the name says the key's
 * type and the mode, so nothing is read from fn_expr, which a fast-path
 * call does not have.
 */
ZKL_KEYED_ENTRIES(zk_lock, lock_wait, ZKL_MODE_EXCLUSIVE)
ZKL_KEYED_ENTRIES(zk_try_lock, lock_try, ZKL_MODE_EXCLUSIVE)
ZKL_KEYED_ENTRIES(zk_try_lock_ms, lock_try_within, ZKL_MODE_EXCLUSIVE)
ZKL_KEYED_ENTRIES(zk_unlock, unlock_one, ZKL_MODE_EXCLUSIVE)
ZKL_KEYED_ENTRIES(zk_lock_shared, lock_wait, ZKL_MODE_SHARED)
ZKL_KEYED_ENTRIES(zk_try_lock_shared, lock_try, ZKL_MODE_SHARED)
ZKL_KEYED_ENTRIES(zk_try_lock_shared_ms, lock_try_within, ZKL_MODE_SHARED)
ZKL_KEYED_ENTRIES(zk_unlock_shared, unlock_one, ZKL_MODE_SHARED)
ZKL_KEYED_ENTRIES(zk_lock_token, lock_token, 0)
ZKL_KEYED_ENTRIES(zk_session_lock, lock_wait, SESSION_LEVEL(ZKL_MODE_EXCLUSIVE))
ZKL_KEYED_ENTRIES(zk_session_try_lock, lock_try, SESSION_LEVEL(ZKL_MODE_EXCLUSIVE))
ZKL_KEYED_ENTRIES(zk_session_try_lock_ms, lock_try_within, SESSION_LEVEL(ZKL_MODE_EXCLUSIVE))
ZKL_KEYED_ENTRIES(zk_session_unlock, unlock_one, SESSION_LEVEL(ZKL_MODE_EXCLUSIVE))
ZKL_KEYED_ENTRIES(zk_session_lock_shared, lock_wait, SESSION_LEVEL(ZKL_MODE_SHARED))
ZKL_KEYED_ENTRIES(zk_session_try_lock_shared, lock_try, SESSION_LEVEL(ZKL_MODE_SHARED))
ZKL_KEYED_ENTRIES(zk_session_try_lock_shared_ms, lock_try_within, SESSION_LEVEL(ZKL_MODE_SHARED))
ZKL_KEYED_ENTRIES(zk_session_unlock_shared, unlock_one, SESSION_LEVEL(ZKL_MODE_SHARED))

/* Counting semaphores: text and bigint keys, transaction-level only. */
ZKL_TEXT_INT8_ENTRIES(zk_semaphore, lock_wait, ZKL_MODE_SEMAPHORE)
ZKL_TEXT_INT8_ENTRIES(zk_try_semaphore, lock_try, ZKL_MODE_SEMAPHORE)
ZKL_TEXT_INT8_ENTRIES(zk_try_semaphore_ms, lock_try_within, ZKL_MODE_SEMAPHORE)
ZKL_TEXT_INT8_ENTRIES(zk_unlock_semaphore, unlock_one, ZKL_MODE_SEMAPHORE)

/* Multi-key locks: text[] and bigint[] of keys, all or nothing, at both levels. */
ZKL_TEXT_INT8_ENTRIES(zk_locks_array, locks_wait, ZKL_MODE_EXCLUSIVE)
ZKL_TEXT_INT8_ENTRIES(zk_try_locks_array, locks_try, ZKL_MODE_EXCLUSIVE)
ZKL_TEXT_INT8_ENTRIES(zk_try_locks_array_ms, locks_try_within, ZKL_MODE_EXCLUSIVE)
ZKL_TEXT_INT8_ENTRIES(zk_locks_shared_array, locks_wait, ZKL_MODE_SHARED)
ZKL_TEXT_INT8_ENTRIES(zk_try_locks_shared_array, locks_try, ZKL_MODE_SHARED)
ZKL_TEXT_INT8_ENTRIES(zk_try_locks_shared_array_ms, locks_try_within, ZKL_MODE_SHARED)
ZKL_TEXT_INT8_ENTRIES(zk_session_locks_array, locks_wait, SESSION_LEVEL(ZKL_MODE_EXCLUSIVE))
ZKL_TEXT_INT8_ENTRIES(zk_session_try_locks_array, locks_try, SESSION_LEVEL(ZKL_MODE_EXCLUSIVE))
ZKL_TEXT_INT8_ENTRIES(zk_session_try_locks_array_ms, locks_try_within, SESSION_LEVEL(ZKL_MODE_EXCLUSIVE))
ZKL_TEXT_INT8_ENTRIES(zk_session_locks_shared_array, locks_wait, SESSION_LEVEL(ZKL_MODE_SHARED))
ZKL_TEXT_INT8_ENTRIES(zk_session_try_locks_shared_array, locks_try, SESSION_LEVEL(ZKL_MODE_SHARED))
ZKL_TEXT_INT8_ENTRIES(zk_session_try_locks_shared_array_ms, locks_try_within, SESSION_LEVEL(ZKL_MODE_SHARED))
