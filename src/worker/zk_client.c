/*
 * zk_client.c — the only caller of libzookeeper: opening and closing the
 * worker's ZooKeeper handle, the calls the other files make on it, the
 * handle and node ACL the worker's files share, and one turn of its event
 * loop.
 *
 * The single-threaded client does nothing on its own: zookeeper_interest()
 * says which socket events and timeout it needs, we sleep on exactly that
 * plus our latch, and zookeeper_process() then runs completions and watchers
 * here, in the worker process.  No thread is ever started.
 */
#include "postgres.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/memutils.h"

#include "zk_client.h"
#include "zk_drop.h"
#include "zk_resolve.h"

/* bound on replies read in one wake-up, so the plan still runs often */
#define MAX_REPLIES_PER_WAKE 256

/*
 * One wait set while a connection lasts: creating one per loop turn costs
 * an epoll instance and its system calls every time.  It is rebuilt while
 * (re)connecting, since a new socket may reuse the old one's number, which
 * an epoll set cannot tell apart.
 */
static WaitEventSet *wait_set = NULL;
static pgsocket wait_fd = PGINVALID_SOCKET;
static bool wait_connected = false;
static int	sock_pos = -1;

static zhandle_t *the_handle = NULL;
static struct ACL_vector *the_acl = NULL;

zhandle_t *
zw_client_handle(void)
{
	return the_handle;
}

void
zw_client_set_handle(zhandle_t *zh)
{
	the_handle = zh;
}

struct ACL_vector *
zw_client_acl(void)
{
	return the_acl;
}

void
zw_client_set_acl(struct ACL_vector *acl)
{
	the_acl = acl;
}

/*
 * The calls of the worker's files, on the one handle: no other file calls
 * the library.  Every create carries the nodes' ACL (auth.c); a read sets
 * a watch only through zw_client_get_watched.  Each returns the library's
 * result: ZOK once the request is queued, its answer comes to `done`.
 */
int
zw_client_create(const char *path, const char *value, int len, int flags,
				 string_completion_t done, const void *ctx)
{
	return zoo_acreate(the_handle, path, value, len, the_acl, flags, done, ctx);
}

/* The same, answered with the new node's Stat (its czxid: the fencing token). */
int
zw_client_create_stat(const char *path, const char *value, int len, int flags,
					  string_stat_completion_t done, const void *ctx)
{
	return zoo_acreate2(the_handle, path, value, len, the_acl, flags, done, ctx);
}

int
zw_client_delete(const char *path, int version, void_completion_t done, const void *ctx)
{
	return zoo_adelete(the_handle, path, version, done, ctx);
}

int
zw_client_exists(const char *path, stat_completion_t done, const void *ctx)
{
	return zoo_aexists(the_handle, path, 0, done, ctx);
}

int
zw_client_get(const char *path, data_completion_t done, const void *ctx)
{
	return zoo_aget(the_handle, path, 0, done, ctx);
}

int
zw_client_get_watched(const char *path, watcher_fn watcher, void *watcher_ctx,
					  data_completion_t done, const void *ctx)
{
	return zoo_awget(the_handle, path, watcher, watcher_ctx, done, ctx);
}

int
zw_client_children(const char *path, strings_completion_t done, const void *ctx)
{
	return zoo_aget_children(the_handle, path, 0, done, ctx);
}

/* Children with the parent's Stat; _watched also sets a child watch. */
int
zw_client_children_stat(const char *path, strings_stat_completion_t done, const void *ctx)
{
	return zoo_aget_children2(the_handle, path, 0, done, ctx);
}

int
zw_client_children_watched(const char *path, watcher_fn watcher, void *watcher_ctx,
						   strings_stat_completion_t done, const void *ctx)
{
	return zoo_awget_children2(the_handle, path, watcher, watcher_ctx, done, ctx);
}

int
zw_client_set(const char *path, const char *value, int len, int version,
			  stat_completion_t done, const void *ctx)
{
	return zoo_aset(the_handle, path, value, len, version, done, ctx);
}

int
zw_client_multi(int count, const zoo_op_t *ops, zoo_op_result_t *results,
				void_completion_t done, const void *ctx)
{
	return zoo_amulti(the_handle, count, ops, results, done, ctx);
}

int
zw_client_sync(const char *path, string_completion_t done, const void *ctx)
{
	return zoo_async(the_handle, path, done, ctx);
}

int
zw_client_get_acl(const char *path, acl_completion_t done, const void *ctx)
{
	return zoo_aget_acl(the_handle, path, done, ctx);
}

int
zw_client_add_auth(const char *scheme, const char *cert, int len, void_completion_t done,
				   const void *ctx)
{
	return zoo_add_auth(the_handle, scheme, cert, len, done, ctx);
}

int
zw_client_set_servers(const char *hosts)
{
	return zoo_set_servers(the_handle, hosts);
}

bool
zw_client_connected(void)
{
	return the_handle != NULL && zoo_state(the_handle) == ZOO_CONNECTED_STATE;
}

/* The ops of a multi (filled here, sent by zw_client_multi). */
void
zw_client_op_check(zoo_op_t *op, const char *path, int version)
{
	zoo_check_op_init(op, path, version);
}

void
zw_client_op_create(zoo_op_t *op, const char *path, const char *value, int len, int flags,
					char *name, int namelen)
{
	zoo_create_op_init(op, path, value, len, the_acl, flags, name, namelen);
}

void
zw_client_op_delete(zoo_op_t *op, const char *path, int version)
{
	zoo_delete_op_init(op, path, version);
}

void
zw_client_op_set(zoo_op_t *op, const char *path, const char *value, int len, int version)
{
	zoo_set_op_init(op, path, value, len, version, NULL);
}

/* The library's text for a result code, for messages. */
const char *
zw_client_strerror(int rc)
{
	return zerror(rc);
}

/* What a session watcher's handle says of its session. */
const clientid_t *
zw_client_session(zhandle_t *zh)
{
	return zoo_client_id(zh);
}

int
zw_client_timeout(zhandle_t *zh)
{
	return zoo_recv_timeout(zh);
}

const char *
zw_client_server(zhandle_t *zh)
{
	return zoo_get_current_server(zh);
}

void
zw_client_create_answered(int rc, const char *value, const void *ctx)
{
	if (rc != ZOK && rc != ZNODEEXISTS)
		ereport(DEBUG1, (errmsg_internal("zk_lock: create: %s", zerror(rc))));
}

void
zw_client_sync_answered(int rc, const char *value, const void *ctx)
{
	/* the read behind the sync reports what matters */
}

void
zw_client_create_persistent(const char *target)
{
	char		path[ZKL_PATH_LEN];
	char	   *p;

	strlcpy(path, target, sizeof(path));
	for (p = strchr(path + 1, '/');; p = strchr(p + 1, '/'))
	{
		if (p)
			*p = '\0';
		zoo_acreate(the_handle, path, NULL, -1, the_acl, ZOO_PERSISTENT, zw_client_create_answered, NULL);
		if (!p)
			break;
		*p = '/';
	}
}

/* the caller's work owed after each reply's callbacks, and before a sleep */
static void (*settle_hook) (void) = NULL;

void
zw_client_set_settle(void (*settle) (void))
{
	settle_hook = settle;
}

static void
settle(void)
{
	if (settle_hook != NULL)
		settle_hook();
}

/* The library's own log lines are for debugging; state changes we log ourselves. */
static char last_error[ZKL_ERRMSG_LEN];

/*
 * The library's own log lines are for debugging; state changes we log
 * ourselves.  Its errors ("...:ZOO_ERROR@check_events@2985: Socket
 * 127.0.0.1:1 zk retcode=-4, errno=111(Connection refused): ...") say why a
 * connect failed: the last one is kept for session.c to report.
 */
static void
zw_client_log(const char *message)
{
	const char *e = strstr(message, "ZOO_ERROR@");

	ereport(DEBUG1, (errmsg_internal("zookeeper: %s", message)));
	if (e != NULL && (e = strstr(e, ": ")) != NULL)
	{
		size_t		n;

		strlcpy(last_error, e + 2, sizeof(last_error));
		n = strlen(last_error);
		while (n > 0 && (last_error[n - 1] == '\n' || last_error[n - 1] == ' '))
			last_error[--n] = '\0';
	}
}

bool
zw_client_take_error(char *out, size_t outlen)
{
	if (last_error[0] == '\0')
		return false;
	strlcpy(out, last_error, outlen);
	last_error[0] = '\0';
	return true;
}

zhandle_t *
zw_client_open(const char *hosts, int session_timeout_ms, const clientid_t *resume,
		 watcher_fn watcher)
{
	zhandle_t  *zh;

	zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
	zh = zookeeper_init2(hosts, watcher, session_timeout_ms, resume, NULL, 0,
						 zw_client_log);
	if (zh == NULL)
		ereport(LOG,
				(errmsg("zk_lock: could not start a ZooKeeper session with \"%s\": %m",
						hosts)));
	else
	{
		/*
		 * Not at every zookeeper_interest() call, the library's default
		 * (a getaddrinfo() with its sockets and netlink dump each turn of
		 * our loop), nor at all while connected (zk_resolve.c).
		 */
		zk_resolve_only_to_connect(zh);
	}
	return zh;
}

void
zw_client_close(zhandle_t *zh)
{
	if (zh != NULL)
		zookeeper_close(zh);
}

void
zw_client_abandon(zhandle_t *zh)
{
	zk_drop_handle(zh);
}

/*
 * What the library waits for: its socket (PGINVALID_SOCKET: none) and the
 * events on it; returns wait_ms shortened to the library's own timeout.
 */
static long
library_interest(zhandle_t *zh, long wait_ms, pgsocket *fd, uint32 *sock_events)
{
	int			zfd = -1;
	int			interest = 0;
	struct timeval tv = {0, 0};
	long		lib_ms;

	*sock_events = 0;
	if (zookeeper_interest(zh, &zfd, &interest, &tv) == ZOK)
		/* round up: a sub-millisecond timeout must not spin */
		lib_ms = (long) tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
	else
		/* a failed connect: the library moves on (or backs off) next call */
		lib_ms = 10;
	if (interest & ZOOKEEPER_READ)
		*sock_events |= WL_SOCKET_READABLE;
	if (interest & ZOOKEEPER_WRITE)
		*sock_events |= WL_SOCKET_WRITEABLE;
	*fd = (zfd < 0 || *sock_events == 0) ? PGINVALID_SOCKET : zfd;
	return (wait_ms < 0) ? lib_ms : Min(wait_ms, lib_ms);
}

/*
 * Let the library act on what the wait saw.  It reads one reply per call;
 * under load the socket holds many: read them all before the next plan,
 * which then sends what they released in one go (ZNOTHING: none complete
 * is left).
 */
static void
process_events(zhandle_t *zh, int rc)
{
	int			zev = 0;
	int			rc_zk;
	int			i;

	if (rc & WL_SOCKET_READABLE)
		zev |= ZOOKEEPER_READ;
	if (rc & WL_SOCKET_WRITEABLE)
		zev |= ZOOKEEPER_WRITE;
	rc_zk = zookeeper_process(zh, zev);
	settle();
	if (rc_zk != ZOK || !(zev & ZOOKEEPER_READ))
		return;
	for (i = 0; i < MAX_REPLIES_PER_WAKE; i++)
	{
		if (zoo_state(zh) != ZOO_CONNECTED_STATE)
			break;
		rc_zk = zookeeper_process(zh, ZOOKEEPER_READ);
		settle();
		if (rc_zk != ZOK)
			break;
	}
}

/*
 * Sleep until the ZooKeeper socket is ready, our latch is set, or a timeout
 * (the library's, or max_wait_ms if sooner; -1 for none), then let the
 * library do its work.  Returns the WaitLatchOrSocket() result.
 */
int
zw_client_wait(zhandle_t *zh, long max_wait_ms)
{
	pgsocket	fd = PGINVALID_SOCKET;
	uint32		sock_events = 0;
	long		wait_ms = max_wait_ms;
	WaitEvent	events[3];
	int			nevents;
	int			rc = 0;
	int			i;
	bool		connected;

	if (zh != NULL)
		wait_ms = library_interest(zh, wait_ms, &fd, &sock_events);
	connected = zh != NULL && zoo_state(zh) == ZOO_CONNECTED_STATE;

	if (wait_set == NULL || fd != wait_fd || !connected || !wait_connected)
	{
		if (wait_set != NULL)
			FreeWaitEventSet(wait_set);
		wait_set = CreateWaitEventSet(TopMemoryContext, 3);
		AddWaitEventToSet(wait_set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
		AddWaitEventToSet(wait_set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
		sock_pos = (fd != PGINVALID_SOCKET) ?
			AddWaitEventToSet(wait_set, sock_events, fd, NULL, NULL) : -1;
		wait_fd = fd;
		wait_connected = connected;
	}
	else if (sock_pos >= 0)
		ModifyWaitEvent(wait_set, sock_pos, sock_events, NULL);

	settle();
	nevents = WaitEventSetWait(wait_set, wait_ms, events, lengthof(events), PG_WAIT_EXTENSION);
	for (i = 0; i < nevents; i++)
		rc |= events[i].events;
	if (nevents == 0)
		rc |= WL_TIMEOUT;
	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);
	if (zh != NULL)
		process_events(zh, rc);
	return rc;
}

/*
 * The library writes every request at once, as two writes (length, then
 * body), and the socket has Nagle off: a burst of requests would be as many
 * packets, each waking the server.  Corking the socket for the burst sends
 * it as one.  Only the connected socket the wait set watches is corked.
 */
void
zw_client_hold_sends(bool hold)
{
	int			on = hold ? 1 : 0;

	if (wait_fd != PGINVALID_SOCKET && wait_connected)
		(void) setsockopt(wait_fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
}

/* SQLSTATE for a ZooKeeper error a user sees. */
int
zw_client_sqlstate(int zrc)
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
