/*
 * conform_session.c — the conformance test's checks of sessions rather than
 * of operations, in the real server and in the model:
 *
 * - a new session whose client reads the server's answer only after the
 *   session ended (the client was paused): read before the library's own
 *   timeout check, the answer tells the id, the connection is found closed,
 *   and the resume by that id is refused as expired; checked first, the
 *   timeout drops the connection unread and the client gets a new session;
 * - a handle let go by the worker's zk_drop_handle leaves its session alive
 *   (its ephemeral node stays until the session times out), where
 *   zookeeper_close ends it at once.
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
#include "zk_drop.h"

#define MAXSTATES 8

/* the session states a handle went through, in order */
typedef struct States
{
	int			st[MAXSTATES];
	int			n;
} States;

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static void
note_state(States *s, int state)
{
	if (s->n < MAXSTATES)
		s->st[s->n++] = state;
}

static void
state_watch(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	if (type == ZOO_SESSION_EVENT)
		note_state((States *) zoo_get_context(h), state);
}

/* One turn of the library: its interest, a wait for it, its processing. */
static void
drive(zhandle_t *zh, int only)
{
	int			fd = -1;
	int			interest = 0;
	struct timeval tv = {0, 0};
	struct pollfd p;

	if (zookeeper_interest(zh, &fd, &interest, &tv) != ZOK || fd < 0)
	{
		sleep_ms(5);
		return;
	}
	interest &= only;
	p.fd = fd;
	p.events = ((interest & ZOOKEEPER_READ) ? POLLIN : 0) | ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0);
	p.revents = 0;
	if (poll(&p, 1, 10) > 0)
		zookeeper_process(zh, ((p.revents & (POLLIN | POLLHUP | POLLERR)) ? ZOOKEEPER_READ : 0) |
						  ((p.revents & POLLOUT) ? ZOOKEEPER_WRITE : 0));
}

static bool
expired(const States *s)
{
	return s->n > 0 && s->st[s->n - 1] == ZOO_EXPIRED_SESSION_STATE;
}

/*
 * Real: a new handle sends its connect request, then sleeps past the
 * session's timeout; then it reads first (read_first), or lets the library
 * check its timeout first, as a worker paused between its wait and its
 * read, or anywhere else, does.
 */
static void
real_late(bool read_first, States *out)
{
	zhandle_t  *zh;
	int64_t		until;

	memset(out, 0, sizeof(*out));
	zh = zookeeper_init(getenv("ZK_HOSTS"), state_watch, TIMEOUT_MS, NULL, out, 0);
	if (zh == NULL)
	{
		perror("zookeeper_init");
		exit(2);
	}
	for (until = cf_now_ms() + 5000; zoo_state(zh) != ZOO_ASSOCIATING_STATE && cf_now_ms() < until;)
		drive(zh, ZOOKEEPER_WRITE);
	/* the server answers, ends the session at its timeout and closes the connection */
	sleep_ms(TIMEOUT_MS * 4);
	if (read_first)
		zookeeper_process(zh, ZOOKEEPER_READ);
	/* until it is told the session expired, or has kept one a while */
	for (until = cf_now_ms() + TIMEOUT_MS * 3; !expired(out) && cf_now_ms() < until;)
		drive(zh, ZOOKEEPER_READ | ZOOKEEPER_WRITE);
	zookeeper_close(zh);
}

/* The model: the same client, paused past its session's timeout. */
static void
model_late(bool read_first, States *out)
{
	uint64_t	seed;

	/* the model draws which of the two happens: the first seed that gives this one */
	for (seed = 1; seed < 100; seed++)
	{
		Zkm		   *m = zkm_new(seed, 1, 0);
		int			cl = zkm_open(m, TIMEOUT_MS);
		int			i;

		memset(out, 0, sizeof(*out));
		zkm_set_paused(m, cl, true);
		zkm_advance(m, (int64_t) TIMEOUT_MS * 4 * 1000);
		zkm_set_paused(m, cl, false);
		for (i = 0; i < 100 && !expired(out); i++)
		{
			ZkmMsg	   *msg;

			(void) zkm_step_reconnect(m, cl);
			while (zkm_step_leader(m))
				;
			while ((msg = zkm_pop(m, cl)) != NULL)
			{
				if (msg->kind == ZKM_STATE)
					note_state(out, msg->type);
				zkm_msg_free(msg);
			}
		}
		i = zkm_late_answers(m) > 0;
		zkm_close(m, cl);
		zkm_free(m);
		if (i == (int) read_first)
			return;
	}
	fprintf(stderr, "conform: the model never drew that case\n");
	exit(2);
}

static const char *
state_name(int st)
{
	return st == ZOO_CONNECTED_STATE ? "connected" : st == ZOO_CONNECTING_STATE ? "connecting" :
		st == ZOO_EXPIRED_SESSION_STATE ? "expired" : st == ZOO_ASSOCIATING_STATE ? "associating" : "other";
}

static void
compare_states(const char *what, const States *real, const States *model)
{
	bool		same = real->n == model->n;
	int			i;

	for (i = 0; same && i < real->n; i++)
		same = real->st[i] == model->st[i];
	cf_compared++;
	if (same && !cf_verbose)
		return;
	if (!same)
		cf_differ++;
	printf("%s %s: real", same ? "same" : "DIFFERS", what);
	for (i = 0; i < real->n; i++)
		printf(" %s", state_name(real->st[i]));
	printf("; model");
	for (i = 0; i < model->n; i++)
		printf(" %s", state_name(model->st[i]));
	printf("\n");
}

/* ---- a handle let go ---- */

typedef struct Done
{
	bool		done;
	int			rc;
} Done;

static void
mark_done(const void *data, int rc)
{
	((Done *) data)->rc = rc;
	((Done *) data)->done = true;
}

static void
create_done(int rc, const char *name, const void *data)
{
	mark_done(data, rc);
}

static void
exists_done(int rc, const struct Stat *st, const void *data)
{
	mark_done(data, rc);
}

static void
pump(zhandle_t *zh, const Done *d)
{
	int64_t		until;

	for (until = cf_now_ms() + 5000; !d->done && cf_now_ms() < until;)
		drive(zh, ZOOKEEPER_READ | ZOOKEEPER_WRITE);
}

static zhandle_t *
connected_handle(int timeout, States *st)
{
	zhandle_t  *zh = zookeeper_init(getenv("ZK_HOSTS"), state_watch, timeout, NULL, st, 0);
	int64_t		until;

	if (zh == NULL)
	{
		perror("zookeeper_init");
		exit(2);
	}
	for (until = cf_now_ms() + 5000; zoo_state(zh) != ZOO_CONNECTED_STATE && cf_now_ms() < until;)
		drive(zh, ZOOKEEPER_READ | ZOOKEEPER_WRITE);
	return zh;
}

/* Whether path exists, asked through zh: ZOK or ZNONODE (or a failure). */
static int
real_exists(zhandle_t *zh, const char *path)
{
	Done		d = {false, ZSYSTEMERROR};

	if (zoo_aexists(zh, path, 0, exists_done, &d) == ZOK)
		pump(zh, &d);
	return d.rc;
}

/*
 * One handle makes an ephemeral node and is let go (drop) or closed; what
 * another handle sees of the node at once: real, then the model.
 */
static void
check_let_go(bool drop)
{
	States		sa = {{0}, 0};
	States		sb = {{0}, 0};
	zhandle_t  *a = connected_handle(TIMEOUT_MS * 2, &sa);
	zhandle_t  *b = connected_handle(LONG_MS, &sb);
	char		path[64];
	Done		d = {false, ZSYSTEMERROR};
	int64_t		t0;
	int			real_rc;
	int			model_rc;
	int64_t		took;
	Zkm		   *m;
	int			ma;
	int64_t		owner;
	int64_t		czxid;

	snprintf(path, sizeof(path), "/conform-%d-%s", (int) getpid(), drop ? "drop" : "close");
	if (zoo_acreate(a, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, create_done, &d) == ZOK)
		pump(a, &d);
	t0 = cf_now_ms();
	if (drop)
		zk_drop_handle(a);
	else
		zookeeper_close(a);
	took = cf_now_ms() - t0;
	real_rc = real_exists(b, path);
	zookeeper_close(b);

	/* the model: its leader's tree once the close or the drop is through */
	m = zkm_new(1, 1, 0);
	ma = zkm_open(m, TIMEOUT_MS * 2);
	while (!zkm_connected(m, ma))
		(void) zkm_step_reconnect(m, ma);
	{
		ZkmReq		q;
		ZkmMsg	   *msg;

		memset(&q, 0, sizeof(q));
		q.kind = ZKM_CREATE;
		q.flags = ZKM_F_EPHEMERAL;
		q.tag = 1;
		snprintf(q.path, sizeof(q.path), "%s", path);
		zkm_send(m, ma, &q);
		while (zkm_step_server(m, ma) || zkm_step_leader(m))
			;
		while ((msg = zkm_pop(m, ma)) != NULL)
			zkm_msg_free(msg);
	}
	if (drop)
		zkm_abandon(m, ma);
	else
		zkm_close(m, ma);
	model_rc = zkm_leader_node(m, path, &owner, &czxid) ? ZOK : ZNONODE;
	zkm_free(m);

	cf_compared++;
	if (d.rc != ZOK || real_rc != model_rc || took > 1000 || cf_verbose)
		printf("%s %s: the ephemeral node after it: real %s (made: %d), model %s; it took %ld ms\n",
			   d.rc != ZOK || real_rc != model_rc || took > 1000 ? "DIFFERS" : "same",
			   drop ? "a handle let go (zk_drop_handle)" : "a handle closed",
			   real_rc == ZOK ? "there" : "gone", d.rc, model_rc == ZOK ? "there" : "gone", (long) took);
	if (d.rc != ZOK || real_rc != model_rc || took > 1000)
		cf_differ++;
}

void
cf_check_sessions(void)
{
	States		real;
	States		model;

	zoo_set_debug_level(0);		/* the late answers' timeouts are logged as errors: none here */
	real_late(true, &real);
	model_late(true, &model);
	compare_states("a new session's answer read after it ended, before the library's timeout check",
				   &real, &model);
	real_late(false, &real);
	model_late(false, &model);
	compare_states("a new session's answer left unread past it, the library's timeout checked first",
				   &real, &model);
	check_let_go(true);
	check_let_go(false);
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
}
