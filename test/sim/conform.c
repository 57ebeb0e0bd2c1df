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
 *
 * This file draws the scripts and runs them; conform_real.c drives the real
 * server, conform_model.c the model and compares the two (their shared
 * types and state in conform.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conform.h"

World		cf_real;
World		cf_model;
Zkm		   *cf_M;
int			cf_mcl[NSESS];		/* model client of each session slot */
zhandle_t  *cf_zh[NSESS];
bool		cf_frozen[NSESS];	/* real: not driven, so that it expires */
static char root[64];
static uint64_t rng;
long		cf_compared;
long		cf_differ;
const char *cf_script_line;
bool		cf_verbose;

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

int
cf_cmp_str(const void *a, const void *b)
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

	cf_real_run(s, q, &a);
	cf_model_run(s, q, &b);
	cf_real_settle();
	cf_model_settle(-1, 0, NULL);
	cf_compare(q, &a, &b);
	cf_compare_events(false);
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
	cf_script_line = line;
	if (expire)
	{
		/* not driven, the client sends no pings: the server ends the session */
		cf_frozen[s] = true;
		cf_pump(NULL, TIMEOUT_MS * 3);
		zkm_kill(cf_M, cf_mcl[s]);
		cf_frozen[s] = false;
		/* the client learns it on its next connection; either way the handle is done */
	}
	else
		zkm_close(cf_M, cf_mcl[s]);
	zookeeper_close(cf_zh[s]);
	cf_zh[s] = NULL;
	if (!expire)
		cf_mcl[s] = -1;
	else
	{
		zkm_close(cf_M, cf_mcl[s]);
		cf_mcl[s] = -1;
	}
	cf_real_settle();
	cf_model_settle(-1, 0, NULL);
	cf_compare_events(true);
}

static void
open_session(int s, int timeout)
{
	cf_real_open(s, timeout);
	cf_model_open(s, timeout);
}

static void
setup_tree(void)
{
	ZkmReq		q;
	char		line[64];
	int			k;

	snprintf(line, sizeof(line), "setup");
	cf_script_line = line;
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

	cf_M = zkm_new((uint64_t) script, 1, 0);
	memset(&cf_real, 0, sizeof(cf_real));
	memset(&cf_model, 0, sizeof(cf_model));
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
		cf_script_line = line;
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
			cf_script_line = line;
			run_both(0, &q);
		}
	}
	for (s = 0; s < NSESS; s++)
		if (cf_zh[s])
		{
			zkm_close(cf_M, cf_mcl[s]);
			zookeeper_close(cf_zh[s]);
			cf_zh[s] = NULL;
			cf_mcl[s] = -1;
		}
	zkm_free(cf_M);
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
			cf_verbose = atoi(argv[i + 1]) != 0;
	}
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	for (i = 0; i < NSESS; i++)
		cf_mcl[i] = -1;
	for (sc = 1; sc <= scripts; sc++)
	{
		rng = (seed + (uint64_t) sc) * 0x9E3779B97F4A7C15ull + 1;
		run_script(sc, nops, sc <= expiries);
	}
	cf_cleanup(scripts);
	cf_check_sessions();
	cf_check_dns_outage();
	printf("conformance: %ld operations, event and session checks over %d scripts\n", cf_compared, scripts);
	printf("%ld passed, %ld failed\n", cf_compared - cf_differ, cf_differ);
	return cf_differ == 0 ? 0 : 1;
}
