/*
 * session.c — the worker's ZooKeeper session: opening, resuming and closing
 * it (a session left from before a crash-restart: left_session.c), its
 * connection state in shared memory, the identity and root it works
 * under (reloadable), and the clock that declares it lost when the worker is
 * cut off.  worker.c drives the lock requests through it.
 * Part of the worker: runs in its process only.
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "settings.h"
#include "shmem.h"
#include "table.h"
#include "auth.h"
#include "zk_client.h"
#include "cutoff.h"
#include "left_session.h"
#include "presence.h"
#include "resume.h"
#include "session.h"

#define CONNECT_LOG_MS 30000
/* digest ids (as ACLs name them) of the identities added to this handle, latest last */
#define MAX_SESSION_IDS 4

/*
 * This file's process memory: the worker has one copy, the simulator one
 * per simulated cluster (it points zw_session at each).
 */
struct ZwSession
{
	const ZklSessionEvents *events; /* the worker's, from zw_session_begin */
	char	   *open_hosts;
	TimestampTz next_failure_log;	/* failed connects: one LOG line per CONNECT_LOG_MS */
	bool		session_ended;	/* expired or refused: open a new one */
	bool		session_ours;	/* the handle's session is known ours: new, or confirmed */
	bool		fresh_handle;	/* opened for a new session, not connected yet */
	int64		next_open;		/* zkl_mono_now: a wall clock stepped back would delay it */
	char		session_cred[ZKL_ERRMSG_LEN];	/* identity last added to the session */
	char		session_user[ZKL_ERRMSG_LEN / 2];
	char		session_ids[MAX_SESSION_IDS][ZKL_ERRMSG_LEN];
	int			nsession_ids;
	char		auth_complaint[ZKL_AUTH_INFO_LEN];	/* last logged, so it is logged once */

	/*
	 * A resumed session is ours only while this incarnation's presence node
	 * is there (resume.h): until the leader has said so, the connection
	 * counts as not made.  confirm_gen tells the answer on this connection
	 * from older ones.
	 */
	bool		confirming;
	bool		confirm_due;	/* ask (again) once connected */
	uint64		confirm_gen;
};

static ZwSession own;
ZwSession  *zw_session = &own;

/* A fresh copy of this file's memory, as a new worker process has it. */
ZwSession *
zw_session_new(void)
{
	return MemoryContextAllocZero(TopMemoryContext, sizeof(ZwSession));
}

/*
 * A nonce for a new session, never 0: ZooKeeper may hand a session id out
 * again (the id comes from a member's id and clock), and a tombstone must
 * speak for one incarnation only (presence.c).
 */
static uint64
draw_nonce(void)
{
	uint64		nonce = 0;

	if (!pg_strong_random(&nonce, sizeof(nonce)))
		nonce = (uint64) GetCurrentTimestamp() ^ ((uint64) MyProcPid << 40) ^ (uint64) random();
	return nonce != 0 ? nonce : 1;
}


static void confirm_done(int rc, const struct Stat *stat, const void *data);

static void
send_confirm(void)
{
	zw_session->confirm_due = false;
	if (zw_presence_confirm(zkl_shared->t.session_id, zkl_shared->session_nonce, confirm_done,
							(const void *) (uintptr_t) zw_session->confirm_gen) != ZOK)
		zw_session->confirm_due = true;
}

/* Our presence node, as the server saw it behind the sync: the session is ours, or it ended. */
static void
confirm_done(int rc, const struct Stat *stat, const void *data)
{
	if (!zw_session->confirming || (uintptr_t) data != zw_session->confirm_gen)
		return;					/* a connection or handle since */
	switch (zc_resume_confirmed(rc, rc == ZOK ? stat->ephemeralOwner : 0, zkl_shared->t.session_id))
	{
		case ZKL_CONFIRM_OURS:
			zw_session->confirming = false;
			zw_session->session_ours = true;
			LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
			zkl_shared->t.conn_state = ZKC_CONNECTED;
			zkl_shared->state_since = GetCurrentTimestamp();
			zw_session->events->reconnected();
			LWLockRelease(zkl_shared->lock);
			break;
		case ZKL_CONFIRM_ENDED:
			zw_session->confirming = false;
			ereport(LOG,
					(errmsg("zk_lock: resumed ZooKeeper session 0x%llx is not ours any more: its presence node is gone; treating it as expired",
							(unsigned long long) zkl_shared->t.session_id),
					 errdetail("The session ended while the connection was down, and ZooKeeper gave its id to a new session, which is left open for its owner.")));
			zw_session->session_ended = true;
			LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
			zkl_shared->t.counters.expirations++;
			LWLockRelease(zkl_shared->lock);
			break;
		case ZKL_CONFIRM_AGAIN:
			zw_session->confirm_due = true;
			break;
		case ZKL_CONFIRM_WAIT:
			break;
	}
}

static void
session_watcher(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	if (type != ZOO_SESSION_EVENT)
		return;

	if (state == ZOO_CONNECTED_STATE)
	{
		const clientid_t *id = zw_client_session(h);
		ZklConnected what;
		bool		old_lost;
		uint64		nonce;

		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		what = zc_resume_connected(zw_session->fresh_handle, zkl_shared->t.session_id, id->client_id,
								   &old_lost);
		LWLockRelease(zkl_shared->lock);
		if (old_lost)
			zw_session->events->lost(); /* replaced, or asked to resume a session that is gone */

		/* a handle not resuming one gets a new session, whatever its id */
		zw_session->fresh_handle = false;
		nonce = what == ZKL_CONN_NEW ? draw_nonce() : zkl_shared->session_nonce;
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		zkl_shared->t.session_id = id->client_id;
		zkl_shared->session_nonce = nonce;
		zkl_shared->t.session_tag = zc_table_session_tag(id->client_id, nonce);
		memcpy(zkl_shared->session_passwd, id->passwd, sizeof(zkl_shared->session_passwd));
		zkl_shared->last_heard = zkl_mono_now();
		zkl_shared->t.negotiated_timeout = zw_client_timeout(h);
		strlcpy(zkl_shared->server, zw_client_server(h) ? zw_client_server(h) : "",
				sizeof(zkl_shared->server));
		zkl_shared->t.counters.reconnects++;
		zkl_shared->conn_error[0] = '\0';
		zw_session->confirming = what == ZKL_CONN_CONFIRM;
		zw_session->session_ours = what == ZKL_CONN_NEW;
		zw_session->confirm_gen++;
		if (!zw_session->confirming)
		{
			zkl_shared->t.conn_state = ZKC_CONNECTED;
			zkl_shared->state_since = GetCurrentTimestamp();
			zw_session->events->reconnected();
		}
		LWLockRelease(zkl_shared->lock);
		/* first on this connection: no presence node of ours is made before it */
		if (zw_session->confirming)
			send_confirm();
		zw_session->next_failure_log = 0;	/* the line below ends a run of logged failures */
		if (what == ZKL_CONN_NEW)
			zw_left_save(id, nonce);	/* outside the lock: it syncs to disk */
		ereport(LOG,
				(errmsg("zk_lock: connected to ZooKeeper, session 0x%llx, timeout %d ms",
						(unsigned long long) id->client_id, zw_client_timeout(h))));
	}
	else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE)
	{
		bool		was_connected;

		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		was_connected = zkl_shared->t.conn_state == ZKC_CONNECTED;
		zkl_shared->t.conn_state = ZKC_CONNECTING;
		if (was_connected)
			zkl_shared->state_since = GetCurrentTimestamp();
		LWLockRelease(zkl_shared->lock);
		if (was_connected)
			ereport(LOG, (errmsg("zk_lock: lost the connection to ZooKeeper; reconnecting")));
	}
	else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
	{
		ereport(LOG,
				(errmsg("zk_lock: ZooKeeper session 0x%llx %s",
						(unsigned long long) zw_client_session(h)->client_id,
						state == ZOO_EXPIRED_SESSION_STATE ? "expired" : "was refused authentication")));
		zw_session->session_ended = true;
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		zkl_shared->t.counters.expirations++;
		LWLockRelease(zkl_shared->lock);
	}
}

static void
set_auth_info(const char *fmt,...) pg_attribute_printf(1, 2);

/* zk_lock_status().auth; caller holds the lock */
static void
set_auth_info(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(zkl_shared->auth_info, sizeof(zkl_shared->auth_info), fmt, ap);
	va_end(ap);
}

/*
 * Whether the root's ACL lets our identity in.  ZooKeeper's digest scheme
 * accepts any password (it only derives an id from it), so a wrong one
 * shows only against the ACL of the nodes it should reach.
 */
static void
root_acl_done(int rc, struct ACL_vector *acl, struct Stat *stat, const void *ctx)
{
	bool		ours = false;
	bool		earlier = false;
	bool		open = false;
	int			i;
	int			j;

	for (i = 0; rc == ZOK && acl != NULL && i < acl->count; i++)
	{
		const struct ACL *a = &acl->data[i];

		open |= strcmp(a->id.scheme, "world") == 0 && (a->perms & ZOO_PERM_CREATE);
		for (j = 0; j < zw_session->nsession_ids && strcmp(a->id.scheme, "digest") == 0; j++)
		{
			if (strcmp(a->id.id, zw_session->session_ids[j]) != 0)
				continue;
			ours |= j == zw_session->nsession_ids - 1;
			earlier |= j < zw_session->nsession_ids - 1;
		}
	}
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (rc == ZNONODE)
		set_auth_info("%s: accepted (zk_lock.root does not exist yet; it will be created as this user's)",
					  zw_session->session_user);
	else if (rc == ZNOAUTH || (rc == ZOK && !ours && !earlier && !open))
		/* reading an ACL takes read or admin rights on the node */
		set_auth_info("%s: refused: zk_lock.root belongs to another identity (a wrong password, or another user)",
					  zw_session->session_user);
	else if (rc != ZOK)
		/* the ACL could not be read: nothing more known */
		set_auth_info("%s: accepted", zw_session->session_user);
	else if (ours)
		set_auth_info("%s: accepted, owner of zk_lock.root", zw_session->session_user);
	else if (earlier)
		set_auth_info("%s: accepted; zk_lock.root belongs to an identity this session added before",
					  zw_session->session_user);
	else
		set_auth_info("%s: accepted (zk_lock.root is open to every identity)", zw_session->session_user);
	LWLockRelease(zkl_shared->lock);
}

static void
auth_done(int rc, const void *ctx)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (rc == ZOK)
		set_auth_info("%s: accepted", zw_session->session_user);
	else
		set_auth_info("%s: refused by ZooKeeper (%s)", zw_session->session_user, zw_client_strerror(rc));
	LWLockRelease(zkl_shared->lock);
	if (rc == ZOK && zw_session->nsession_ids > 0 && zw_client_handle() != NULL)
		(void) zw_client_get_acl(zkl_shared->t.roots[zkl_shared->t.cur_root], root_acl_done, NULL);
}

/*
 * Read zk_lock.auth.  Unusable (a bad file, say) means no session at all:
 * requests then fail at once rather than create nodes anyone could delete.
 * Usable: the identity is added to the session (if open and not added yet),
 * and every node is created so that only it can change the node.
 */
static bool
apply_auth(void)
{
	char		cred[ZKL_ERRMSG_LEN];
	char		user[ZKL_ERRMSG_LEN / 2];
	const char *why;
	ZklAuthResult r = zw_load_credential(cred, sizeof(cred), user, sizeof(user), &why);

	if (r == ZKL_AUTH_UNUSABLE)
	{
		if (strcmp(zw_session->auth_complaint, why) != 0)
			ereport(LOG, (errmsg("zk_lock: zk_lock.auth is unusable: %s", why)));
		strlcpy(zw_session->auth_complaint, why, sizeof(zw_session->auth_complaint));
		if (zw_client_handle() != NULL)
			return true;		/* the session keeps the identity it has */
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		zkl_shared->t.auth_unusable = true;
		set_auth_info("%s", why);
		LWLockRelease(zkl_shared->lock);
		return false;
	}
	zw_session->auth_complaint[0] = '\0';
	zw_client_set_acl(zw_node_acl(r == ZKL_AUTH_OK));
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->t.auth_unusable = false;
	if (r == ZKL_AUTH_NONE && zw_client_handle() == NULL)
		set_auth_info("%s", "");
	LWLockRelease(zkl_shared->lock);
	if (r == ZKL_AUTH_OK && zw_client_handle() != NULL && strcmp(cred, zw_session->session_cred) != 0)
	{
		/* ZooKeeper cannot take an identity back: a session only gains them */
		if (zw_session->session_cred[0] != '\0')
			ereport(LOG, (errmsg("zk_lock: new locks are created as ZooKeeper user \"%s\"; the session keeps \"%s\" too until it ends",
								 user, zw_session->session_user)));
		strlcpy(zw_session->session_cred, cred, sizeof(zw_session->session_cred));
		strlcpy(zw_session->session_user, user, sizeof(zw_session->session_user));
		if (zw_session->nsession_ids == MAX_SESSION_IDS)
		{
			memmove(zw_session->session_ids[0], zw_session->session_ids[1],
					(MAX_SESSION_IDS - 1) * sizeof(zw_session->session_ids[0]));
			zw_session->nsession_ids--;
		}
		if (zw_digest_id(cred, zw_session->session_ids[zw_session->nsession_ids],
						 sizeof(zw_session->session_ids[0])))
			zw_session->nsession_ids++;
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		set_auth_info("%s: sent", user);
		LWLockRelease(zkl_shared->lock);
		if (zw_client_add_auth("digest", cred, strlen(cred), auth_done, NULL) != ZOK)
			elog(ERROR, "zk_lock: could not send the ZooKeeper credential");
	}
	explicit_bzero(cred, sizeof(cred));
	return true;
}

/*
 * zk_lock.root changed: locks asked for from now on go under the new root;
 * earlier ones keep theirs until released.  Slots name their root by index
 * into a small table, whose entries are reused once no slot refers to them.
 */
static void
apply_root(void)
{
	int			pick = -1;
	int			i;
	int			j;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (strcmp(zkl_shared->t.roots[zkl_shared->t.cur_root], zkl_root) == 0)
	{
		LWLockRelease(zkl_shared->lock);
		return;
	}
	for (i = 0; i < ZKL_ROOTS && pick < 0; i++)
		if (strcmp(zkl_shared->t.roots[i], zkl_root) == 0)
			pick = i;
	for (i = 0; i < ZKL_ROOTS && pick < 0; i++)
	{
		bool		used = i == zkl_shared->t.cur_root;

		for (j = 0; j < zkl_shared->t.nused && !used; j++)
			used = zkl_shared->t.slots[j].zstate != ZKS_FREE && zkl_shared->t.slots[j].zk.root_id == i;
		if (!used)
			pick = i;
	}
	if (pick >= 0)
	{
		strlcpy(zkl_shared->t.roots[pick], zkl_root, sizeof(zkl_shared->t.roots[pick]));
		zkl_shared->t.cur_root = pick;
	}
	LWLockRelease(zkl_shared->lock);
	if (pick >= 0)
		ereport(LOG, (errmsg("zk_lock: new locks go under zk_lock.root \"%s\"", zkl_root)));
	else
		ereport(LOG, (errmsg("zk_lock: zk_lock.root \"%s\" not applied yet: locks under %d earlier roots are still held; reload again once they are released",
							 zkl_root, ZKL_ROOTS - 1)));
}

/* The list the handle uses, for zk_lock_status() and connection errors. */
static void
publish_hosts(const char *hosts)
{
	if (zw_session->open_hosts)
		pfree(zw_session->open_hosts);
	zw_session->open_hosts = MemoryContextStrdup(TopMemoryContext, hosts);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	strlcpy(zkl_shared->hosts, hosts, sizeof(zkl_shared->hosts));
	LWLockRelease(zkl_shared->lock);
}

static void
open_session(void)
{
	clientid_t	resume;
	bool		have_resume;

	if (!apply_auth())
	{
		zw_session->next_open = zkl_mono_now() + (int64) ZKC_REOPEN_DELAY_MS * 1000;
		return;
	}
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	/* a session whose clean stop began is over: its tombstone says it holds nothing */
	have_resume = zkl_shared->t.session_id != 0 &&
		zkl_shared->t.session_tag != zkl_shared->closing_tag;
	resume.client_id = zkl_shared->t.session_id;
	memcpy(resume.passwd, zkl_shared->session_passwd, sizeof(resume.passwd));
	zkl_shared->t.conn_state = ZKC_CONNECTING;
	zkl_shared->state_since = GetCurrentTimestamp();
	/* under the lock: presence.c publishes lock-delay's pause, which backends read under it */
	zw_session->events->new_handle();
	LWLockRelease(zkl_shared->lock);

	zw_session->fresh_handle = !have_resume;
	zw_session->confirming = false;
	zw_session->session_ours = false;
	zw_client_set_handle(zw_client_open(zkl_hosts, zkl_session_timeout, have_resume ? &resume : NULL,
				  session_watcher));
	if (zw_client_handle() == NULL)
	{
		zw_session->next_open = zkl_mono_now() + (int64) ZKC_REOPEN_DELAY_MS * 1000;
		return;
	}
	publish_hosts(zkl_hosts);
	zw_session->session_cred[0] = '\0';	/* a new handle has no identity yet */
	zw_session->nsession_ids = 0;
	(void) apply_auth();
}

/*
 * A failed connect, as the library said it: kept for the errors backends
 * raise, and logged (at most once per CONNECT_LOG_MS, not at every retry).
 */
static void
note_connect_failure(void)
{
	char		why[ZKL_ERRMSG_LEN];
	TimestampTz now;

	if (!zw_client_take_error(why, sizeof(why)) || zkl_shared->t.conn_state == ZKC_CONNECTED)
		return;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	strlcpy(zkl_shared->conn_error, why, sizeof(zkl_shared->conn_error));
	LWLockRelease(zkl_shared->lock);
	now = GetCurrentTimestamp();
	if (now < zw_session->next_failure_log)
		return;
	zw_session->next_failure_log = TimestampTzPlusMilliseconds(now, CONNECT_LOG_MS);
	ereport(LOG,
			(errmsg("zk_lock: cannot connect to ZooKeeper at \"%s\": %s", zw_session->open_hosts, why),
			 errdetail("Trying again; this is logged at most every %d s.", CONNECT_LOG_MS / 1000)));
}

static void
reload_config(void)
{
	bool		was_failing = zkl_test_fail_worker;

	ConfigReloadPending = false;
	ProcessConfigFile(PGC_SIGHUP);
	/* one-shot (on a change), so the restarted worker does not fail again */
	if (zkl_test_fail_worker && !was_failing)
		elog(ERROR, "zk_lock worker failing on request (zk_lock.test_fail_worker)");
	if (zw_client_handle() != NULL && zkl_hosts[0] != '\0' &&
		strcmp(zw_session->open_hosts, zkl_hosts) != 0)
	{
		if (zkl_shared->t.session_id == 0)
		{
			/*
			 * No session yet, so nothing to keep: a new handle tries the new
			 * list at once (the library would go on retrying the old one).
			 */
			ereport(LOG, (errmsg("zk_lock: ZooKeeper hosts changed to \"%s\"; connecting there", zkl_hosts)));
			zw_client_close(zw_client_handle());
			zw_client_set_handle(NULL);
			zw_session->next_open = 0;
		}
		/* same ensemble, new list: keep the session and every lock */
		else if (zw_client_set_servers(zkl_hosts) == ZOK)
		{
			ereport(LOG, (errmsg("zk_lock: ZooKeeper hosts changed to \"%s\"", zkl_hosts)));
			publish_hosts(zkl_hosts);
		}
		else
			ereport(LOG, (errmsg("zk_lock: could not apply zk_lock.hosts \"%s\"", zkl_hosts)));
	}
	apply_root();
	if (zw_client_handle() != NULL)
		(void) apply_auth();
}

/*
 * The server expires a session once the full timeout has passed since it
 * last heard from us, and it only ever answers what it heard, so the session
 * can end no sooner than a timeout after our last reply from the server.
 * Once disconnected, our locks may be someone else's from then on: treat the
 * session as lost without waiting to be told (ZooKeeper only says so on
 * reconnect), and a little early (11/12 of the timeout), so we are never the
 * last to know.  A dead connection is noticed only after 2/3 of the timeout
 * without news, so a silent network leaves about a quarter of it to act.
 * Time since then is counted on the monotonic clock: a wall clock stepped
 * back (NTP, an operator) would keep a lost session alive for as long.
 */
static long
cut_off_ms_left(void)
{
	/* only the worker writes these fields: it reads them without the lock */
	return zc_cutoff_ms_left(zkl_shared->t.conn_state == ZKC_CONNECTING, zkl_shared->t.session_id,
					   zkl_shared->t.negotiated_timeout, zkl_shared->last_heard,
					   zkl_mono_now());
}

static bool
cut_off_too_long(void)
{
	if (cut_off_ms_left() != 0)
		return false;
	ereport(LOG,
			(errmsg("zk_lock: cut off from ZooKeeper past the session timeout; treating session 0x%llx as expired",
					(unsigned long long) zkl_shared->t.session_id)));
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->t.counters.expirations++;
	LWLockRelease(zkl_shared->lock);
	return true;
}

/*
 * Before the loop: the root this worker starts under, and a session left
 * over from before a crash-restart.
 */
void
zw_session_begin(const ZklSessionEvents *ev)
{
	zw_session->events = ev;
	if (zkl_shared->t.roots[zkl_shared->t.cur_root][0] == '\0')
		strlcpy(zkl_shared->t.roots[zkl_shared->t.cur_root], zkl_root, ZKL_MAX_ROOT_LEN + 1);
	else
		apply_root();			/* a restarted worker: the setting may have changed */

	/* fresh shared memory (server start or crash-restart): nothing to resume */
	if (zkl_shared->t.session_id == 0)
		zw_left_begin();
}

/*
 * Close the handle, and its session with it, only if that session is known
 * ours: a new one, or a resumed one whose presence node was seen.  Else the
 * id may be another's by now (ZooKeeper gives an id again, and a resumed
 * handle takes whatever session has it), and closing would end that one:
 * the handle is let go (zk_drop.c).  If the session was ours after all, it
 * ends by its timeout, and other clusters wait that long for its nodes.
 */
static void
end_handle(void)
{
	if (zw_session->session_ours)
		zw_client_close(zw_client_handle());
	else
		zw_client_abandon(zw_client_handle());
	zw_session->session_ours = false;
}

/* Each loop turn: a reload, a session that ended, a session to open. */
void
zw_session_tend(void)
{
	if (ConfigReloadPending)
		reload_config();

	if (zw_client_handle() != NULL && !zw_session->session_ended && cut_off_too_long())
		zw_session->session_ended = true;
	if (zw_client_handle() != NULL && !zw_session->session_ended && zw_session->confirming &&
		zw_session->confirm_due && zw_client_connected())
		send_confirm();
	if (zw_client_handle() != NULL && zw_session->session_ended)
	{
		zw_session->session_ended = false;
		zw_session->events->lost();
		end_handle();
		zw_client_set_handle(NULL);
		/* refused authentication would otherwise be retried in a tight loop */
		zw_session->next_open = zkl_mono_now() + (int64) ZKC_REOPEN_DELAY_MS * 1000;
	}
	if (zw_client_handle() == NULL && zkl_hosts[0] != '\0' &&
		zkl_mono_now() >= zw_session->next_open)
		open_session();
	note_connect_failure();
}

/* How long the loop may sleep (-1: no limit) as far as the session goes. */
long
zw_session_wait_ms(long wait_ms)
{
	if (zw_client_handle() == NULL && zkl_hosts[0] != '\0')
		wait_ms = (wait_ms < 0) ? ZKC_REOPEN_DELAY_MS : Min(wait_ms, ZKC_REOPEN_DELAY_MS);
	else if (zw_client_handle() != NULL)
	{
		long		cut = cut_off_ms_left();

		if (cut >= 0)
			wait_ms = (wait_ms < 0) ? cut : Min(wait_ms, cut);
	}
	return wait_ms;
}

/* The worker stops: close the session for good (end_handle). */
void
zw_session_end(void)
{
	zw_session->events->lost();
	zw_left_end();				/* before our handle ends: its look's answer may be in */
	end_handle();
	zw_client_set_handle(NULL);
	zw_left_forget();
}
