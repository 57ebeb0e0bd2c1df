/*
 * gwaits.c — deadlocks across clusters: the I/O of gwait.c's decisions.
 *
 * While a backend of this cluster has waited on a zk lock for
 * deadlock_timeout, the worker
 *   1. publishes this cluster's waits (gwait.c's document) in
 *          <root>/.waits/<session id in hex>     EPHEMERAL
 *      (created, rewritten as soon as a published wait ends or moves,
 *      deleted once no wait is that old, and gone with the session);
 *   2. once per deadlock_timeout lists <root>/.waits and reads every
 *      other cluster's document;
 *   3. if gwait.c finds a cycle across clusters whose victim is a backend
 *      of ours, claims it with one multi: a check of every node the
 *      cycle's waits go through and of the version of every document it
 *      was read from, and the create of <root>/.deadlock, EPHEMERAL, which
 *      no other detector can create meanwhile (one victim at a time, in
 *      all clusters), naming the other sessions of the cycle;
 *   4. each of those, which looks for a claim every 250 ms while it
 *      publishes, writes its document again (a confirmation: a wait that ended
 *      through a local hand-over changes nothing a claim can check), and
 *      once every one has, the
 *      victim's cluster decides again on those documents and its own
 *      waits as they are now; if the same victim comes out, it fails that
 *      request with 40P01 (so a wait that has just ended is never called
 *      a deadlock).  The claim is deleted once the victim's node is gone
 *      (any claim from documents read before checks that node), after 2 ×
 *      deadlock_timeout at the latest, at once if nobody was failed, and
 *      after a restart or a new handle if it is still ours.
 * Nothing is sent while no wait is that old.  Part of the worker: runs in
 * its process only.  The document is gwaits_doc.c's, the claim
 * gwaits_claim.c's; this file publishes, reads and decides each turn.
 */
#include "gwaits.h"
#include "gwaits_int.h"
#include "gwait_doc.h"


/* ---- our document ---- */

static void
written(int rc, const struct Stat *stat, const void *ctx)
{
	if (ctx != zw_gw_tag())
		return;
	if (rc == ZOK && stat != NULL)
		zw_gw->own_version = stat->version;
	else
	{
		zw_gw->published = false;		/* write it again, whole */
		zw_gw->own_version = -1;
		zw_gw->doc_may_exist |= zc_core_outcome_unknown(rc);	/* then deleted if nothing is to be said */
	}
}

static void
created(int rc, const char *value, const void *ctx)
{
	char		path[ZKL_PATH_LEN];

	if (ctx != zw_gw_tag())
		return;
	if (rc == ZOK)
		zw_gw->own_version = 0;
	else if (rc == ZNODEEXISTS)
	{
		/* ours from before (a resumed session): rewrite it */
		zw_gw_doc_path(zw_gw->for_session, path);
		zw_client_set(path, zw_gw->sent_doc, strlen(zw_gw->sent_doc), -1, written, ctx);
	}
	else
	{
		zw_gw->published = false;
		zw_gw->own_version = -1;
		zw_gw->doc_may_exist |= zc_core_outcome_unknown(rc); /* it may have been made all the same */
		zw_gw->dir_made = zw_gw->dir_made && rc != ZNONODE;	/* someone deleted it: again */
	}
}

static void
doc_deleted(int rc, const void *ctx)
{
	if (ctx == zw_gw_tag() && rc != ZOK && rc != ZNONODE && !zw_gw->published)
		zw_gw->doc_may_exist = true;	/* look again */
}

/* Write what changed: created, rewritten, or deleted when there is nothing. */
static void
publish(int len)
{
	char		path[ZKL_PATH_LEN];

	zw_gw_doc_path(zw_gw->for_session, path);
	if (len == 0)
	{
		if (zw_gw->published || zw_gw->doc_may_exist)
		{
			zw_gw->published = false;
			zw_gw->doc_may_exist = false;
			zw_gw->own_version = -1;
			(void) zw_client_delete(path, -1, doc_deleted, zw_gw_tag());
		}
		return;
	}
	zw_gw->doc_may_exist = false;
	if (zw_gw->published && strcmp(zw_gw->doc, zw_gw->sent_doc) == 0)
		return;
	memcpy(zw_gw->sent_doc, zw_gw->doc, len + 1);
	if (!zw_gw->published && !zw_gw->dir_made)
	{
		char		dir[ZKL_PATH_LEN];

		/* once per session and root: the session answers in order, so before ours */
		zw_gw_waits_path(dir);
		zw_client_create_persistent(dir);
		zw_gw->dir_made = true;
	}
	if (!zw_gw->published)
		zw_gw->published = zw_client_create(path, zw_gw->sent_doc, len, ZOO_EPHEMERAL, created, zw_gw_tag()) == ZOK;
	else if (zw_client_set(path, zw_gw->sent_doc, len, -1, written, zw_gw_tag()) != ZOK)
		zw_gw->published = false;
}

/* ---- reading ---- */

/* Every document is in: decide, and claim if the victim is ours. */
static void
decide(void)
{
	const char *all[MAX_DOCS + 1];
	int			n = 0;
	int			i;

	for (i = 0; i < zw_gw->ndocs; i++)
		if (zw_gw->docs[i] != NULL)
			all[n++] = zw_gw->docs[i];
	all[n++] = zw_gw->sent_doc;
	if (!zw_gw->published || !zc_gwait_decide(all, n, zw_gw->for_session, &zw_gw->victim))
		zw_gw_round_over();
	else
		zw_gw_claim();				/* the documents stay for break_cycle */
}

static void
doc_read(int rc, const char *value, int value_len, const struct Stat *stat, const void *ctx)
{
	uintptr_t	i = (uintptr_t) ctx & 0xFF;

	if (zw_gw->phase != PH_READING || ctx != zw_gw_read_tag((int) i) || i >= (uintptr_t) zw_gw->ndocs)
		return;
	if (rc == ZOK && value != NULL && value_len > 0 && stat != NULL)
	{
		zw_gw->docs[i] = MemoryContextAlloc(TopMemoryContext, value_len + 1);
		memcpy(zw_gw->docs[i], value, value_len);
		zw_gw->docs[i][value_len] = '\0';
		zw_gw->doc_version[i] = stat->version;
	}
	if (--zw_gw->reads_due == 0)
		decide();
}

static void
listed(int rc, const struct String_vector *names, const void *ctx)
{
	char		dir[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN];
	int			i;

	if (ctx != zw_gw_tag() || zw_gw->phase != PH_READING)
		return;
	if (rc != ZOK || names == NULL)
	{
		zw_gw_round_over();
		return;
	}
	zw_gw_waits_path(dir);
	zw_gw_forget_docs();
	for (i = 0; i < names->count && zw_gw->ndocs < MAX_DOCS; i++)
	{
		char	   *end;
		int64		session = (int64) strtoull(names->data[i], &end, 16);

		if (*end != '\0' || session == 0 || session == zw_gw->for_session)
			continue;			/* ours is sent_doc */
		zw_gw->docs[zw_gw->ndocs] = NULL;
		zw_gw->doc_session[zw_gw->ndocs] = session;
		zw_gw->doc_version[zw_gw->ndocs] = -1;
		snprintf(path, sizeof(path), "%s/%s", dir, names->data[i]);
		if (zw_client_get(path, doc_read, zw_gw_read_tag(zw_gw->ndocs)) == ZOK)
		{
			zw_gw->ndocs++;
			zw_gw->reads_due++;
		}
	}
	if (zw_gw->reads_due == 0)
		decide();				/* no other cluster waits that long: maybe ours alone */
}

/* ---- each turn ---- */

/* A new session or root: what the old one had is gone with it, or goes now. */
static void
switch_to(int64 session, const char *root)
{
	char		path[ZKL_PATH_LEN];

	if (session == zw_gw->for_session)
	{
		/* a root reload: ours under the old root go */
		if (zw_gw->published || zw_gw->doc_may_exist)
		{
			zw_gw_doc_path(zw_gw->for_session, path);
			(void) zw_client_delete(path, -1, doc_deleted, zw_gw_tag());
		}
		if (zw_gw->claimed)
			zw_gw_drop_claim();
	}
	zw_gwaits_reset();
	zw_gw->claimed = false;
	zw_gw->dir_made = false;
	zw_gw->for_session = session;
	strlcpy(zw_gw->for_root, root, sizeof(zw_gw->for_root));
}

/*
 * Our claim and others': look for one of ours left over, drop ours once its
 * victim's node is gone or its time is up, look for a claim that names us,
 * and write our document for one.
 */
static void
tend_claims(ZklCore *core, int64 mono, TimestampTz now)
{
	char		path[ZKL_PATH_LEN];
	int			len;

	if (zw_gw->claim_check)
	{
		zw_gw->claim_check = false;
		zw_gw_claim_path(path);
		(void) zw_client_exists(path, zw_gw_claim_looked, zw_gw_tag());
	}
	/*
	 * The claim goes once the victim's node is gone: any claim that still
	 * sees the broken cycle, from documents read before, checks that node
	 * and fails.  A victim with no node of its own (a hand-over wait)
	 * keeps it until every document has been read again.
	 */
	if (zw_gw->claimed && zw_gw->phase != PH_CONFIRMING && zw_gw->claimed_victim.node[0] != '\0')
	{
		bool		live;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		live = zc_gwait_node_live(&zkl_shared->t, zw_gw->claimed_victim.node);
		LWLockRelease(zkl_shared->lock);
		if (!live)
			zw_gw_drop_claim();
	}
	if (zw_gw->claimed && mono >= zw_gw->claim_until && zw_gw->phase != PH_CONFIRMING)
		zw_gw_drop_claim();
	if (zw_gw->published && mono >= zw_gw->next_look)
	{
		zw_gw->next_look = mono + CLAIM_LOOK_MS * 1000;
		zw_gw_look_for_claim();
	}
	if (zw_gw->confirm_due && zw_gw->published)
	{
		zw_gw->confirm_due = false;
		/* written for the claim: the lock manager's waits as they are now, too */
		zw_gw->nheavy_sent = zw_gw_gather_heavy(now);
		zw_gw->heavy_changed = false;
		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		len = zw_gw_format_doc(core, now, zw_gw->nheavy_sent);
		LWLockRelease(zkl_shared->lock);
		publish(len);
	}
}

/*
 * Our long waits: publish what changed (cheap first: only a round due or a
 * changed wait formats the document), and read every cluster's when a
 * round is due.  Returns the ms until it must look again (-1: not before a
 * request waits).
 */
static long
tend_waits(ZklCore *core, int64 mono, TimestampTz now)
{
	int64		due;
	uint64		print;
	int			len = -1;
	bool		round;
	char		path[ZKL_PATH_LEN];

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	due = zc_gwait_next_due(&zkl_shared->t, DeadlockTimeout);
	/* (nothing published and no long wait: the usual case costs the one scan) */
	print = (zw_gw->published || (due != 0 && now >= due)) ?
		zc_gwait_fingerprint(&zkl_shared->t, now, DeadlockTimeout) : zw_gw->sent_print;
	LWLockRelease(zkl_shared->lock);
	/* a lock manager's wait published that ended is a change too, until written */
	if (zw_gw->nheavy_sent > 0)
	{
		int			kept = zw_gw_keep_heavy(zw_gw->nheavy_sent);

		zw_gw->heavy_changed |= kept != zw_gw->nheavy_sent;
		zw_gw->nheavy_sent = kept;
	}
	if (zw_gw->heavy_changed)
		print ^= 0x9e3779b97f4a7c15ULL;
	if (due == 0 || now < due)
		zw_gw->sems_listed = false;	/* no round due: the next one lists them afresh */
	round = due != 0 && now >= due && mono >= zw_gw->next_round;
	/* a round due: first what the semaphores waited for have ahead of them */
	if (round && !zw_gw->sems_listed && zw_gw_list_sems(now))
		return RETRY_MS;
	if (round || (zw_gw->published && print != zw_gw->sent_print && mono >= zw_gw->next_write) ||
		((zw_gw->published || zw_gw->doc_may_exist) && (due == 0 || now < due)))
	{
		/* a round reads the lock manager again; a rewrite drops the waits that ended */
		zw_gw->nheavy_sent = round ? zw_gw_gather_heavy(now) : zw_gw_keep_heavy(zw_gw->nheavy_sent);
		zw_gw->heavy_changed = false;
		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		len = zw_gw_format_doc(core, now, zw_gw->nheavy_sent);
		LWLockRelease(zkl_shared->lock);
	}
	/*
	 * The first document of a spell of long waits: the other clusters of a
	 * cycle publish theirs about now too (their waits began with ours), so
	 * read a moment later rather than a deadlock_timeout.
	 */
	if (len > 0 && !zw_gw->published && mono >= zw_gw->next_round)
		zw_gw->next_round = mono + (int64) Min(FIRST_READ_MS, DeadlockTimeout / 4) * 1000;
	if (len >= 0)
	{
		publish(len);
		zw_gw->sent_print = print;
		zw_gw->next_write = mono + (int64) REWRITE_MS * 1000;
	}
	if (len > 0 && mono >= zw_gw->next_round)
	{
		zw_gw->next_round = mono + (int64) DeadlockTimeout * 1000;
		zw_gw->sems_listed = false;	/* listed again for the next round */
		zw_gw->phase = PH_READING;
		zw_gw_waits_path(path);
		if (zw_client_children(path, listed, zw_gw_tag()) != ZOK)
			zw_gw_round_over();
	}
	if (due == 0)
		return zw_gw->claimed ? (long) ((zw_gw->claim_until - mono) / 1000 + 1) : -1;
	if (now < due)
		return Max((long) ((due - now) / 1000) + 1, 1);
	/* long waits: the next round, and a look for waits that changed meanwhile */
	return Max(Min((long) ((zw_gw->next_round - mono) / 1000) + 1, REWRITE_MS), 1);
}

/*
 * Each loop turn: publish what changed, and a round when one is due.
 * Returns the ms until the worker must look again without news (-1: not
 * before a request waits).
 */
long
zw_gwaits_tend(ZklCore *core)
{
	int64		session = zkl_shared->t.session_id;
	const char *root = zkl_shared->t.roots[zkl_shared->t.cur_root];
	int64		mono = zkl_mono_now();
	TimestampTz now = GetCurrentTimestamp();

	zw_gw->the_core = core;
	if (zw_client_handle() == NULL || zkl_shared->t.conn_state != ZKC_CONNECTED || session == 0 ||
		DeadlockTimeout <= 0)
		return -1;
	if (zw_gw->doc == NULL)
	{
		zw_gw->doc = MemoryContextAlloc(TopMemoryContext, ZGW_DOC_LEN);
		zw_gw->sent_doc = MemoryContextAllocZero(TopMemoryContext, ZGW_DOC_LEN);
	}
	if (session != zw_gw->for_session || strcmp(root, zw_gw->for_root) != 0)
		switch_to(session, root);
	tend_claims(core, mono, now);
	if (zw_gw->phase == PH_CONFIRMING)
	{
		if (mono >= zw_gw->claim_until && zw_gw->reads_due == 0)
		{
			zw_gw->confirm_broken = true;	/* not all in time */
			zw_gw_confirmations_over();
		}
		else if (zw_gw->reads_due == 0 && mono >= zw_gw->next_poll)
			zw_gw_poll_confirmations();
		return RETRY_MS;
	}
	if (zw_gw->phase != PH_IDLE)
		return RETRY_MS;		/* the replies move it on */
	return tend_waits(core, mono, now);
}

/*
 * A new handle: calls in flight will not be answered.  The session's
 * document is written again; a claim of ours may be left: look for it.
 */
void
zw_gwaits_reset(void)
{
	zw_gw->gen++;
	zw_gw_forget_docs();
	zw_gw->phase = PH_IDLE;
	zw_gw->nsems = 0;
	zw_gw->sems_listed = false;
	zw_gw->published = false;
	zw_gw->doc_may_exist = true;
	zw_gw->claim_check = true;
	zw_gw->own_version = -1;
	zw_gw->claim_nonce = 0;
	zw_gw->confirms = 0;
	zw_gw->confirm_due = false;
	/* a claim that failed nobody: claim_looked deletes it (one that did stays its time) */
	if (zw_gw->claimed && !zw_gw->victim_failed)
		zw_gw->claimed = false;
}
