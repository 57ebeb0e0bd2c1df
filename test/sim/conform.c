/*
 * conform.c — the model ZooKeeper (zkmodel.c) against a real server.
 *
 * The simulator's verdicts are only as good as its model.  This runs the
 * same random scripts against both, one operation at a time, and compares
 * what the lock code reads: result codes, created names (sequence suffixes),
 * children lists, cversion, the order of czxids (equal for one multi's
 * creates, rising otherwise), ephemeral owners, a multi's per-op results,
 * and the watch events each session receives.  Operations: ephemeral
 * sequential creates (under a missing parent, under an ephemeral), deletes
 * (missing, not empty), multis of creates, deletes and checks, listings
 * and data reads with and without watches, exists, session close and
 * session expiry.  Absolute zxids differ (the server also logs session
 * creation), so czxids are compared by rank of first appearance.
 *
 * Usage: conform HOST:PORT [--scripts N] [--ops N] [--seed S] [--expiries N]
 * Prints every difference, then "conformance: N passed, M failed" (one per
 * operation compared).
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "zkmodel.h"

#define NSESS		3
#define NKEYS		3
#define MAXNAMES	256
#define MAXEV		64
#define MAXSUB		4
#define TIMEOUT_MS	1000		/* the expiring session's (the test server's minimum) */
#define LONG_MS		20000		/* the others' */

/* What one operation returned, in either world. */
typedef struct Res
{
	int			rc;
	char		name[ZKM_PATH];	/* create: the path made */
	int64_t		czxid;			/* create (real: with Stat), exists, getData */
	int64_t		owner;			/* exists, getData: session index + 1, 0: none */
	char		data[ZKM_DATA];	/* getData */
	int32_t		version;		/* exists, getData, setData: the node's data version */
	int32_t		cversion;		/* getChildren */
	int			n;
	char	  **kids;			/* getChildren, sorted */
	int			nsub;
	int			errs[MAXSUB];
	char		names[MAXSUB][ZKM_PATH];
	bool		done;
} Res;

typedef struct Ev
{
	int			type;
	bool		child;			/* a child watch's (else a data watch's) */
	char		path[ZKM_PATH];
} Ev;

typedef struct World
{
	Ev			ev[NSESS][MAXEV];
	int			nev[NSESS];
	int64_t		zx[4096];		/* czxids in order of first appearance */
	int			nzx;
} World;

static World real;
static World model;
static Zkm *M;
static int	mcl[NSESS];			/* model client of each session slot */
static zhandle_t *zh[NSESS];
static bool frozen[NSESS];		/* real: not driven, so that it expires */
static char root[64];
static uint64_t rng;
static long compared;
static long differ;
static const char *script_line;
static bool verbose;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int
rnd_int(int n)
{
	return (int) (rnd() % (uint64_t) n);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
res_free(Res *r)
{
	int			i;

	for (i = 0; i < r->n; i++)
		free(r->kids[i]);
	free(r->kids);
	memset(r, 0, sizeof(*r));
}

/* The rank of zxid among those this world has shown, by first appearance. */
static int
zx_rank(World *w, int64_t zxid)
{
	int			i;

	if (zxid == 0)
		return -1;
	for (i = 0; i < w->nzx; i++)
		if (w->zx[i] == zxid)
			return i;
	if (w->nzx < 4096)
		w->zx[w->nzx++] = zxid;
	return w->nzx - 1;
}

/* ---- the real server, through the single-threaded C client ---- */

static void
real_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	int			s = (int) (intptr_t) zoo_get_context(h);
	Ev		   *e;

	if (type == ZOO_SESSION_EVENT || ctx == NULL || real.nev[s] >= MAXEV)
		return;
	e = &real.ev[s][real.nev[s]++];
	e->type = type;
	e->child = strcmp((const char *) ctx, "child") == 0;
	snprintf(e->path, sizeof(e->path), "%s", path);
}

static void
global_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
}

/* Drive every live handle for a while, or until *done. */
static void
pump(const bool *done, int max_ms)
{
	int64_t		end = now_ms() + max_ms;

	while ((done == NULL || !*done) && now_ms() < end)
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

			if (zh[i] == NULL || frozen[i] ||
				zookeeper_interest(zh[i], &fd, &interest, &tv) != ZOK || fd < 0)
				continue;
			pfd[n].fd = fd;
			pfd[n].events = ((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
				((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0);
			h[n++] = zh[i];
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
		if (zh[i] && zoo_client_id(zh[i])->client_id == owner)
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
		qsort(r->kids, r->n, sizeof(char *), cmp_str);
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

static void
real_run(int s, const ZkmReq *q, Res *r)
{
	MultiCtx	mc;
	zoo_op_t	ops[MAXSUB];
	int			rc = ZOK;
	int			i;

	memset(r, 0, sizeof(*r));
	switch (q->kind)
	{
		case ZKM_CREATE:
			rc = zoo_acreate2(zh[s], q->path, q->data, q->data ? (int) strlen(q->data) : -1,
							  &ZOO_OPEN_ACL_UNSAFE,
							  ((q->flags & ZKM_F_EPHEMERAL) ? ZOO_EPHEMERAL : 0) |
							  ((q->flags & ZKM_F_SEQUENTIAL) ? ZOO_SEQUENCE : 0),
							  string_done, r);
			break;
		case ZKM_DELETE:
			rc = zoo_adelete(zh[s], q->path, version_of(q->versioned, q->version), void_done, r);
			break;
		case ZKM_CHILDREN:
			rc = q->watch ? zoo_awget_children2(zh[s], q->path, real_watch, "child", children_done, r)
				: zoo_aget_children2(zh[s], q->path, 0, children_done, r);
			break;
		case ZKM_GETDATA:
			rc = q->watch ? zoo_awget(zh[s], q->path, real_watch, "data", data_done, r)
				: zoo_aget(zh[s], q->path, 0, data_done, r);
			break;
		case ZKM_EXISTS:
			rc = zoo_aexists(zh[s], q->path, 0, stat_done, r);
			break;
		case ZKM_SETDATA:
			rc = zoo_aset(zh[s], q->path, q->data, (int) strlen(q->data), version_of(q->versioned, q->version),
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
			rc = zoo_amulti(zh[s], q->nsub, ops, mc.results, multi_done, &mc);
			break;
		case ZKM_SYNC:
			break;
	}
	if (rc != ZOK)
	{
		r->rc = rc;
		return;
	}
	pump(&r->done, 10000);
	if (!r->done)
		r->rc = ZOPERATIONTIMEOUT;
}

/* A request on every live session: what the server sent before it has arrived. */
static void
real_settle(void)
{
	Res			r[NSESS];
	int			i;

	for (i = 0; i < NSESS; i++)
	{
		memset(&r[i], 0, sizeof(Res));
		if (zh[i] && !frozen[i] && zoo_aexists(zh[i], "/", 0, stat_done, &r[i]) == ZOK)
			pump(&r[i].done, 10000);
	}
}

static void
real_open(int s, int timeout)
{
	bool		never = false;
	int64_t		until = now_ms() + 10000;

	zh[s] = zookeeper_init(getenv("ZK_HOSTS"), global_watch, timeout, NULL,
						   (void *) (intptr_t) s, 0);
	if (zh[s] == NULL)
	{
		perror("zookeeper_init");
		exit(2);
	}
	while (zoo_state(zh[s]) != ZOO_CONNECTED_STATE)
	{
		if (now_ms() > until)
		{
			fprintf(stderr, "conform: could not connect to %s\n", getenv("ZK_HOSTS"));
			exit(2);
		}
		pump(&never, 10);
	}
}

/* ---- the model ---- */

static void
model_take(int s, ZkmMsg *msg, uint64_t tag, Res *r)
{
	int			i;

	if (msg->kind == ZKM_EVENT)
	{
		if (model.nev[s] < MAXEV)
		{
			Ev		   *e = &model.ev[s][model.nev[s]++];

			e->type = msg->type;
			e->child = msg->child;
			snprintf(e->path, sizeof(e->path), "%s", msg->path);
		}
		return;
	}
	if (msg->kind != ZKM_REPLY || r == NULL || msg->tag != tag)
		return;
	r->rc = msg->rc;
	r->done = true;
	if (msg->rc != ZOK && msg->req != ZKM_MULTI_OP)
		return;
	switch (msg->req)
	{
		case ZKM_CREATE:
			snprintf(r->name, sizeof(r->name), "%s", msg->path);
			r->czxid = msg->czxid;
			break;
		case ZKM_CHILDREN:
			r->cversion = msg->cversion;
			r->n = msg->nchildren;
			r->kids = calloc(msg->nchildren + 1, sizeof(char *));
			for (i = 0; i < msg->nchildren; i++)
				r->kids[i] = strdup(msg->children[i]);
			qsort(r->kids, r->n, sizeof(char *), cmp_str);
			break;
		case ZKM_GETDATA:
			snprintf(r->data, sizeof(r->data), "%s", msg->data);
			/* FALLTHROUGH */
		case ZKM_EXISTS:
		case ZKM_SETDATA:
			r->czxid = msg->czxid;
			r->version = msg->version;
			r->owner = 0;
			for (i = 0; i < NSESS && msg->owner != 0; i++)
				if (mcl[i] >= 0 && zkm_session(M, mcl[i]) == msg->owner)
					r->owner = i + 1;
			if (msg->owner != 0 && r->owner == 0)
				r->owner = 99;
			break;
		case ZKM_MULTI_OP:
			r->nsub = msg->nsub;
			for (i = 0; i < msg->nsub && i < MAXSUB; i++)
			{
				r->errs[i] = msg->errs[i];
				snprintf(r->names[i], ZKM_PATH, "%s", msg->names[i]);
			}
			break;
		default:
			break;
	}
}

/* Let the model run until nothing moves, reading every message. */
static void
model_settle(int s, uint64_t tag, Res *r)
{
	bool		moved = true;
	int			i;

	while (moved)
	{
		moved = false;
		for (i = 0; i < NSESS; i++)
		{
			ZkmMsg	   *msg;

			if (mcl[i] < 0)
				continue;
			moved |= zkm_step_server(M, mcl[i]);
			while ((msg = zkm_pop(M, mcl[i])) != NULL)
			{
				model_take(i, msg, tag, i == s ? r : NULL);
				zkm_msg_free(msg);
				moved = true;
			}
		}
		moved |= zkm_step_leader(M);
	}
}

static void
model_run(int s, ZkmReq *q, Res *r)
{
	static uint64_t next_tag = 1;

	memset(r, 0, sizeof(*r));
	q->tag = next_tag++;
	q->wtag = 1;
	zkm_send(M, mcl[s], q);
	model_settle(s, q->tag, r);
}

static void
model_open(int s, int timeout)
{
	mcl[s] = zkm_open(M, timeout);
	while (!zkm_connected(M, mcl[s]))
	{
		ZkmMsg	   *msg;

		(void) zkm_step_reconnect(M, mcl[s]);
		while ((msg = zkm_pop(M, mcl[s])) != NULL)
			zkm_msg_free(msg);
	}
}

/* ---- comparing ---- */

static void
differ_at(const char *what, const char *fmt_real, const char *fmt_model)
{
	differ++;
	printf("DIFF %s: %s\n  real:  %s\n  model: %s\n", script_line, what, fmt_real, fmt_model);
}

static void
compare(const ZkmReq *q, Res *a, Res *b)
{
	char		x[512];
	char		y[512];
	int			i;

	compared++;
	if (verbose)
	{
		printf("%s -> real rc %d %s | model rc %d %s\n", script_line, a->rc, a->name, b->rc, b->name);
		for (i = 0; q->kind == ZKM_MULTI_OP && i < q->nsub; i++)
			printf("    %s %s: real %d %s | model %d %s\n",
				   q->sub[i].kind == ZKM_CREATE ? "create" : q->sub[i].kind == ZKM_DELETE ? "delete" : "check",
				   q->sub[i].path, a->errs[i], a->names[i], b->errs[i], b->names[i]);
	}
	if (a->rc != b->rc)
	{
		snprintf(x, sizeof(x), "rc %d", a->rc);
		snprintf(y, sizeof(y), "rc %d", b->rc);
		differ_at("result code", x, y);
		return;
	}
	if (strcmp(a->name, b->name) != 0)
		differ_at("created name", a->name, b->name);
	if (zx_rank(&real, a->czxid) != zx_rank(&model, b->czxid))
	{
		snprintf(x, sizeof(x), "czxid %" PRId64 " (rank %d)", a->czxid, zx_rank(&real, a->czxid));
		snprintf(y, sizeof(y), "czxid %" PRId64 " (rank %d)", b->czxid, zx_rank(&model, b->czxid));
		differ_at("czxid order", x, y);
	}
	if (strcmp(a->data, b->data) != 0)
		differ_at("node data", a->data, b->data);
	if (a->version != b->version)
	{
		snprintf(x, sizeof(x), "version %d", a->version);
		snprintf(y, sizeof(y), "version %d", b->version);
		differ_at("data version", x, y);
	}
	if (a->owner != b->owner)
	{
		snprintf(x, sizeof(x), "owner %" PRId64, a->owner);
		snprintf(y, sizeof(y), "owner %" PRId64, b->owner);
		differ_at("ephemeral owner", x, y);
	}
	if (q->kind == ZKM_CHILDREN && a->rc == ZOK)
	{
		bool		same = a->n == b->n;

		for (i = 0; same && i < a->n; i++)
			same = strcmp(a->kids[i], b->kids[i]) == 0;
		if (!same || a->cversion != b->cversion)
		{
			snprintf(x, sizeof(x), "%d children, first %s, cversion %d", a->n,
					 a->n ? a->kids[0] : "-", a->cversion);
			snprintf(y, sizeof(y), "%d children, first %s, cversion %d", b->n,
					 b->n ? b->kids[0] : "-", b->cversion);
			differ_at("children", x, y);
		}
	}
	if (q->kind == ZKM_MULTI_OP)
		for (i = 0; i < q->nsub; i++)
		{
			if (a->errs[i] != b->errs[i] ||
				(a->errs[i] == ZOK && q->sub[i].kind == ZKM_CREATE &&
				 strcmp(a->names[i], b->names[i]) != 0))
			{
				snprintf(x, sizeof(x), "op %d: err %d %s", i, a->errs[i], a->names[i]);
				snprintf(y, sizeof(y), "op %d: err %d %s", i, b->errs[i], b->names[i]);
				differ_at("multi op result", x, y);
			}
		}
}

static int
cmp_ev(const void *a, const void *b)
{
	const Ev   *x = a;
	const Ev   *y = b;
	int			c = strcmp(x->path, y->path);

	return c != 0 ? c : (x->type != y->type ? x->type - y->type : (int) x->child - (int) y->child);
}

/*
 * The watch events each session received since the last call; in any
 * order when a session's end deleted several nodes (the server walks them
 * in the order of a hash set).
 */
static void
compare_events(bool any_order)
{
	int			s;
	int			i;

	for (s = 0; s < NSESS; s++)
	{
		bool		same = real.nev[s] == model.nev[s];
		char		x[512] = "";
		char		y[512] = "";

		if (any_order)
		{
			qsort(real.ev[s], real.nev[s], sizeof(Ev), cmp_ev);
			qsort(model.ev[s], model.nev[s], sizeof(Ev), cmp_ev);
		}
		for (i = 0; same && i < real.nev[s]; i++)
			same = real.ev[s][i].type == model.ev[s][i].type &&
				real.ev[s][i].child == model.ev[s][i].child &&
				strcmp(real.ev[s][i].path, model.ev[s][i].path) == 0;
		compared++;
		if (!same)
		{
			for (i = 0; i < real.nev[s]; i++)
				snprintf(x + strlen(x), sizeof(x) - strlen(x), "%s%d%s %s", i ? ", " : "",
						 real.ev[s][i].type, real.ev[s][i].child ? "c" : "d", real.ev[s][i].path);
			for (i = 0; i < model.nev[s]; i++)
				snprintf(y + strlen(y), sizeof(y) - strlen(y), "%s%d%s %s", i ? ", " : "",
						 model.ev[s][i].type, model.ev[s][i].child ? "c" : "d", model.ev[s][i].path);
			differ_at(s == 0 ? "events of session 0" : s == 1 ? "events of session 1" :
					  "events of session 2", x, y);
		}
		real.nev[s] = model.nev[s] = 0;
	}
}

/* ---- scripts ---- */

/* Names created so far (relative to root), to delete or read later. */
static char made[MAXNAMES][ZKM_PATH];
static int	nmade;

static void
remember(const char *path)
{
	if (path[0] != '\0' && nmade < MAXNAMES)
		snprintf(made[nmade++], ZKM_PATH, "%s", path);
}

static void
some_node(char *out)
{
	if (nmade > 0 && rnd_int(5) != 0)
		snprintf(out, ZKM_PATH, "%s", made[rnd_int(nmade)]);
	else
		snprintf(out, ZKM_PATH, "%s/k%d/n-9-0000000077", root, rnd_int(NKEYS));
}

static void
key_path(char *out)
{
	int			k = rnd_int(NKEYS + 1);	/* k3 is never made */

	snprintf(out, ZKM_PATH, "%s/k%d", root, k);
}

/* One random request of session s. */
/* One write in four names a version: the node's first three, or another. */
static void
draw_version(bool *versioned, int *version)
{
	*versioned = rnd_int(4) == 0;
	*version = rnd_int(4);
}

static void
draw(int s, ZkmReq *q, char *line, size_t len)
{
	static char datas[MAXSUB][32];	/* the data drawn: valid until the next draw */
	int			pick = rnd_int(100);
	int			i;

	memset(q, 0, sizeof(*q));
	if (pick < 30)
	{
		q->kind = ZKM_CREATE;
		q->flags = ZKM_F_EPHEMERAL | ZKM_F_SEQUENTIAL;
		if (rnd_int(2) == 0)
		{
			snprintf(datas[0], sizeof(datas[0]), "{\"d\":%d}", rnd_int(1000));
			q->data = datas[0];
		}
		if (rnd_int(8) == 0 && nmade > 0)
			snprintf(q->path, sizeof(q->path), "%s/e-", made[rnd_int(nmade)]);	/* under an ephemeral */
		else
		{
			key_path(q->path);
			snprintf(q->path + strlen(q->path), sizeof(q->path) - strlen(q->path), "/n-%d-", s);
		}
	}
	else if (pick < 45)
	{
		q->kind = ZKM_DELETE;
		draw_version(&q->versioned, &q->version);
		if (rnd_int(10) == 0)
			key_path(q->path);	/* not empty, or missing */
		else
			some_node(q->path);
	}
	else if (pick < 60)
	{
		q->kind = ZKM_CHILDREN;
		q->watch = rnd_int(3) != 0;
		key_path(q->path);
	}
	else if (pick < 68)
	{
		q->kind = ZKM_GETDATA;
		q->watch = rnd_int(3) != 0;
		some_node(q->path);
	}
	else if (pick < 72)
	{
		/* the data a lingering node loses: a data watch fires */
		q->kind = ZKM_SETDATA;
		snprintf(datas[0], sizeof(datas[0]), "{\"s\":%d}", rnd_int(1000));
		q->data = datas[0];
		draw_version(&q->versioned, &q->version);
		some_node(q->path);
	}
	else if (pick < 78)
	{
		q->kind = ZKM_EXISTS;
		some_node(q->path);
	}
	else
	{
		q->kind = ZKM_MULTI_OP;
		q->nsub = 1 + rnd_int(MAXSUB);
		for (i = 0; i < q->nsub; i++)
		{
			ZkmSub	   *sub = &q->sub[i];
			int			p = rnd_int(10);

			if (p < 6)
			{
				sub->kind = ZKM_CREATE;
				sub->flags = ZKM_F_EPHEMERAL | ZKM_F_SEQUENTIAL;
				snprintf(datas[i], sizeof(datas[i]), "{\"m\":%d}", i);
				sub->data = datas[i];
				snprintf(sub->path, sizeof(sub->path), "%s/k%d/n-%d-", root,
						 rnd_int(10) == 0 ? NKEYS : rnd_int(NKEYS), s);
			}
			else if (p < 8)
			{
				sub->kind = ZKM_DELETE;
				draw_version(&sub->versioned, &sub->version);
				some_node(sub->path);
			}
			else
			{
				sub->kind = ZKM_EXISTS;	/* a check */
				draw_version(&sub->versioned, &sub->version);
				some_node(sub->path);
			}
		}
	}
	snprintf(line, len, "s%d %s %s%s%s", s,
			 q->kind == ZKM_CREATE ? "create" : q->kind == ZKM_DELETE ? "delete" :
			 q->kind == ZKM_CHILDREN ? "children" : q->kind == ZKM_GETDATA ? "getdata" :
			 q->kind == ZKM_EXISTS ? "exists" : q->kind == ZKM_SETDATA ? "setdata" : "multi",
			 q->kind == ZKM_MULTI_OP ? q->sub[0].path : q->path, q->watch ? " watch" : "",
			 q->kind == ZKM_MULTI_OP && q->nsub > 1 ? " ..." : "");
}

static void
run_both(int s, ZkmReq *q)
{
	Res			a;
	Res			b;
	int			i;

	real_run(s, q, &a);
	model_run(s, q, &b);
	real_settle();
	model_settle(-1, 0, NULL);
	compare(q, &a, &b);
	compare_events(false);
	if (a.rc == ZOK && q->kind == ZKM_CREATE)
		remember(a.name);
	for (i = 0; q->kind == ZKM_MULTI_OP && a.rc == ZOK && i < q->nsub; i++)
		if (q->sub[i].kind == ZKM_CREATE)
			remember(a.names[i]);
	res_free(&a);
	res_free(&b);
}

static void
close_session(int s, bool expire)
{
	char		line[64];

	snprintf(line, sizeof(line), "s%d %s", s, expire ? "expires" : "closes");
	script_line = line;
	if (expire)
	{
		/* not driven, the client sends no pings: the server ends the session */
		frozen[s] = true;
		pump(NULL, TIMEOUT_MS * 3);
		zkm_kill(M, mcl[s]);
		frozen[s] = false;
		/* the client learns it on its next connection; either way the handle is done */
	}
	else
		zkm_close(M, mcl[s]);
	zookeeper_close(zh[s]);
	zh[s] = NULL;
	if (!expire)
		mcl[s] = -1;
	else
	{
		zkm_close(M, mcl[s]);
		mcl[s] = -1;
	}
	real_settle();
	model_settle(-1, 0, NULL);
	compare_events(true);
}

static void
open_session(int s, int timeout)
{
	real_open(s, timeout);
	model_open(s, timeout);
}

static void
setup_tree(void)
{
	ZkmReq		q;
	char		line[64];
	int			k;

	snprintf(line, sizeof(line), "setup");
	script_line = line;
	memset(&q, 0, sizeof(q));
	q.kind = ZKM_CREATE;
	snprintf(q.path, sizeof(q.path), "%s", root);
	run_both(0, &q);
	for (k = 0; k < NKEYS; k++)
	{
		memset(&q, 0, sizeof(q));
		q.kind = ZKM_CREATE;
		snprintf(q.path, sizeof(q.path), "%s/k%d", root, k);
		run_both(0, &q);
	}
	nmade = 0;
}

static void
run_script(int script, int nops, bool expiry)
{
	char		line[ZKM_PATH + 64];
	int			i;
	int			s;

	M = zkm_new((uint64_t) script, 1, 0);
	memset(&real, 0, sizeof(real));
	memset(&model, 0, sizeof(model));
	nmade = 0;
	for (s = 0; s < NSESS; s++)
		open_session(s, expiry && s == NSESS - 1 ? TIMEOUT_MS : LONG_MS);
	snprintf(root, sizeof(root), "/conform-%d-%d", (int) getpid(), script);
	setup_tree();
	for (i = 0; i < nops; i++)
	{
		ZkmReq		q;

		s = rnd_int(NSESS);
		if (rnd_int(40) == 0)
		{
			close_session(s, false);
			open_session(s, LONG_MS);
			continue;
		}
		draw(s, &q, line, sizeof(line));
		script_line = line;
		run_both(s, &q);
	}
	if (expiry)
	{
		close_session(NSESS - 1, true);
		/* what another session sees of it now */
		for (i = 0; i < NKEYS; i++)
		{
			ZkmReq		q;

			memset(&q, 0, sizeof(q));
			q.kind = ZKM_CHILDREN;
			snprintf(q.path, sizeof(q.path), "%s/k%d", root, i);
			snprintf(line, sizeof(line), "s0 children %s after the expiry", q.path);
			script_line = line;
			run_both(0, &q);
		}
	}
	for (s = 0; s < NSESS; s++)
		if (zh[s])
		{
			zkm_close(M, mcl[s]);
			zookeeper_close(zh[s]);
			zh[s] = NULL;
			mcl[s] = -1;
		}
	zkm_free(M);
}

/* Remove what the scripts left (persistent nodes), with a session of its own. */
static void
cleanup(int scripts)
{
	int			sc;
	int			k;

	real_open(0, LONG_MS);
	for (sc = 1; sc <= scripts; sc++)
	{
		char		path[ZKM_PATH];
		Res			r;

		for (k = 0; k < NKEYS; k++)
		{
			snprintf(path, sizeof(path), "/conform-%d-%d/k%d", (int) getpid(), sc, k);
			memset(&r, 0, sizeof(r));
			if (zoo_adelete(zh[0], path, -1, void_done, &r) == ZOK)
				pump(&r.done, 5000);
		}
		snprintf(path, sizeof(path), "/conform-%d-%d", (int) getpid(), sc);
		memset(&r, 0, sizeof(r));
		if (zoo_adelete(zh[0], path, -1, void_done, &r) == ZOK)
			pump(&r.done, 5000);
	}
	zookeeper_close(zh[0]);
	zh[0] = NULL;
}

int
main(int argc, char **argv)
{
	int			scripts = 20;
	int			nops = 60;
	int			expiries = 2;
	uint64_t	seed = 1;
	int			sc;
	int			i;

	if (argc < 2)
	{
		fprintf(stderr, "usage: conform HOST:PORT [--scripts N] [--ops N] [--seed S] [--expiries N]\n");
		return 2;
	}
	setenv("ZK_HOSTS", argv[1], 1);
	for (i = 2; i + 1 < argc; i += 2)
	{
		if (strcmp(argv[i], "--scripts") == 0)
			scripts = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--ops") == 0)
			nops = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--seed") == 0)
			seed = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--expiries") == 0)
			expiries = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--verbose") == 0)
			verbose = atoi(argv[i + 1]) != 0;
	}
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	for (i = 0; i < NSESS; i++)
		mcl[i] = -1;
	for (sc = 1; sc <= scripts; sc++)
	{
		rng = (seed + (uint64_t) sc) * 0x9E3779B97F4A7C15ull + 1;
		run_script(sc, nops, sc <= expiries);
	}
	cleanup(scripts);
	printf("conformance: %ld operations and event checks over %d scripts\n", compared, scripts);
	printf("%ld passed, %ld failed\n", compared - differ, differ);
	return differ == 0 ? 0 : 1;
}
