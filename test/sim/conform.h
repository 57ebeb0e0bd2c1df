/*
 * conform.h — what the conformance test's files (conform.c, conform_real.c,
 * conform_model.c) share: a script's sizes, what one operation returned in
 * either world, the run's state, and the functions of each file.  A shared
 * name starts with cf_.
 */
#ifndef CONFORM_H
#define CONFORM_H

#include <stdbool.h>
#include <stdint.h>

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

/* conform.c: the run's state */
extern World cf_real;
extern World cf_model;
extern Zkm *cf_M;
extern int	cf_mcl[NSESS];		/* model client of each session slot */
extern zhandle_t *cf_zh[NSESS];
extern bool cf_frozen[NSESS];	/* real: not driven, so that it expires */
extern long cf_compared;
extern long cf_differ;
extern const char *cf_script_line;
extern bool cf_verbose;

extern int	cf_cmp_str(const void *a, const void *b);

/* conform_real.c: the real server */
extern int64_t cf_now_ms(void);	/* a monotonic clock, milliseconds */
extern void cf_pump(const bool *done, int max_ms);
extern void cf_real_run(int s, const ZkmReq *q, Res *r);
extern void cf_real_settle(void);
extern void cf_real_open(int s, int timeout);
extern void cf_cleanup(int scripts);

/* conform_session.c: sessions, not operations (a late answer, a handle let go) */
extern void cf_check_sessions(void);

/* conform_dns.c: a DNS outage under a connected handle */
extern void cf_check_dns_outage(void);

/* conform_model.c: the model, and comparing the two */
extern void cf_model_settle(int s, uint64_t tag, Res *r);
extern void cf_model_run(int s, ZkmReq *q, Res *r);
extern void cf_model_open(int s, int timeout);
extern void cf_compare(const ZkmReq *q, Res *a, Res *b);
extern void cf_compare_events(bool any_order);

#endif
