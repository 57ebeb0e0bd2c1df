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

static int64 next_round = 0;	/* zkl_mono_now: the next reading, at the earliest */
static int64 next_write = 0;	/* zkl_mono_now: the next rewrite, at the earliest */
static bool published = false;	/* our document exists, as sent_doc */
static bool doc_may_exist = true;	/* an older one may (a restart, a lost reply) */
static bool dir_made = false;	/* <root>/.waits was asked for under this session and root */
static int	own_version = -1;	/* of our document, from the last write's reply */
static uint64 sent_print = 0;	/* zgw_fingerprint when it was formatted */
static char *sent_doc = NULL;	/* what we published last */
static int64 next_look = 0;		/* zkl_mono_now: look for a claim then */

/* ---- our document ---- */

static void
written(int rc, const struct Stat *stat, const void *ctx)
{
	if (ctx != zkl_gw_tag())
		return;
	if (rc == ZOK && stat != NULL)
		own_version = stat->version;
	else
	{
		published = false;		/* write it again, whole */
		own_version = -1;
		doc_may_exist |= zcore_outcome_unknown(rc);	/* then deleted if nothing is to be said */
	}
}

static void
created(int rc, const char *value, const void *ctx)
{
	char		path[ZKL_PATH_LEN];

	if (ctx != zkl_gw_tag())
		return;
	if (rc == ZOK)
		own_version = 0;
	else if (rc == ZNODEEXISTS)
	{
		/* ours from before (a resumed session): rewrite it */
		zkl_gw_doc_path(zkl_gw.for_session, path);
		zoo_aset(zkc_handle(), path, sent_doc, strlen(sent_doc), -1, written, ctx);
	}
	else
	{
		published = false;
		own_version = -1;
		doc_may_exist |= zcore_outcome_unknown(rc); /* it may have been made all the same */
		dir_made = dir_made && rc != ZNONODE;	/* someone deleted it: again */
	}
}

static void
doc_deleted(int rc, const void *ctx)
{
	if (ctx == zkl_gw_tag() && rc != ZOK && rc != ZNONODE && !published)
		doc_may_exist = true;	/* look again */
}

/* Write what changed: created, rewritten, or deleted when there is nothing. */
static void
publish(int len)
{
	char		path[ZKL_PATH_LEN];

	zkl_gw_doc_path(zkl_gw.for_session, path);
	if (len == 0)
	{
		if (published || doc_may_exist)
		{
			published = false;
			doc_may_exist = false;
			own_version = -1;
			(void) zoo_adelete(zkc_handle(), path, -1, doc_deleted, zkl_gw_tag());
		}
		return;
	}
	doc_may_exist = false;
	if (published && strcmp(zkl_gw.doc, sent_doc) == 0)
		return;
	memcpy(sent_doc, zkl_gw.doc, len + 1);
	if (!published && !dir_made)
	{
		char		dir[ZKL_PATH_LEN];

		/* once per session and root: the session answers in order, so before ours */
		zkl_gw_waits_path(dir);
		zkc_create_persistent(dir);
		dir_made = true;
	}
	if (!published)
		published = zoo_acreate(zkc_handle(), path, sent_doc, len, zkc_acl(), ZOO_EPHEMERAL,
								created, zkl_gw_tag()) == ZOK;
	else if (zoo_aset(zkc_handle(), path, sent_doc, len, -1, written, zkl_gw_tag()) != ZOK)
		published = false;
}

/* ---- reading ---- */

/* Every document is in: decide, and claim if the zkl_gw.victim is ours. */
static void
decide(void)
{
	const char *all[MAX_DOCS + 1];
	int			n = 0;
	int			i;

	for (i = 0; i < zkl_gw.ndocs; i++)
		if (zkl_gw.docs[i] != NULL)
			all[n++] = zkl_gw.docs[i];
	all[n++] = sent_doc;
	if (!published || !zgw_decide(all, n, zkl_gw.for_session, &zkl_gw.victim))
		zkl_gw_round_over();
	else
		zkl_gw_claim();				/* the documents stay for break_cycle */
}

static void
doc_read(int rc, const char *value, int value_len, const struct Stat *stat, const void *ctx)
{
	uintptr_t	i = (uintptr_t) ctx & 0xFF;

	if (zkl_gw.phase != PH_READING || ctx != zkl_gw_read_tag((int) i) || i >= (uintptr_t) zkl_gw.ndocs)
		return;
	if (rc == ZOK && value != NULL && value_len > 0 && stat != NULL)
	{
		zkl_gw.docs[i] = MemoryContextAlloc(TopMemoryContext, value_len + 1);
		memcpy(zkl_gw.docs[i], value, value_len);
		zkl_gw.docs[i][value_len] = '\0';
		zkl_gw.doc_version[i] = stat->version;
	}
	if (--zkl_gw.reads_due == 0)
		decide();
}

static void
listed(int rc, const struct String_vector *names, const void *ctx)
{
	char		dir[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN];
	int			i;

	if (ctx != zkl_gw_tag() || zkl_gw.phase != PH_READING)
		return;
	if (rc != ZOK || names == NULL)
	{
		zkl_gw_round_over();
		return;
	}
	zkl_gw_waits_path(dir);
	zkl_gw_forget_docs();
	for (i = 0; i < names->count && zkl_gw.ndocs < MAX_DOCS; i++)
	{
		char	   *end;
		int64		session = (int64) strtoull(names->data[i], &end, 16);

		if (*end != '\0' || session == 0 || session == zkl_gw.for_session)
			continue;			/* ours is sent_doc */
		zkl_gw.docs[zkl_gw.ndocs] = NULL;
		zkl_gw.doc_session[zkl_gw.ndocs] = session;
		zkl_gw.doc_version[zkl_gw.ndocs] = -1;
		snprintf(path, sizeof(path), "%s/%s", dir, names->data[i]);
		if (zoo_aget(zkc_handle(), path, 0, doc_read, zkl_gw_read_tag(zkl_gw.ndocs)) == ZOK)
		{
			zkl_gw.ndocs++;
			zkl_gw.reads_due++;
		}
	}
	if (zkl_gw.reads_due == 0)
		decide();				/* no other cluster waits that long: maybe ours alone */
}

/* ---- each turn ---- */

/* A new session or root: what the old one had is gone with it, or goes now. */
static void
switch_to(int64 session, const char *root)
{
	char		path[ZKL_PATH_LEN];

	if (session == zkl_gw.for_session)
	{
		/* a root reload: ours under the old root go */
		if (published || doc_may_exist)
		{
			zkl_gw_doc_path(zkl_gw.for_session, path);
			(void) zoo_adelete(zkc_handle(), path, -1, doc_deleted, zkl_gw_tag());
		}
		if (zkl_gw.claimed)
			zkl_gw_drop_claim();
	}
	zkl_gwaits_reset();
	zkl_gw.claimed = false;
	dir_made = false;
	zkl_gw.for_session = session;
	strlcpy(zkl_gw.for_root, root, sizeof(zkl_gw.for_root));
}

/*
 * Our claim and others': look for one of ours left over, drop ours once its
 * zkl_gw.victim's node is gone or its time is up, look for a claim that names us,
 * and write our document for one.
 */
static void
tend_claims(ZklCore *core, int64 mono, TimestampTz now)
{
	char		path[ZKL_PATH_LEN];
	int			len;

	if (zkl_gw.claim_check)
	{
		zkl_gw.claim_check = false;
		zkl_gw_claim_path(path);
		(void) zoo_aexists(zkc_handle(), path, 0, zkl_gw_claim_looked, zkl_gw_tag());
	}
	/*
	 * The claim goes once the zkl_gw.victim's node is gone: any claim that still
	 * sees the broken cycle, from documents read before, checks that node
	 * and fails.  A zkl_gw.victim with no node of its own (a hand-over wait)
	 * keeps it until every document has been read again.
	 */
	if (zkl_gw.claimed && zkl_gw.phase != PH_CONFIRMING && zkl_gw.claimed_victim.node[0] != '\0')
	{
		bool		live;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		live = zgw_node_live(&zkl_shared->t, zkl_gw.claimed_victim.node);
		LWLockRelease(zkl_shared->lock);
		if (!live)
			zkl_gw_drop_claim();
	}
	if (zkl_gw.claimed && mono >= zkl_gw.claim_until && zkl_gw.phase != PH_CONFIRMING)
		zkl_gw_drop_claim();
	if (published && mono >= next_look)
	{
		next_look = mono + CLAIM_LOOK_MS * 1000;
		zkl_gw_look_for_claim();
	}
	if (zkl_gw.confirm_due && published)
	{
		zkl_gw.confirm_due = false;
		/* written for the claim: the lock manager's waits as they are now, too */
		zkl_gw.nheavy_sent = zkl_gw_gather_heavy(now);
		zkl_gw.heavy_changed = false;
		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		len = zkl_gw_format_doc(core, now, zkl_gw.nheavy_sent);
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
	due = zgw_next_due(&zkl_shared->t, DeadlockTimeout);
	/* (nothing published and no long wait: the usual case costs the one scan) */
	print = (published || (due != 0 && now >= due)) ?
		zgw_fingerprint(&zkl_shared->t, now, DeadlockTimeout) : sent_print;
	LWLockRelease(zkl_shared->lock);
	/* a lock manager's wait published that ended is a change too, until written */
	if (zkl_gw.nheavy_sent > 0)
	{
		int			kept = zkl_gw_keep_heavy(zkl_gw.nheavy_sent);

		zkl_gw.heavy_changed |= kept != zkl_gw.nheavy_sent;
		zkl_gw.nheavy_sent = kept;
	}
	if (zkl_gw.heavy_changed)
		print ^= 0x9e3779b97f4a7c15ULL;
	if (due == 0 || now < due)
		zkl_gw.sems_listed = false;	/* no round due: the next one lists them afresh */
	round = due != 0 && now >= due && mono >= next_round;
	/* a round due: first what the semaphores waited for have ahead of them */
	if (round && !zkl_gw.sems_listed && zkl_gw_list_sems(now))
		return RETRY_MS;
	if (round || (published && print != sent_print && mono >= next_write) ||
		((published || doc_may_exist) && (due == 0 || now < due)))
	{
		/* a round reads the lock manager again; a rewrite drops the waits that ended */
		zkl_gw.nheavy_sent = round ? zkl_gw_gather_heavy(now) : zkl_gw_keep_heavy(zkl_gw.nheavy_sent);
		zkl_gw.heavy_changed = false;
		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		len = zkl_gw_format_doc(core, now, zkl_gw.nheavy_sent);
		LWLockRelease(zkl_shared->lock);
	}
	/*
	 * The first document of a spell of long waits: the other clusters of a
	 * cycle publish theirs about now too (their waits began with ours), so
	 * read a moment later rather than a deadlock_timeout.
	 */
	if (len > 0 && !published && mono >= next_round)
		next_round = mono + (int64) Min(FIRST_READ_MS, DeadlockTimeout / 4) * 1000;
	if (len >= 0)
	{
		publish(len);
		sent_print = print;
		next_write = mono + (int64) REWRITE_MS * 1000;
	}
	if (len > 0 && mono >= next_round)
	{
		next_round = mono + (int64) DeadlockTimeout * 1000;
		zkl_gw.sems_listed = false;	/* listed again for the next round */
		zkl_gw.phase = PH_READING;
		zkl_gw_waits_path(path);
		if (zoo_aget_children(zkc_handle(), path, 0, listed, zkl_gw_tag()) != ZOK)
			zkl_gw_round_over();
	}
	if (due == 0)
		return zkl_gw.claimed ? (long) ((zkl_gw.claim_until - mono) / 1000 + 1) : -1;
	if (now < due)
		return Max((long) ((due - now) / 1000) + 1, 1);
	/* long waits: the next round, and a look for waits that changed meanwhile */
	return Max(Min((long) ((next_round - mono) / 1000) + 1, REWRITE_MS), 1);
}

/*
 * Each loop turn: publish what changed, and a round when one is due.
 * Returns the ms until the worker must look again without news (-1: not
 * before a request waits).
 */
long
zkl_gwaits_tend(ZklCore *core)
{
	int64		session = zkl_shared->t.session_id;
	const char *root = zkl_shared->t.roots[zkl_shared->t.cur_root];
	int64		mono = zkl_mono_now();
	TimestampTz now = GetCurrentTimestamp();

	zkl_gw.the_core = core;
	if (zkc_handle() == NULL || zkl_shared->t.conn_state != ZKC_CONNECTED || session == 0 ||
		DeadlockTimeout <= 0)
		return -1;
	if (zkl_gw.doc == NULL)
	{
		zkl_gw.doc = MemoryContextAlloc(TopMemoryContext, ZGW_DOC_LEN);
		sent_doc = MemoryContextAllocZero(TopMemoryContext, ZGW_DOC_LEN);
	}
	if (session != zkl_gw.for_session || strcmp(root, zkl_gw.for_root) != 0)
		switch_to(session, root);
	tend_claims(core, mono, now);
	if (zkl_gw.phase == PH_CONFIRMING)
	{
		if (mono >= zkl_gw.claim_until && zkl_gw.reads_due == 0)
		{
			zkl_gw.confirm_broken = true;	/* not all in time */
			zkl_gw_confirmations_over();
		}
		else if (zkl_gw.reads_due == 0 && mono >= zkl_gw.next_poll)
			zkl_gw_poll_confirmations();
		return RETRY_MS;
	}
	if (zkl_gw.phase != PH_IDLE)
		return RETRY_MS;		/* the replies move it on */
	return tend_waits(core, mono, now);
}

/*
 * A new handle: calls in flight will not be answered.  The session's
 * document is written again; a claim of ours may be left: look for it.
 */
void
zkl_gwaits_reset(void)
{
	zkl_gw.gen++;
	zkl_gw_forget_docs();
	zkl_gw.phase = PH_IDLE;
	zkl_gw.nsems = 0;
	zkl_gw.sems_listed = false;
	published = false;
	doc_may_exist = true;
	zkl_gw.claim_check = true;
	own_version = -1;
	zkl_gw.claim_nonce = 0;
	zkl_gw.confirms = 0;
	zkl_gw.confirm_due = false;
	/* a claim that failed nobody: claim_looked deletes it (one that did stays its time) */
	if (zkl_gw.claimed && !zkl_gw.victim_failed)
		zkl_gw.claimed = false;
}
