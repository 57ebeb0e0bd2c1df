/*
 * conform_real.c — the conformance test's real server (see conform.c),
 * through the single-threaded C client: sessions opened and driven, one
 * operation run and its answer taken, watch events recorded, and the
 * nodes the scripts left removed.
 */
#define _POSIX_C_SOURCE 200809L

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

int64_t
cf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void
real_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	int			s = (int) (intptr_t) zoo_get_context(h);
	Ev		   *e;

	if (type == ZOO_SESSION_EVENT || ctx == NULL || cf_real.nev[s] >= MAXEV)
		return;
	e = &cf_real.ev[s][cf_real.nev[s]++];
	e->type = type;
	e->child = strcmp((const char *) ctx, "child") == 0;
	snprintf(e->path, sizeof(e->path), "%s", path);
}

static void
global_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
}

/* Drive every live handle for a while, or until *done. */
void
cf_pump(const bool *done, int max_ms)
{
	int64_t		end = cf_now_ms() + max_ms;

	while ((done == NULL || !*done) && cf_now_ms() < end)
	{
		struct pollfd pfd[NSESS];
		zhandle_t  *h[NSESS];
		int			n = 0;
		int			wait = 10;
		int			i;

		for (i = 0; i < NSESS; i++)
		{
			int			fd;
			int			interest;
			struct timeval tv;

			if (cf_zh[i] == NULL || cf_frozen[i] ||
				zookeeper_interest(cf_zh[i], &fd, &interest, &tv) != ZOK || fd < 0)
				continue;
			pfd[n].fd = fd;
			pfd[n].events = ((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
				((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0);
			h[n++] = cf_zh[i];
			if (tv.tv_sec * 1000 + tv.tv_usec / 1000 < wait)
				wait = (int) (tv.tv_sec * 1000 + tv.tv_usec / 1000);
		}
		(void) poll(pfd, n, wait);
		for (i = 0; i < n; i++)
		{
			int			ev = 0;

			if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
				ev |= ZOOKEEPER_READ;
			if (pfd[i].revents & POLLOUT)
				ev |= ZOOKEEPER_WRITE;
			(void) zookeeper_process(h[i], ev);
		}
	}
}

static int64_t
real_owner(int64_t owner)
{
	int			i;

	for (i = 0; i < NSESS && owner != 0; i++)
		if (cf_zh[i] && zoo_client_id(cf_zh[i])->client_id == owner)
			return i + 1;
	return owner != 0 ? 99 : 0;
}

static void
string_done(int rc, const char *name, const struct Stat *st, const void *data)
{
	Res		   *r = (Res *) data;

	r->rc = rc;
	if (rc == ZOK)
	{
		snprintf(r->name, sizeof(r->name), "%s", name);
		r->czxid = st ? st->czxid : 0;
	}
	r->done = true;
}

static void
void_done(int rc, const void *data)
{
	Res		   *r = (Res *) data;

	r->rc = rc;
	r->done = true;
}

static void
stat_done(int rc, const struct Stat *st, const void *data)
{
	Res		   *r = (Res *) data;

	r->rc = rc;
	if (rc == ZOK && st)
	{
		r->czxid = st->czxid;
		r->version = st->version;
		r->owner = real_owner(st->ephemeralOwner);
	}
	r->done = true;
}

static void
data_done(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
	Res		   *r = (Res *) data;

	if (rc == ZOK && value != NULL && len > 0)
		snprintf(r->data, sizeof(r->data), "%.*s", len, value);
	stat_done(rc, st, data);
}

static void
children_done(int rc, const struct String_vector *sv, const struct Stat *st, const void *data)
{
	Res		   *r = (Res *) data;
	int			i;

	r->rc = rc;
	if (rc == ZOK)
	{
		r->cversion = st->cversion;
		r->n = sv->count;
		r->kids = calloc(sv->count + 1, sizeof(char *));
		for (i = 0; i < sv->count; i++)
			r->kids[i] = strdup(sv->data[i]);
		qsort(r->kids, r->n, sizeof(char *), cf_cmp_str);
	}
	r->done = true;
}

typedef struct MultiCtx
{
	Res		   *res;
	int			n;
	zoo_op_result_t results[MAXSUB];
	char		bufs[MAXSUB][ZKM_PATH];
} MultiCtx;

static void
multi_done(int rc, const void *data)
{
	MultiCtx   *m = (MultiCtx *) data;
	int			i;

	m->res->rc = rc;
	m->res->nsub = m->n;
	for (i = 0; i < m->n; i++)
	{
		m->res->errs[i] = m->results[i].err;
		if (m->results[i].err == ZOK && m->results[i].value)
			snprintf(m->res->names[i], ZKM_PATH, "%s", m->results[i].value);
	}
	m->res->done = true;
}

static int
version_of(bool versioned, int version)
{
	return versioned ? version : -1;
}

void
cf_real_run(int s, const ZkmReq *q, Res *r)
{
	MultiCtx	mc;
	zoo_op_t	ops[MAXSUB];
	int			rc = ZOK;
	int			i;

	memset(r, 0, sizeof(*r));
	switch (q->kind)
	{
		case ZKM_CREATE:
			rc = zoo_acreate2(cf_zh[s], q->path, q->data, q->data ? (int) strlen(q->data) : -1,
							  &ZOO_OPEN_ACL_UNSAFE,
							  ((q->flags & ZKM_F_EPHEMERAL) ? ZOO_EPHEMERAL : 0) |
							  ((q->flags & ZKM_F_SEQUENTIAL) ? ZOO_SEQUENCE : 0),
							  string_done, r);
			break;
		case ZKM_DELETE:
			rc = zoo_adelete(cf_zh[s], q->path, version_of(q->versioned, q->version), void_done, r);
			break;
		case ZKM_CHILDREN:
			rc = q->watch ? zoo_awget_children2(cf_zh[s], q->path, real_watch, "child", children_done, r)
				: zoo_aget_children2(cf_zh[s], q->path, 0, children_done, r);
			break;
		case ZKM_GETDATA:
			rc = q->watch ? zoo_awget(cf_zh[s], q->path, real_watch, "data", data_done, r)
				: zoo_aget(cf_zh[s], q->path, 0, data_done, r);
			break;
		case ZKM_EXISTS:
			rc = zoo_aexists(cf_zh[s], q->path, 0, stat_done, r);
			break;
		case ZKM_SETDATA:
			rc = zoo_aset(cf_zh[s], q->path, q->data, (int) strlen(q->data), version_of(q->versioned, q->version),
						  stat_done, r);
			break;
		case ZKM_MULTI_OP:
			memset(&mc, 0, sizeof(mc));
			mc.res = r;
			mc.n = q->nsub;
			for (i = 0; i < q->nsub; i++)
			{
				const ZkmSub *sub = &q->sub[i];

				if (sub->kind == ZKM_CREATE)
					zoo_create_op_init(&ops[i], sub->path, sub->data, sub->data ? (int) strlen(sub->data) : -1,
									   &ZOO_OPEN_ACL_UNSAFE,
									   ((sub->flags & ZKM_F_EPHEMERAL) ? ZOO_EPHEMERAL : 0) |
									   ((sub->flags & ZKM_F_SEQUENTIAL) ? ZOO_SEQUENCE : 0),
									   mc.bufs[i], ZKM_PATH);
				else if (sub->kind == ZKM_DELETE)
					zoo_delete_op_init(&ops[i], sub->path, version_of(sub->versioned, sub->version));
				else
					zoo_check_op_init(&ops[i], sub->path, version_of(sub->versioned, sub->version));
			}
			rc = zoo_amulti(cf_zh[s], q->nsub, ops, mc.results, multi_done, &mc);
			break;
		case ZKM_SYNC:
			break;
	}
	if (rc != ZOK)
	{
		r->rc = rc;
		return;
	}
	cf_pump(&r->done, 10000);
	if (!r->done)
		r->rc = ZOPERATIONTIMEOUT;
}

/* A request on every live session: what the server sent before it has arrived. */
void
cf_real_settle(void)
{
	Res			r[NSESS];
	int			i;

	for (i = 0; i < NSESS; i++)
	{
		memset(&r[i], 0, sizeof(Res));
		if (cf_zh[i] && !cf_frozen[i] && zoo_aexists(cf_zh[i], "/", 0, stat_done, &r[i]) == ZOK)
			cf_pump(&r[i].done, 10000);
	}
}

void
cf_real_open(int s, int timeout)
{
	bool		never = false;
	int64_t		until = cf_now_ms() + 10000;

	cf_zh[s] = zookeeper_init(getenv("ZK_HOSTS"), global_watch, timeout, NULL,
						   (void *) (intptr_t) s, 0);
	if (cf_zh[s] == NULL)
	{
		perror("zookeeper_init");
		exit(2);
	}
	while (zoo_state(cf_zh[s]) != ZOO_CONNECTED_STATE)
	{
		if (cf_now_ms() > until)
		{
			fprintf(stderr, "conform: could not connect to %s\n", getenv("ZK_HOSTS"));
			exit(2);
		}
		cf_pump(&never, 10);
	}
}

/* Remove what the scripts left (persistent nodes), with a session of its own. */
void
cf_cleanup(int scripts)
{
	int			sc;
	int			k;

	cf_real_open(0, LONG_MS);
	for (sc = 1; sc <= scripts; sc++)
	{
		char		path[ZKM_PATH];
		Res			r;

		for (k = 0; k < NKEYS; k++)
		{
			snprintf(path, sizeof(path), "/conform-%d-%d/k%d", (int) getpid(), sc, k);
			memset(&r, 0, sizeof(r));
			if (zoo_adelete(cf_zh[0], path, -1, void_done, &r) == ZOK)
				cf_pump(&r.done, 5000);
		}
		snprintf(path, sizeof(path), "/conform-%d-%d", (int) getpid(), sc);
		memset(&r, 0, sizeof(r));
		if (zoo_adelete(cf_zh[0], path, -1, void_done, &r) == ZOK)
			cf_pump(&r.done, 5000);
	}
	zookeeper_close(cf_zh[0]);
	cf_zh[0] = NULL;
}
