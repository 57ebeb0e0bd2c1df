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

#include "zk_lock.h"
#include "slot_state.h"

PG_MODULE_MAGIC;

char	   *zkl_hosts = NULL;
char	   *zkl_root = NULL;
char	   *zkl_auth = NULL;
int			zkl_session_timeout = 10000;
int			zkl_connect_timeout = 5000;
int			zkl_max_locks = 1000;
bool		zkl_verify_on_commit = false;
int			zkl_proof_bound = 1000;
int			zkl_lock_delay = 2000;
bool		zkl_local_handover = true;
int			zkl_local_handover_limit = 16;
int			zkl_linger = 0;
bool		zkl_test_fail_worker = false;
bool		zkl_test_orphan = false;

#if PG_VERSION_NUM >= 150000
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

/* One host:port (host a name or address, or [IPv6 address]) of a host list. */
static bool
valid_host_port(const char *e, size_t len)
{
	const char *colon;
	const char *c;
	long		port = 0;

	if (len > 0 && e[0] == '[')
	{
		const char *close = memchr(e, ']', len);

		if (close == NULL || close == e + 1 || close + 1 >= e + len || close[1] != ':')
			return false;
		for (c = e + 1; c < close; c++)
			if (!isxdigit((unsigned char) *c) && *c != ':' && *c != '.')
				return false;
		colon = close + 1;
	}
	else
	{
		colon = memchr(e, ':', len);
		if (colon == NULL || colon == e)
			return false;
		for (c = e; c < colon; c++)
			if (!isalnum((unsigned char) *c) && *c != '.' && *c != '-' && *c != '_')
				return false;
	}
	if (colon + 1 >= e + len || e + len - (colon + 1) > 5)
		return false;
	for (c = colon + 1; c < e + len; c++)
	{
		if (!isdigit((unsigned char) *c))
			return false;
		port = port * 10 + (*c - '0');
	}
	return port >= 1 && port <= 65535;
}

/*
 * A host list is host:port[,host:port...], or empty (zk_lock off).  Checked
 * here so that ALTER SYSTEM and a reload refuse a malformed one at once,
 * instead of the worker retrying it for ever.
 */
static bool
check_hosts(char **newval, void **extra, GucSource source)
{
	const char *p = *newval ? *newval : "";

	if (*p == '\0')
		return true;
	for (;;)
	{
		size_t		len = strcspn(p, ",");

		if (memchr(p, '/', len) != NULL)
		{
			GUC_check_errdetail("A ZooKeeper chroot suffix is not supported; set zk_lock.root instead.");
			return false;
		}
		if (!valid_host_port(p, len))
		{
			GUC_check_errdetail("\"%.*s\" is not host:port: zk_lock.hosts is a comma-separated list such as 'zk1:2181,zk2:2181' (a port from 1 to 65535; an IPv6 address in brackets).",
								(int) Min(len, 80), p);
			return false;
		}
		if (p[len] == '\0')
			return true;
		p += len + 1;
	}
}

/* A root must be an absolute ZooKeeper path ZooKeeper accepts, and not its own. */
static bool
check_root(char **newval, void **extra, GucSource source)
{
	const char *p = *newval;
	size_t		len = p ? strlen(p) : 0;
	const char *c;

	if (len < 2 || p[0] != '/' || p[len - 1] == '/' || len > ZKL_MAX_ROOT_LEN)
	{
		GUC_check_errdetail("zk_lock.root must be an absolute ZooKeeper path of at most %d bytes, such as \"/zk_lock\", without a trailing slash.",
							ZKL_MAX_ROOT_LEN);
		return false;
	}
	for (c = p; *c; c++)
	{
		if ((unsigned char) *c < 0x20 || *c == 0x7F)
		{
			GUC_check_errdetail("zk_lock.root must not contain control characters.");
			return false;
		}
	}
	if (strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../") ||
		(len >= 2 && strcmp(p + len - 2, "/.") == 0) ||
		(len >= 3 && strcmp(p + len - 3, "/..") == 0))
	{
		GUC_check_errdetail("zk_lock.root must not contain empty, \".\" or \"..\" components.");
		return false;
	}
	if (strcmp(p, "/zookeeper") == 0 || strncmp(p, "/zookeeper/", 11) == 0)
	{
		GUC_check_errdetail("/zookeeper is reserved by ZooKeeper.");
		return false;
	}
	return true;
}

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

/* The zk_lock.* settings (README, Settings). */
static void
define_settings(void)
{
	DefineCustomStringVariable("zk_lock.hosts",
							   "ZooKeeper servers, as host:port[,host:port...].",
							   "Empty disables zk_lock. A new list for the same ensemble is applied on reload without losing the session.",
							   &zkl_hosts, "", PGC_SIGHUP, 0, check_hosts, NULL, NULL);
	DefineCustomStringVariable("zk_lock.root",
							   "ZooKeeper path under which lock nodes are kept.",
							   "Clusters that share locks must use the same root. A new root applies to locks asked for after the reload.",
							   &zkl_root, "/zk_lock", PGC_SIGHUP, 0,
							   check_root, NULL, NULL);
	DefineCustomStringVariable("zk_lock.auth",
							   "ZooKeeper identity for the worker: user:password (digest), or the path of a file holding it.",
							   "With an identity, lock nodes can be changed by that identity only. Never shown: reads give ********.",
							   &zkl_auth, "", PGC_SIGHUP, GUC_SUPERUSER_ONLY | GUC_NOT_IN_SAMPLE,
							   NULL, NULL, zkl_show_auth);
	DefineCustomIntVariable("zk_lock.session_timeout",
							"ZooKeeper session timeout asked for (the server may adjust it).",
							"Applies to the next session.",
							&zkl_session_timeout, 10000, 1000, 600000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("zk_lock.connect_timeout",
							"How long a lock request waits for a ZooKeeper connection before failing.",
							NULL,
							&zkl_connect_timeout, 5000, 100, 600000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("zk_lock.max_locks",
							"Lock requests (held or waiting) the whole cluster can have at once.",
							NULL,
							&zkl_max_locks, 1000, 16, 100000,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("zk_lock.verify_on_commit",
							 "Prove the ZooKeeper session alive at commit with one round trip to the leader.",
							 "Costs a ZooKeeper write round trip per commit that holds zk_lock locks.",
							 &zkl_verify_on_commit, false, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("zk_lock.proof_bound",
							"Oldest proof that the ZooKeeper session is alive with which a transaction holding zk_lock locks may commit.",
							"Older: the commit waits for the worker to get a fresh one from the ZooKeeper leader. Must be below zk_lock.lock_delay of every cluster sharing the locks.",
							&zkl_proof_bound, 1000, 10, 60000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("zk_lock.lock_delay",
							"How long no lock is granted after a ZooKeeper session that may have held one ended.",
							"Must exceed zk_lock.proof_bound of every cluster sharing the locks, so that a holder cut off from ZooKeeper can no longer commit when the next holder is granted; at least twice this cluster's proof bound is applied.",
							&zkl_lock_delay, 2000, 0, 600000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomBoolVariable("zk_lock.local_handover",
							 "Pass an exclusive lock's ZooKeeper node from a releasing holder to a waiter of this cluster, and let readers join a reader's node, with no round trip.",
							 "Fencing tokens count the hand-overs; zk_lock.local_handover_limit bounds them once another request waits in ZooKeeper.",
							 &zkl_local_handover, true, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("zk_lock.local_handover_limit",
							"Hand-overs inside this cluster after another request is seen queued for the key, before the node goes to it.",
							NULL,
							&zkl_local_handover_limit, 16, 0, 1000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("zk_lock.linger",
							"How long a released exclusive lock's node stays for a repeat request of this cluster (0: not at all).",
							"Ends at once when a request of another cluster queues for the key.",
							&zkl_linger, 0, 0, 60000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomBoolVariable("zk_lock.test_fail_worker",
							 "For tests: the worker raises an ERROR when this turns on (at reload).",
							 NULL,
							 &zkl_test_fail_worker, false, PGC_SIGHUP,
							 GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL, NULL, NULL, NULL);
	DefineCustomBoolVariable("zk_lock.test_orphan",
							 "For tests: before each lock node, the worker also creates one that no request owns.",
							 NULL,
							 &zkl_test_orphan, false, PGC_SIGHUP,
							 GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL, NULL, NULL, NULL);
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
					zks_name(s->zstate), zks_name(to)),
			 errdetail_internal("The slot's node is \"%s\".", s->node)));
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

	define_settings();
	MarkGUCPrefixReserved("zk_lock");
	zks_illegal = illegal_transition;
	zkl_auth_init();
	zkl_stmt_hooks_init();

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
	strlcpy(worker.bgw_function_name, "zkl_worker_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "zk_lock worker", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "zk_lock worker", BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}
