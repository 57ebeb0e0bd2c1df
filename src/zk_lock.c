/*
 * zk_lock.c — module initialisation: GUCs, shared-memory hooks and the
 * background worker's registration.
 */
#include "postgres.h"

#include <ctype.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "utils/guc.h"

#include "settings.h"
#include "shmem.h"
#include "stmt.h"
#include "auth.h"
#include "worker.h"
#include "slot_state.h"
#include "invariant.h"

PG_MODULE_MAGIC;

#if PG_VERSION_NUM >= 150000
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

/* One host:port (host a name or address, or [IPv6 address]) of a host list. */
#if PG_VERSION_NUM >= 150000
static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	zkl_shmem_request();
}
#endif

static void
shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	zkl_shmem_startup();
}

/*
 * A slot's state changed in a way slot_state.c does not allow: a bug.  The
 * backend's transaction or the worker (restarted, resuming its session)
 * ends, never going on with a slot it cannot trust.
 */
static void
illegal_transition(const ZklSlot *s, ZklZkState to)
{
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("zk_lock: illegal slot state transition from %s to %s",
					zc_slot_name(s->zstate), zc_slot_name(to)),
			 errdetail_internal("The slot's node is \"%s\".", s->node)));
}

/* A broken invariant of the pure core (checked in --enable-cassert builds): can't happen. */
static void
broken_invariant(const char *cond, const char *file, int line)
{
	elog(ERROR, "zk_lock: broken invariant at %s:%d: %s", file, line, cond);
}

void
_PG_init(void)
{
	BackgroundWorker worker;

	/*
	 * Loaded by CREATE EXTENSION or LOAD only: do nothing, and the functions
	 * say how to preload.  (PGC_POSTMASTER settings cannot even be defined
	 * after startup.)
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	zkl_define_settings();
	MarkGUCPrefixReserved("zk_lock");
	zc_slot_illegal = illegal_transition;
	zc_invariant_broken = broken_invariant;
	zw_auth_init();
	zb_stmt_hooks_init();

#if PG_VERSION_NUM >= 150000
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
#else
	zkl_shmem_request();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;

	memset(&worker, 0, sizeof(worker));
	/* a connection (to no database) puts the worker in pg_stat_activity */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "zk_lock", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "zw_worker_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "zk_lock worker", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "zk_lock worker", BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}
