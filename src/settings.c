/*
 * settings.c — the zk_lock.* settings: their variables, their checks, and
 * their definition at start-up (zk_lock.c calls zkl_define_settings).
 */
#include "postgres.h"

#include <ctype.h>

#include "utils/guc.h"

#include "slot.h"
#include "settings.h"

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
int			zkl_linger = 100;
bool		zkl_test_fail_worker = false;
bool		zkl_test_orphan = false;
int			zkl_test_seal_delay_ms = 0;

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

/* SHOW, current_setting() and pg_settings never see the secret, not even a superuser. */
static const char *
show_auth(void)
{
	return (zkl_auth == NULL || zkl_auth[0] == '\0') ? "" : "********";
}

/* The zk_lock.* settings (README, Settings). */
void
zkl_define_settings(void)
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
							   NULL, NULL, show_auth);
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
							"How long a released lock's node (a writer's, or the last reader's) stays for a repeat request of this cluster (0: not at all).",
							"Ends at once when a request of another cluster queues for the key.",
							&zkl_linger, 100, 0, 60000,
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
	DefineCustomIntVariable("zk_lock.test_seal_delay_ms",
							"For tests: a committing zk_once transaction waits this long before it records its period.",
							"It holds the window between the local commit and the record open, for a fault to fall in.",
							&zkl_test_seal_delay_ms, 0, 0, 60000, PGC_SUSET,
							GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL | GUC_UNIT_MS, NULL, NULL, NULL);
}
