/*
 * conform_dns.c — a DNS outage under a connected handle, against the real
 * library and server: the worker's setting (zk_resolve.c) keeps the session,
 * where the library's routine resolution would stop all I/O on the
 * connection and let the session expire while the handle says connected.
 *
 * The outage is this program's own getaddrinfo(), which the library calls
 * in place of libc's (an executable's definition comes first): one made-up
 * name resolves to 127.0.0.1, until it is told to fail.
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"
#include "zk_resolve.h"

#define DNS_NAME	"zk-lock-conform-dns"

static bool dns_down;

typedef int (*getaddrinfo_fn) (const char *, const char *, const struct addrinfo *, struct addrinfo **);

int
getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
	getaddrinfo_fn real = (getaddrinfo_fn) dlsym(RTLD_NEXT, "getaddrinfo");

	if (node != NULL && strcmp(node, DNS_NAME) == 0)
	{
		if (dns_down)
			return EAI_AGAIN;
		node = "127.0.0.1";
	}
	return real(node, service, hints, res);
}

static void
nap(int ms)
{
	struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static void
quiet_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
}

/* One turn of the library as the worker's loop gives it; false: zookeeper_interest failed. */
static bool
turn(zhandle_t *zh)
{
	int			fd = -1;
	int			interest = 0;
	struct timeval tv = {0, 0};
	struct pollfd p;

	if (zookeeper_interest(zh, &fd, &interest, &tv) != ZOK)
	{
		nap(10);
		return false;
	}
	p.fd = fd;
	p.events = ((interest & ZOOKEEPER_READ) ? POLLIN : 0) | ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0);
	p.revents = 0;
	if (poll(&p, fd >= 0 ? 1 : 0, 10) > 0)
		zookeeper_process(zh, ((p.revents & (POLLIN | POLLHUP | POLLERR)) ? ZOOKEEPER_READ : 0) |
						  ((p.revents & POLLOUT) ? ZOOKEEPER_WRITE : 0));
	return true;
}

static void
create_done(int rc, const char *name, const void *data)
{
	*(int *) data = rc;
}

static void
exists_done(int rc, const struct Stat *st, const void *data)
{
	*(int *) data = rc;
}

static void
until_answered(zhandle_t *zh, const int *rc)
{
	int64_t		until = cf_now_ms() + 5000;

	while (*rc == ZSYSTEMERROR - 1 && cf_now_ms() < until)
		(void) turn(zh);
}

/*
 * A handle connected by name (resolution delay `delay`) makes an ephemeral
 * node; the name stops resolving; the handle is served as the worker's loop
 * serves it for three of its negotiated session timeouts past the first
 * routine resolution.  Returns whether its session lived (another handle,
 * connected by address, still sees the node), and the failed
 * zookeeper_interest() calls.  A session of 2 s: a stall of the test long
 * enough to drop the connection (2/3 of it) would fail it falsely, as no
 * reconnect can resolve the name.
 */
static bool
session_lives(int delay, long *failed)
{
	char		hosts[128];
	char		path[64];
	const char *port = strrchr(getenv("ZK_HOSTS"), ':');
	zhandle_t  *a;
	zhandle_t  *b;
	int			made = ZSYSTEMERROR - 1;
	int			seen = ZSYSTEMERROR - 1;
	int64_t		until;

	snprintf(hosts, sizeof(hosts), DNS_NAME "%s", port);
	snprintf(path, sizeof(path), "/conform-%d-dns%d", (int) getpid(), delay);
	dns_down = false;
	a = zookeeper_init(hosts, quiet_watch, TIMEOUT_MS * 2, NULL, NULL, 0);
	b = zookeeper_init(getenv("ZK_HOSTS"), quiet_watch, LONG_MS, NULL, NULL, 0);
	if (a == NULL || b == NULL)
	{
		perror("zookeeper_init");
		exit(2);
	}
	if (delay == ZK_RESOLVE_DELAY_MS)
		zk_resolve_only_to_connect(a);
	else
		(void) zoo_set_servers_resolution_delay(a, delay);
	for (until = cf_now_ms() + 5000; zoo_state(a) != ZOO_CONNECTED_STATE && cf_now_ms() < until;)
		(void) turn(a);
	if (zoo_acreate(a, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, create_done, &made) == ZOK)
		until_answered(a, &made);
	dns_down = true;
	*failed = 0;
	/* past the first routine resolution, if the setting has one */
	for (until = cf_now_ms() + zoo_recv_timeout(a) * 3 + (delay > 0 ? delay : 0); cf_now_ms() < until;)
		*failed += !turn(a);
	dns_down = false;
	if (zoo_aexists(b, path, 0, exists_done, &seen) == ZOK)
		until_answered(b, &seen);
	zookeeper_close(a);
	zookeeper_close(b);
	return made == ZOK && seen == ZOK;
}

void
cf_check_dns_outage(void)
{
	long		failed;
	long		failed_routine;
	bool		lives = session_lives(ZK_RESOLVE_DELAY_MS, &failed);
	/* the library's routine resolution (here at every turn): the hazard the setting avoids */
	bool		lives_routine = session_lives(0, &failed_routine);

	/* (routine resolution must end it, or this check could not tell) */
	bool		ok = lives && failed == 0 && !lives_routine && failed_routine > 0;

	cf_compared++;
	if (!ok || cf_verbose)
		printf("%s a DNS outage under a connected handle: with the worker's resolution setting the session %s "
			   "(%ld failed zookeeper_interest calls); with routine resolution it %s (%ld failed calls)\n",
			   ok ? "same" : "DIFFERS", lives ? "lives" : "ended", failed,
			   lives_routine ? "lives" : "ended", failed_routine);
	if (!ok)
		cf_differ++;
}
