/*
 * conform_model.c — the conformance test's model side (see conform.c): the
 * model ZooKeeper run until it settles, its answers and watch events taken
 * as the real server's are, and the two worlds' answers compared.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* ---- the model ---- */

static void
model_take(int s, ZkmMsg *msg, uint64_t tag, Res *r)
{
	int			i;

	if (msg->kind == ZKM_EVENT)
	{
		if (cf_model.nev[s] < MAXEV)
		{
			Ev		   *e = &cf_model.ev[s][cf_model.nev[s]++];

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
			qsort(r->kids, r->n, sizeof(char *), cf_cmp_str);
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
				if (cf_mcl[i] >= 0 && zkm_session(cf_M, cf_mcl[i]) == msg->owner)
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
void
cf_model_settle(int s, uint64_t tag, Res *r)
{
	bool		moved = true;
	int			i;

	while (moved)
	{
		moved = false;
		for (i = 0; i < NSESS; i++)
		{
			ZkmMsg	   *msg;

			if (cf_mcl[i] < 0)
				continue;
			moved |= zkm_step_server(cf_M, cf_mcl[i]);
			while ((msg = zkm_pop(cf_M, cf_mcl[i])) != NULL)
			{
				model_take(i, msg, tag, i == s ? r : NULL);
				zkm_msg_free(msg);
				moved = true;
			}
		}
		moved |= zkm_step_leader(cf_M);
	}
}

void
cf_model_run(int s, ZkmReq *q, Res *r)
{
	static uint64_t next_tag = 1;

	memset(r, 0, sizeof(*r));
	q->tag = next_tag++;
	q->wtag = 1;
	zkm_send(cf_M, cf_mcl[s], q);
	cf_model_settle(s, q->tag, r);
}

void
cf_model_open(int s, int timeout)
{
	cf_mcl[s] = zkm_open(cf_M, timeout);
	while (!zkm_connected(cf_M, cf_mcl[s]))
	{
		ZkmMsg	   *msg;

		(void) zkm_step_reconnect(cf_M, cf_mcl[s]);
		while ((msg = zkm_pop(cf_M, cf_mcl[s])) != NULL)
			zkm_msg_free(msg);
	}
}

/* ---- comparing ---- */

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

static void
differ_at(const char *what, const char *fmt_real, const char *fmt_model)
{
	cf_differ++;
	printf("DIFF %s: %s\n  real:  %s\n  model: %s\n", cf_script_line, what, fmt_real, fmt_model);
}

void
cf_compare(const ZkmReq *q, Res *a, Res *b)
{
	char		x[512];
	char		y[512];
	int			i;

	cf_compared++;
	if (cf_verbose)
	{
		printf("%s -> real rc %d %s | model rc %d %s\n", cf_script_line, a->rc, a->name, b->rc, b->name);
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
	if (zx_rank(&cf_real, a->czxid) != zx_rank(&cf_model, b->czxid))
	{
		snprintf(x, sizeof(x), "czxid %" PRId64 " (rank %d)", a->czxid, zx_rank(&cf_real, a->czxid));
		snprintf(y, sizeof(y), "czxid %" PRId64 " (rank %d)", b->czxid, zx_rank(&cf_model, b->czxid));
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
void
cf_compare_events(bool any_order)
{
	int			s;
	int			i;

	for (s = 0; s < NSESS; s++)
	{
		bool		same = cf_real.nev[s] == cf_model.nev[s];
		char		x[512] = "";
		char		y[512] = "";

		if (any_order)
		{
			qsort(cf_real.ev[s], cf_real.nev[s], sizeof(Ev), cmp_ev);
			qsort(cf_model.ev[s], cf_model.nev[s], sizeof(Ev), cmp_ev);
		}
		for (i = 0; same && i < cf_real.nev[s]; i++)
			same = cf_real.ev[s][i].type == cf_model.ev[s][i].type &&
				cf_real.ev[s][i].child == cf_model.ev[s][i].child &&
				strcmp(cf_real.ev[s][i].path, cf_model.ev[s][i].path) == 0;
		cf_compared++;
		if (!same)
		{
			for (i = 0; i < cf_real.nev[s]; i++)
				snprintf(x + strlen(x), sizeof(x) - strlen(x), "%s%d%s %s", i ? ", " : "",
						 cf_real.ev[s][i].type, cf_real.ev[s][i].child ? "c" : "d", cf_real.ev[s][i].path);
			for (i = 0; i < cf_model.nev[s]; i++)
				snprintf(y + strlen(y), sizeof(y) - strlen(y), "%s%d%s %s", i ? ", " : "",
						 cf_model.ev[s][i].type, cf_model.ev[s][i].child ? "c" : "d", cf_model.ev[s][i].path);
			differ_at(s == 0 ? "events of session 0" : s == 1 ? "events of session 1" :
					  "events of session 2", x, y);
		}
		cf_real.nev[s] = cf_model.nev[s] = 0;
	}
}
