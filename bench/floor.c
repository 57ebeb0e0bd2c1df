/*
 * floor.c — the ZooKeeper floor for one lock cycle on one session: what a
 * lock cycle cannot avoid (create an ephemeral sequential node and list its
 * siblings, pipelined, then delete the node), with libzookeeper_st's async
 * API and no PostgreSQL in the way.
 *
 *   floor HOST:PORT CYCLES INFLIGHT [BATCH]
 *   floor HOST:PORT CYCLES read        (serial getChildren: one read round trip)
 *
 * INFLIGHT lanes run cycles at once, each on its own key node.  With BATCH,
 * lanes go in groups of BATCH whose creates, and then deletes, are coalesced
 * into one multi each (the getChildren calls stay separate reads).
 * Prints "cycles_per_s <rate>" and the mean cycle latency.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <zookeeper/zookeeper.h>

#define MAX_LANES 256
#define PATHLEN 128

typedef struct Lane
{
	int			id;
	int			pending;		/* replies still due in this step */
	int			deleting;
	double		started;
	char		node[PATHLEN];
} Lane;

typedef struct Group
{
	int			first;			/* lanes first .. first+size-1 */
	int			size;
	int			pending;
	int			deleting;
	double		started;
	zoo_op_t	ops[MAX_LANES];
	zoo_op_result_t results[MAX_LANES];
	char		names[MAX_LANES][PATHLEN];
} Group;

static zhandle_t *zh;
static int	connected;
static long remaining;			/* cycles not yet started */
static long done;
static double latency_sum;
static Lane lanes[MAX_LANES];
static Group groups[MAX_LANES];

static double
now_s(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static void
watcher(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	if (type == ZOO_SESSION_EVENT)
		connected = (state == ZOO_CONNECTED_STATE);
}

static void
check(int rc, const char *what)
{
	if (rc != ZOK)
	{
		fprintf(stderr, "floor: %s: %s\n", what, zerror(rc));
		exit(1);
	}
}

/* One turn of the event loop: wait for the socket, then let the library work. */
static void
turn(void)
{
	int			fd;
	int			interest;
	struct timeval tv;
	struct pollfd pfd;
	int			ev = 0;

	check(zookeeper_interest(zh, &fd, &interest, &tv), "interest");
	pfd.fd = fd;
	pfd.events = (interest & ZOOKEEPER_READ ? POLLIN : 0) | (interest & ZOOKEEPER_WRITE ? POLLOUT : 0);
	pfd.revents = 0;
	if (poll(&pfd, fd >= 0 ? 1 : 0, (int) (tv.tv_sec * 1000 + tv.tv_usec / 1000)) > 0)
		ev = (pfd.revents & (POLLIN | POLLHUP | POLLERR) ? ZOOKEEPER_READ : 0) |
			(pfd.revents & POLLOUT ? ZOOKEEPER_WRITE : 0);
	zookeeper_process(zh, ev);
}

static void
ignore_string(int rc, const char *value, const void *data)
{
}

static void lane_start(Lane *l);
static void lane_deleted(int rc, const void *data);

/* create and getChildren both answered: delete the node */
static void
lane_step_done(Lane *l)
{
	if (--l->pending > 0)
		return;
	l->deleting = 1;
	check(zoo_adelete(zh, l->node, -1, lane_deleted, l), "delete");
}

static void
lane_created(int rc, const char *value, const void *data)
{
	Lane	   *l = (Lane *) data;

	check(rc, "create");
	strncpy(l->node, value, PATHLEN - 1);
	lane_step_done(l);
}

static void
lane_listed(int rc, const struct String_vector *strings, const void *data)
{
	check(rc, "getChildren");
	lane_step_done((Lane *) data);
}

static void
lane_deleted(int rc, const void *data)
{
	Lane	   *l = (Lane *) data;

	check(rc, "delete");
	done++;
	latency_sum += now_s() - l->started;
	lane_start(l);
}

static void
read_done(int rc, const struct String_vector *strings, const void *data)
{
	check(rc, "getChildren");
	done++;
}

/* CYCLES serial reads of one key node: the read round trip, on its own. */
static void
measure_reads(long cycles)
{
	double		t0 = now_s();
	long		i;

	for (i = 0; i < cycles; i++)
	{
		long		want = done + 1;

		check(zoo_aget_children(zh, "/bench_floor/k0", 0, read_done, NULL), "getChildren");
		while (done < want)
			turn();
	}
	printf("reads %ld seconds %.3f mean_latency_ms %.3f\n", cycles, now_s() - t0,
		   1000 * (now_s() - t0) / cycles);
}

static void
lane_start(Lane *l)
{
	char		path[PATHLEN];
	char		parent[PATHLEN];

	if (remaining <= 0)
		return;
	remaining--;
	l->started = now_s();
	l->deleting = 0;
	l->pending = 2;
	snprintf(parent, sizeof(parent), "/bench_floor/k%d", l->id);
	snprintf(path, sizeof(path), "/bench_floor/k%d/x-", l->id);
	check(zoo_acreate(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
					  lane_created, l), "create");
	check(zoo_aget_children(zh, parent, 0, lane_listed, l), "getChildren");
}

static void group_start(Group *g);
static void group_multi_done(int rc, const void *data);

/* the multi create and every getChildren answered: one multi deletes all */
static void
group_step_done(Group *g)
{
	int			i;

	if (--g->pending > 0)
		return;
	g->deleting = 1;
	for (i = 0; i < g->size; i++)
	{
		check(g->results[i].err, "create in multi");
		zoo_delete_op_init(&g->ops[i], g->names[i], -1);
	}
	check(zoo_amulti(zh, g->size, g->ops, g->results, group_multi_done, g), "multi delete");
}

static void
group_multi_done(int rc, const void *data)
{
	Group	   *g = (Group *) data;

	check(rc, "multi");
	if (g->deleting)
	{
		done += g->size;
		latency_sum += (now_s() - g->started) * g->size;
		group_start(g);
		return;
	}
	group_step_done(g);
}

static void
group_listed(int rc, const struct String_vector *strings, const void *data)
{
	check(rc, "getChildren");
	group_step_done((Group *) data);
}

static void
group_start(Group *g)
{
	char		parent[PATHLEN];
	static char paths[MAX_LANES][PATHLEN];
	int			i;

	if (remaining < g->size)
		return;
	remaining -= g->size;
	g->started = now_s();
	g->deleting = 0;
	g->pending = 1 + g->size;
	for (i = 0; i < g->size; i++)
	{
		snprintf(paths[g->first + i], PATHLEN, "/bench_floor/k%d/x-", g->first + i);
		zoo_create_op_init(&g->ops[i], paths[g->first + i], NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
						   ZOO_EPHEMERAL_SEQUENTIAL, g->names[i], PATHLEN);
	}
	check(zoo_amulti(zh, g->size, g->ops, g->results, group_multi_done, g), "multi create");
	for (i = 0; i < g->size; i++)
	{
		snprintf(parent, sizeof(parent), "/bench_floor/k%d", g->first + i);
		check(zoo_aget_children(zh, parent, 0, group_listed, g), "getChildren");
	}
}

int
main(int argc, char **argv)
{
	long		cycles;
	int			inflight;
	int			batch;
	int			reads;
	int			i;
	double		t0;
	double		elapsed;
	char		path[PATHLEN];

	if (argc < 4)
	{
		fprintf(stderr, "usage: floor HOST:PORT CYCLES INFLIGHT [BATCH]\n");
		return 2;
	}
	cycles = atol(argv[2]);
	reads = strcmp(argv[3], "read") == 0;
	inflight = reads ? 1 : atoi(argv[3]);
	batch = argc > 4 ? atoi(argv[4]) : 0;
	if (inflight < 1 || inflight > MAX_LANES || batch < 0 || (batch && inflight % batch))
	{
		fprintf(stderr, "floor: INFLIGHT must be 1..%d and a multiple of BATCH\n", MAX_LANES);
		return 2;
	}
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	zh = zookeeper_init(argv[1], watcher, 10000, NULL, NULL, 0);
	if (zh == NULL)
	{
		fprintf(stderr, "floor: zookeeper_init: %s\n", strerror(errno));
		return 1;
	}
	t0 = now_s();
	while (!connected && now_s() - t0 < 10)
		turn();
	if (!connected)
	{
		fprintf(stderr, "floor: could not connect to %s\n", argv[1]);
		return 1;
	}

	/* key nodes, one per lane (persistent; left for the next run) */
	zoo_acreate(zh, "/bench_floor", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, ignore_string, NULL);
	for (i = 0; i < inflight; i++)
	{
		snprintf(path, sizeof(path), "/bench_floor/k%d", i);
		zoo_acreate(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, ignore_string, NULL);
	}
	/* a read after them comes back after them: the session answers in order */
	remaining = 1;
	lanes[0].id = 0;
	lane_start(&lanes[0]);
	while (done < 1)
		turn();

	if (reads)
	{
		done = 0;
		measure_reads(cycles);
		zookeeper_close(zh);
		return 0;
	}
	remaining = cycles;
	done = 0;
	latency_sum = 0;
	t0 = now_s();
	if (batch)
	{
		for (i = 0; i < inflight / batch; i++)
		{
			groups[i].first = i * batch;
			groups[i].size = batch;
			group_start(&groups[i]);
		}
	}
	else
	{
		for (i = 0; i < inflight; i++)
		{
			lanes[i].id = i;
			lane_start(&lanes[i]);
		}
	}
	while (done < cycles - (batch ? cycles % batch : 0) && now_s() - t0 < 300)
		turn();
	elapsed = now_s() - t0;
	printf("cycles %ld seconds %.3f cycles_per_s %.0f mean_latency_ms %.3f\n",
		   done, elapsed, done / elapsed, done ? 1000 * latency_sum / done : 0);
	zookeeper_close(zh);
	return 0;
}
