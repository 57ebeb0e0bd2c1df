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

static int
call(ZkmReqKind kind, const char *path, SimCallKind ck, void (*fn) (void), const void *ctx)
{
	ZkmReq		r;
	SimCall		c = {ck, fn, ctx};

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	snprintf(r.path, sizeof(r.path), "%s", path);
	return simh_send(&r, &c) ? ZOK : ZINVALIDSTATE;
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
