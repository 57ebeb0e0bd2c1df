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
#include <stdlib.h>
#include <string.h>

#include <zookeeper/proto.h>	/* ZOO_*_OP */

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
const int	ZOO_PERM_CREATE = 1 << 2;

static int
send_call(ZkmReq *r, SimCallKind ck, void (*fn) (void), const void *ctx, watcher_fn w, void *wctx)
{
	SimCall		c;

	memset(&c, 0, sizeof(c));
	c.kind = ck;
	c.fn = fn;
	c.ctx = ctx;
	c.watcher = (void (*) (void)) w;
	c.wctx = wctx;

	return simh_send(r, &c) ? ZOK : ZINVALIDSTATE;
}

/* The library sends len bytes; the model takes a string. */
static char *
terminated(const char *value, int len)
{
	char	   *s = malloc(len + 1);

	if (s == NULL)
		abort();
	memcpy(s, value, len);
	s[len] = '\0';
	return s;
}

static int
path_call(ZkmReqKind kind, const char *path, const char *value, int len, int flags, int version,
		  SimCallKind ck, void (*fn) (void), const void *ctx, watcher_fn w, void *wctx)
{
	ZkmReq		r;
	int			rc;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.flags = flags;
	r.versioned = version != -1;
	r.version = version;
	snprintf(r.path, sizeof(r.path), "%s", path);
	r.data = value == NULL || len <= 0 ? NULL : terminated(value, len);
	rc = send_call(&r, ck, fn, ctx, w, wctx);
	free((char *) r.data);		/* (the model copied it) */
	return rc;
}

/* ---- handles: a model client's index, plus one (never looked into) ---- */

static zhandle_t *
as_handle(int client)
{
	return client >= 0 ? (zhandle_t *) (uintptr_t) (client + 1) : NULL;
}

static int
as_client(zhandle_t *zh)
{
	return zh != NULL ? (int) (uintptr_t) zh - 1 : -1;
}

zhandle_t *
zw_client_handle(void)
{
	return as_handle(simh_client());
}

void
zw_client_set_handle(zhandle_t *zh)
{
	simh_set_client(as_client(zh));
}

/* The session watcher is session.c's: sim.c hands it every state change of the handle. */
zhandle_t *
zw_client_open(const char *hosts, int session_timeout_ms, const clientid_t *resume,
			   watcher_fn watcher)
{
	return as_handle(simh_open(session_timeout_ms, resume != NULL ? resume->client_id : 0,
							   (void (*) (void)) watcher));
}

void
zw_client_close(zhandle_t *zh)
{
	if (zh != NULL)
		simh_close(as_client(zh));
}

void
zw_client_abandon(zhandle_t *zh)
{
	if (zh != NULL)
		simh_abandon(as_client(zh));
}

int
zw_client_wait(zhandle_t *zh, long max_wait_ms)
{
	return simh_wait(as_client(zh), max_wait_ms);
}

const clientid_t *
zw_client_session(zhandle_t *zh)
{
	static clientid_t id;

	memset(&id, 0, sizeof(id));
	id.client_id = simh_session_of(as_client(zh));
	return &id;
}

int
zw_client_timeout(zhandle_t *zh)
{
	return simh_timeout_of(as_client(zh));
}

const char *
zw_client_server(zhandle_t *zh)
{
	return "model";
}

bool
zw_client_take_error(char *out, size_t outlen)
{
	return false;				/* the model's connects do not fail with a message */
}

int
zw_client_set_servers(const char *hosts)
{
	return simh_set_servers(hosts);
}

/* zk_lock.auth is not simulated (sim_pg.c): no identity is ever added, no ACL read */
int
zw_client_add_auth(const char *scheme, const char *cert, int len, void_completion_t done,
				   const void *ctx)
{
	return ZINVALIDSTATE;
}

int
zw_client_get_acl(const char *path, acl_completion_t done, const void *ctx)
{
	return ZINVALIDSTATE;
}

void
zw_client_set_acl(struct ACL_vector *acl)
{
}

struct ACL_vector *
zw_node_acl(bool authenticated)
{
	return NULL;
}

int
zw_client_create(const char *path, const char *value, int len, int flags,
				 string_completion_t done, const void *ctx)
{
	return path_call(ZKM_CREATE, path, value, len, flags, -1, SC_STRING, (void (*) (void)) done, ctx,
					 NULL, NULL);
}

int
zw_client_create_stat(const char *path, const char *value, int len, int flags,
					  string_stat_completion_t done, const void *ctx)
{
	return path_call(ZKM_CREATE, path, value, len, flags, -1, SC_STRING_STAT, (void (*) (void)) done,
					 ctx, NULL, NULL);
}

int
zw_client_children_stat(const char *path, strings_stat_completion_t done, const void *ctx)
{
	return path_call(ZKM_CHILDREN, path, NULL, 0, 0, -1, SC_STRINGS_STAT, (void (*) (void)) done, ctx,
					 NULL, NULL);
}

int
zw_client_get_watched(const char *path, watcher_fn watcher, void *watcher_ctx,
					  data_completion_t done, const void *ctx)
{
	return path_call(ZKM_GETDATA, path, NULL, 0, 0, -1, SC_DATA, (void (*) (void)) done, ctx,
					 watcher, watcher_ctx);
}

int
zw_client_get(const char *path, data_completion_t done, const void *ctx)
{
	return path_call(ZKM_GETDATA, path, NULL, 0, 0, -1, SC_DATA, (void (*) (void)) done, ctx, NULL, NULL);
}

int
zw_client_set(const char *path, const char *value, int len, int version,
			  stat_completion_t done, const void *ctx)
{
	return path_call(ZKM_SETDATA, path, value, len, 0, version, SC_STAT, (void (*) (void)) done, ctx,
					 NULL, NULL);
}

/* ---- multi: the ops as zoo_*_op_init fill them, sent as one model request ---- */

void
zw_client_op_check(zoo_op_t *op, const char *path, int version)
{
	memset(op, 0, sizeof(*op));
	op->type = ZOO_CHECK_OP;
	op->check_op.path = path;
	op->check_op.version = version;
}

void
zw_client_op_create(zoo_op_t *op, const char *path, const char *value, int len, int flags,
					char *name, int namelen)
{
	memset(op, 0, sizeof(*op));
	op->type = ZOO_CREATE_OP;
	op->create_op.path = path;
	op->create_op.data = value;
	op->create_op.datalen = len;
	op->create_op.flags = flags;
	op->create_op.buf = name;
	op->create_op.buflen = namelen;
}

void
zw_client_op_delete(zoo_op_t *op, const char *path, int version)
{
	memset(op, 0, sizeof(*op));
	op->type = ZOO_DELETE_OP;
	op->delete_op.path = path;
	op->delete_op.version = version;
}

void
zw_client_op_set(zoo_op_t *op, const char *path, const char *value, int len, int version)
{
	memset(op, 0, sizeof(*op));
	op->type = ZOO_SETDATA_OP;
	op->set_op.path = path;
	op->set_op.data = value;
	op->set_op.datalen = len;
	op->set_op.version = version;
}

int
zw_client_multi(int count, const zoo_op_t *ops, zoo_op_result_t *results,
				void_completion_t done, const void *ctx)
{
	ZkmReq		r;
	SimCall		c;
	bool		sent;
	int			i;

	if (count > ZKM_MULTI)
		return ZBADARGUMENTS;
	memset(&c, 0, sizeof(c));
	c.kind = SC_MULTI;
	c.fn = (void (*) (void)) done;
	c.ctx = ctx;
	memset(&r, 0, sizeof(r));
	r.kind = ZKM_MULTI_OP;
	snprintf(r.path, sizeof(r.path), "/");
	r.nsub = count;
	c.nops = count;
	c.results = results;
	for (i = 0; i < count; i++)
	{
		const zoo_op_t *op = &ops[i];
		ZkmSub	   *sub = &r.sub[i];

		switch (op->type)
		{
			case ZOO_CREATE_OP:
				sub->kind = ZKM_CREATE;
				sub->flags = op->create_op.flags;
				c.bufs[i] = op->create_op.buf;
				c.buflens[i] = op->create_op.buflen;
				snprintf(sub->path, sizeof(sub->path), "%s", op->create_op.path);
				if (op->create_op.data != NULL && op->create_op.datalen > 0)
					sub->data = terminated(op->create_op.data, op->create_op.datalen);
				break;
			case ZOO_DELETE_OP:
				sub->kind = ZKM_DELETE;
				sub->versioned = op->delete_op.version != -1;
				sub->version = op->delete_op.version;
				snprintf(sub->path, sizeof(sub->path), "%s", op->delete_op.path);
				break;
			case ZOO_CHECK_OP:
				sub->kind = ZKM_EXISTS;
				sub->versioned = op->check_op.version != -1;
				sub->version = op->check_op.version;
				snprintf(sub->path, sizeof(sub->path), "%s", op->check_op.path);
				break;
			case ZOO_SETDATA_OP:
				sub->kind = ZKM_SETDATA;
				sub->versioned = op->set_op.version != -1;
				sub->version = op->set_op.version;
				snprintf(sub->path, sizeof(sub->path), "%s", op->set_op.path);
				if (op->set_op.data != NULL && op->set_op.datalen > 0)
					sub->data = terminated(op->set_op.data, op->set_op.datalen);
				break;
			default:
				while (--i >= 0)
					free((char *) r.sub[i].data);
				return ZBADARGUMENTS;
		}
	}
	sent = simh_send(&r, &c);
	for (i = 0; i < count; i++)
		free((char *) r.sub[i].data);	/* (the model copied them) */
	return sent ? ZOK : ZINVALIDSTATE;
}

/* Sends held for one write to the socket: the model takes each request as it comes. */
void
zw_client_hold_sends(bool hold)
{
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
	return path_call(ZKM_CHILDREN, path, NULL, 0, 0, -1, SC_STRINGS_STAT, (void (*) (void)) done, ctx,
					 watcher, watcher_ctx);
}

int
zw_client_children(const char *path, strings_completion_t done, const void *ctx)
{
	return path_call(ZKM_CHILDREN, path, NULL, 0, 0, -1, SC_STRINGS, (void (*) (void)) done, ctx,
					 NULL, NULL);
}

int
zw_client_exists(const char *path, stat_completion_t done, const void *ctx)
{
	return path_call(ZKM_EXISTS, path, NULL, 0, 0, -1, SC_STAT, (void (*) (void)) done, ctx, NULL, NULL);
}

int
zw_client_delete(const char *path, int version, void_completion_t done, const void *ctx)
{
	return path_call(ZKM_DELETE, path, NULL, 0, 0, version, SC_VOID, (void (*) (void)) done, ctx, NULL, NULL);
}

int
zw_client_sync(const char *path, string_completion_t done, const void *ctx)
{
	return path_call(ZKM_SYNC, path, NULL, 0, 0, -1, SC_STRING, (void (*) (void)) done, ctx, NULL, NULL);
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
		st.version = msg->version;
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
		case SC_STRING_STAT:
			((string_stat_completion_t) c->fn) (rc, rc == ZOK ? msg->path : NULL, rc == ZOK ? &st : NULL,
												c->ctx);
			break;
		case SC_MULTI:
			{
				zoo_op_result_t *res = c->results;
				int			i;

				/* per op, as the library fills them: a created node's path into its buffer */
				for (i = 0; i < c->nops && msg != NULL; i++)
				{
					res[i].err = i < msg->nsub ? msg->errs[i] : rc;
					res[i].value = NULL;
					if (c->bufs[i] != NULL && res[i].err == ZOK)
					{
						snprintf(c->bufs[i], c->buflens[i], "%s", msg->names[i]);
						res[i].value = c->bufs[i];
					}
				}
				((void_completion_t) c->fn) (rc, c->ctx);
			}
			break;
		case SC_DATA:
			((data_completion_t) c->fn) (rc, rc == ZOK ? msg->data : NULL,
										 rc == ZOK ? (int) strlen(msg->data) : -1,
										 rc == ZOK ? &st : NULL, c->ctx);
			break;
	}
}
