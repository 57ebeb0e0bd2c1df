/*
 * zk_drop.c — let go of a ZooKeeper handle without ending its session.
 *
 * ZooKeeper may give a session's id again after a member's host restarts
 * (the id comes from the member's id and clock), and the password comes from
 * the id: a handle resuming our ended session (session.c), or a crash's
 * left-over one (left_session.c), can find itself in another client's.
 * zookeeper_close() would then send the close request
 * that ends that client's session and every lock it holds.  The library
 * sends that request only on a connection it thinks up, so the connection is
 * shut first: the request fails to leave, the server sees a connection lost,
 * and the session goes on for its owner.
 *
 * No PostgreSQL in this file: the conformance test runs it against a real
 * server (test/sim/conform_real.c).
 */
#include <sys/socket.h>
#include <sys/time.h>

#include "zk_drop.h"

void
zk_drop_handle(zhandle_t *zh)
{
	int			fd = -1;
	int			interest = 0;
	struct timeval tv = {0, 0};

	if (zh == NULL)
		return;
	/*
	 * The socket comes from zookeeper_interest, which with a connection up
	 * only reports it (and may queue a ping); told not to resolve names, it
	 * cannot fail on a DNS outage before it does.  Without a connection the
	 * library sends no close request, and must not be asked to connect.
	 */
	if (zoo_state(zh) == ZOO_CONNECTED_STATE || zoo_state(zh) == ZOO_READONLY_STATE)
	{
		(void) zoo_set_servers_resolution_delay(zh, -1);
		if (zookeeper_interest(zh, &fd, &interest, &tv) == ZOK && fd >= 0)
			(void) shutdown(fd, SHUT_RDWR);
	}
	(void) zookeeper_close(zh);
}
