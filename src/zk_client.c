/*
 * zk_client.c — opening and closing the worker's ZooKeeper handle, and one
 * turn of its event loop.
 *
 * The single-threaded client does nothing on its own: zookeeper_interest()
 * says which socket events and timeout it needs, we sleep on exactly that
 * plus our latch, and zookeeper_process() then runs completions and watchers
 * here, in the worker process.  No thread is ever started.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"

#include "zk_lock.h"
#include "zk_client.h"

/* The library's own log lines are for debugging; state changes we log ourselves. */
static void
zkc_log(const char *message)
{
	ereport(DEBUG1, (errmsg_internal("zookeeper: %s", message)));
}

zhandle_t *
zkc_open(const char *hosts, int session_timeout_ms, const clientid_t *resume,
		 watcher_fn watcher)
{
	zhandle_t  *zh;

	zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
	zh = zookeeper_init2(hosts, watcher, session_timeout_ms, resume, NULL, 0,
						 zkc_log);
	if (zh == NULL)
		ereport(LOG,
				(errmsg("zk_lock: could not start a ZooKeeper session with \"%s\": %m",
						hosts)));
	return zh;
}

void
zkc_close(zhandle_t *zh)
{
	if (zh != NULL)
		zookeeper_close(zh);
}

/*
 * Sleep until the ZooKeeper socket is ready, our latch is set, or a timeout
 * (the library's, or max_wait_ms if sooner; -1 for none), then let the
 * library do its work.  Returns the WaitLatchOrSocket() result.
 */
int
zkc_wait(zhandle_t *zh, long max_wait_ms)
{
	int			fd = -1;
	int			interest = 0;
	int			events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH;
	long		wait_ms = max_wait_ms;
	int			rc;

	if (zh != NULL)
	{
		struct timeval tv = {0, 0};
		long		lib_ms;

		if (zookeeper_interest(zh, &fd, &interest, &tv) == ZOK)
			/* round up: a sub-millisecond timeout must not spin */
			lib_ms = (long) tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
		else
			/* a failed connect: the library moves on (or backs off) next call */
			lib_ms = 10;
		wait_ms = (wait_ms < 0) ? lib_ms : Min(wait_ms, lib_ms);
		if (fd >= 0)
		{
			if (interest & ZOOKEEPER_READ)
				events |= WL_SOCKET_READABLE;
			if (interest & ZOOKEEPER_WRITE)
				events |= WL_SOCKET_WRITEABLE;
		}
	}
	if (wait_ms >= 0)
		events |= WL_TIMEOUT;

	rc = WaitLatchOrSocket(MyLatch, events, (events & WL_SOCKET_MASK) ? fd : PGINVALID_SOCKET,
						   wait_ms, PG_WAIT_EXTENSION);
	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);

	if (zh != NULL)
	{
		int			zev = 0;

		if (rc & WL_SOCKET_READABLE)
			zev |= ZOOKEEPER_READ;
		if (rc & WL_SOCKET_WRITEABLE)
			zev |= ZOOKEEPER_WRITE;
		zookeeper_process(zh, zev);
	}
	return rc;
}

/* SQLSTATE for a ZooKeeper error a user sees. */
int
zkc_sqlstate(int zrc)
{
	switch (zrc)
	{
		case ZCONNECTIONLOSS:
		case ZOPERATIONTIMEOUT:
		case ZSESSIONEXPIRED:
		case ZCLOSING:
			return ERRCODE_CONNECTION_FAILURE;
		case ZNOAUTH:
		case ZAUTHFAILED:
			return ERRCODE_INSUFFICIENT_PRIVILEGE;
		case ZBADARGUMENTS:
		case ZINVALIDACL:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		default:
			return ERRCODE_EXTERNAL_ROUTINE_EXCEPTION;
	}
}
