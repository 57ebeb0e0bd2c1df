/*
 * gwaits_doc.c — deadlocks across clusters in the worker (see gwaits.c):
 * the state its files share, the calls' tags and paths, and this cluster's
 * document: the lock manager's waits, the queues of the semaphores waited
 * for, gwait.c's formatting.  Part of the worker: runs in its process only.
 */
#include "gwaits_int.h"
#include "gwait_doc.h"

static ZklGwState own = {.claim_check = true, .doc_may_exist = true, .own_version = -1};
ZklGwState *zw_gw = &own;

/* A fresh copy of deadlock detection's memory, as a new worker process has it. */
ZklGwState *
zw_gwaits_new(void)
{
	ZklGwState *g = MemoryContextAllocZero(TopMemoryContext, sizeof(ZklGwState));

	g->claim_check = true;
	g->doc_may_exist = true;
	g->own_version = -1;
	return g;
}

const void *
zw_gw_tag(void)
{
	return (const void *) (uintptr_t) zw_gw->gen;
}

/* A read's tag: the generation, and which document or listing. */
const void *
zw_gw_read_tag(int i)
{
	return (const void *) (uintptr_t) ((zw_gw->gen << 8) | (uint64) i);
}

void
zw_gw_waits_path(char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" ZGW_WAITS_DIR, zw_gw->for_root);
}

void
zw_gw_doc_path(int64 session, char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" ZGW_WAITS_DIR "/%016llx", zw_gw->for_root, (unsigned long long) session);
}

void
zw_gw_claim_path(char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/" CLAIM_NODE, zw_gw->for_root);
}

void
zw_gw_forget_docs(void)
{
	int			i;

	for (i = 0; i < zw_gw->ndocs; i++)
		if (zw_gw->docs[i] != NULL)
			pfree(zw_gw->docs[i]);
	zw_gw->ndocs = 0;
	zw_gw->reads_due = 0;
}

/* A round is over (done, or failed): the next one after deadlock_timeout. */
void
zw_gw_round_over(void)
{
	zw_gw_forget_docs();
	zw_gw->phase = PH_IDLE;
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
int
zw_gw_gather_heavy(TimestampTz now)
{
	int			todo[MAX_HEAVY * 2];
	int			nfirst;
	int			ntodo;
	int			nh = 0;
	int			i;
	int			j;

	if (zw_gw->gw_cxt == NULL)
		zw_gw->gw_cxt = AllocSetContextCreate(TopMemoryContext, "zk_lock waits", ALLOCSET_SMALL_SIZES);
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	ntodo = zc_gwait_holders(&zkl_shared->t, todo, lengthof(todo));
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
		old = MemoryContextSwitchTo(zw_gw->gw_cxt);
		arr = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids, Int32GetDatum(todo[i])));
		MemoryContextSwitchTo(old);
		nb = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		pids = (int32 *) ARR_DATA_PTR(arr);
		zw_gw->heavy[nh].pid = todo[i];
		zw_gw->heavy[nh].since = since;
		zw_gw->heavy[nh].nblockers = 0;
		for (j = 0; j < nb && zw_gw->heavy[nh].nblockers < ZGW_MAX_BLOCKERS; j++)
		{
			int			k;

			/* each once (a parallel query's workers come as their leader) */
			for (k = 0; k < zw_gw->heavy[nh].nblockers && zw_gw->heavy[nh].blockers[k] != pids[j]; k++)
				;
			if (k < zw_gw->heavy[nh].nblockers || pids[j] == 0)
				continue;
			zw_gw->heavy[nh].blockers[zw_gw->heavy[nh].nblockers++] = pids[j];
			/* a blocker that waits there too: looked at as well */
			for (k = 0; k < ntodo && todo[k] != pids[j]; k++)
				;
			if (k == ntodo && ntodo < lengthof(todo))
				todo[ntodo++] = pids[j];
		}
		MemoryContextReset(zw_gw->gw_cxt);
		if (zw_gw->heavy[nh].nblockers > 0 && heavy_since(todo[i]) == since)
			nh++;				/* (the same wait all along) */
	}
	return nh;
}

/*
 * The lock manager's waits published: those still waiting, the same wait
 * (no lock manager lock taken); returns how many are left.
 */
int
zw_gw_keep_heavy(int nh)
{
	int			kept = 0;
	int			i;

	for (i = 0; i < nh; i++)
		if (heavy_since(zw_gw->heavy[i].pid) == zw_gw->heavy[i].since)
			zw_gw->heavy[kept++] = zw_gw->heavy[i];
	return kept;
}

/* This cluster's document, into zw_gw->doc (under the slot-table lock, taken by the caller). */
int
zw_gw_format_doc(ZklCore *core, TimestampTz now, int nheavy)
{
	ZgwLocal	in;

	in.coh = &core->cohort;
	in.now = now;
	in.timeout_ms = DeadlockTimeout;
	in.cluster = cluster_name;
	in.session = zw_gw->for_session;
	in.heavy = zw_gw->heavy;
	in.nheavy = nheavy;
	in.sem = zw_gw->sems;
	in.nsem = zw_gw->nsems;
	in.confirms = zw_gw->confirms;
	return zc_gwait_format(&in, zw_gw->doc, ZGW_DOC_LEN);
}

/* ---- semaphores waited for: which nodes are ahead ---- */

static void
sem_listed(int rc, const struct String_vector *names, const void *ctx)
{
	uintptr_t	i = (uintptr_t) ctx & 0xFF;

	if (zw_gw->phase != PH_SEMS || ctx != zw_gw_read_tag((int) i) || i >= (uintptr_t) MAX_SEMS)
		return;
	if (rc == ZOK && names != NULL && zw_gw->nsems < MAX_SEMS)
	{
		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		if (zc_gwait_sem_wait(&zkl_shared->t, zw_gw->sem_slots[i], (const char *const *) names->data,
						 names->count, &zw_gw->sems[zw_gw->nsems]))
			zw_gw->nsems++;
		LWLockRelease(zkl_shared->lock);
	}
	if (--zw_gw->sems_due == 0)
	{
		zw_gw->sems_listed = true;
		zw_gw->phase = PH_IDLE;		/* the next turn formats and reads */
	}
}

/* List the keys of the semaphores waited for that long; true if any is on its way. */
bool
zw_gw_list_sems(TimestampTz now)
{
	char		paths[MAX_SEMS][ZKL_PATH_LEN];
	int			n;
	int			i;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	n = zc_gwait_sem_waiters(&zkl_shared->t, now, DeadlockTimeout, zw_gw->sem_slots, MAX_SEMS);
	for (i = 0; i < n; i++)
		zc_core_key_path(&zkl_shared->t, &zkl_shared->t.slots[zw_gw->sem_slots[i]], paths[i]);
	LWLockRelease(zkl_shared->lock);
	zw_gw->nsems = 0;
	zw_gw->sems_due = 0;
	zw_gw->phase = PH_SEMS;
	for (i = 0; i < n; i++)
		if (zw_client_children(paths[i], sem_listed, zw_gw_read_tag(i)) == ZOK)
			zw_gw->sems_due++;
	if (zw_gw->sems_due == 0)
	{
		zw_gw->phase = PH_IDLE;
		zw_gw->sems_listed = true;
	}
	return zw_gw->sems_due > 0;
}
