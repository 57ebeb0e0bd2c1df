/*
 * gwaits.c — deadlocks across clusters: the I/O of gwait.c's decisions.
 *
 * While a backend of this cluster has waited on a zk lock for
 * deadlock_timeout, once per deadlock_timeout the worker
 *   1. publishes this cluster's waits (gwait.c's document) in
 *          <root>/.waits/<session id in hex>     EPHEMERAL
 *      (created, or rewritten when they changed; deleted once no wait is
 *      that old, and gone with the session anyway);
 *   2. lists <root>/.waits and reads every other cluster's document;
 *   3. if gwait.c finds a cycle across clusters whose victim is a backend
 *      of ours, claims it with one multi: a check of every node the
 *      cycle's waits go through (so a wait that has just ended is never
 *      called a deadlock) and the create of <root>/.deadlock, EPHEMERAL,
 *      which no other detector can create meanwhile (one victim at a time,
 *      in all clusters); then fails that request with 40P01.  The claim is
 *      deleted after 2 × deadlock_timeout: by then the victim's node is
 *      gone and every detector has read the documents without it.
 * Nothing is sent while no wait is that old.  Part of the worker: runs in
 * its process only.
 */
#include "postgres.h"

#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "zk_lock.h"
#include "zk_client.h"
#include "gwaits.h"
#include "deadlock.h"

#define WAITS_DIR	".waits"
#define CLAIM_NODE	".deadlock"
#define MAX_DOCS	64			/* clusters read in one round (a read's tag: gen, index) */
#define RETRY_MS	100

typedef enum Phase
{
	PH_IDLE,					/* next round at next_round */
	PH_READING,					/* the listing and the documents are on their way */
	PH_CLAIMING					/* the claim's multi is on its way */
} Phase;

static uint64 gen = 0;			/* tags calls: a new session or root makes replies stale */
static int64 for_session = 0;
static char for_root[ZKL_MAX_ROOT_LEN + 1];
static Phase phase = PH_IDLE;
static int64 next_round = 0;	/* zkl_mono_now */
static bool published = false;	/* our document exists (as far as we know) */
static char *doc = NULL;		/* what we publish, ZGW_DOC_LEN */
static char *sent_doc = NULL;	/* what we published last */
static char *docs[MAX_DOCS];	/* the others', this round */
static int	ndocs = 0;
static int	reads_due = 0;		/* documents still on their way */
static bool claimed = false;
static int64 claim_until = 0;	/* zkl_mono_now: delete the claim then */
static ZgwVictim victim;
static ZklCore *the_core = NULL;

/* the claim's multi: checks, then the create (kept until its reply) */
static zoo_op_t claim_ops[ZGW_MAX_CHECKS + 1];
static zoo_op_result_t claim_results[ZGW_MAX_CHECKS + 1];
static char claim_paths[ZGW_MAX_CHECKS + 1][ZKL_PATH_LEN];

static void
waits_path(char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" WAITS_DIR, for_root);
}

static void
own_path(char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" WAITS_DIR "/%016llx", for_root,
			 (unsigned long long) for_session);
}

/* (the library wants a completion for every call) */
static void
deleted(int rc, const void *ctx)
{
}

static void
forget_docs(void)
{
	int			i;

	for (i = 0; i < ndocs; i++)
		if (docs[i] != NULL)
			pfree(docs[i]);
	ndocs = 0;
	reads_due = 0;
}

/* A round is over (done, or failed): the next one after deadlock_timeout. */
static void
round_over(void)
{
	forget_docs();
	phase = PH_IDLE;
}

static void
written(int rc, const struct Stat *stat, const void *ctx)
{
	if ((uintptr_t) ctx == gen && rc != ZOK)
		published = false;		/* create it again next round */
}

static void
created(int rc, const char *value, const void *ctx)
{
	if ((uintptr_t) ctx != gen)
		return;
	if (rc == ZNODEEXISTS)
	{
		char		path[ZKL_PATH_LEN];

		/* ours from before (a resumed session): rewrite it */
		own_path(path);
		zoo_aset(zkc_handle(), path, sent_doc, strlen(sent_doc), -1,
				 written, ctx);
	}
	else if (rc != ZOK)
		published = false;
}

/* Fail the victim: the claim is ours, and every node of the cycle was there. */
static void
break_cycle(void)
{
	bool		failed;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	failed = zcore_fail_deadlock(the_core, victim.pid, victim.node,
								 "deadlock detected across clusters");
	if (failed)
	{
		zkl_shared->deadlock_pid = victim.pid;
		strlcpy(zkl_shared->deadlock_detail, victim.detail, sizeof(zkl_shared->deadlock_detail));
	}
	LWLockRelease(zkl_shared->lock);
	zkl_flush_wakes();
	if (failed)
		ereport(LOG,
				(errmsg("zk_lock: deadlock across clusters: process %d gives way (40P01)", victim.pid),
				 errdetail_internal("%s", victim.detail)));
}

static void
claim_done(int rc, const void *ctx)
{
	if ((uintptr_t) ctx != gen)
		return;
	if (rc == ZOK)
	{
		claimed = true;
		claim_until = zkl_mono_now() + (int64) 2 * DeadlockTimeout * 1000;
		break_cycle();
	}
	/* ZNONODE: a wait of the cycle ended; ZNODEEXISTS: another victim is being dealt with */
	round_over();
}

static void
claim(void)
{
	char		dir[ZKL_PATH_LEN];
	int			n = 0;
	int			i;

	for (i = 0; i < victim.nchecks; i++)
	{
		snprintf(claim_paths[n], ZKL_PATH_LEN, "%s/%s", for_root, victim.checks[i]);
		zoo_check_op_init(&claim_ops[n], claim_paths[n], -1);
		n++;
	}
	snprintf(claim_paths[n], ZKL_PATH_LEN, "%s/" CLAIM_NODE, for_root);
	zoo_create_op_init(&claim_ops[n], claim_paths[n], NULL, -1, zkc_acl(), ZOO_EPHEMERAL, NULL, 0);
	n++;
	waits_path(dir);
	phase = PH_CLAIMING;
	if (zoo_amulti(zkc_handle(), n, claim_ops, claim_results, claim_done,
				   (const void *) (uintptr_t) gen) != ZOK)
		round_over();
}

/* Every document is in: decide, and claim if the victim is ours. */
static void
decide(void)
{
	const char *all[MAX_DOCS + 1];
	int			n = 0;
	int			i;

	for (i = 0; i < ndocs; i++)
		if (docs[i] != NULL)
			all[n++] = docs[i];
	all[n++] = sent_doc;
	if (!zgw_decide(all, n, for_session, &victim))
	{
		round_over();
		return;
	}
	forget_docs();
	claim();
}

static const void *
read_tag(int i)
{
	return (const void *) (uintptr_t) ((gen << 8) | (uint64) i);
}

static void
doc_read(int rc, const char *value, int value_len, const struct Stat *stat, const void *ctx)
{
	uintptr_t	i = (uintptr_t) ctx & 0xFF;

	if (phase != PH_READING || ctx != read_tag((int) i) || i >= (uintptr_t) ndocs)
		return;
	if (rc == ZOK && value != NULL && value_len > 0)
	{
		docs[i] = MemoryContextAlloc(TopMemoryContext, value_len + 1);
		memcpy(docs[i], value, value_len);
		docs[i][value_len] = '\0';
	}
	if (--reads_due == 0)
		decide();
}

static void
listed(int rc, const struct String_vector *names, const void *ctx)
{
	char		dir[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN];
	char		own[32];
	int			i;

	if ((uintptr_t) ctx != gen || phase != PH_READING)
		return;
	if (rc != ZOK || names == NULL)
	{
		round_over();
		return;
	}
	waits_path(dir);
	snprintf(own, sizeof(own), "%016llx", (unsigned long long) for_session);
	forget_docs();
	for (i = 0; i < names->count && ndocs < MAX_DOCS; i++)
	{
		if (strcmp(names->data[i], own) == 0)
			continue;			/* ours is sent_doc */
		docs[ndocs] = NULL;
		snprintf(path, sizeof(path), "%s/%s", dir, names->data[i]);
		if (zoo_aget(zkc_handle(), path, 0, doc_read, read_tag(ndocs)) == ZOK)
		{
			ndocs++;
			reads_due++;
		}
	}
	if (reads_due == 0)
		decide();				/* no other cluster waits that long: maybe ours alone */
}

/* Publish what changed, then read every cluster's. */
static void
start_round(int len)
{
	char		dir[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN];
	const void *ctx = (const void *) (uintptr_t) gen;

	waits_path(dir);
	own_path(path);
	if (!published)
	{
		zkc_create_persistent(dir);
		memcpy(sent_doc, doc, len + 1);
		published = zoo_acreate(zkc_handle(), path, sent_doc, len, zkc_acl(), ZOO_EPHEMERAL,
								created, ctx) == ZOK;
	}
	else if (strcmp(doc, sent_doc) != 0)
	{
		memcpy(sent_doc, doc, len + 1);
		if (zoo_aset(zkc_handle(), path, sent_doc, len, -1, written, ctx) != ZOK)
			published = false;
	}
	/* a session's requests are answered in order: the listing sees ours */
	phase = PH_READING;
	if (zoo_aget_children(zkc_handle(), dir, 0, listed, ctx) != ZOK)
		round_over();
}

/*
 * Each loop turn: a round when one is due.  Returns the ms until the worker
 * must look again without news (-1: not before a request waits).
 */
long
zkl_gwaits_tend(ZklCore *core)
{
	int64		session = zkl_shared->t.session_id;
	const char *root = zkl_shared->t.roots[zkl_shared->t.cur_root];
	int64		mono = zkl_mono_now();
	int64		due;
	int			len;
	char		path[ZKL_PATH_LEN];

	the_core = core;
	if (zkc_handle() == NULL || zkl_shared->t.conn_state != ZKC_CONNECTED || session == 0 ||
		DeadlockTimeout <= 0)
		return -1;
	if (doc == NULL)
	{
		doc = MemoryContextAlloc(TopMemoryContext, ZGW_DOC_LEN);
		sent_doc = MemoryContextAllocZero(TopMemoryContext, ZGW_DOC_LEN);
	}
	if (session != for_session || strcmp(root, for_root) != 0)
	{
		if (session == for_session)
		{
			/* a root reload: what we left under the old one goes */
			if (published)
			{
				own_path(path);
				(void) zoo_adelete(zkc_handle(), path, -1, deleted, NULL);
			}
			if (claimed)
			{
				snprintf(path, sizeof(path), "%s/" CLAIM_NODE, for_root);
				(void) zoo_adelete(zkc_handle(), path, -1, deleted, NULL);
			}
		}
		/* a new session's ephemeral nodes are new: no document, no claim */
		zkl_gwaits_reset();
		claimed = false;
		for_session = session;
		strlcpy(for_root, root, sizeof(for_root));
	}
	if (claimed && mono >= claim_until)
	{
		snprintf(path, sizeof(path), "%s/" CLAIM_NODE, for_root);
		(void) zoo_adelete(zkc_handle(), path, -1, deleted, NULL);
		claimed = false;
	}
	if (phase != PH_IDLE)
		return RETRY_MS;		/* the replies move it on */

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	len = zgw_format(&core->cohort, GetCurrentTimestamp(), DeadlockTimeout, cluster_name,
					 session, doc, ZGW_DOC_LEN);
	due = zdl_next_due(&zkl_shared->t, DeadlockTimeout);
	LWLockRelease(zkl_shared->lock);
	if (len == 0)
	{
		if (published)
		{
			own_path(path);
			(void) zoo_adelete(zkc_handle(), path, -1, deleted, NULL);
			published = false;
		}
		next_round = 0;
		/* the first wait to grow that old is when to look again */
		if (due == 0)
			return claimed ? (long) ((claim_until - mono) / 1000 + 1) : -1;
		return Max((long) ((due - GetCurrentTimestamp()) / 1000) + 1, 1);
	}
	if (mono < next_round)
		return (long) ((next_round - mono) / 1000 + 1);
	next_round = mono + (int64) DeadlockTimeout * 1000;
	start_round(len);
	return DeadlockTimeout;
}

/*
 * A new handle: calls in flight will not be answered.  The session's
 * document is written again; a claim, if any, is still ours to delete.
 */
void
zkl_gwaits_reset(void)
{
	gen++;
	forget_docs();
	phase = PH_IDLE;
	published = false;
	next_round = 0;
}
