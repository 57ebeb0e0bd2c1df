/*
 * left_session.c — the session file, and closing a session left over from
 * before a crash-restart.
 *
 * Shared memory (which lets a restarted worker resume the session) does not
 * survive a crash-restart; the file in the data directory lets the next
 * worker close the orphaned session at once, so other clusters need not
 * wait a whole session timeout for its nodes.  Every backend of the old
 * incarnation is dead by then (the postmaster killed them before it reset
 * shared memory), so no holder of that session can still commit: before
 * closing it, the worker says so with a tombstone (presence.c), and other
 * clusters grant its locks without a lock-delay.  The tombstone names the
 * session's nonce, kept in the file too: ZooKeeper may hand the id out
 * again, and it speaks for that incarnation only.  ZooKeeper derives a
 * session's password from its id, so reattaching takes whatever session has
 * the id by then, maybe another cluster's that got the id again: the worker
 * closes the reattached handle only once a look on its own session, made
 * after the reattach, finds the incarnation's presence node (which went with
 * the session if it ended); otherwise it lets the handle go without closing
 * it (zk_drop.c).
 *
 * The file is stamped with the postmaster that wrote it (its pid and start
 * time, which a crash-restart keeps and no other server shares).  A copy of
 * the data directory (pg_basebackup, a snapshot) carries the file, but its
 * postmaster is another one: it must never close the original's session,
 * whose holders are alive.  Mode 0600: the file holds the session password.
 * Part of the worker: runs in its process only.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "settings.h"
#include "shmem.h"
#include "zk_client.h"
#include "left_session.h"
#include "presence.h"
#include "resume.h"

#define SESSION_FILE		"pg_zk_lock.session"
#define SESSION_FILE_MAGIC	0x5a4b4c33	/* "ZKL3": with the nonce */

typedef struct SessionFile
{
	uint32		magic;
	int32		pm_pid;			/* the postmaster that wrote it */
	TimestampTz pm_start;
	int64		client_id;
	char		passwd[16];
	uint64		nonce;			/* of that incarnation (presence.c) */
} SessionFile;

/*
 * This file's process memory: the worker has one copy, the simulator one
 * per simulated cluster (it points zw_left at each).
 */
struct ZwLeft
{
	clientid_t	left;			/* the session left from before a crash-restart */
	uint64		left_nonce;
	bool		left_pending;
	int			left_state;		/* ZOO_*_STATE seen by left_session_watcher */
	zhandle_t  *attached;		/* reattached to it, until the look's answer */
	int64		look_by;		/* zkl_mono_now: no answer by then counts as none */
	bool		looked_ours;	/* the look found its presence node: close it */
	bool		look_answered;	/* the look found it there, or not */
	bool		look_again;		/* the look got no answer: ask again once connected */
	uintptr_t	look_gen;		/* tells its answer from an older look's */
};

static ZwLeft own;
ZwLeft	   *zw_left = &own;

/* A fresh copy of this file's memory, as a new worker process has it. */
ZwLeft *
zw_left_new(void)
{
	return MemoryContextAllocZero(TopMemoryContext, sizeof(ZwLeft));
}

/* Remember the session in the data directory, stamped with this postmaster. */
void
zw_left_save(const clientid_t *id, uint64 nonce)
{
	SessionFile sf;
	int			fd;
	bool		ok;

	memset(&sf, 0, sizeof(sf));
	sf.magic = SESSION_FILE_MAGIC;
	sf.pm_pid = PostmasterPid;
	sf.pm_start = PgStartTime;
	sf.client_id = id->client_id;
	memcpy(sf.passwd, id->passwd, sizeof(sf.passwd));
	sf.nonce = nonce;
	fd = OpenTransientFilePerm(SESSION_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY,
							   S_IRUSR | S_IWUSR);
	ok = fd >= 0 && write(fd, &sf, sizeof(sf)) == sizeof(sf);
	if (!ok)
		ereport(LOG, (errcode_for_file_access(),
					  errmsg("zk_lock: could not write \"%s\": %m", SESSION_FILE ".tmp")));
	if (fd >= 0 && CloseTransientFile(fd) != 0)
		ok = false;
	explicit_bzero(&sf, sizeof(sf));
	if (ok)
		(void) durable_rename(SESSION_FILE ".tmp", SESSION_FILE, LOG);
}

/*
 * At worker start with fresh shared memory: a session this very postmaster
 * left behind (a crash-restart) is to be closed once the new session is up.
 * Anything else in the file is another server's: left alone in ZooKeeper.
 */
void
zw_left_begin(void)
{
	SessionFile sf;
	int			fd = OpenTransientFile(SESSION_FILE, O_RDONLY | PG_BINARY);
	bool		ok;

	if (fd < 0)
		return;
	ok = read(fd, &sf, sizeof(sf)) == sizeof(sf) && sf.magic == SESSION_FILE_MAGIC &&
		sf.client_id != 0;
	CloseTransientFile(fd);
	if (ok && sf.pm_pid == PostmasterPid && sf.pm_start == PgStartTime)
	{
		zw_left->left.client_id = sf.client_id;
		memcpy(zw_left->left.passwd, sf.passwd, sizeof(zw_left->left.passwd));
		zw_left->left_nonce = sf.nonce;
		zw_left->left_pending = true;
	}
	else
		ereport(LOG,
				(errmsg("zk_lock: not closing the ZooKeeper session named in \"%s\": another server instance wrote it",
						SESSION_FILE),
				 errdetail("A copy of a data directory must not end the original's session.")));
	explicit_bzero(&sf, sizeof(sf));
}


static void
left_session_watcher(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	if (type == ZOO_SESSION_EVENT &&
		(state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE ||
		 state == ZOO_AUTH_FAILED_STATE))
		zw_left->left_state = state;
}

/*
 * The look at the incarnation's presence node, on our own session
 * (presence.c).  Only an answer that the node is there, owned by the id,
 * sets looked_ours: every other state of this memory, a fresh one's
 * included, lets the handle go.
 */
static void
left_looked(int rc, const struct Stat *stat, const void *data)
{
	if ((uintptr_t) data != zw_left->look_gen || zw_left->attached == NULL)
		return;					/* an older look's */
	switch (zc_resume_confirmed(rc, rc == ZOK ? stat->ephemeralOwner : 0, zw_left->left.client_id))
	{
		case ZKL_CONFIRM_OURS:
			zw_left->looked_ours = true;
			zw_left->look_answered = true;
			break;
		case ZKL_CONFIRM_ENDED:
			zw_left->look_answered = true;
			break;
		default:
			zw_left->look_again = true;	/* no answer: asked again once connected */
			break;
	}
}

static void
send_look(void)
{
	zw_left->look_again = false;
	if (zw_presence_look_left(zw_left->left.client_id, zw_left->left_nonce, left_looked,
							  (const void *) ++zw_left->look_gen) != ZOK)
		zw_left->look_again = true;
}

/*
 * Close the reattached handle if the look found the left-over incarnation's
 * presence node, else let it go (zk_drop.c).  The look's sync went out after
 * the reattach: a node there, owned by the id, means the id was not given
 * to another session meanwhile, and had the session ended since, the server
 * would have shut this connection, so the close would go nowhere.  Also when
 * the worker exits (as the exit would let it go), before its own handle ends
 * (which would answer the look ZCLOSING).
 */
void
zw_left_end(void)
{
	unsigned long long id = (unsigned long long) zw_left->left.client_id;

	if (zw_left->attached != NULL && zw_left->looked_ours)
	{
		zw_client_close(zw_left->attached);
		ereport(LOG, (errmsg("zk_lock: closed session 0x%llx left over from before a restart", id)));
	}
	else if (zw_left->attached != NULL)
	{
		zw_client_abandon(zw_left->attached);
		if (zw_left->look_answered)
			ereport(LOG, (errmsg("zk_lock: not closing session 0x%llx left over from before a restart: it ended, and its id may be another session's now", id)));
		else
			ereport(LOG, (errmsg("zk_lock: not closing session 0x%llx left over from before a restart: no answer whether it is still the same session", id),
						  errdetail("It ends by its timeout.")));
	}
	zw_left->attached = NULL;
	zw_left->looked_ours = false;
	zw_left->look_answered = false;
	zw_left->look_again = false;
	explicit_bzero(&zw_left->left, sizeof(zw_left->left));
}

/*
 * Reattach to the left-over session to close it, so that its nodes go at
 * once; the close waits for the look (left_finish), as the id may be
 * another session's by now.
 */
static void
attach_left_session(void)
{
	zhandle_t  *h;
	int64		deadline;		/* zkl_mono_now */
	long		bound;

	zw_left->left_pending = false;
	h = zw_client_open(zkl_hosts, zkl_session_timeout, &zw_left->left, left_session_watcher);
	if (h == NULL)
		return;
	/* our own session is not served while we wait here: stay well inside its pings */
	bound = Min(zkl_connect_timeout, Max(zkl_shared->t.negotiated_timeout / 3, 100));
	deadline = zkl_mono_now() + (int64) bound * 1000;
	zw_left->left_state = 0;
	while (zw_left->left_state == 0 && !ShutdownRequestPending)
	{
		long		ms = (long) ((deadline - zkl_mono_now() + 999) / 1000);

		if (ms <= 0)
			break;
		zw_client_wait(h, ms);
		CHECK_FOR_INTERRUPTS();	/* barriers (DROP DATABASE) wait for us */
	}
	if (zw_left->left_state == ZOO_CONNECTED_STATE)
	{
		/*
		 * The handle is not driven while the look runs: answered within a
		 * third of the session's timeout, or let go, the library neither
		 * pings for it (which would keep it alive longer) nor times it out.
		 */
		zw_left->attached = h;
		zw_left->look_by = zkl_mono_now() +
			(int64) Min(zkl_connect_timeout, Max(zw_client_timeout(h) / 3, 100)) * 1000;
		send_look();
		return;
	}
	/* not connected: the library sends no close request */
	zw_client_close(h);
	if (zw_left->left_state == ZOO_EXPIRED_SESSION_STATE)
		ereport(LOG, (errmsg("zk_lock: session 0x%llx left over from before a restart had expired",
							 (unsigned long long) zw_left->left.client_id)));
	else
		ereport(LOG, (errmsg("zk_lock: could not reach ZooKeeper to close session 0x%llx left over from before a restart; it ends by timeout",
							 (unsigned long long) zw_left->left.client_id)));
	explicit_bzero(&zw_left->left, sizeof(zw_left->left));
}

/* Each turn while reattached: the look's answer, or its time is up. */
static void
left_finish(void)
{
	if (!zw_left->look_answered && zkl_mono_now() < zw_left->look_by)
	{
		if (zw_left->look_again && zw_client_connected())
			send_look();
		return;
	}
	zw_left_end();
}

/*
 * Each loop turn: once the new session is up and listed, mark the left-over
 * one dead (its holders are), then reattach to it and close it once a look
 * shows it is still the left-over one.
 */
void
zw_left_tend(void)
{
	if (zw_left->attached != NULL)
		left_finish();
	if (!zw_left->left_pending || !zw_presence_listed())
		return;
	/*
	 * Reattaching takes the id alone (ZooKeeper derives the password from
	 * it): unless our incarnation's presence node is listed, the id ended,
	 * or belongs to another session now (perhaps under another root, or
	 * another client's), and it is left alone.  Listed, it may still have
	 * ended since: the look after the reattach decides (zw_left_end).
	 */
	if (!zw_presence_incarnation_listed(zw_left->left.client_id, zw_left->left_nonce))
	{
		ereport(LOG, (errmsg("zk_lock: not closing session 0x%llx left over from before a restart: it is not listed as ours (ended, or its id is another session's now)",
							 (unsigned long long) zw_left->left.client_id)));
		zw_left->left_pending = false;
		explicit_bzero(&zw_left->left, sizeof(zw_left->left));
		return;
	}
	switch (zw_presence_mark_dead(zw_left->left.client_id, zw_left->left_nonce))
	{
		case ZKL_MARK_PENDING:
			return;
		case ZKL_MARK_FAILED:
			ereport(LOG, (errmsg("zk_lock: could not mark session 0x%llx as closed after a crash; other clusters wait zk_lock.lock_delay for its locks",
								 (unsigned long long) zw_left->left.client_id)));
			break;
		case ZKL_MARK_DONE:
			break;
	}
	attach_left_session();
}

/*
 * The session ended (closed, expired, or given up for lost): nothing is
 * left to close, and a worker restarted by an ERROR must not take the file
 * for a crash's leftover (whose holders would all be dead).
 */
void
zw_left_forget(void)
{
	unlink(SESSION_FILE);
}
