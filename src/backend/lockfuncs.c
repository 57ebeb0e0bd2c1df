/*
 * lockfuncs.c — the SQL-callable lock functions: their arguments (keys,
 * holders, timeouts), unlocking, and the fencing token.  A request goes
 * through request.c.
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

#include "lockfuncs.h"
#include "settings.h"
#include "shmem.h"
#include "held.h"
#include "xact.h"
#include "key_text.h"
#include "request.h"
#include "table.h"

PG_FUNCTION_INFO_V1(zk_unlock_all);
PG_FUNCTION_INFO_V1(zk_session_unlock_all);

/* How many arguments the key takes: two for (key1 int, key2 int). */
int
zb_key_nargs(char kind)
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
	if (zc_keys_encode_text_key(utf8, ulen, out, ZKL_KEY_BUFLEN) < 0)
		elog(ERROR, "could not encode key");
}

void
zb_key_arg(FunctionCallInfo fcinfo, char kind, char *out)
{
	if (PG_ARGISNULL(0) || (kind == ZKL_KEY_PAIR && PG_ARGISNULL(1)))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("zk_lock key must not be NULL")));

	if (kind == ZKL_KEY_PAIR)
	{
		if (zc_keys_encode_pair_key(PG_GETARG_INT32(0), PG_GETARG_INT32(1), out, ZKL_KEY_BUFLEN) < 0)
			elog(ERROR, "could not encode (int, int) key");
	}
	else if (kind == ZKL_KEY_BIGINT)
	{
		if (zc_keys_encode_bigint_key(PG_GETARG_INT64(0), out, ZKL_KEY_BUFLEN) < 0)
			elog(ERROR, "could not encode bigint key");
	}
	else
		encode_text(PG_GETARG_TEXT_PP(0), out);
}

void
zb_check_usable(void)
{
	zkl_require_shared();
	if (zkl_hosts == NULL || zkl_hosts[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zk_lock.hosts is not set"),
				 errhint("Set zk_lock.hosts to the ZooKeeper ensemble, e.g. 'zk1:2181,zk2:2181', and reload.")));
}

/*
 * A semaphore's holders argument (right after the key), checked; and its
 * key, moved to the semaphores' key space.
 */
static int
semaphore_arg(FunctionCallInfo fcinfo, char keykind, char *key)
{
	int			harg = zb_key_nargs(keykind);
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
	(void) zc_keys_semaphore_key(key);
	return holders;
}

/* The timeout argument at position targ, checked; 0 means no wait. */
static void
timeout_arg(FunctionCallInfo fcinfo, int targ, ZklAsk *ask)
{
	if (ask->wait != ZKL_WAIT_BOUNDED)
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
		ask->wait = ZKL_WAIT_NONE;
}

/* A lock or semaphore function on one key (text, bigint or a pair). */
static bool
acquire(FunctionCallInfo fcinfo, char keykind, char mode, ZklWaitKind kind, bool session)
{
	char		key[1][ZKL_KEY_BUFLEN];
	ZklAsk		ask = {mode, kind, -1, session, 0, false};

	zb_check_usable();
	zb_key_arg(fcinfo, keykind, key[0]);
	if (zc_kind_counted(mode))
		ask.holders = semaphore_arg(fcinfo, keykind, key[0]);
	timeout_arg(fcinfo, zb_key_nargs(keykind) + (ask.holders > 0), &ask);
	return zb_request_locks(fcinfo, key, 1, &ask);
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
		else if (zc_keys_encode_bigint_key(DatumGetInt64(elems[i]), key, sizeof(key)) < 0)
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
acquire_array(FunctionCallInfo fcinfo, char keykind, char mode, ZklWaitKind kind, bool session)
{
	char		(*keys)[ZKL_KEY_BUFLEN] = palloc(ZKL_MULTI_KEYS * ZKL_KEY_BUFLEN);
	ZklAsk		ask = {mode, kind, -1, session, 0, false};
	int			n;

	zb_check_usable();
	n = key_array_arg(fcinfo, keykind, keys);
	timeout_arg(fcinfo, 1, &ask);
	return zb_request_locks(fcinfo, keys, n, &ask);
}

static bool
release(FunctionCallInfo fcinfo, char keykind, char mode, bool session)
{
	char		key[ZKL_KEY_BUFLEN];

	zkl_require_shared();
	zb_key_arg(fcinfo, keykind, key);
	if (zc_kind_counted(mode))
		(void) zc_keys_semaphore_key(key);
	zb_xact_init();
	if (session)
		zb_acknowledge_losses(key, mode);
	zb_check_losses();
	if (zb_local_unlock(key, mode, session))
		return true;
	if (zc_kind_counted(mode))
		ereport(WARNING,
				(errmsg("you don't hold zk_lock semaphore \"%s\"", zb_display_key(key))));
	else
		ereport(WARNING,
				(errmsg("you don't own a zk_lock %s%s lock on key \"%s\"",
						session ? "session-level " : "",
						zc_kind_noun(mode),
						zb_display_key(key))));
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
	acquire(fcinfo, keykind, MODE_OF(arg), ZKL_WAIT_FOREVER, IS_SESSION(arg));
	PG_RETURN_VOID();
}

static Datum
lock_try(FunctionCallInfo fcinfo, char keykind, char arg)
{
	PG_RETURN_BOOL(acquire(fcinfo, keykind, MODE_OF(arg), ZKL_WAIT_NONE, IS_SESSION(arg)));
}

static Datum
lock_try_within(FunctionCallInfo fcinfo, char keykind, char arg)
{
	PG_RETURN_BOOL(acquire(fcinfo, keykind, MODE_OF(arg), ZKL_WAIT_BOUNDED, IS_SESSION(arg)));
}

static Datum
locks_wait(FunctionCallInfo fcinfo, char keykind, char arg)
{
	acquire_array(fcinfo, keykind, MODE_OF(arg), ZKL_WAIT_FOREVER, IS_SESSION(arg));
	PG_RETURN_VOID();
}

static Datum
locks_try(FunctionCallInfo fcinfo, char keykind, char arg)
{
	PG_RETURN_BOOL(acquire_array(fcinfo, keykind, MODE_OF(arg), ZKL_WAIT_NONE, IS_SESSION(arg)));
}

static Datum
locks_try_within(FunctionCallInfo fcinfo, char keykind, char arg)
{
	PG_RETURN_BOOL(acquire_array(fcinfo, keykind, MODE_OF(arg), ZKL_WAIT_BOUNDED, IS_SESSION(arg)));
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
	zb_xact_init();
	zb_check_losses();
	zb_local_unlock_all(false);
	PG_RETURN_VOID();
}

/* Every session-level lock of this backend, both modes. */
Datum
zk_session_unlock_all(PG_FUNCTION_ARGS)
{
	zkl_require_shared();
	zb_xact_init();
	zb_acknowledge_losses(NULL, 0);	/* unlocks all, and fails if one was lost */
	PG_RETURN_VOID();
}

/*
 * The encoded key whose token zk_lock_token(key) gives: the lock's, else a
 * semaphore's of that name (its own node's czxid, the same rule with one
 * node).  Fails unless this transaction holds one.
 */
static bool
holds_any_kind(const char *key)
{
	int			i;

	for (i = 0; i < zc_nkinds; i++)
		if (zb_local_slot(key, zc_kinds[i].mode) >= 0)
			return true;
	return false;
}

static void
token_key(FunctionCallInfo fcinfo, char keykind, char *key)
{
	zb_key_arg(fcinfo, keykind, key);
	if (!holds_any_kind(key) && keykind != ZKL_KEY_PAIR)
	{
		char		semkey[ZKL_KEY_BUFLEN];

		strlcpy(semkey, key, sizeof(semkey));
		(void) zc_keys_semaphore_key(semkey);
		if (holds_any_kind(semkey))
			strlcpy(key, semkey, ZKL_KEY_BUFLEN);
	}
	if (!holds_any_kind(key))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this transaction holds no zk_lock lock on key \"%s\"",
						zb_display_key(key))));
}

/*
 * Fencing token of the key for this transaction: that of its oldest node on
 * the key, from the node's czxid and the hand-overs before this holder
 * (zc_recipe_fencing_token).  czxids grow across the whole ensemble; a request
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
	zb_check_losses();
	token_key(fcinfo, keykind, key);
	n = zb_local_key_slots(key, slots, lengthof(slots));

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

			lost |= slot->ans.result == ZKL_RESULT_LOST;
			if (slot->zk.czxid != 0)
			{
				int64		t = zc_recipe_fencing_token(slot->zk.czxid, slot->zk.handed);

				if (t < 0)
				{
					LWLockRelease(zkl_shared->lock);
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("fencing token of key \"%s\" is out of range: ZooKeeper's zxid epoch is too large",
									zb_display_key(key))));
				}
				token = (known++ == 0) ? t : Min(token, t);
			}
			else
				ask |= zc_table_ask_stat(slot);
		}
		LWLockRelease(zkl_shared->lock);
		if (lost)
			zb_lost_error(key);
		if (known == n)
			PG_RETURN_INT64(token);
		if (ask)
			zkl_wake_worker();
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("ZooKeeper did not answer for the fencing token of key \"%s\"",
							zb_display_key(key))));
		zb_request_sleep(100);
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
