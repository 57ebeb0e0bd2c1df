/*
 * zk_resolve.c — the host names of zk_lock.hosts are resolved only to
 * connect: the library always resolves then (and at a reload's new list).
 *
 * By default it resolves them again at every zookeeper_interest() call, or
 * once a set delay has passed.  Such a routine resolution that fails makes
 * zookeeper_interest() fail before any I/O, at every call until the names
 * resolve again: a DNS outage would stop the pings and the reads of a
 * connection that works, the session would expire at the server while the
 * handle still says connected, and the worker's cut-off clock, which runs
 * only while the handle says it is connecting, would not start.  No
 * PostgreSQL here, so that the conformance test checks this very setting
 * against the real library and server (test/sim/conform_dns.c).
 */
#include "zk_resolve.h"

void
zk_resolve_only_to_connect(zhandle_t *zh)
{
	(void) zoo_set_servers_resolution_delay(zh, ZK_RESOLVE_DELAY_MS);
}
