/*
 * sim_zk.c — the worker's ZooKeeper calls (zk_client.h) over the model
 * ZooKeeper, for the shipped worker files the simulator runs.
 *
 * Each call becomes one model request of the current cluster (sim.c's
 * simh_send), and its completion is called with the model's answer as the
 * client library would call it: the same result codes, a NULL Stat or
 * value with an error, ZCLOSING for what was in flight when the handle
 * closed, ZCONNECTIONLOSS for what a reset lost.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "zk_client.h"
#include "sim_host.h"

/* The library's constants are variables (zookeeper.h): the model's values are the same. */
const int	ZOO_PERSISTENT = 0;
const int	ZOO_EPHEMERAL = ZKM_F_EPHEMERAL;
const int	ZOO_SEQUENCE = ZKM_F_SEQUENTIAL;
const int	ZOO_EPHEMERAL_SEQUENTIAL = ZKM_F_EPHEMERAL | ZKM_F_SEQUENTIAL;
const int	ZOO_CONTAINER = ZKM_F_CONTAINER;
const int	ZOO_CREATED_EVENT = 1;
const int	ZOO_DELETED_EVENT = ZKM_EV_DELETED;
const int	ZOO_CHANGED_EVENT = ZKM_EV_CHANGED;
const int	ZOO_CHILD_EVENT = ZKM_EV_CHILD;
const int	ZOO_SESSION_EVENT = -1;
const int	ZOO_NOTWATCHING_EVENT = -2;
const int	ZOO_EXPIRED_SESSION_STATE = ZKM_ST_EXPIRED;
const int	ZOO_AUTH_FAILED_STATE = -113;
const int	ZOO_CONNECTING_STATE = ZKM_ST_CONNECTING;
const int	ZOO_ASSOCIATING_STATE = 2;
const int	ZOO_CONNECTED_STATE = ZKM_ST_CONNECTED;

static int
send_call(ZkmReq *r, SimCallKind ck, void (*fn) (void), const void *ctx, watcher_fn w, void *wctx)
{
	SimCall		c = {ck, fn, ctx, (void (*) (void)) w, wctx};

	return simh_send(r, &c) ? ZOK : ZINVALIDSTATE;
}

static int
call(ZkmReqKind kind, const char *path, SimCallKind ck, void (*fn) (void), const void *ctx)
{
	ZkmReq		r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	snprintf(r.path, sizeof(r.path), "%s", path);
	return send_call(&r, ck, fn, ctx, NULL, NULL);
}

zhandle_t *
zw_client_handle(void)
{
	static char handle;			/* never looked into: the worker only tells NULL apart */

	return simh_has_handle() ? (zhandle_t *) &handle : NULL;
}

int
zw_client_create(const char *path, const char *value, int len, int flags,
				 string_completion_t done, const void *ctx)
{
	ZkmReq		r;

	memset(&r, 0, sizeof(r));
	r.kind = ZKM_CREATE;
	r.flags = flags;
	snprintf(r.path, sizeof(r.path), "%s", path);
	if (value != NULL && len > 0)
		snprintf(r.data, sizeof(r.data), "%.*s", len, value);
	return send_call(&r, SC_STRING, (void (*) (void)) done, ctx, NULL, NULL);
}

/* Every component of an absolute path, as a persistent node, no reply read (as zk_client.c). */
void
zw_client_create_persistent(const char *target)
{
	char		path[ZKM_PATH];
	char	   *slash;

	snprintf(path, sizeof(path), "%s", target);
	for (slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/'))
	{
		if (slash != NULL)
			*slash = '\0';
		(void) zw_client_create(path, NULL, -1, ZOO_PERSISTENT, zw_client_create_answered, NULL);
		if (slash == NULL)
			break;
		*slash = '/';
	}
}

int
zw_client_children_watched(const char *path, watcher_fn watcher, void *watcher_ctx,
						   strings_stat_completion_t done, const void *ctx)
{
	ZkmReq		r;

	memset(&r, 0, sizeof(r));
	r.kind = ZKM_CHILDREN;
	snprintf(r.path, sizeof(r.path), "%s", path);
	return send_call(&r, SC_STRINGS_STAT, (void (*) (void)) done, ctx, watcher, watcher_ctx);
}

int
zw_client_children(const char *path, strings_completion_t done, const void *ctx)
{
	return call(ZKM_CHILDREN, path, SC_STRINGS, (void (*) (void)) done, ctx);
}

int
zw_client_exists(const char *path, stat_completion_t done, const void *ctx)
{
	return call(ZKM_EXISTS, path, SC_STAT, (void (*) (void)) done, ctx);
}

int
zw_client_delete(const char *path, int version, void_completion_t done, const void *ctx)
{
	/* the model deletes any version: the worker's deletes all say -1 */
	return call(ZKM_DELETE, path, SC_VOID, (void (*) (void)) done, ctx);
}

int
zw_client_sync(const char *path, string_completion_t done, const void *ctx)
{
	return call(ZKM_SYNC, path, SC_STRING, (void (*) (void)) done, ctx);
}

bool
zw_client_connected(void)
{
	return simh_connected();
}

const char *
zw_client_strerror(int rc)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "rc %d", rc);
	return buf;
}

void
zw_client_sync_answered(int rc, const char *value, const void *ctx)
{
}

void
zw_client_create_answered(int rc, const char *value, const void *ctx)
{
}

void
simzk_answer(const SimCall *c, const ZkmMsg *msg, int rc)
{
	struct Stat st;
	struct String_vector sv;

	if (msg != NULL)
		rc = msg->rc;
	memset(&st, 0, sizeof(st));
	sv.count = 0;
	sv.data = NULL;
	if (msg != NULL && rc == ZOK)
	{
		st.ephemeralOwner = msg->owner;
		st.czxid = msg->czxid;
		st.cversion = msg->cversion;
		st.numChildren = msg->nchildren;
		sv.count = msg->nchildren;
		sv.data = msg->children;
	}
	switch (c->kind)
	{
		case SC_VOID:
			((void_completion_t) c->fn) (rc, c->ctx);
			break;
		case SC_STAT:
			((stat_completion_t) c->fn) (rc, rc == ZOK ? &st : NULL, c->ctx);
			break;
		case SC_STRING:
			((string_completion_t) c->fn) (rc, rc == ZOK ? msg->path : NULL, c->ctx);
			break;
		case SC_STRINGS:
			((strings_completion_t) c->fn) (rc, rc == ZOK ? &sv : NULL, c->ctx);
			break;
		case SC_STRINGS_STAT:
			((strings_stat_completion_t) c->fn) (rc, rc == ZOK ? &sv : NULL, rc == ZOK ? &st : NULL,
												 c->ctx);
			break;
		case SC_DATA:
			((data_completion_t) c->fn) (rc, rc == ZOK ? msg->data : NULL,
										 rc == ZOK ? (int) strlen(msg->data) : -1,
										 rc == ZOK ? &st : NULL, c->ctx);
			break;
	}
}
