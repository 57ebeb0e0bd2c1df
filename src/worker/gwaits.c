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
 * its process only.
 */
#include "postgres.h"

#include "common/pg_prng.h"

#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shmem.h"
#include "zk_client.h"
#include "gwaits.h"

#define CLAIM_NODE	".deadlock"
#define MAX_DOCS	255			/* other clusters read in one round (a read's tag: gen, index) */
#define REWRITE_MS	100			/* a changed document is rewritten at most this often */
#define FIRST_READ_MS	250		/* the first reading of a spell of long waits, after its first write */
#define RETRY_MS	100
#define MAX_HEAVY	64			/* lock manager waits looked at in one document */
#define CONFIRM_POLL_MS	50		/* the victim's cluster reads the confirmations this often */
#define CLAIM_LOOK_MS	250		/* a cluster that publishes looks for a claim this often */

typedef enum Phase
{
	PH_IDLE,					/* next round at next_round */
	PH_SEMS,					/* listings of semaphores waited for are on their way */
	PH_READING,					/* the listing and the documents are on their way */
	PH_CLAIMING,				/* the claim's multi is on its way */
	PH_CONFIRMING				/* ours: the others' confirmations are awaited */
} Phase;

static uint64 gen = 0;			/* tags calls: a new handle, session or root makes replies stale */
static int64 for_session = 0;
static char for_root[ZKL_MAX_ROOT_LEN + 1];
static Phase phase = PH_IDLE;
static int64 next_round = 0;	/* zkl_mono_now: the next reading, at the earliest */
static int64 next_write = 0;	/* zkl_mono_now: the next rewrite, at the earliest */
static bool published = false;	/* our document exists, as sent_doc */
static bool doc_may_exist = true;	/* an older one may (a restart, a lost reply) */
static bool dir_made = false;	/* <root>/.waits was asked for under this session and root */
static int	own_version = -1;	/* of our document, from the last write's reply */
static uint64 sent_print = 0;	/* zgw_fingerprint when it was formatted */
static char *doc = NULL;		/* formatted now, ZGW_DOC_LEN */
static char *sent_doc = NULL;	/* what we published last */
static char *docs[MAX_DOCS];	/* the others', this round */
static int64 doc_session[MAX_DOCS];
static int	doc_version[MAX_DOCS];
static int	ndocs = 0;
static int	reads_due = 0;		/* documents still on their way */
static bool claimed = false;	/* the claim is ours */
static bool claim_check = true; /* one of ours may be left (a restart, a lost reply): look */
static int64 claim_until = 0;	/* zkl_mono_now: delete the claim then */
static ZgwVictim victim;		/* of the last decision */
static ZgwVictim claimed_victim;	/* of our claim */
static bool victim_failed = false;	/* our claim's victim was failed */
/* the claim's confirmations: ours to collect, or another's to give */
static uint64 claim_nonce = 0;	/* ours while confirming */
static char claim_data[ZGW_CLAIM_LEN];
static int64 confirm_session[ZGW_MAX_CONFIRMS];	/* those the decision was made on */
static bool confirmed[ZGW_MAX_CONFIRMS];
static int	nconfirm = 0;
static bool confirm_broken = false;	/* not all in time */
static int64 next_poll = 0;		/* zkl_mono_now */
static uint64 confirms = 0;		/* another's claim that named us (0: none) */
static int64 next_look = 0;		/* zkl_mono_now: look for a claim then */
static bool confirm_due = false;	/* write our document for it */
static ZklCore *the_core = NULL;
static MemoryContext gw_cxt = NULL;	/* the lock manager's answers, reset each time */
static ZgwHeavy heavy[MAX_HEAVY];
static int	nheavy_sent = 0;	/* of them, in the document as published last */
static bool heavy_changed = false;	/* they changed since: write the document again */
#define MAX_SEMS	16			/* semaphore waits listed for one document */
static ZgwSemWait sems[MAX_SEMS];	/* as last listed */
static int	nsems = 0;
static int	sem_slots[MAX_SEMS];	/* being listed */
static int	sems_due = 0;		/* listings still on their way */
static bool sems_listed = false;	/* for the round due now */

/* the claim's multi: checks, then the create (kept until its reply) */
#define CLAIM_OPS	(2 * ZGW_MAX_CHECKS + 1)
static zoo_op_t claim_ops[CLAIM_OPS];
static zoo_op_result_t claim_results[CLAIM_OPS];
static char claim_paths[CLAIM_OPS][ZKL_PATH_LEN];

static const void *
tag(void)
{
	return (const void *) (uintptr_t) gen;
}

/* A read's tag: the generation, and which document or listing. */
static const void *
read_tag(int i)
{
	return (const void *) (uintptr_t) ((gen << 8) | (uint64) i);
}

static void
waits_path(char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" ZGW_WAITS_DIR, for_root);
}

static void
doc_path(int64 session, char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" ZGW_WAITS_DIR "/%016llx", for_root, (unsigned long long) session);
}

static void
claim_path(char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" CLAIM_NODE, for_root);
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

/* ---- the lock manager's waits ---- */

/* When backend pid's wait in the lock manager began (0: it does not wait there). */
static TimestampTz
heavy_since(int pid)
{
	PGPROC	   *proc = BackendPidGetProc(pid);

	return proc == NULL ? 0 : (TimestampTz) pg_atomic_read_u64(&proc->waitStart);
}

/*
 * Backends that hold a zk lock and have waited in the lock manager for
 * deadlock_timeout, each with the backends it waits for (pg_blocking_pids),
 * and those in turn when they wait there too: the row and table locks a
 * cycle may go through.  Read without the slot-table lock held; each
 * pg_blocking_pids takes the lock manager's locks, so this runs once per
 * round (and when the victim's cycle is checked again), not per turn.
 */
static int
gather_heavy(TimestampTz now)
{
	int			todo[MAX_HEAVY * 2];
	int			nfirst;
	int			ntodo;
	int			nh = 0;
	int			i;
	int			j;

	if (gw_cxt == NULL)
		gw_cxt = AllocSetContextCreate(TopMemoryContext, "zk_lock waits", ALLOCSET_SMALL_SIZES);
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	ntodo = zgw_holders(&zkl_shared->t, todo, lengthof(todo));
	LWLockRelease(zkl_shared->lock);
	nfirst = ntodo;
	for (i = 0; i < ntodo && nh < MAX_HEAVY; i++)
	{
		TimestampTz since = heavy_since(todo[i]);
		MemoryContext old;
		ArrayType  *arr;
		int32	   *pids;
		int			nb;

		/* a holder's wait as old as deadlock_timeout; those it leads to, any wait */
		if (since == 0 || (i < nfirst && now - since < (int64) DeadlockTimeout * 1000))
			continue;
		old = MemoryContextSwitchTo(gw_cxt);
		arr = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids, Int32GetDatum(todo[i])));
		MemoryContextSwitchTo(old);
		nb = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		pids = (int32 *) ARR_DATA_PTR(arr);
		heavy[nh].pid = todo[i];
		heavy[nh].since = since;
		heavy[nh].nblockers = 0;
		for (j = 0; j < nb && heavy[nh].nblockers < ZGW_MAX_BLOCKERS; j++)
		{
			int			k;

			/* each once (a parallel query's workers come as their leader) */
			for (k = 0; k < heavy[nh].nblockers && heavy[nh].blockers[k] != pids[j]; k++)
				;
			if (k < heavy[nh].nblockers || pids[j] == 0)
				continue;
			heavy[nh].blockers[heavy[nh].nblockers++] = pids[j];
			/* a blocker that waits there too: looked at as well */
			for (k = 0; k < ntodo && todo[k] != pids[j]; k++)
				;
			if (k == ntodo && ntodo < lengthof(todo))
				todo[ntodo++] = pids[j];
		}
		MemoryContextReset(gw_cxt);
		if (heavy[nh].nblockers > 0 && heavy_since(todo[i]) == since)
			nh++;				/* (the same wait all along) */
	}
	return nh;
}

/*
 * The lock manager's waits published: those still waiting, the same wait
 * (no lock manager lock taken); returns how many are left.
 */
static int
keep_heavy(int nh)
{
	int			kept = 0;
	int			i;

	for (i = 0; i < nh; i++)
		if (heavy_since(heavy[i].pid) == heavy[i].since)
			heavy[kept++] = heavy[i];
	return kept;
}

/* This cluster's document, into doc (under the slot-table lock, taken by the caller). */
static int
format_doc(ZklCore *core, TimestampTz now, int nheavy)
{
	ZgwLocal	in;

	in.coh = &core->cohort;
	in.now = now;
	in.timeout_ms = DeadlockTimeout;
	in.cluster = cluster_name;
	in.session = for_session;
	in.heavy = heavy;
	in.nheavy = nheavy;
	in.sem = sems;
	in.nsem = nsems;
	in.confirms = confirms;
	return zgw_format(&in, doc, ZGW_DOC_LEN);
}

/* ---- semaphores waited for: which nodes are ahead ---- */

static void
sem_listed(int rc, const struct String_vector *names, const void *ctx)
{
	uintptr_t	i = (uintptr_t) ctx & 0xFF;

	if (phase != PH_SEMS || ctx != read_tag((int) i) || i >= (uintptr_t) MAX_SEMS)
		return;
	if (rc == ZOK && names != NULL && nsems < MAX_SEMS)
	{
		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		if (zgw_sem_wait(&zkl_shared->t, sem_slots[i], (const char *const *) names->data,
						 names->count, &sems[nsems]))
			nsems++;
		LWLockRelease(zkl_shared->lock);
	}
	if (--sems_due == 0)
	{
		sems_listed = true;
		phase = PH_IDLE;		/* the next turn formats and reads */
	}
}

/* List the keys of the semaphores waited for that long; true if any is on its way. */
static bool
list_sems(TimestampTz now)
{
	char		paths[MAX_SEMS][ZKL_PATH_LEN];
	int			n;
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	n = zgw_sem_waiters(&zkl_shared->t, now, DeadlockTimeout, sem_slots, MAX_SEMS);
	for (i = 0; i < n; i++)
		zcore_key_path(&zkl_shared->t, &zkl_shared->t.slots[sem_slots[i]], paths[i]);
	LWLockRelease(zkl_shared->lock);
	nsems = 0;
	sems_due = 0;
	phase = PH_SEMS;
	for (i = 0; i < n; i++)
		if (zoo_aget_children(zkc_handle(), paths[i], 0, sem_listed, read_tag(i)) == ZOK)
			sems_due++;
	if (sems_due == 0)
	{
		phase = PH_IDLE;
		sems_listed = true;
	}
	return sems_due > 0;
}

/* ---- our document ---- */

static void
written(int rc, const struct Stat *stat, const void *ctx)
{
	if (ctx != tag())
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

	if (ctx != tag())
		return;
	if (rc == ZOK)
		own_version = 0;
	else if (rc == ZNODEEXISTS)
	{
		/* ours from before (a resumed session): rewrite it */
		doc_path(for_session, path);
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
	if (ctx == tag() && rc != ZOK && rc != ZNONODE && !published)
		doc_may_exist = true;	/* look again */
}

/* Write what changed: created, rewritten, or deleted when there is nothing. */
static void
publish(int len)
{
	char		path[ZKL_PATH_LEN];

	doc_path(for_session, path);
	if (len == 0)
	{
		if (published || doc_may_exist)
		{
			published = false;
			doc_may_exist = false;
			own_version = -1;
			(void) zoo_adelete(zkc_handle(), path, -1, doc_deleted, tag());
		}
		return;
	}
	doc_may_exist = false;
	if (published && strcmp(doc, sent_doc) == 0)
		return;
	memcpy(sent_doc, doc, len + 1);
	if (!published && !dir_made)
	{
		char		dir[ZKL_PATH_LEN];

		/* once per session and root: the session answers in order, so before ours */
		waits_path(dir);
		zkc_create_persistent(dir);
		dir_made = true;
	}
	if (!published)
		published = zoo_acreate(zkc_handle(), path, sent_doc, len, zkc_acl(), ZOO_EPHEMERAL,
								created, tag()) == ZOK;
	else if (zoo_aset(zkc_handle(), path, sent_doc, len, -1, written, tag()) != ZOK)
		published = false;
}

/* ---- the claim ---- */

static void
claim_deleted(int rc, const void *ctx)
{
	if (ctx == tag() && rc != ZOK && rc != ZNONODE)
		claim_check = true;		/* still there, maybe: look again */
}

static void
delete_claim_node(void)
{
	char		path[ZKL_PATH_LEN];

	claim_path(path);
	(void) zoo_adelete(zkc_handle(), path, -1, claim_deleted, tag());
}

/* Give our claim up; never another cluster's (a delete cannot tell them apart). */
static void
drop_claim(void)
{
	if (!claimed)
		return;
	claimed = false;
	delete_claim_node();
}

/* Is the claim there ours, left from before?  Then it goes. */
static void
claim_looked(int rc, const struct Stat *stat, const void *ctx)
{
	if (ctx != tag())
		return;
	if (rc == ZOK && stat != NULL && stat->ephemeralOwner == for_session && !claimed)
		delete_claim_node();
	else if (rc != ZOK && rc != ZNONODE)
		claim_check = true;
}

/*
 * Fail the victim, once the cycle still stands: our waits formatted now,
 * with the others' documents written since the claim (their
 * confirmations), still give this victim.
 */
static bool
break_cycle(void)
{
	const char *all[MAX_DOCS + 1];
	ZgwVictim	again;
	bool		failed = false;
	int			n = 0;
	int			i;

	TimestampTz now = GetCurrentTimestamp();
	int			nheavy = nheavy_sent = gather_heavy(now);

	heavy_changed = true;		/* what was just read goes into the document next turn */

	for (i = 0; i < ndocs; i++)
		if (docs[i] != NULL)
			all[n++] = docs[i];
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (format_doc(the_core, now, nheavy) > 0)
	{
		all[n++] = doc;
		if (zgw_decide(all, n, for_session, &again) && again.pid == victim.pid &&
			strcmp(again.node, victim.node) == 0)
			failed = zcore_fail_deadlock(the_core, victim.pid, victim.node,
										 "deadlock detected across clusters");
	}
	if (failed)
	{
		victim = again;			/* the cycle as it stands now, for the error and the log */
		victim_failed = true;
		zkl_shared->deadlock_pid = victim.pid;
		strlcpy(zkl_shared->deadlock_detail, victim.detail, sizeof(zkl_shared->deadlock_detail));
	}
	LWLockRelease(zkl_shared->lock);
	zkl_flush_wakes();
	if (failed)
		ereport(LOG,
				(errmsg("zk_lock: deadlock across clusters: process %d gives way (40P01)", victim.pid),
				 errdetail_internal("%s", victim.detail)));
	return failed;
}

static void confirmations_over(void);

static void
claim_done(int rc, const void *ctx)
{
	if (ctx != tag())
		return;
	if (rc == ZOK)
	{
		claimed = true;
		victim_failed = false;
		claimed_victim = victim;
		claim_until = zkl_mono_now() + (int64) 2 * DeadlockTimeout * 1000;
		nconfirm = zgw_claim_sessions(claim_data, strlen(claim_data), confirm_session,
									  ZGW_MAX_CONFIRMS);
		memset(confirmed, 0, sizeof(confirmed));
		confirm_broken = false;
		phase = PH_CONFIRMING;
		next_poll = zkl_mono_now() + CONFIRM_POLL_MS * 1000;
		if (nconfirm == 0)
			confirmations_over();	/* a cycle of ours alone: nobody to ask */
		return;					/* else the documents stay for the confirmations */
	}
	else if (claim_results[victim.nchecks + victim.nsessions].err == ZNODEEXISTS ||
			 zcore_outcome_unknown(rc))
		claim_check = true;		/* maybe ours: from a reply lost now, or before */
	/* else a node or document of the cycle changed: the next round sees how */
	round_over();
}

static void
claim(void)
{
	int64		read_from[MAX_DOCS];
	int			nread = 0;
	int			n = 0;
	int			i;
	int			d;

	for (i = 0; i < victim.nchecks; i++)
	{
		snprintf(claim_paths[n], ZKL_PATH_LEN, "%s/%s", for_root, victim.checks[i]);
		zoo_check_op_init(&claim_ops[n], claim_paths[n], -1);
		n++;
	}
	for (i = 0; i < victim.nsessions; i++)
	{
		int			version = -1;	/* ours: checked again under the lock (break_cycle) */

		for (d = 0; d < ndocs; d++)
			if (doc_session[d] == victim.sessions[i])
				version = doc_version[d];
		doc_path(victim.sessions[i], claim_paths[n]);
		zoo_check_op_init(&claim_ops[n], claim_paths[n], version);
		n++;
	}
	claim_path(claim_paths[n]);
	do
		claim_nonce = pg_prng_uint64(&pg_global_prng_state);
	while (claim_nonce == 0);
	for (d = 0; d < ndocs; d++)
		if (docs[d] != NULL)
			read_from[nread++] = doc_session[d];
	zoo_create_op_init(&claim_ops[n], claim_paths[n], claim_data,
					   zgw_claim_format(claim_nonce, read_from, nread, for_session, claim_data,
										sizeof(claim_data)),
					   zkc_acl(), ZOO_EPHEMERAL, NULL, 0);
	n++;
	phase = PH_CLAIMING;
	memset(claim_results, 0, sizeof(claim_results));
	if (zoo_amulti(zkc_handle(), n, claim_ops, claim_results, claim_done, tag()) != ZOK)
		round_over();
}

/* ---- the confirmations ---- */

/* Confirmations are in, or cannot come: decide again, or give the claim up. */
static void
confirmations_over(void)
{
	int			i;
	int			k;

	if (!confirm_broken)
	{
		/* decide on the confirmed documents alone: the others were read before */
		for (i = 0; i < ndocs; i++)
		{
			bool		fresh = false;

			for (k = 0; k < nconfirm; k++)
				fresh |= doc_session[i] == confirm_session[k];
			if (!fresh && docs[i] != NULL)
			{
				pfree(docs[i]);
				docs[i] = NULL;
			}
		}
	}
	if (confirm_broken || !break_cycle())
		drop_claim();			/* nobody failed: others need not wait for it */
	claim_nonce = 0;
	round_over();
}

static void
confirm_read(int rc, const char *value, int value_len, const struct Stat *stat, const void *ctx)
{
	uintptr_t	i = (uintptr_t) ctx & 0xFF;
	int			d;

	if (phase != PH_CONFIRMING || ctx != read_tag((int) i) || i >= (uintptr_t) nconfirm)
		return;
	if (rc == ZNONODE)
	{
		/* no long wait there any more: news as fresh as a confirmation */
		confirmed[i] = true;
		for (d = 0; d < ndocs; d++)
			if (doc_session[d] == confirm_session[i] && docs[d] != NULL)
			{
				pfree(docs[d]);
				docs[d] = NULL;
			}
	}
	else if (rc == ZOK && value != NULL && value_len > 0)
	{
		char	   *copy = MemoryContextAlloc(TopMemoryContext, value_len + 1);

		memcpy(copy, value, value_len);
		copy[value_len] = '\0';
		if (!zgw_confirms(copy, claim_nonce))
			pfree(copy);		/* not yet */
		else
		{
			confirmed[i] = true;
			for (d = 0; d < ndocs && doc_session[d] != confirm_session[i]; d++)
				;
			if (d == ndocs && ndocs < MAX_DOCS)
			{
				docs[ndocs] = NULL;
				doc_session[ndocs++] = confirm_session[i];
			}
			if (d < ndocs)
			{
				if (docs[d] != NULL)
					pfree(docs[d]);
				docs[d] = copy;
			}
			else
				pfree(copy);
		}
	}
	if (--reads_due > 0)
		return;
	for (d = 0; d < nconfirm && confirmed[d]; d++)
		;
	if (d == nconfirm)
		confirmations_over();
	else
		next_poll = zkl_mono_now() + CONFIRM_POLL_MS * 1000;
}

/* Read the documents of the claim's sessions. */
static void
poll_confirmations(void)
{
	char		path[ZKL_PATH_LEN];
	int			i;

	/* all of them each time: the moment of choice is one poll's */
	memset(confirmed, 0, sizeof(confirmed));
	reads_due = 0;
	for (i = 0; i < nconfirm; i++)
	{
		doc_path(confirm_session[i], path);
		if (zoo_aget(zkc_handle(), path, 0, confirm_read, read_tag(i)) == ZOK)
			reads_due++;
	}
	if (reads_due == 0)
		next_poll = zkl_mono_now() + CONFIRM_POLL_MS * 1000;
}

/* Another cluster's claim, read: does it ask us to confirm? */
static void
claim_read(int rc, const char *value, int value_len, const struct Stat *stat, const void *ctx)
{
	uint64		asked;

	if (ctx != tag())
		return;
	if (rc == ZNONODE)
		confirms = 0;
	else if (rc == ZOK && value != NULL)
	{
		asked = zgw_claim_asks(value, value_len, for_session);
		confirm_due |= asked != 0 && asked != confirms;
		confirms = asked;
	}
}

static void
claim_seen(int rc, const struct Stat *stat, const void *ctx)
{
	char		path[ZKL_PATH_LEN];

	if (ctx != tag())
		return;
	if (rc == ZOK)
	{
		claim_path(path);
		(void) zoo_aget(zkc_handle(), path, 0, claim_read, tag());
	}
	else if (rc == ZNONODE)
		confirms = 0;
}

/*
 * While we publish, every CLAIM_LOOK_MS: does a claim name us?  (A watch
 * would stay set for the session's life once our waits end.)  The
 * victim's cluster waits up to 2 × deadlock_timeout for us.
 */
static void
look_for_claim(void)
{
	char		path[ZKL_PATH_LEN];

	claim_path(path);
	(void) zoo_aexists(zkc_handle(), path, 0, claim_seen, tag());
}

/* ---- reading ---- */

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
	if (!published || !zgw_decide(all, n, for_session, &victim))
		round_over();
	else
		claim();				/* the documents stay for break_cycle */
}

static void
doc_read(int rc, const char *value, int value_len, const struct Stat *stat, const void *ctx)
{
	uintptr_t	i = (uintptr_t) ctx & 0xFF;

	if (phase != PH_READING || ctx != read_tag((int) i) || i >= (uintptr_t) ndocs)
		return;
	if (rc == ZOK && value != NULL && value_len > 0 && stat != NULL)
	{
		docs[i] = MemoryContextAlloc(TopMemoryContext, value_len + 1);
		memcpy(docs[i], value, value_len);
		docs[i][value_len] = '\0';
		doc_version[i] = stat->version;
	}
	if (--reads_due == 0)
		decide();
}

static void
listed(int rc, const struct String_vector *names, const void *ctx)
{
	char		dir[ZKL_PATH_LEN];
	char		path[ZKL_PATH_LEN];
	int			i;

	if (ctx != tag() || phase != PH_READING)
		return;
	if (rc != ZOK || names == NULL)
	{
		round_over();
		return;
	}
	waits_path(dir);
	forget_docs();
	for (i = 0; i < names->count && ndocs < MAX_DOCS; i++)
	{
		char	   *end;
		int64		session = (int64) strtoull(names->data[i], &end, 16);

		if (*end != '\0' || session == 0 || session == for_session)
			continue;			/* ours is sent_doc */
		docs[ndocs] = NULL;
		doc_session[ndocs] = session;
		doc_version[ndocs] = -1;
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

/* ---- each turn ---- */

/* A new session or root: what the old one had is gone with it, or goes now. */
static void
switch_to(int64 session, const char *root)
{
	char		path[ZKL_PATH_LEN];

	if (session == for_session)
	{
		/* a root reload: ours under the old root go */
		if (published || doc_may_exist)
		{
			doc_path(for_session, path);
			(void) zoo_adelete(zkc_handle(), path, -1, doc_deleted, tag());
		}
		if (claimed)
			drop_claim();
	}
	zkl_gwaits_reset();
	claimed = false;
	dir_made = false;
	for_session = session;
	strlcpy(for_root, root, sizeof(for_root));
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

	if (claim_check)
	{
		claim_check = false;
		claim_path(path);
		(void) zoo_aexists(zkc_handle(), path, 0, claim_looked, tag());
	}
	/*
	 * The claim goes once the victim's node is gone: any claim that still
	 * sees the broken cycle, from documents read before, checks that node
	 * and fails.  A victim with no node of its own (a hand-over wait)
	 * keeps it until every document has been read again.
	 */
	if (claimed && phase != PH_CONFIRMING && claimed_victim.node[0] != '\0')
	{
		bool		live;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		live = zgw_node_live(&zkl_shared->t, claimed_victim.node);
		LWLockRelease(zkl_shared->lock);
		if (!live)
			drop_claim();
	}
	if (claimed && mono >= claim_until && phase != PH_CONFIRMING)
		drop_claim();
	if (published && mono >= next_look)
	{
		next_look = mono + CLAIM_LOOK_MS * 1000;
		look_for_claim();
	}
	if (confirm_due && published)
	{
		confirm_due = false;
		/* written for the claim: the lock manager's waits as they are now, too */
		nheavy_sent = gather_heavy(now);
		heavy_changed = false;
		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		len = format_doc(core, now, nheavy_sent);
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
	if (nheavy_sent > 0)
	{
		int			kept = keep_heavy(nheavy_sent);

		heavy_changed |= kept != nheavy_sent;
		nheavy_sent = kept;
	}
	if (heavy_changed)
		print ^= 0x9e3779b97f4a7c15ULL;
	if (due == 0 || now < due)
		sems_listed = false;	/* no round due: the next one lists them afresh */
	round = due != 0 && now >= due && mono >= next_round;
	/* a round due: first what the semaphores waited for have ahead of them */
	if (round && !sems_listed && list_sems(now))
		return RETRY_MS;
	if (round || (published && print != sent_print && mono >= next_write) ||
		((published || doc_may_exist) && (due == 0 || now < due)))
	{
		/* a round reads the lock manager again; a rewrite drops the waits that ended */
		nheavy_sent = round ? gather_heavy(now) : keep_heavy(nheavy_sent);
		heavy_changed = false;
		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		len = format_doc(core, now, nheavy_sent);
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
		sems_listed = false;	/* listed again for the next round */
		phase = PH_READING;
		waits_path(path);
		if (zoo_aget_children(zkc_handle(), path, 0, listed, tag()) != ZOK)
			round_over();
	}
	if (due == 0)
		return claimed ? (long) ((claim_until - mono) / 1000 + 1) : -1;
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
		switch_to(session, root);
	tend_claims(core, mono, now);
	if (phase == PH_CONFIRMING)
	{
		if (mono >= claim_until && reads_due == 0)
		{
			confirm_broken = true;	/* not all in time */
			confirmations_over();
		}
		else if (reads_due == 0 && mono >= next_poll)
			poll_confirmations();
		return RETRY_MS;
	}
	if (phase != PH_IDLE)
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
	gen++;
	forget_docs();
	phase = PH_IDLE;
	nsems = 0;
	sems_listed = false;
	published = false;
	doc_may_exist = true;
	claim_check = true;
	own_version = -1;
	claim_nonce = 0;
	confirms = 0;
	confirm_due = false;
	/* a claim that failed nobody: claim_looked deletes it (one that did stays its time) */
	if (claimed && !victim_failed)
		claimed = false;
}
