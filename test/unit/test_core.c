/*
 * Unit tests of the worker's decisions (core.c) and a transaction's rules
 * (holds.c), one written-down interleaving each.  The simulator (test/sim)
 * explores interleavings at random; these pin the ones that once went wrong.
 * Prints "N passed, M failed".
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>	/* result codes */

#include "cohort.h"
#include "core.h"
#include "cutoff.h"
#include "resume.h"
#include "sigterm.h"
#include "clean_stop.h"
#include "gwait.h"
#include "book.h"
#include "holds.h"
#include "lock_delay.h"
#include "looks.h"
#include "table.h"
#include "check.h"
#include "core_batch.h"
#include "core_grant.h"
#include "core_plan.h"
#include "core_reply.h"
#include "gwait_doc.h"
#include "invariant.h"


#define NSLOTS 8

/* ---- a host for core.c: a clock, and what it was asked to do ---- */

static int64_t now_us = 1000000;
static int	claim_holders = 2;	/* holders of the next semaphore claim */
static uint64_t claim_group = 0;	/* group of the next claims (a multi-key request) */
static unsigned int uuid_counter;
static int	interrupts;
static bool paused;
static int64_t paused_until;
static int64_t noted_at;
static int64_t noted_session;

static int64_t
env_now(void *arg)
{
	return now_us;
}

static void
env_uuid(void *arg, char out[ZKL_UUID_LEN + 1])
{
	snprintf(out, ZKL_UUID_LEN + 1, "%08x-0000-4000-8000-000000000000", ++uuid_counter);
}

static void
env_wake(void *arg, ZklSlot *s)
{
}

static void
env_interrupt(void *arg, ZklSlot *s)
{
	interrupts++;
}

static void
env_denied(void *arg, const ZklSlot *s)
{
}

static bool
env_paused(void *arg, int64_t now, int64_t *until)
{
	*until = paused_until;
	return paused;
}

static void
env_suspect(void *arg, const ZklSlot *s, const char *name)
{
}

static bool
env_orphan(void *arg, const char *name)
{
	return false;
}

static int	ghosts;

static void
env_ghost(void *arg, const ZklSlot *s)
{
	ghosts++;
}

static void
env_proof(void *arg, int64_t sent_at, int64_t session)
{
	noted_at = sent_at;
	noted_session = session;
}

static const char *
env_text(int rc)
{
	return "error";
}

static int
env_sqlstate(int rc)
{
	return 1;
}

static int	warnings;

static void
env_warn(void *arg, const char *msg)
{
	warnings++;
}

static const ZklCoreEnv env = {
	NULL, env_now, env_now, env_uuid, env_wake, env_interrupt, env_denied, env_paused,
	env_suspect, env_orphan, env_ghost, env_proof, env_text, env_sqlstate, env_warn
};

static ZklTable table;
static ZklSlot slots[NSLOTS];
static ZklCore core;
static ZklOp ops[2 * NSLOTS];
static const char *mine[NSLOTS];
static bool held[NSLOTS];

static void
setup(void)
{
	memset(&table, 0, sizeof(table));
	memset(slots, 0, sizeof(slots));
	memset(&core, 0, sizeof(core));
	table.slots = slots;
	table.nslots = NSLOTS;
	table.conn_state = ZKC_CONNECTED;
	table.session_id = 0x100;
	table.session_tag = zc_table_session_tag(table.session_id, 0x5eed);
	table.negotiated_timeout = 4000;
	strcpy(table.roots[0], "/r");
	core.t = &table;
	core.env = &env;
	core.connect_timeout = 5000;
	core.proof_bound = 1000;
	core.ops = ops;
	core.mine = mine;
	core.held = held;
	paused = false;
	interrupts = 0;
	ghosts = 0;
	warnings = 0;
}

/* setup() with local hand-over on, and this linger (ms). */
static void
setup_handover(int linger_ms)
{
	setup();
	core.cohort.handover = true;
	core.cohort.linger_ms = linger_ms;
}

static int
claim(char mode, int pid)
{
	ZklRequest	r;
	char		uuid[ZKL_UUID_LEN + 1];
	int			idx = zc_table_find_free(&table);

	env_uuid(NULL, uuid);
	r.key = "tk";
	r.mode = mode;
	r.holders = mode == ZKL_MODE_SEMAPHORE ? claim_holders : 0;
	r.group = claim_group;
	r.nowait = false;
	r.scope = ZKL_SCOPE_XACT;
	r.data = "{}";
	r.procno = pid;
	r.pid = pid;
	r.now = now_us;
	r.uuid = uuid;
	zc_table_claim(&table, idx, &r);
	return idx;
}

/* Plan, and return the tag of slot idx's op of this kind (0: none planned). */
static uint64_t
planned(int idx, ZklOpKind kind)
{
	int			i;

	for (i = 0; i < core.nops; i++)
		if (ops[i].idx == idx && ops[i].kind == kind)
			return zc_core_tag(idx, ops[i].attempt);
	return 0;
}

/* The node name ZooKeeper gives slot idx's create, with this sequence. */
static const char *
node_of(int idx, int seq, char *buf)
{
	char		prefix[ZKL_NODE_BUFLEN];

	zc_table_node_prefix(&table, &slots[idx], slots[idx].uuid, 7, prefix, sizeof(prefix));
	sprintf(buf, "%s%010d", prefix, seq);
	return buf;
}

/* Create slot idx's node with this sequence and answer its listing with names[]. */
static void
create_and_list(int idx, int seq, const char *const *names, int n)
{
	char		name[ZKL_NODE_BUFLEN];
	uint64_t	tag;
	ZkrChild	kids[8];

	(void) zc_core_plan(&core, true, now_us);
	tag = planned(idx, OP_CREATE);
	CHECK(tag != 0, "a create is planned");
	(void) zc_core_create_reply(&core, tag, ZOK, node_of(idx, seq, name), true, 10 + seq);
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(names, n, kids), false);
}

/* Names of the nodes made so far, in queue order. */
static char made[4][ZKL_NODE_BUFLEN];
static const char *queue[4];

/* An exclusive holder (pid 1) and an exclusive waiter behind it (pid 2): their slots. */
static void
holder_and_waiter(int *d, int *w)
{
	*d = claim(ZKL_MODE_EXCLUSIVE, 1);
	queue[0] = node_of(*d, 0, made[0]);
	create_and_list(*d, 0, queue, 1);
	*w = claim(ZKL_MODE_EXCLUSIVE, 2);
	queue[1] = node_of(*w, 1, made[1]);
	create_and_list(*w, 1, queue, 2);
}

/* W re-reads its queue, and the listing shows only the first node (not W's). */
static void
listing_without(int w)
{
	ZkrChild	kids[4];

	(void) zc_core_plan(&core, true, now_us);
	slots[w].zk.todo |= ZKT_CHILDREN;
	(void) zc_core_plan(&core, true, now_us);
	zc_core_children_reply(&core, planned(w, OP_CHILDREN), ZOK, kids, zc_recipe_collect(queue, 1, kids),
						 false);
}

/* Slot idx's node was not seen; the lookup after a sync does not find it either. */
static void
lookup_finds_nothing(int idx)
{
	CHECK(slots[idx].zstate == ZKS_RECOVER, "a node not seen is looked up after a sync first");
	(void) zc_core_plan(&core, true, now_us);
	zc_core_recover_reply(&core, planned(idx, OP_RECOVER), ZOK, NULL, 0);
}

/*
 * After a worker restart, the new handle may reach a server that has not
 * applied our create: its listing misses our node.  The lookup after a
 * sync finds it: the same node is kept, not left to nobody for a new one.
 */
static void
test_listing_behind(void)
{
	int			d;
	int			w;

	setup();
	holder_and_waiter(&d, &w);
	listing_without(w);
	CHECK(slots[w].zstate == ZKS_RECOVER, "a listing without our node: looked up after a sync");
	(void) zc_core_plan(&core, true, now_us);
	zc_core_recover_reply(&core, planned(w, OP_RECOVER), ZOK, queue, 2);
	CHECK(slots[w].zstate == ZKS_QUEUED && strcmp(slots[w].node, made[1]) == 0,
		  "found: the same node is kept");
}

/*
 * A waiter re-checks its blocker now and then (a watch set again); every
 * fourth time it looks at its own node (one exists, not the queue): nothing
 * else tells it that its node was deleted from outside, and then it queues
 * again.
 */
static void
test_recheck_looks_at_own_node(void)
{
	char		stray[ZKL_PATH_LEN];
	int			d;
	int			w;
	int			i;

	setup();
	holder_and_waiter(&d, &w);
	CHECK(slots[w].zstate == ZKS_QUEUED, "W waits behind D");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(w, OP_WATCH) != 0, "it watches D");
	zc_core_watch_set_reply(&core, planned(w, OP_WATCH), ZOK, "{\"pid\":1}", 9);
	for (i = 1; i <= 3; i++)
	{
		now_us += 2001000;		/* recheck_ms: half the negotiated 4 s */
		(void) zc_core_plan(&core, true, now_us);
		CHECK(planned(w, OP_WATCH) != 0 && planned(w, OP_CHILDREN) == 0,
			  "a re-check sets the watch again, reading one node");
		zc_core_watch_set_reply(&core, planned(w, OP_WATCH), ZOK, "{\"pid\":1}", 9);
	}
	now_us += 2001000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(w, OP_STAT) != 0 && planned(w, OP_CHILDREN) == 0,
		  "the fourth looks at its own node, not at the queue");
	(void) zc_core_stat_reply(&core, planned(w, OP_STAT), ZOK, table.session_id, 77, stray);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].zstate == ZKS_QUEUED && core.nops == 0 && !(slots[w].zk.todo & ZKT_CHILDREN),
		  "still there: nothing more is read");
	for (i = 1; i <= 4; i++)
	{
		now_us += 2001000;
		(void) zc_core_plan(&core, true, now_us);
		if (planned(w, OP_WATCH) != 0)
			zc_core_watch_set_reply(&core, planned(w, OP_WATCH), ZOK, "{\"pid\":1}", 9);
	}
	CHECK(planned(w, OP_STAT) != 0, "four re-checks later it looks again");
	(void) zc_core_stat_reply(&core, planned(w, OP_STAT), ZNONODE, 0, 0, stray);
	lookup_finds_nothing(w);
	CHECK(slots[w].zstate == ZKS_NEW, "its node deleted from outside: it queues again");
}

/* A request of pid whose create's reply is lost, its lookup answered rc: its slot. */
static int
lookup_answered(int pid, int rc)
{
	int			a = claim(ZKL_MODE_EXCLUSIVE, pid);

	(void) zc_core_plan(&core, true, now_us);
	(void) zc_core_create_reply(&core, planned(a, OP_CREATE), ZCONNECTIONLOSS, "", false, 0);
	(void) zc_core_plan(&core, true, now_us);
	zc_core_recover_reply(&core, planned(a, OP_RECOVER), rc, NULL, 0);
	return a;
}

/*
 * ZooKeeper's refusals (an operator's ACL on the key node) and failures
 * inside a server.  A waiter whose read is refused cannot learn its turn:
 * it fails with 42501 and gives its place up.  A refused delete leaves a
 * node that blocks the key: it is sent again each re-check interval, with
 * one warning.  An answer that is not a known refusal (ZMARSHALLINGERROR
 * comes after the change took effect) leaves the outcome unknown: a
 * create's node is looked up; a refused lookup fails the request, and the
 * slot looks again later, to delete the node if it stands.
 */
static void
test_refusals(void)
{
	int			d;
	int			w;
	int			a;
	uint64_t	tag;

	setup();
	holder_and_waiter(&d, &w);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(w, OP_WATCH);
	CHECK(tag != 0, "W watches D");
	zc_core_watch_set_reply(&core, tag, ZNOAUTH, NULL, 0);
	CHECK(slots[w].ans.result == ZKL_RESULT_PENDING && slots[w].zstate == ZKS_QUEUED,
		  "a refused watch on D (an ACL on D's node) leaves W to its re-checks");
	/*
	 * The watch-setting read answered ZSESSIONEXPIRED (a leader closing the
	 * session; an election may undo it): nothing is watched, and the queue
	 * is read again a second later, not at the next re-check interval.
	 */
	now_us += 2001000;
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(w, OP_WATCH);
	CHECK(tag != 0, "W's re-check sets its watch again");
	zc_core_watch_set_reply(&core, tag, ZSESSIONEXPIRED, NULL, 0);
	CHECK(slots[w].watch[0] == '\0', "answered ZSESSIONEXPIRED: W watches nothing");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(w, OP_CHILDREN) == 0, "not read at once");
	now_us += 1001000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(w, OP_CHILDREN) != 0, "its queue is read a second later");

	a = claim(ZKL_MODE_EXCLUSIVE, 3);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(a, OP_CREATE);
	(void) zc_core_create_reply(&core, tag, ZOK, node_of(a, 2, made[2]), true, 12);
	zc_core_children_reply(&core, tag, ZNOAUTH, NULL, 0, false);
	CHECK(slots[a].ans.result == ZKL_RESULT_FAILED && slots[a].ans.sqlstate == ZKL_SQLSTATE('4', '2', '5', '0', '1'),
		  "a refused queue read fails the request with 42501");
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(a, OP_DELETE);
	CHECK(slots[a].zstate == ZKS_DELETING && tag != 0, "and gives its place up");
	zc_core_delete_reply(&core, tag, ZOK);
	(void) zc_table_abandon(&table, &slots[a]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[a].zstate == ZKS_FREE, "its node deleted, the slot is free");

	(void) zc_table_abandon(&table, &slots[d]);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(d, OP_DELETE);
	CHECK(tag != 0, "D's release deletes its node");
	zc_core_delete_reply(&core, tag, ZNOAUTH);
	CHECK(slots[d].zstate == ZKS_DELETING && warnings == 1, "refused: kept, said once");
	now_us += 1000000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(d, OP_DELETE) == 0, "not sent again at once");
	now_us += 1001000;			/* recheck_ms: half the negotiated 4 s */
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(d, OP_DELETE);
	CHECK(tag != 0, "sent again a re-check interval later");
	zc_core_delete_reply(&core, tag, ZNOAUTH);
	CHECK(warnings == 1, "a refusal again is not said again");
	now_us += 2001000;
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(d, OP_DELETE);
	zc_core_delete_reply(&core, tag, ZOK);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[d].zstate == ZKS_FREE, "deleted at last, the slot is free");

	a = claim(ZKL_MODE_EXCLUSIVE, 3);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(a, OP_CREATE);
	(void) zc_core_create_reply(&core, tag, ZMARSHALLINGERROR, "", false, 0);
	CHECK(slots[a].zstate == ZKS_RECOVER, "a create answered by a server's failure is looked up");
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(a, OP_RECOVER);
	CHECK(tag != 0, "the lookup is sent");
	zc_core_recover_reply(&core, tag, ZNOAUTH, NULL, 0);
	CHECK(slots[a].ans.result == ZKL_RESULT_FAILED && slots[a].zstate == ZKS_RECOVER,
		  "a refused lookup fails the request; the slot stays to look for the node");
	(void) zc_table_abandon(&table, &slots[a]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(a, OP_RECOVER) == 0, "not at once");
	now_us += 1001000;
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(a, OP_RECOVER);
	CHECK(tag != 0, "a second later it looks again");
	{
		const char *names[1];
		char		name[ZKL_NODE_BUFLEN];

		names[0] = node_of(a, 5, name);
		zc_core_recover_reply(&core, tag, ZOK, names, 1);
	}
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[a].zstate == ZKS_DELETING && planned(a, OP_DELETE) != 0,
		  "found, the node of the request given up is deleted");

	/*
	 * A leader closing the session answers the lookup ZSESSIONEXPIRED at
	 * once, and an election may undo the close: the lookup is sent again a
	 * second later (before, the request waited for ever in RECOVERING).
	 */
	a = lookup_answered(7, ZSESSIONEXPIRED);
	CHECK(slots[a].ans.result == ZKL_RESULT_PENDING && slots[a].zstate == ZKS_RECOVER, "it looks again");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(a, OP_RECOVER) == 0, "not at once");
	now_us += 1001000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(a, OP_RECOVER) != 0, "a second later");
	(void) zc_table_abandon(&table, &slots[a]);

	/* a refused lookup's request failed: the session's end must not queue it again */
	a = lookup_answered(4, ZNOAUTH);
	CHECK(slots[a].ans.result == ZKL_RESULT_FAILED && slots[a].zstate == ZKS_RECOVER, "failed, looked for later");
	zc_core_session_lost(&core);
	(void) zc_core_plan(&core, false, now_us);
	CHECK(slots[a].zstate == ZKS_GONE && planned(a, OP_CREATE) == 0,
		  "the session gone, so is its node: nothing is created for the failed request");

	/*
	 * The key node's create refused (an ACL on the root), the node's create
	 * right behind it: its answer decides.  Made, the request goes on (its
	 * node must not be left to nobody); refused for want of the key node,
	 * it fails with 42501.
	 */
	a = claim(ZKL_MODE_EXCLUSIVE, 5);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(a, OP_CREATE);
	zc_core_key_node_reply(&core, tag, ZNOAUTH);
	CHECK(slots[a].ans.result == ZKL_RESULT_PENDING, "a refused key node alone fails nothing");
	(void) zc_core_create_reply(&core, tag, ZOK, node_of(a, 9, made[3]), true, 19);
	CHECK(slots[a].zstate == ZKS_QUEUED, "the key node was there: the node is queued");
	d = claim(ZKL_MODE_EXCLUSIVE, 6);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(d, OP_CREATE);
	zc_core_key_node_reply(&core, tag, ZNOAUTH);
	(void) zc_core_create_reply(&core, tag, ZNONODE, "", false, 0);
	CHECK(slots[d].ans.result == ZKL_RESULT_FAILED && slots[d].ans.sqlstate == ZKL_SQLSTATE('4', '2', '5', '0', '1'),
		  "no key node, and we may not make it: 42501");
}

/*
 * A waiter's stale predecessor: W waits behind local holder D (its only
 * blocker).  W's node vanishes; W queues again, its create's reply is lost
 * and the lookup adopts its new node.  Then D's node is deleted: that must
 * not grant W, whose new place it has not read yet.
 */
static void
test_stale_watch(void)
{
	int			d;
	int			w;
	uint64_t	tag;

	setup();
	holder_and_waiter(&d, &w);
	CHECK(slots[d].ans.result == ZKL_RESULT_GRANTED, "first node granted");
	CHECK(slots[w].zstate == ZKS_QUEUED && slots[w].zk.watch_sole, "second waits on the first alone");

	/* W's node is gone from a listing: it queues again */
	listing_without(w);
	lookup_finds_nothing(w);
	CHECK(slots[w].zstate == ZKS_NEW, "requeued");
	CHECK(slots[w].watch[0] == '\0' && !slots[w].zk.watch_sole, "requeue forgets the watched node");

	/* its create's reply is lost; the lookup finds the node and adopts it */
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(w, OP_CREATE);
	(void) zc_core_create_reply(&core, tag, ZCONNECTIONLOSS, "", false, 0);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(w, OP_RECOVER);
	queue[1] = node_of(w, 2, made[2]);
	zc_core_recover_reply(&core, tag, ZOK, queue, 2);
	CHECK(slots[w].zstate == ZKS_QUEUED && slots[w].watch[0] == '\0', "adopted, no watch yet");

	/* D releases: its delete's reply must not grant W */
	(void) zc_table_abandon(&table, &slots[d]);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(d, OP_DELETE);
	CHECK(tag != 0, "the holder's delete is planned");
	zc_core_delete_reply(&core, tag, ZOK);
	CHECK(slots[w].ans.result == ZKL_RESULT_PENDING, "a stale predecessor grants nothing");
}

/* The local hand-over: a waiter whose only blocker is a local holder is granted by the delete's reply. */
static void
test_local_handover(void)
{
	int			d;
	int			w;
	uint64_t	tag;

	setup();
	holder_and_waiter(&d, &w);
	(void) zc_table_abandon(&table, &slots[d]);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(d, OP_DELETE);
	zc_core_delete_reply(&core, tag, ZOK);
	CHECK(slots[w].ans.result == ZKL_RESULT_GRANTED, "granted by the delete's reply");
	CHECK(slots[d].zstate == ZKS_FREE, "the released slot is free");
}

/* A grant during a lock-delay waits; the queue is read again once it ends. */
static void
test_lock_delay(void)
{
	char		n0[ZKL_NODE_BUFLEN];
	const char *list[1];
	int			s;

	setup();
	paused = true;
	paused_until = now_us + 2000000;
	s = claim(ZKL_MODE_EXCLUSIVE, 1);
	list[0] = node_of(s, 0, n0);
	create_and_list(s, 0, list, 1);
	CHECK(slots[s].ans.result == ZKL_RESULT_PENDING && slots[s].zk.delayed_until == paused_until,
		  "no grant during a lock-delay");
	now_us += 1000000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(s, OP_CHILDREN) == 0, "nothing read while it lasts");
	now_us += 1000001;
	paused = false;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(s, OP_CHILDREN) != 0, "the queue is read again when it ends");
}

/* The session ends: holders are lost (and told), waiters queue again. */
static void
test_session_lost(void)
{
	int			h;
	int			w;

	setup();
	holder_and_waiter(&h, &w);
	zc_core_session_lost(&core);
	CHECK(slots[h].ans.result == ZKL_RESULT_LOST && interrupts == 1, "the holder lost its lock and was told");
	CHECK(slots[w].zstate == ZKS_NEW && slots[w].ans.result == ZKL_RESULT_PENDING, "the waiter queues again");
	CHECK(table.session_id == 0, "no session");
}

/*
 * The session ends while the holder's commit is past its check (held.c's
 * mark): the lock is lost all the same, but its owner is not cancelled,
 * which would cut the rest of its commit in half (postgres_fdw's remote
 * commits done, the local one not).
 */
static void
test_session_lost_past_commit_check(void)
{
	int			h;
	int			w;

	setup();
	holder_and_waiter(&h, &w);
	slots[h].own.committing = true;
	zc_core_session_lost(&core);
	CHECK(slots[h].ans.result == ZKL_RESULT_LOST, "the holder past its commit check lost its lock");
	CHECK(interrupts == 0, "and its commit was not cancelled");
}

/* An exclusive request of pid 1, alone on its key: granted; its slot. */
static int
lone_holder(void)
{
	static char n0[ZKL_NODE_BUFLEN];
	const char *list[1];
	int			s = claim(ZKL_MODE_EXCLUSIVE, 1);

	list[0] = node_of(s, 0, n0);
	create_and_list(s, 0, list, 1);
	return s;
}

/*
 * A held node deleted behind its owner's back, seen missing from a later
 * listing of its key (here the owner's own shared request behind it): it is
 * looked up and lost, instead of holding the key here for ever.
 */
static void
test_unlisted_hold_lost(void)
{
	char		stray[ZKL_PATH_LEN];
	char		n1[ZKL_NODE_BUFLEN];
	const char *list[1];
	int			h;
	int			r;

	setup();
	h = lone_holder();
	CHECK(slots[h].zstate == ZKS_HELD, "granted");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(h, OP_STAT) == 0, "nothing to look up while its node is listed");
	r = claim(ZKL_MODE_SHARED, 1);
	list[0] = node_of(r, 1, n1);
	create_and_list(r, 1, list, 1);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(h, OP_STAT) != 0, "a listing without the held node: it is looked up");
	(void) zc_core_stat_reply(&core, planned(h, OP_STAT), ZNONODE, 0, 0, stray);
	CHECK(slots[h].ans.result == ZKL_RESULT_LOST, "gone: the lock is lost");

	/* a look that finds it (the listing was older): still held */
	setup();
	h = lone_holder();
	r = claim(ZKL_MODE_SHARED, 1);
	create_and_list(r, 1, list, 1);
	(void) zc_core_plan(&core, true, now_us);
	(void) zc_core_stat_reply(&core, planned(h, OP_STAT), ZOK, table.session_id, 10, stray);
	CHECK(slots[h].zstate == ZKS_HELD && slots[h].ans.result == ZKL_RESULT_GRANTED, "found: still held");
}

/*
 * A worker restarted (after an ERROR, or pg_terminate_backend) while a
 * commit waited for its held node to be verified: the answer may be lost
 * with the old process, so the new one asks again.
 */
static void
test_restart_verify(void)
{
	int			s;

	setup();
	s = lone_holder();
	CHECK(slots[s].zstate == ZKS_HELD, "granted");
	slots[s].own.verify = ZKV_ASKED;
	slots[s].zk.todo |= ZKT_VERIFY;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(s, OP_VERIFY) != 0, "the verify is sent");
	CHECK(!(slots[s].zk.todo & ZKT_VERIFY), "and no longer owed");
	zc_core_worker_restarted(&core);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(s, OP_VERIFY) != 0, "a restarted worker sends it again");
}

/* While locks are held, a commit proof is kept fresh; its reply notes the send time. */
static void
test_proof(void)
{
	int			s;

	setup();
	s = lone_holder();
	CHECK(noted_at == slots[s].zk.sent_at, "the create's answer is a proof");
	now_us += 600000;
	(void) zc_core_plan(&core, true, noted_at);
	CHECK(core.proof_due, "a proof older than half the bound is renewed");
	core.proof_sent = now_us;
	zc_core_proof_sent(&core, true);
	zc_core_proof_reply(&core, core.proof_gen, ZSESSIONEXPIRED);
	CHECK(noted_at != now_us, "a session error proves nothing");
	zc_core_proof_sent(&core, true);
	zc_core_proof_reply(&core, core.proof_gen + 1, ZOK);
	CHECK(noted_at != now_us, "a reply from an old handle proves nothing");
	zc_core_proof_reply(&core, core.proof_gen, ZOK);
	CHECK(noted_at == now_us && noted_session == table.session_tag && noted_session != table.session_id, "the leader's answer proves the session, by its incarnation's tag");
}

/*
 * A resumed session: a connection back to the id the worker had may be
 * another session's (the id handed out again), so it proves nothing until
 * this incarnation's presence node is seen (resume.h).
 */
static void
test_resume(void)
{
	bool		lost;
	int			s;

	CHECK(zc_resume_connected(true, 0, 0x100, &lost) == ZKL_CONN_NEW && !lost,
		  "a fresh handle's first session: new");
	CHECK(zc_resume_connected(false, 0x100, 0x100, &lost) == ZKL_CONN_CONFIRM && !lost,
		  "the id resumed: ours only once confirmed, nothing lost yet");
	CHECK(zc_resume_connected(false, 0x100, 0x200, &lost) == ZKL_CONN_NEW && lost,
		  "another id than the one resumed: the old session is lost, this one is new");
	CHECK(zc_resume_connected(true, 0x100, 0x100, &lost) == ZKL_CONN_NEW && lost,
		  "a fresh handle given the old id again: a new incarnation, the old one is over");

	CHECK(zc_resume_confirmed(ZOK, 0x100, 0x100) == ZKL_CONFIRM_OURS,
		  "the node is there, owned by the id: ours");
	CHECK(zc_resume_confirmed(ZNONODE, 0, 0x100) == ZKL_CONFIRM_ENDED,
		  "the node is gone: the session ended (its id is another's now)");
	CHECK(zc_resume_confirmed(ZOK, 0x200, 0x100) == ZKL_CONFIRM_ENDED &&
		  zc_resume_confirmed(ZOK, 0, 0x100) == ZKL_CONFIRM_ENDED,
		  "a node of that name no session of the id made: not ours");
	CHECK(zc_resume_confirmed(ZCONNECTIONLOSS, 0, 0x100) == ZKL_CONFIRM_AGAIN &&
		  zc_resume_confirmed(ZMARSHALLINGERROR, 0, 0x100) == ZKL_CONFIRM_AGAIN,
		  "no answer: ask again");
	CHECK(zc_resume_confirmed(ZNOAUTH, 0, 0x100) == ZKL_CONFIRM_AGAIN &&
		  zc_resume_confirmed(-1, 0, 0x100) == ZKL_CONFIRM_AGAIN &&
		  zc_resume_confirmed(-127, 0, 0x100) == ZKL_CONFIRM_AGAIN,
		  "an answer not to trust (a refused, failed or throttled request): ask again, never end a live session");
	CHECK(zc_resume_confirmed(ZSESSIONEXPIRED, 0, 0x100) == ZKL_CONFIRM_WAIT,
		  "the session ends: its event decides");

	/* until then a leader's answer is no commit proof, nor is anything planned */
	setup();
	s = lone_holder();
	noted_at = 0;
	table.conn_state = ZKC_CONNECTING;	/* (session.c: a resumed connection, not yet confirmed) */
	core.proof_sent = now_us;
	zc_core_proof_sent(&core, true);
	zc_core_proof_reply(&core, core.proof_gen, ZOK);
	CHECK(noted_at == 0, "a reply before the confirmation proves nothing");
	(void) zc_core_plan(&core, false, 0);
	CHECK(core.nops == 0 && !core.proof_due, "nothing is sent meanwhile");
	CHECK(slots[s].zstate == ZKS_HELD, "the holder keeps its lock meanwhile");
	table.conn_state = ZKC_CONNECTED;
	zc_core_reconnected(&core);
	zc_core_proof_sent(&core, true);
	zc_core_proof_reply(&core, core.proof_gen, ZOK);
	CHECK(noted_at == now_us, "once confirmed, the leader's answers prove the session again");
}

/* Nodes in slot order: the lower slot's was created first. */
static bool
slot_order(void *arg, int a, int b)
{
	return a < b;
}

static void
test_holds(void)
{
	ZklHold		h[3] = {{0, 'x', "ta", 0, 0}, {1, 's', "ta", 1, 0}, {2, 'x', "tb", 0, 0}};
	ZklHold		sess = {3, 'x', "tc", 1, 2};
	ZklXactProof p;
	ZklHold		down[2] = {{0, 's', "ta", 0, 1}, {1, 'x', "ta", 0, 0}};

	CHECK(zc_holds_keeps_node(h, 3, 0, slot_order, NULL),
		  "a node stays while the key's other mode is held through a later node");
	CHECK(!zc_holds_keeps_node(h, 3, 2, slot_order, NULL), "a node of a key no longer held goes");
	CHECK(!zc_holds_keeps_node(down, 2, 1, slot_order, NULL),
		  "a downgrade: the exclusive node goes while the shared one from before is held");

	memset(&p, 0, sizeof(p));
	CHECK(zc_holds_commit_verdict(&p, false, false, 0, 0, 0, 0, 1000) == ZKH_COMMIT, "no lock, nothing to prove");
	zc_holds_granted(&p, 7);
	CHECK(zc_holds_commit_verdict(&p, false, false, 5000000, 7, 7, 5500000, 1000) == ZKH_COMMIT, "fresh proof");
	CHECK(zc_holds_commit_verdict(&p, false, false, 5000000, 7, 7, 6000000, 1000) == ZKH_WAIT, "proof as old as the bound");
	CHECK(zc_holds_commit_verdict(&p, false, false, 5000000, 7, 8, 5500000, 1000) == ZKH_ENDED, "the session changed");
	{
		/* ZooKeeper hands the id out again to this cluster: another incarnation, another tag */
		ZklXactProof q = p;
		int64_t		next = zc_table_session_tag(0x100, 0xbeef);

		q.session = zc_table_session_tag(0x100, 0x5eed);
		CHECK(next != q.session && next != 0 && zc_table_session_tag(0, 0x5eed) == 0 &&
			  zc_table_session_tag(0x100, 0x100) != 0, "one id, two incarnations: two tags, never 0 for a session");
		CHECK(zc_holds_commit_verdict(&q, false, false, 5000000, next, next, 5500000, 1000) == ZKH_ENDED,
			  "a lock of the id's earlier incarnation is not proven by the next one's leader");
	}
	CHECK(zc_holds_commit_verdict(&p, false, true, 5000000, 7, 7, 5500000, 1000) == ZKH_LOST, "a held lock is lost");
	zc_holds_released(&p, "ta", true);
	CHECK(zc_holds_commit_verdict(&p, false, false, 5000000, 7, 7, 5500000, 1000) == ZKH_LOST,
		  "unlocking a lost lock does not undo the loss");
	memset(&p, 0, sizeof(p));
	zc_holds_granted(&p, 7);
	zc_holds_granted(&p, 9);
	CHECK(zc_holds_commit_verdict(&p, false, false, 5000000, 9, 9, 5500000, 1000) == ZKH_TWO_SESSIONS,
		  "granted by two sessions");

	/* a lost session-level lock stays lost until acknowledged */
	memset(&p, 0, sizeof(p));
	CHECK(zc_holds_commit_verdict(&p, true, false, 0, 0, 0, 0, 1000) == ZKH_SESSION_LOST,
		  "a lost session-level lock fails even a commit that took no lock");
	CHECK(!zc_holds_loss_unacknowledged(&sess, false), "a session-level lock not lost is no loss");
	CHECK(zc_holds_loss_unacknowledged(&sess, true), "a lost session-level lock is a loss");
	CHECK(!zc_holds_acknowledge(&sess, false) && sess.nsession == 2, "nothing to acknowledge while not lost");
	CHECK(zc_holds_acknowledge(&sess, true) && sess.nsession == 0 && sess.nxact == 1,
		  "the acknowledgement drops the session-level holds only");
	CHECK(!zc_holds_loss_unacknowledged(&sess, true), "an acknowledged loss is no longer one");
	sess.nsession = 0;
	CHECK(!zc_holds_loss_unacknowledged(&sess, true), "a lost transaction-level lock is the transaction's rule");
}

/* ---- a host for book.c: heap memory, and a record of what it was told ---- */

static bool book_lost_slot[NSLOTS];
static uint8_t book_scope_of[NSLOTS];
static int	book_given_up[4 * NSLOTS];
static int	book_ngiven_up;

static void *
bh_alloc(void *arg, size_t n)
{
	return malloc(n);
}

static void *
bh_grow(void *arg, void *p, size_t n)
{
	return realloc(p, n);
}

static void
bh_release(void *arg, void *p)
{
	free(p);
}

static bool
bh_lost(void *arg, int slot)
{
	return book_lost_slot[slot];
}

static void
bh_scope(void *arg, int slot, uint8_t scope)
{
	book_scope_of[slot] = scope;
}

static void
bh_abandon(void *arg, const int *slots, int n)
{
	while (n-- > 0)
		book_given_up[book_ngiven_up++] = *slots++;
}

static const ZkbHost book_host = {NULL, bh_alloc, bh_grow, bh_release, bh_lost, bh_scope, bh_abandon,
	slot_order};

/* Whether the book gave slot up (since the last reset of the record). */
static bool
given_up(int slot)
{
	int			i;

	for (i = 0; i < book_ngiven_up; i++)
		if (book_given_up[i] == slot)
			return true;
	return false;
}

/*
 * A backend's book (book.c), the bookkeeping xact.c and the simulator
 * share: stacking, savepoints, a node kept for the key's other mode, the
 * end of each level, and a lost session-level lock that stays until
 * acknowledged.
 */
static void
test_book(void)
{
	ZklBook		b;
	char		first[ZKL_KEY_BUFLEN];
	int			pend[2] = {5, 6};

	memset(&b, 0, sizeof(b));
	memset(book_lost_slot, 0, sizeof(book_lost_slot));
	book_ngiven_up = 0;
	b.host = &book_host;

	/* stacking across savepoints: a rolled-back one gives up what it took, a released one passes it up */
	zc_book_add(&b, 0, "ka", 'x', 7, false, 1);
	CHECK(b.n == 1 && b.h[0].nxact == 1 && book_scope_of[0] == ZKL_SCOPE_XACT && b.proof.session == 7,
		  "granted: held at transaction level, under session 7");
	zc_book_stack(&b, 0, false, 2);
	zc_book_stack(&b, 0, false, 3);
	zc_book_subxact_commit(&b, 3, 2);
	CHECK(b.h[0].nxact == 3 && b.x[0].ndepth == 2, "a released savepoint's acquisition joins its parent's");
	zc_book_subxact_abort(&b, 2);
	CHECK(b.h[0].nxact == 1 && !given_up(0), "a rolled-back savepoint undoes its two, the first stays");
	zc_book_add(&b, 1, "kb", 'x', 7, false, 4);
	zc_book_subxact_abort(&b, 4);
	CHECK(b.n == 1 && given_up(1), "a lock taken only inside the rolled-back savepoint goes");
	zc_book_set_pending(&b, pend, 1);
	zc_book_subxact_abort(&b, 5);
	CHECK(b.npending == 0 && given_up(5), "a request waited for in a rolled-back savepoint is given up");
	book_ngiven_up = 0;

	/* a node kept for the key's other mode; a pending request given up at the level's end */
	zc_book_add(&b, 2, "ka", 's', 7, true, 1);
	CHECK(zc_book_unlock(&b, "ka", 'x', false) && b.n == 2 && !given_up(0) && book_scope_of[0] == 0,
		  "unlocked, but the node stays while the key is held shared");
	CHECK(!zc_book_unlock(&b, "ka", 's', false), "a session-level lock is not unlocked at transaction level");
	zc_book_set_pending(&b, pend, 2);
	zc_book_add(&b, 5, "kc", 'x', 7, false, 1);
	CHECK(b.npending == 1 && b.pending[0] == 6, "a granted slot is no longer pending");
	zc_book_xact_end(&b);
	CHECK(b.n == 2 && given_up(5) && given_up(6) && !given_up(2) && b.proof.session == 0,
		  "the transaction's end: its locks and the pending request go, the session-level one stays");
	CHECK(!zc_book_holds_xact_locks(&b), "no transaction-level lock left");

	/* a lost session-level lock: every level's end keeps it, until acknowledged */
	book_lost_slot[2] = true;
	CHECK(zc_book_unacknowledged_loss(&b) >= 0, "lost: unacknowledged");
	zc_book_xact_end(&b);
	zc_book_subxact_abort(&b, 9);
	CHECK(zc_book_unacknowledged_loss(&b) >= 0 && !given_up(2), "no transaction end forgets it");
	CHECK(!zc_book_acknowledge(&b, "ka", 'x', first), "an unlock of the other mode acknowledges nothing");
	CHECK(zc_book_acknowledge(&b, "ka", 's', first) && strcmp(first, "ka") == 0 && given_up(2),
		  "its own unlock acknowledges it and gives it up");
	CHECK(b.proof.lost_key != NULL && strcmp(b.proof.lost_key, "ka") == 0 && b.proof.session == 7,
		  "the acknowledging transaction ran under the lost lock: its commit fails");
	CHECK(given_up(0) && b.n == 0, "the other mode's node, kept for it, went with it");
	zc_book_xact_end(&b);

	/* DISCARD ALL gives up everything; alone, its commit has nothing to prove */
	book_ngiven_up = 0;
	zc_book_add(&b, 3, "kd", 'x', 8, true, 1);
	zc_book_stack(&b, 0, true, 1);
	book_lost_slot[3] = true;
	zc_book_discard_all(&b, true);
	CHECK(b.n == 0 && given_up(3) && b.proof.session == 0 && b.proof.lost_key == NULL,
		  "DISCARD ALL, alone: everything goes, nothing to prove");
	book_lost_slot[3] = false;

	/* many locks: the book grows, and gives them up in batches */
	book_ngiven_up = 0;
	{
		char		key[8];
		int			i;

		for (i = 0; i < 20; i++)
		{
			snprintf(key, sizeof(key), "k%d", i);
			zc_book_add(&b, i % NSLOTS, key, 'x', 8, i % 2 == 0, 1);
		}
		zc_book_stack(&b, 19, false, 2);
		zc_book_stack(&b, 19, false, 3);
		zc_book_stack(&b, 19, false, 4);
		zc_book_stack(&b, 19, false, 5);
		CHECK(b.n == 20 && b.x[19].ndepth == 5, "twenty locks, one five savepoints deep");
		zc_book_at_commit(&b);
		zc_book_unlock_all(&b, true);
		CHECK(b.n == 10 && book_ngiven_up == 10, "zk_session_unlock_all: the ten session-level ones go");
		zc_book_release_level(&b, true);
		CHECK(b.n == 0 && book_ngiven_up == 20, "the backend's exit: all of them");
	}
	zc_book_free(&b);
}

/* A name of the sessions' list: id, nonce (0: an earlier version's), kind. */
static ZklSessionName
sname(int64_t id, uint64_t nonce, int kind)
{
	ZklSessionName n;

	n.id = id;
	n.nonce = nonce;
	n.kind = kind;
	return n;
}

/* The sessions' names, read and written (lock_delay.c). */
static void
test_session_names(void)
{
	ZklSessionName n;
	char		buf[ZLD_NAME_LEN];

	CHECK(zc_delay_parse_name("000000000000000a", &n) && n.id == 0xa && n.nonce == 0 &&
		  n.kind == ZKL_NAME_PRESENCE, "an earlier version's presence node: no nonce");
	CHECK(zc_delay_parse_name("000000000000000a.dead", &n) && n.id == 0xa && n.nonce == 0 &&
		  n.kind == ZKL_NAME_DEAD, "an earlier version's .dead, not a nonce 0xdead");
	CHECK(zc_delay_parse_name("000000000000000a.closed", &n) && n.nonce == 0 && n.kind == ZKL_NAME_CLOSED,
		  "an earlier version's .closed");
	CHECK(zc_delay_parse_name("000000000000000a.00000000000000ff", &n) && n.id == 0xa &&
		  n.nonce == 0xff && n.kind == ZKL_NAME_PRESENCE, "a presence node with its nonce");
	CHECK(zc_delay_parse_name("000000000000000a.000000000000dead.dead", &n) && n.nonce == 0xdead &&
		  n.kind == ZKL_NAME_DEAD, "a .dead with its nonce");
	CHECK(zc_delay_parse_name("ffffffffffffffff.8000000000000001.closed", &n) && n.id == -1 &&
		  n.nonce == UINT64_C(0x8000000000000001) && n.kind == ZKL_NAME_CLOSED, "the extremes");
	CHECK(!zc_delay_parse_name("junk", &n) && !zc_delay_parse_name("000000000000000a.ff", &n) &&
		  !zc_delay_parse_name("000000000000000a.00000000000000ff.gone", &n) &&
		  !zc_delay_parse_name("000000000000000a.closed.dead", &n) &&
		  !zc_delay_parse_name("000000000000000a.00000000000000FF", &n),
		  "anything else is not ours");
	n = sname(0xa, 0xff, ZKL_NAME_CLOSED);
	zc_delay_format_name(buf, sizeof(buf), &n);
	CHECK(strcmp(buf, "000000000000000a.00000000000000ff.closed") == 0, "a tombstone's name");
	n = sname(0xa, 0, ZKL_NAME_DEAD);
	zc_delay_format_name(buf, sizeof(buf), &n);
	CHECK(strcmp(buf, "000000000000000a.dead") == 0, "an earlier version's, to sweep it");
	n = sname(-1, UINT64_MAX, ZKL_NAME_CLOSED);
	zc_delay_format_name(buf, sizeof(buf), &n);
	CHECK(strlen(buf) + 1 <= ZLD_NAME_LEN, "the longest name fits");
}

static void
test_lock_delay_rules(void)
{
	ZklSessionName ab[2] = {sname(0xa, 1, 0), sname(0xb, 2, 0)};
	ZklSessionName a[1] = {sname(0xa, 1, 0)};
	ZklSessionName abc[3] = {sname(0xa, 1, 0), sname(0xb, 2, 0), sname(0xc, 3, 0)};
	ZklSessionName b_closed[1] = {sname(0xb, 2, ZKL_NAME_CLOSED)};
	ZklSessionName b_dead[1] = {sname(0xb, 2, ZKL_NAME_DEAD)};
	ZklSessionName b_earlier[1] = {sname(0xb, 7, ZKL_NAME_CLOSED)};
	ZklSessionName b_unmarked[1] = {sname(0xb, 0, ZKL_NAME_CLOSED)};
	ZklSessionName a_old_b[2] = {sname(0xa, 1, 0), sname(0xb, 0, 0)};
	ZklSessionName a_b2[2] = {sname(0xa, 1, 0), sname(0xb, 8, 0)};
	ZklListing	before = {ab, 2, NULL, 0, 10};
	ZklListing	after = {ab, 2, NULL, 0, 10};
	int64_t		until;

	CHECK(zc_delay_died(NULL, &after), "the first listing cannot tell what died before it");
	CHECK(!zc_delay_died(&before, &after), "nothing changed");
	after.live = a;
	after.nlive = 1;
	after.cversion = 11;
	CHECK(zc_delay_died(&before, &after), "a session gone without a tombstone died");
	after.dead = b_closed;
	after.ndead = 1;
	after.cversion = 12;
	CHECK(!zc_delay_died(&before, &after), "a session closed with its tombstone did not");
	after.dead = b_dead;
	CHECK(!zc_delay_died(&before, &after), "nor one marked dead after a crash-restart");
	after.dead = b_earlier;
	CHECK(zc_delay_died(&before, &after),
		  "a tombstone of an earlier incarnation of the id speaks not for this one");
	after.dead = b_unmarked;
	CHECK(zc_delay_died(&before, &after), "nor does one without a nonce");
	before.live = a_old_b;
	CHECK(zc_delay_died(&before, &after), "not even for an earlier version's session");

	/* the id came back: the new session's expiry, with the old tombstone still listed */
	before.live = a_b2;
	before.dead = b_closed;
	before.ndead = 1;
	after.dead = b_closed;
	after.cversion = 11;
	CHECK(zc_delay_died(&before, &after), "the id's next incarnation gone: died");
	/* the old one closed, the next came and went between two listings */
	before.live = ab;
	before.dead = NULL;
	before.ndead = 0;
	before.cversion = 10;
	after.live = a;
	after.cversion = 12;
	CHECK(!zc_delay_died(&before, &after), "closed with its tombstone, nothing else");
	after.cversion = 14;
	CHECK(zc_delay_died(&before, &after), "and the id's next incarnation came and went: died");

	after.live = abc;
	after.nlive = 3;
	after.dead = NULL;
	after.ndead = 0;
	after.cversion = 13;
	CHECK(zc_delay_died(&before, &after), "one came and went between the listings");
	after.cversion = 11;
	CHECK(!zc_delay_died(&before, &after), "one came, no more");

	CHECK(zc_delay_paused(false, false, 0, 100, 20, &until) && until == 120, "not listed: paused, poll soon");
	CHECK(zc_delay_paused(true, true, 500, 100, 20, &until) && until == 500, "out of date: paused");
	CHECK(zc_delay_paused(true, false, 500, 100, 20, &until) && until == 500, "during a lock-delay");
	CHECK(!zc_delay_paused(true, false, 500, 600, 20, &until), "after it");
}

/* looks.c's host: what was sent */
static int	looks_sent;
static bool looks_fail_send;

static void *
looks_alloc(void *arg, size_t size)
{
	return calloc(1, size);
}

static void
looks_release(void *arg, void *p)
{
	free(p);
}

static bool
looks_send(void *arg, ZlkLook *l)
{
	looks_sent++;
	return !looks_fail_send;
}

/* Looks at strays and ghosts: one per node, again until settled, none past their session. */
static void
test_looks(void)
{
	static const ZlkHost host = {NULL, looks_alloc, looks_release, looks_send};
	ZlkLooks	ls;
	ZlkLook    *stray;
	ZlkLook    *ghost;
	int64_t		t = 5000000;

	memset(&ls, 0, sizeof(ls));
	ls.host = &host;
	stray = zc_looks_new(&ls, "/r/k/x-1", "", 7);
	CHECK(stray != NULL && stray->stray && zc_looks_new(&ls, "/r/k/x-1", "", 7) == NULL,
		  "one look per node");
	zc_looks_send(&ls, stray, t);
	CHECK(looks_sent == 1 && stray->in_flight, "a stray's delete goes at once");
	CHECK(zc_looks_answered(&ls, stray, ZNOAUTH, t) == ZLK_AGAIN_SAY && !stray->in_flight &&
		  stray->due == t + ZLK_DELAY_US, "refused: again later, said once");
	CHECK(zc_looks_tend(&ls, t + 10, 7) == ZLK_DELAY_US - 10 && looks_sent == 1, "not before it is due");
	CHECK(zc_looks_tend(&ls, t + ZLK_DELAY_US, 7) == -1 && looks_sent == 2, "then sent again");
	CHECK(zc_looks_answered(&ls, stray, ZCONNECTIONLOSS, t + ZLK_DELAY_US) == ZLK_AGAIN,
		  "a lost reply says nothing");
	CHECK(zc_looks_answered(&ls, stray, ZNOAUTH, t + ZLK_DELAY_US) == ZLK_AGAIN, "said once only");
	ghost = zc_looks_new(&ls, "/r/k", "uuid-1", 7);
	zc_looks_again(ghost, t);
	CHECK(ls.n == 2 && !ghost->stray, "a ghost's listing waits its delay");
	CHECK(zc_looks_answered(&ls, stray, ZNONODE, t) == ZLK_DONE && ls.n == 1 &&
		  zc_looks_find(&ls, "/r/k/x-1", "") == NULL, "settled: the look ends");
	looks_fail_send = true;
	CHECK(zc_looks_tend(&ls, t + ZLK_DELAY_US, 7) == ZLK_DELAY_US && !ghost->in_flight,
		  "a look that could not be sent waits again");
	looks_fail_send = false;
	CHECK(zc_looks_tend(&ls, t + 3 * ZLK_DELAY_US, 8) == -1 && ls.n == 0,
		  "a new session: the old one's looks end with its nodes");
}

/* What an owner may ask of the worker for its own slot (table.c). */
static void
test_owner_asks(void)
{
	ZklSlot		s;

	memset(&s, 0, sizeof(s));
	s.zk.todo = ZKT_WATCH;
	CHECK(zc_table_ask_stat(&s) && s.zk.todo == (ZKT_WATCH | ZKT_STAT), "a Stat asked: the worker is woken");
	CHECK(!zc_table_ask_stat(&s) && s.zk.todo == (ZKT_WATCH | ZKT_STAT), "asked again: nothing new");
	CHECK(zc_table_ask_verify(&s) && s.own.verify == ZKV_ASKED && (s.zk.todo & ZKT_VERIFY) &&
		  (s.zk.todo & ZKT_WATCH), "a verify asked, the worker's own bits kept");
}

/* presence.c's host, for the list's state machine */
static int	pres_pauses;
static ZklSessionName pres_swept[4];
static int	pres_nswept;

static void *
pres_grow(void *arg, void *p, size_t size)
{
	return realloc(p, size);
}

static void
pres_release(void *arg, void *p)
{
	free(p);
}

static int64_t
pres_delay(void *arg)
{
	return 1000;
}

static void
pres_pause(void *arg)
{
	pres_pauses++;
}

static void
pres_sweep(void *arg, const ZklSessionName *tombstone)
{
	if (pres_nswept < 4)
		pres_swept[pres_nswept++] = *tombstone;
}

static void
test_presence(void)
{
	static const ZldHost host = {NULL, pres_grow, pres_release, pres_delay, pres_pause, pres_sweep};
	const char *first[] = {"000000000000000b.00000000000000bb", "000000000000000a.00000000000000aa",
	"00000000000000c1.00000000000000cc.closed"};
	const char *no_a[] = {"000000000000000b.00000000000000bb", "00000000000000c1.00000000000000cc.closed",
	"000000000000000a.00000000000000aa.dead"};
	const char *no_b[] = {"00000000000000c1.00000000000000cc.closed", "000000000000000a.00000000000000aa.dead"};
	const char *other[] = {"000000000000000a.00000000000000aa", "junk"};
	ZldPresence p;
	int64_t		until;
	uint64_t	gen;
	int64_t		t = 1000000;

	zc_delay_init(&p, &host);
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, false, t) == (ZLD_SEND_PRESENCE | ZLD_SEND_LIST),
		  "a new session: its presence node, then a listing");
	CHECK(pres_pauses == 1 && p.paused_until == t + 1000, "paused from the session's start");
	CHECK(zc_delay_grants_paused(&p, t + 5000, &until), "not listed yet: paused");
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, false, t) == 0, "nothing twice");
	gen = p.gen;
	CHECK(zc_delay_listed(&p, gen + 1, ZOK, first, 3, 3, t) == ZLD_STALE_REPLY && !p.listed,
		  "a reply for an older handle is ignored");
	CHECK(zc_delay_listed(&p, gen, ZOK, first, 3, 3, t) == ZLD_LISTED && p.listed && p.nlive == 2 &&
		  p.live[0].id == 0xa && p.ndead == 1, "listed, sorted");
	CHECK(!zc_delay_grants_paused(&p, t + 5000, &until), "listed, the pause over: grants");
	CHECK(pres_nswept == 0 && p.sweep_at >= t + ZLD_KEEP_US, "a tombstone is kept a while");

	zc_delay_watch_fired(&p, gen);
	CHECK(zc_delay_grants_paused(&p, t + 5000, &until), "the watch fired: paused until listed again");
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, false, t + 10) == ZLD_SEND_LIST, "listed again");
	CHECK(zc_delay_listed(&p, gen, ZOK, no_a, 3, 5, t + 10) == ZLD_LISTED && pres_pauses == 1,
		  "a session gone with its tombstone: no pause");
	zc_delay_watch_fired(&p, gen);
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, false, t + 20) == ZLD_SEND_LIST, "listed again");
	CHECK(zc_delay_listed(&p, gen, ZOK, no_b, 2, 6, t + 20) == ZLD_DIED && pres_pauses == 1 &&
		  p.paused_until == t + 1020 && p.presence_due,
		  "our own node gone: the pause is longer, and the node is made again");
	CHECK(!p.present && zc_delay_grants_paused(&p, t + 5000, &until),
		  "no grant until a listing shows it again");
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, false, t + 20) == 0, "not before the retry");
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, false, t + 20 + ZLD_RETRY_US) == (ZLD_SEND_PRESENCE | ZLD_SEND_LIST),
		  "then again");
	CHECK(zc_delay_listed(&p, gen, ZNONODE, NULL, 0, 0, t + 30) == ZLD_LIST_FAILED && p.presence_due &&
		  p.list_due, "the sessions node missing: made again");
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, false, t + ZLD_KEEP_US + 40) == (ZLD_SEND_PRESENCE | ZLD_SEND_LIST),
		  "sent after the retry");
	CHECK(zc_delay_listed(&p, gen, ZOK, first, 3, 9, t + ZLD_KEEP_US + 40) == ZLD_LISTED &&
		  pres_nswept == 1 && pres_swept[0].id == 0xc1 && pres_swept[0].nonce == 0xcc &&
		  pres_swept[0].kind == ZKL_NAME_CLOSED, "a tombstone listed a minute is swept");

	zc_delay_reconnected(&p);
	CHECK(zc_delay_grants_paused(&p, t + ZLD_KEEP_US + 50, &until),
		  "a new connection: the list is out of date");
	CHECK(zc_delay_listed(&p, gen, ZOK, other, 2, 9, t + ZLD_KEEP_US + 60) == ZLD_DIED,
		  "a name it cannot read counts as a change");
	zc_delay_reset(&p);
	CHECK(!p.listed && zc_delay_tend(&p, 0xb, 0xbb, false, t + ZLD_KEEP_US + 70) != 0 &&
		  p.gen != gen, "a new handle: set up again");
	gen = p.gen;
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, true, t + ZLD_KEEP_US + 80) != 0 && p.gen != gen,
		  "a new root: set up again");
	zc_delay_presence_failed(&p, gen, t + ZLD_KEEP_US + 90);
	CHECK(!p.presence_due, "a failed create of an older gen is ignored");
	zc_delay_presence_failed(&p, p.gen, t + ZLD_KEEP_US + 90);
	CHECK(p.presence_due && zc_delay_tend(&p, 0xb, 0xbb, false, t + ZLD_KEEP_US + 91) == 0,
		  "a failed create of ours: made again after the retry");
	zc_delay_list_not_sent(&p);
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, false, t + ZLD_KEEP_US + 90 + ZLD_RETRY_US) ==
		  (ZLD_SEND_PRESENCE | ZLD_SEND_LIST), "a listing not sent is asked for again");
	CHECK(zc_delay_tend(&p, 0xb, 0xbc, false, t + ZLD_KEEP_US + 200000) != 0 && p.for_nonce == 0xbc &&
		  !p.listed, "the same id with another nonce is another session: set up again");
	zc_delay_free(&p);
	CHECK(p.live == NULL && p.cap == 0, "freed");
}

/*
 * Tombstones speak for one incarnation of a session id, and each kind is
 * swept a minute after it was first listed, once that incarnation is gone.
 */
static void
test_presence_incarnations(void)
{
	static const ZldHost host = {NULL, pres_grow, pres_release, pres_delay, pres_pause, pres_sweep};
	const char *both[] = {"000000000000000b.00000000000000bb", "000000000000000a.00000000000000aa",
		"000000000000000a.00000000000000aa.dead", "000000000000000d.0000000000000011.closed",
	"000000000000000d.0000000000000022"};
	const char *no_a[] = {"000000000000000b.00000000000000bb", "000000000000000a.00000000000000aa.dead",
	"000000000000000d.0000000000000022"};
	const char *no_d[] = {"000000000000000b.00000000000000bb", "000000000000000d.0000000000000011.closed"};
	ZldPresence p;
	int64_t		t = 1000000;

	pres_nswept = 0;
	pres_pauses = 0;
	zc_delay_init(&p, &host);
	(void) zc_delay_tend(&p, 0xb, 0xbb, false, t);
	CHECK(zc_delay_listed(&p, p.gen, ZOK, both, 5, 5, t) == ZLD_LISTED && p.nlive == 3 && p.ndead == 2,
		  "listed");
	CHECK(!zc_delay_incarnation_listed(&p, 0xd, 0x11) && zc_delay_incarnation_listed(&p, 0xd, 0x22) &&
		  !zc_delay_incarnation_listed(&p, 0xe, 0x11) && !zc_delay_incarnation_listed(&p, 0xd, 0),
		  "an incarnation is listed by its id and nonce, not by its id");
	CHECK(zc_delay_listed(&p, p.gen, ZOK, both, 5, 5, t + ZLD_KEEP_US) == ZLD_LISTED && pres_nswept == 1 &&
		  pres_swept[0].id == 0xd && pres_swept[0].nonce == 0x11,
		  "a minute on: an earlier incarnation's tombstone is swept, though its id is live again");
	CHECK(p.sweep_at > t + ZLD_KEEP_US, "the .dead of a session still listed is kept: listed again later");
	pres_nswept = 0;
	CHECK(zc_delay_listed(&p, p.gen, ZOK, no_a, 3, 7, t + ZLD_KEEP_US + 10) == ZLD_LISTED && pres_pauses == 1,
		  "a session gone with its .dead: no pause");
	CHECK(pres_nswept == 1 && pres_swept[0].id == 0xa && pres_swept[0].kind == ZKL_NAME_DEAD,
		  "then its .dead, listed a minute, is swept");
	/* a stale tombstone of the id, written by hand, when its next incarnation expires */
	CHECK(zc_delay_listed(&p, p.gen, ZOK, no_d, 2, 10, t + ZLD_KEEP_US + 20) == ZLD_DIED && pres_pauses == 2,
		  "the id's next incarnation gone beside an earlier one's tombstone: paused");
	zc_delay_free(&p);
}

static void
test_names(void)
{
	char		uuid[ZKL_UUID_LEN + 1];
	const char *a = "x-11111111-1111-4111-8111-111111111111-7300000000000000001-4242-2147483647";
	const char *b = "s-22222222-2222-4222-8222-222222222222-7300000000000000001-4242--2147483648";
	const char *c = "s-33333333-3333-4333-8333-333333333333-7300000000000000001-4243--000000001";

	CHECK(zc_recipe_same_owner(a, b), "one backend's nodes on both sides of the wrap");
	CHECK(!zc_recipe_same_owner(b, c), "another pid is another backend");
	CHECK(zc_recipe_uuid_of(b, uuid) && strcmp(uuid, "22222222-2222-4222-8222-222222222222") == 0,
		  "the uuid of a node");
	CHECK(!zc_recipe_same_owner(a, "x-short"), "a foreign name owns nothing");
}

/* A semaphore request of pid, queued as the seq'th node behind queue[0 .. seq). */
static int
queue_semaphore(int pid, int seq)
{
	int			idx = claim(ZKL_MODE_SEMAPHORE, pid);

	queue[seq] = node_of(idx, seq, made[seq]);
	create_and_list(idx, seq, queue, seq + 1);
	return idx;
}

/*
 * Semaphore of 1 with three local requests: a child event on the key makes
 * one waiter read (not each), and its listing decides for all of them; the
 * holders of a live request are the key's.
 */
static void
test_semaphore(void)
{
	ZkrChild	kids[4];
	int			a;
	int			b;
	int			w;
	int			reading = 0;
	int			i;
	uint64_t	tag;

	setup();
	claim_holders = 1;
	a = queue_semaphore(1, 0);
	CHECK(slots[a].ans.result == ZKL_RESULT_GRANTED, "semaphore: the first is in");
	b = queue_semaphore(2, 1);
	w = queue_semaphore(3, 2);
	CHECK(slots[b].ans.result == ZKL_RESULT_PENDING && slots[w].ans.result == ZKL_RESULT_PENDING &&
		  slots[b].watch[0] == '\0', "the others wait, watching no one node");

	/* two child events on the key (say, from watches of both reads): one read */
	zc_core_watch_event(&core, 12345, false, "/r/tk");
	zc_core_watch_event(&core, zc_core_tag(w, slots[w].req.attempt), false, "/r/tk");
	for (i = 0; i < NSLOTS; i++)
		reading += (slots[i].zk.todo & ZKT_CHILDREN) != 0;
	CHECK(reading == 1, "a child event makes one local waiter read, not each");

	/* A leaves; the one read decides for both waiters: B in, W waits on */
	(void) zc_table_abandon(&table, &slots[a]);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(b, OP_CHILDREN) ? planned(b, OP_CHILDREN) : planned(w, OP_CHILDREN);
	CHECK(tag != 0 && !(planned(b, OP_CHILDREN) && planned(w, OP_CHILDREN)), "one listing planned");
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(queue + 1, 2, kids), false);
	CHECK(slots[b].ans.result == ZKL_RESULT_GRANTED && slots[w].ans.result == ZKL_RESULT_PENDING &&
		  !(slots[w].zk.todo & ZKT_CHILDREN), "that listing let B in and answered W too");

	/* a request of holders 2 behind live requests of 1 fails, 22023, and goes */
	claim_holders = 2;
	a = claim(ZKL_MODE_SEMAPHORE, 4);
	queue[0] = node_of(a, 3, made[3]);
	create_and_list(a, 3, (const char *[]) {queue[1], queue[2], queue[0]}, 3);
	CHECK(slots[a].ans.result == ZKL_RESULT_FAILED && slots[a].ans.sqlstate == ZKL_SQLSTATE('2','2','0','2','3') &&
		  strstr(slots[a].errmsg, "holders 2 differ from 1") != NULL &&
		  (slots[a].zk.todo & ZKT_DELETE), "mismatched holders: 22023 naming both, node deleted");
	claim_holders = 2;
}

/*
 * Semaphore of 3 with three local requests that a lock-delay holds back:
 * when it ends, one listing decides for all three (not one read each).
 */
static void
test_semaphore_delay_one_read(void)
{
	int			w[3];
	int			reading = 0;
	int			i;
	uint64_t	tag = 0;
	ZkrChild	kids[4];

	setup();
	claim_holders = 3;
	paused = true;
	paused_until = now_us + 2000000;
	for (i = 0; i < 3; i++)
		w[i] = queue_semaphore(2 + i, i);
	for (i = 0; i < 3; i++)
		CHECK(slots[w[i]].ans.result == ZKL_RESULT_PENDING && slots[w[i]].zk.delayed_until == paused_until,
			  "semaphore: held back by the lock-delay");
	now_us += 2000001;
	paused = false;
	(void) zc_core_plan(&core, true, now_us);
	for (i = 0; i < 3; i++)
		if (planned(w[i], OP_CHILDREN))
		{
			reading++;
			tag = planned(w[i], OP_CHILDREN);
		}
	CHECK(reading == 1, "one listing when a lock-delay ends, however many wait");
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(queue, 3, kids), false);
	CHECK(slots[w[0]].ans.result == ZKL_RESULT_GRANTED && slots[w[1]].ans.result == ZKL_RESULT_GRANTED &&
		  slots[w[2]].ans.result == ZKL_RESULT_GRANTED, "that listing let all three in");
	claim_holders = 2;
}

/*
 * Semaphore of 1, a foreign holder, local waiters B and W.  The holder
 * leaves: one child event makes B read.  B is cancelled before the worker
 * plans, so its read is dropped for its delete; W must read right behind
 * that delete, not a recheck interval later.
 */
static void
test_semaphore_reader_gone(void)
{
	char		foreign[ZKL_NODE_BUFLEN];
	int			b;
	int			w;

	setup();
	claim_holders = 1;
	snprintf(foreign, sizeof(foreign), "c-ffffffff-0000-4000-8000-000000000000-9-99.1-%010d", 0);
	queue[0] = foreign;
	b = queue_semaphore(2, 1);
	w = queue_semaphore(3, 2);
	zc_core_watch_event(&core, 999, false, "/r/tk");
	CHECK((slots[b].zk.todo & ZKT_CHILDREN) && !(slots[w].zk.todo & ZKT_CHILDREN), "the event picks B to read");
	(void) zc_table_abandon(&table, &slots[b]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(b, OP_DELETE) != 0 && planned(w, OP_CHILDREN) != 0,
		  "B cancelled: W reads right behind B's delete");
	claim_holders = 2;
}

/*
 * A multi-key request's multi: its reply is lost, and the lookups disagree
 * (a create applied late, or a node deleted from outside): key a's node is
 * absent, key b's is found.  a must not be created alone, behind requests
 * queued since, while b keeps the group's old place: the request fails.
 */
static void
test_group_split(void)
{
	const char *names[1];
	char		found[ZKL_NODE_BUFLEN];
	uint64_t	tags[2];
	bool		del[2] = {false, false};
	const char *made_names[2] = {"", ""};
	int			errs[2] = {ZOK, ZOK};
	bool		stray[2];
	int			members[ZKL_BATCH_MAX];
	int			a;
	int			b;

	setup();
	claim_group = 77;
	a = claim(ZKL_MODE_EXCLUSIVE, 1);
	b = claim(ZKL_MODE_EXCLUSIVE, 1);
	snprintf(slots[b].key, sizeof(slots[b].key), "tk2");
	claim_group = 0;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(zc_core_next_batch(&core, members) == 2, "the group's two creates go as one multi");
	tags[0] = zc_core_tag(a, slots[a].req.attempt);
	tags[1] = zc_core_tag(b, slots[b].req.attempt);
	zc_core_multi_reply(&core, 2, tags, del, made_names, ZCONNECTIONLOSS, errs, stray);
	CHECK(slots[a].zstate == ZKS_RECOVER && slots[b].zstate == ZKS_RECOVER, "reply lost: both look up");
	(void) zc_core_plan(&core, true, now_us);
	zc_core_recover_reply(&core, zc_core_tag(a, slots[a].req.attempt), ZOK, names, 0);
	names[0] = node_of(b, 5, found);
	zc_core_recover_reply(&core, zc_core_tag(b, slots[b].req.attempt), ZOK, names, 1);
	CHECK(slots[a].zstate == ZKS_NEW && slots[b].zstate == ZKS_QUEUED, "a absent, b adopted");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(a, OP_CREATE) == 0, "a is not created alone");
	CHECK(slots[a].ans.result == ZKL_RESULT_FAILED && slots[a].ans.sqlstate == ZKL_SQLSTATE('4','0','0','0','1'),
		  "the request fails with 40001, to be retried whole");
}

/* Claim a member of multi-key request `group` on key. */
static int
claim_member(uint64_t group, const char *key)
{
	int			idx;

	claim_group = group;
	idx = claim(ZKL_MODE_EXCLUSIVE, (int) group);
	claim_group = 0;
	snprintf(slots[idx].key, sizeof(slots[idx].key), "%s", key);
	return idx;
}

/*
 * The circle a swarm of shapes found (six backends, one cluster's turn):
 * a multi-key request of one key left (a lone member) and a three-key
 * request that shares that key are planned in one turn.  The first multi
 * takes the lone one; the three-key one cannot join it (a shared key) and
 * nothing else can: it must still go out as one multi, never as three
 * single creates (each would take its own place, and another cluster's
 * request could get ahead on two keys and behind on the third).
 */
static void
test_group_never_alone(void)
{
	int			members[ZKL_BATCH_MAX];
	int			lone;
	int			n;
	int			i;
	int			batches = 0;
	bool		together = false;

	setup();
	(void) claim_member(40, "tk1");
	(void) claim_member(41, "tk0");
	(void) claim_member(41, "tk1");
	(void) claim_member(41, "tk2");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(zc_core_batch_wanted(&core), "a multi is wanted");
	while ((n = zc_core_next_batch(&core, members)) > 0)
	{
		batches++;
		together |= n == 3 && slots[ops[members[0]].idx].req.group == 41;
	}
	CHECK(batches == 2 && together, "two multis: the lone member's, then the three keys' whole");
	for (i = 0; i < core.nops; i++)
		CHECK(ops[i].kind != OP_CREATE || ops[i].batched, "no create is left to go alone");

	/* one op of a group, with nothing else planned, is a multi too */
	setup();
	lone = claim_member(42, "tk1");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(zc_core_batch_wanted(&core) && zc_core_next_batch(&core, members) == 1 &&
		  ops[members[0]].idx == lone, "a lone member goes as a multi of one");
	/* a plain single create is not */
	setup();
	lone = claim(ZKL_MODE_EXCLUSIVE, 1);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(!zc_core_batch_wanted(&core) && zc_core_next_batch(&core, members) == 0 &&
		  planned(lone, OP_CREATE) != 0, "a plain create goes alone");
}

/*
 * A member of a multi-key request failed (its connect deadline, say) in an
 * earlier turn; its siblings are still NEW until the backend ends the
 * request.  They must not go out without it: a part of a group placed is
 * a request that can hold some keys and wait in a circle for the others.
 */
static void
test_group_member_failed(void)
{
	int			a;
	int			b;

	setup();
	a = claim_member(50, "tk0");
	b = claim_member(50, "tk1");
	slots[a].ans.result = ZKL_RESULT_FAILED;
	slots[a].zstate = ZKS_GONE;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(b, OP_CREATE) == 0, "the survivor is not created alone");
	CHECK(slots[b].zstate == ZKS_NEW && slots[b].ans.result == ZKL_RESULT_PENDING, "it waits for its owner to end it");
	(void) zc_table_abandon(&table, &slots[a]);
	(void) zc_table_abandon(&table, &slots[b]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[b].zstate == ZKS_FREE && slots[a].zstate == ZKS_FREE, "both freed once given up");
}

/*
 * The commit proof counts from when a request was sent: an answer read
 * late (after the session died) proves no more than that; another
 * session's answer replaces the proof kept.
 */
static void
test_proof_step(void)
{
	CHECK(zc_holds_proof_step(5000, 0x100, 6000, 0x100) == ZKH_PROOF_ADVANCE, "a later send advances");
	CHECK(zc_holds_proof_step(5000, 0x100, 5000, 0x100) == ZKH_PROOF_KEEP &&
		  zc_holds_proof_step(5000, 0x100, 4000, 0x100) == ZKH_PROOF_KEEP,
		  "an answer to an older request proves nothing newer");
	CHECK(zc_holds_proof_step(5000, 0x100, 1000, 0x200) == ZKH_PROOF_NEW_SESSION,
		  "another session's answer replaces the proof");
}

/* The cut-off clock: at 11/12 of the timeout after the last news, only while disconnected. */
/* A SIGTERM closes the session only when no client backend is left to hold a lock. */
static void
test_term_action(void)
{
	CHECK(zc_term_action(false, false, false, false) == ZKL_TERM_SERVE &&
		  zc_term_action(false, false, true, true) == ZKL_TERM_SERVE, "no SIGTERM: serve");
	CHECK(zc_term_action(true, false, true, false) == ZKL_TERM_CLOSE &&
		  zc_term_action(true, true, true, true) == ZKL_TERM_CLOSE,
		  "the postmaster's: close, also merged with another (its clients are told to go)");
	CHECK(zc_term_action(false, true, false, true) == ZKL_TERM_RESTART &&
		  zc_term_action(false, true, false, false) == ZKL_TERM_RESTART,
		  "another's outside a shutdown: restart on the same session");
	CHECK(zc_term_action(false, true, true, true) == ZKL_TERM_SERVE,
		  "another's in a shutdown while clients remain: serve them, keep the session");
	CHECK(zc_term_action(false, true, true, false) == ZKL_TERM_CLOSE,
		  "another's in a shutdown with no client left: close (the postmaster's may be merged in it)");
}

/* A clean stop serves until every slot is free, then asks for its tombstone, and ends once answered. */
static void
test_stop_step(void)
{
	CHECK(zc_stop_step(true, true, false, false, false) == ZKL_STOP_SERVE, "slots in use: serve on");
	CHECK(zc_stop_step(true, true, false, false, true) == ZKL_STOP_BEGIN, "every slot free: begin marking");
	CHECK(zc_stop_step(true, true, false, true, false) == ZKL_STOP_ASK &&
		  zc_stop_step(true, true, false, true, true) == ZKL_STOP_ASK,
		  "marking: ask again or wait, whatever the table says (nothing is planned)");
	CHECK(zc_stop_step(true, true, true, true, true) == ZKL_STOP_END, "the tombstone answered: end");
	CHECK(zc_stop_step(false, true, false, false, false) == ZKL_STOP_END &&
		  zc_stop_step(false, true, false, true, true) == ZKL_STOP_END, "out of time: end, marked or not");
	CHECK(zc_stop_step(true, false, false, false, true) == ZKL_STOP_END &&
		  zc_stop_step(true, false, false, true, true) == ZKL_STOP_END,
		  "the session gone, another one, or not connected: end without a tombstone");
}

static void
test_cutoff(void)
{
	CHECK(zc_cutoff_ms_left(false, 0x100, 12000, 0, 5000000) == -1, "connected: no clock");
	CHECK(zc_cutoff_ms_left(true, 0, 12000, 0, 5000000) == -1, "no session: no clock");
	CHECK(zc_cutoff_ms_left(true, 0x100, 12000, 1000000, 1000000) == 11000, "11/12 of the timeout");
	CHECK(zc_cutoff_ms_left(true, 0x100, 12000, 1000000, 11999500) == 1, "rounded up, never 0 early");
	CHECK(zc_cutoff_ms_left(true, 0x100, 10000, 0, 9166000) == 0 &&
		  zc_cutoff_ms_left(true, 0x100, 10000, 0, 9165500) == 1,
		  "11/12 in whole milliseconds, as the worker always computed it");
	CHECK(zc_cutoff_ms_left(true, 0x100, 12000, 1000000, 12000000) == 0 &&
		  zc_cutoff_ms_left(true, 0x100, 12000, 1000000, 99000000) == 0, "then 0: lost");
}

/* A request of pid: claimed and planned once (a try-lock if nowait). */
static int
ask(int pid, bool nowait)
{
	int			s = claim(ZKL_MODE_EXCLUSIVE, pid);

	slots[s].req.nowait = nowait;
	(void) zc_core_plan(&core, true, now_us);
	return s;
}

/* Answer holder h's planned listing (its child watch) with h's node alone. */
static void
peek_alone(int h)
{
	const char *list[1];
	ZkrChild	kids[1];
	uint64_t	tag = planned(h, OP_CHILDREN);

	CHECK(tag != 0 && slots[h].coh.peek == COH_PEEK_ASKED, "the holder reads its queue, with a child watch");
	list[0] = slots[h].node;
	/* an older listing (no watch) that comes back first arms nothing */
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 1, kids), false);
	CHECK(slots[h].coh.peek == COH_PEEK_ASKED, "a listing without the watch does not arm");
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 1, kids), true);
	CHECK(slots[h].coh.peek == COH_PEEK_ARMED, "armed");
}

/*
 * Local hand-over: a local waiter gets the holder's node with no round trip
 * and a greater token; a try-lock is refused locally; once a node behind is
 * seen, at most local_handover_limit more hand-overs, then requests queue in
 * ZooKeeper.  Nothing passes between a child event and the listing after it.
 */
static void
test_cohort(void)
{
	const char *list[2];
	char		other[ZKL_NODE_BUFLEN];
	ZkrChild	kids[2];
	int			h;
	int			w;
	int			t;
	int			w2;
	int			w3;
	int			w4;
	uint64_t	tag;

	setup();
	core.cohort.handover = true;
	core.cohort.handover_limit = 1;
	h = lone_holder();
	snprintf(made[0], sizeof(made[0]), "%s", slots[h].node);
	CHECK(slots[h].ans.result == ZKL_RESULT_GRANTED && slots[h].zk.first, "the lone holder is first in line");
	CHECK(slots[h].coh.peek == COH_PEEK_NONE, "a waiter's listing sets no child watch");
	w = ask(2, false);
	CHECK(slots[w].zstate == ZKS_COHORT && planned(w, OP_CREATE) == 0, "a local waiter creates no node");
	peek_alone(h);
	t = ask(3, true);
	CHECK(slots[t].ans.result == ZKL_RESULT_NOT_GRANTED && planned(t, OP_CREATE) == 0,
		  "a try-lock is refused without a round trip");
	(void) zc_table_abandon(&table, &slots[t]);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].ans.result == ZKL_RESULT_GRANTED && slots[w].zk.handed == 1 && strcmp(slots[w].node, made[0]) == 0,
		  "the release hands the node over");
	CHECK(core.nops == 0 && slots[h].zstate == ZKS_FREE, "no delete, no round trip");
	CHECK(zc_recipe_fencing_token(slots[w].zk.czxid, slots[w].zk.handed) == 10 * ZKL_HANDOVER_MAX + 1,
		  "the token counts the hand-over");

	/* a child event: nothing passes before the next listing */
	zc_core_watch_event(&core, 0, false, "/r/tk");
	CHECK(slots[w].coh.peek == COH_PEEK_NONE, "the event disarms");
	w2 = ask(4, false);
	tag = planned(w, OP_CHILDREN);
	CHECK(slots[w2].zstate == ZKS_COHORT && tag != 0, "another local waiter: the holder reads the queue");
	(void) zc_table_abandon(&table, &slots[w]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(w, OP_DELETE) == 0 && slots[w2].ans.result == ZKL_RESULT_PENDING,
		  "the released node waits for that listing");
	list[0] = made[0];
	snprintf(other, sizeof(other), "x-00000000-0000-4000-8000-0000000000ff-9-9-%010d", 5);
	list[1] = other;
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 2, kids), true);
	CHECK(slots[w].coh.foreign, "a node behind is seen");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w2].ans.result == ZKL_RESULT_GRANTED && slots[w2].zk.handed == 2 && slots[w2].coh.since_foreign == 1,
		  "one more hand-over within the limit");
	w3 = ask(5, false);
	CHECK(slots[w3].zstate == ZKS_COHORT, "past the limit a request still waits here");
	w4 = ask(6, false);
	(void) zc_table_abandon(&table, &slots[w2]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(w2, OP_DELETE) != 0 && planned(w3, OP_CREATE) != 0,
		  "then the node goes, and the first local waiter queues in ZooKeeper, in the same turn");
	CHECK(slots[w4].zstate == ZKS_COHORT, "the next one waits behind that request, not in ZooKeeper");
}

/* Hand-over on: a lone holder (pid 1), armed, and a local waiter behind it (pid 2). */
static void
holder_and_local_waiter(int *h, int *w)
{
	setup();
	core.cohort.handover = true;
	core.cohort.handover_limit = 8;
	*h = lone_holder();
	*w = ask(2, false);
	peek_alone(*h);
}

/* A lost session: the holder of a handed-over node loses it; local waiters queue again. */
static void
test_cohort_session_lost(void)
{
	int			h;
	int			w;
	int			w2;

	holder_and_local_waiter(&h, &w);
	w2 = ask(3, false);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].ans.result == ZKL_RESULT_GRANTED && slots[w2].zstate == ZKS_COHORT, "handed over, one waits");
	zc_core_session_lost(&core);
	CHECK(slots[w].ans.result == ZKL_RESULT_LOST && interrupts == 1, "the new holder lost it and was told");
	CHECK(slots[w2].zstate == ZKS_NEW && slots[w2].ans.result == ZKL_RESULT_PENDING, "the waiter queues again");
}

/*
 * A released holder's node kept for a hand-over (waiting for its listing)
 * is no longer its backend's lock: that backend's next request on the key
 * (shared, its own node) must not pass another cluster's writer queued
 * behind the kept node, which goes on to a local waiter.
 */
static void
test_kept_node_not_held(void)
{
	char		sn[ZKL_NODE_BUFLEN];
	char		fn[ZKL_NODE_BUFLEN];
	const char *list[3];
	int			h;
	int			w;
	int			s;

	setup();
	core.cohort.handover = true;
	core.cohort.handover_limit = 8;
	h = lone_holder();
	w = ask(2, false);
	CHECK(slots[w].zstate == ZKS_COHORT && slots[h].coh.peek == COH_PEEK_ASKED, "a waiter; the holder's listing is out");
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[h].zstate == ZKS_HELD && slots[h].coh.kept, "released, its node kept for the waiter");
	s = claim(ZKL_MODE_SHARED, 1);
	list[0] = slots[h].node;
	snprintf(fn, sizeof(fn), "x-00000000-0000-4000-8000-0000000000ff-9-9-%010d", 1);
	list[1] = fn;
	list[2] = node_of(s, 2, sn);
	create_and_list(s, 2, list, 3);
	CHECK(slots[s].ans.result == ZKL_RESULT_PENDING, "the backend's new shared request waits for the writer");

	/*
	 * That request took the kept node for its backend's own: the node must
	 * not pass to another backend now (the writer may yet give up, and the
	 * shared request's verdict would grant it beside an exclusive holder).
	 */
	{
		ZkrChild	kids[3];
		uint64_t	tag = planned(h, OP_CHILDREN);

		if (tag == 0)
			tag = zc_core_tag(h, slots[h].req.attempt);
		zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 3, kids), true);
	}
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].ans.result == ZKL_RESULT_PENDING && slots[w].zstate != ZKS_COHORT &&
		  slots[h].zstate == ZKS_DELETING,
		  "no hand-over while the releasing backend has another request on the key: the node goes");
}

/* A try-lock right after the holder's COMMIT (its release not planned yet) gets the key. */
static void
test_try_after_release(void)
{
	int			h;
	int			w;
	int			t;

	holder_and_local_waiter(&h, &w);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].ans.result == ZKL_RESULT_GRANTED, "handed over");
	(void) zc_table_abandon(&table, &slots[w]);
	t = claim(ZKL_MODE_EXCLUSIVE, 3);
	slots[t].req.nowait = true;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[t].ans.result == ZKL_RESULT_GRANTED && slots[t].zk.handed == 2,
		  "the try is next in line once the holder is done, granted by hand-over");
}

/* A key whose node lingers after its holder (after `gaps` slots held by another key); its slot. */
static int
lingering(int gaps)
{
	int			h;

	setup_handover(100);
	while (gaps-- > 0)
		(void) claim_member(0, "tq");
	h = lone_holder();
	(void) zc_core_plan(&core, true, now_us);
	peek_alone(h);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[h].zstate == ZKS_LINGER, "the node lingers");
	return h;
}

/*
 * A lingering node goes to the writer that asked first, not to the one
 * that happens to sit first in the slot table (the simulator found a
 * worker that resumed from a pause handing it to the newest request).
 */
static void
test_linger_goes_to_first_asker(void)
{
	int			h;
	int			gap;
	int			old;
	int			young;

	(void) lingering(0);
	gap = claim(ZKL_MODE_EXCLUSIVE, 5);
	old = claim(ZKL_MODE_EXCLUSIVE, 6);
	zc_table_free(&table, &slots[gap]);
	young = claim(ZKL_MODE_EXCLUSIVE, 7);
	CHECK(young < old && slots[young].req.ticket > slots[old].req.ticket, "the younger request sits first");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[old].ans.result == ZKL_RESULT_GRANTED && slots[young].zstate == ZKS_COHORT,
		  "the one that asked first takes the node; the other waits behind it");

	/* both sit before the lingering node in the table: the older still joins it, not the younger */
	h = lingering(2);
	zc_table_free(&table, &slots[0]);
	zc_table_free(&table, &slots[1]);
	old = claim(ZKL_MODE_EXCLUSIVE, 6);
	young = claim(ZKL_MODE_EXCLUSIVE, 7);
	CHECK(old < young && young < h, "old, young, then the lingering node");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[old].ans.result == ZKL_RESULT_GRANTED && slots[young].zstate == ZKS_COHORT,
		  "a new request waits behind the node, not behind a younger request");

	/* a try-lock that asked after another writer is refused at once, not parked behind it */
	(void) lingering(0);
	gap = claim(ZKL_MODE_EXCLUSIVE, 5);
	old = claim(ZKL_MODE_EXCLUSIVE, 6);
	zc_table_free(&table, &slots[gap]);
	young = claim(ZKL_MODE_EXCLUSIVE, 7);
	slots[young].req.nowait = true;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[old].ans.result == ZKL_RESULT_GRANTED && slots[young].ans.result == ZKL_RESULT_NOT_GRANTED,
		  "the try is refused: the key is held here");
}

/* Linger: a released node stays for a repeat request; a child event ends that. */
static void
test_linger(void)
{
	int			h;
	int			n;

	setup_handover(100);
	h = lone_holder();
	(void) zc_core_plan(&core, true, now_us);
	peek_alone(h);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[h].zstate == ZKS_LINGER && core.nops == 0, "released, the node lingers");
	n = ask(2, false);
	CHECK(slots[n].ans.result == ZKL_RESULT_GRANTED && slots[n].zk.handed == 1 && core.nops == 0,
		  "a repeat request takes it with no round trip");
	(void) zc_table_abandon(&table, &slots[n]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[n].zstate == ZKS_LINGER, "lingers again");
	zc_core_watch_event(&core, 0, false, "/r/tk");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(n, OP_DELETE) != 0, "another cluster's request ends it at once");
	CHECK(slots[n].zstate == ZKS_DELETING, "deleting");
	(void) zc_core_delete_reply(&core, planned(n, OP_DELETE), ZOK);
	h = lone_holder();
	(void) zc_core_plan(&core, true, now_us);
	peek_alone(h);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	now_us += 100001;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(h, OP_DELETE) != 0, "and so does its time");
}

/* A writer of another cluster, queued behind this cluster's nodes. */
#define WRITER_B "x-00000000-0000-4000-8000-0000000000ff-9-9-0000000002"

/* Answer the listing of tag with these names (watched: it set the child watch). */
static void
listed(uint64_t tag, const char *const *names, int n, bool watched)
{
	ZkrChild	kids[8];

	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(names, n, kids), watched);
}

/* A writer of another cluster at the head of the key's queue. */
#define HEAD_B "x-00000000-0000-4000-8000-0000000000fe-9-9-0000000000"

/* A try-lock of pid 2 behind HEAD_B (and `more` other nodes of B); its slot. */
static int
try_behind(int more, int64_t rtt_us)
{
	static char own[ZKL_NODE_BUFLEN];
	const char *list[3] = {HEAD_B, "x-00000000-0000-4000-8000-0000000000fd-9-9-0000000001", NULL};
	ZkrChild	kids[3];
	uint64_t	tag;
	int			t;

	setup();
	t = claim(ZKL_MODE_EXCLUSIVE, 2);
	slots[t].req.nowait = true;
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(t, OP_CREATE);
	now_us += rtt_us;
	(void) zc_core_create_reply(&core, tag, ZOK, node_of(t, 1 + more, own), true, 20);
	list[1 + more] = own;
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 2 + more, kids), false);
	(void) zc_core_plan(&core, true, now_us);
	return t;
}

/*
 * zk_lock.linger and another cluster's try-lock.  A node that may linger
 * says so in its data; a try-lock that finds only such a node ahead waits
 * for it to go (granted), for its data to lose the mark (held: false), or
 * for LINGER_WAIT_RTTS of its own round trip, at least 25 ms (false).  A
 * node without the mark, or more than one node ahead, answers false at once.
 */
static void
test_linger_and_foreign_try(void)
{
	const char *list[2];
	char		data[ZKL_NODE_DATA_LEN];
	char		path[ZKL_PATH_LEN];
	uint64_t	tag;
	int			h;
	int			t;

	/* the holder's side: the mark is in the create's data, and taken off once a node is behind */
	setup_handover(100);
	h = claim(ZKL_MODE_EXCLUSIVE, 1);
	(void) zc_core_plan(&core, true, now_us);
	zc_core_node_data(&slots[h], data);
	CHECK(strcmp(data, "{\"linger\":true}") == 0 && zc_core_data_lingers(data, strlen(data)),
		  "created with the linger mark");
	setup_handover(0);
	h = claim(ZKL_MODE_EXCLUSIVE, 1);
	(void) zc_core_plan(&core, true, now_us);
	zc_core_node_data(&slots[h], data);
	CHECK(strcmp(data, "{}") == 0 && !zc_core_data_lingers(data, 2), "linger off: no mark");

	setup_handover(100);
	h = lone_holder();
	(void) zc_core_plan(&core, true, now_us);
	peek_alone(h);
	zc_core_watch_event(&core, 0, false, "/r/tk");
	(void) zc_core_plan(&core, true, now_us);
	list[0] = slots[h].node;
	list[1] = WRITER_B;
	listed(planned(h, OP_CHILDREN), list, 2, true);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(h, OP_UNMARK);
	zc_core_node_data(&slots[h], data);
	CHECK(tag != 0 && !slots[h].coh.may_linger && !zc_core_data_lingers(data, strlen(data)),
		  "a held node with another cluster's request behind loses the mark");
	zc_core_unmark_reply(&core, tag, ZCONNECTIONLOSS);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(h, OP_UNMARK) != 0, "a lost reply: sent again");
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(h, OP_DELETE) != 0, "released, it goes: it does not linger");

	/* the try's side: the node ahead lingers, then goes */
	t = try_behind(0, 0);
	tag = planned(t, OP_WATCH);
	CHECK(tag != 0 && slots[t].ans.result == ZKL_RESULT_PENDING && slots[t].zk.try_until == now_us + 25000,
		  "a try behind one exclusive node reads its data, for 25 ms at most");
	zc_core_watch_set_reply(&core, tag, ZOK, "{\"linger\":true}", 15);
	CHECK(slots[t].zstate == ZKS_QUEUED && slots[t].ans.result == ZKL_RESULT_PENDING, "it lingers: the try waits");
	now_us += 24000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(core.nops == 0 && slots[t].ans.result == ZKL_RESULT_PENDING, "still within the bound");
	snprintf(path, sizeof(path), "/r/tk/%s", HEAD_B);
	zc_core_watch_event(&core, tag, true, path);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(t, OP_BARRIER);
	CHECK(tag != 0, "the node went: one read of our own");
	zc_core_barrier_reply(&core, tag, ZOK);
	CHECK(slots[t].ans.result == ZKL_RESULT_GRANTED, "the try is granted: the key was free");

	/* the node ahead is held: its data has no mark */
	t = try_behind(0, 10000);
	CHECK(slots[t].zk.try_until == now_us + 40000, "the bound is four round trips when that is more");
	zc_core_watch_set_reply(&core, planned(t, OP_WATCH), ZOK, "{\"pid\":7}", 9);
	CHECK(slots[t].ans.result == ZKL_RESULT_NOT_GRANTED && slots[t].zstate == ZKS_DELETING,
		  "a holder's node: false at once");

	/* it lingers, but never goes: false at the bound, and the try's node goes */
	t = try_behind(0, 0);
	zc_core_watch_set_reply(&core, planned(t, OP_WATCH), ZOK, "{\"linger\":true}", 15);
	now_us += 25000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[t].ans.result == ZKL_RESULT_NOT_GRANTED && planned(t, OP_DELETE) != 0,
		  "false once the bound is over, and its node is deleted");

	/* its data changes (the mark taken off): read again, then false */
	t = try_behind(0, 0);
	tag = planned(t, OP_WATCH);
	zc_core_watch_set_reply(&core, tag, ZOK, "{\"linger\":true}", 15);
	snprintf(path, sizeof(path), "/r/tk/%s", HEAD_B);
	zc_core_watch_event(&core, tag, false, path);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[t].ans.result == ZKL_RESULT_PENDING && planned(t, OP_CHILDREN) != 0, "a data change: the queue is read");

	/* two nodes ahead: a holder and a waiter at least, false at once */
	t = try_behind(1, 0);
	CHECK(slots[t].ans.result == ZKL_RESULT_NOT_GRANTED && planned(t, OP_WATCH) == 0, "two nodes ahead: false at once");

	/* a listing answered a second late (a reconnect): the bound stays within 500 ms */
	t = try_behind(0, 1000000);
	CHECK(slots[t].zk.try_until == now_us + 500000, "the bound is 500 ms at most");
	/* its node goes behind its back: it queues again, and may wait again */
	zc_core_children_reply(&core, planned(t, OP_WATCH), ZNONODE, NULL, 0, false);
	lookup_finds_nothing(t);
	CHECK(slots[t].zstate == ZKS_NEW && slots[t].zk.try_until == 0, "queued again, with no bound yet");

	/* linger turned off by a reload: a held node's mark comes off */
	setup_handover(100);
	h = lone_holder();
	CHECK(slots[h].coh.may_linger, "created with the mark");
	core.cohort.linger_ms = 0;
	for (t = 0; t < 4 && planned(h, OP_UNMARK) == 0; t++)
		(void) zc_core_plan(&core, true, now_us);	/* owed reads go first */
	CHECK(!slots[h].coh.may_linger && planned(h, OP_UNMARK) != 0, "linger off: the mark comes off");
}

/*
 * A multi-key try of keys tk and tk2 (group 60): HEAD_B alone ahead on tk,
 * nothing on tk2.  The multi is answered and both listings read; its slots
 * into *a (tk) and *b (tk2).
 */
static void
multi_try_behind(int *a, int *b)
{
	static char made_a[ZKL_NODE_BUFLEN];
	static char made_b[ZKL_NODE_BUFLEN];
	const char *names[2];
	const char *list[2];
	uint64_t	tags[2];
	bool		del[2] = {false, false};
	int			errs[2] = {ZOK, ZOK};
	bool		stray[2];
	int			members[ZKL_BATCH_MAX];

	setup();
	*a = claim_member(60, "tk");
	*b = claim_member(60, "tk2");
	slots[*a].req.nowait = slots[*b].req.nowait = true;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(zc_core_next_batch(&core, members) == 2, "the try's two creates go as one multi");
	tags[0] = zc_core_tag(*a, slots[*a].req.attempt);
	tags[1] = zc_core_tag(*b, slots[*b].req.attempt);
	names[0] = node_of(*a, 1, made_a);
	names[1] = node_of(*b, 0, made_b);
	zc_core_multi_reply(&core, 2, tags, del, names, ZOK, errs, stray);
	list[0] = HEAD_B;
	list[1] = made_a;
	listed(tags[0], list, 2, false);
	listed(tags[1], &names[1], 1, false);
	(void) zc_core_plan(&core, true, now_us);
}

/*
 * A multi-key try follows the linger rule of a single one: a key whose only
 * blocker may be lingering is waited for within the same bound, never
 * refused at once, while its free key is granted; a key really held (no
 * mark) is refused, and so is the whole request (the backend gives all up).
 */
static void
test_linger_and_foreign_multi_try(void)
{
	char		path[ZKL_PATH_LEN];
	uint64_t	tag;
	int			a;
	int			b;

	multi_try_behind(&a, &b);
	tag = planned(a, OP_WATCH);
	CHECK(tag != 0 && slots[a].ans.result == ZKL_RESULT_PENDING && slots[a].zk.try_until == now_us + 25000,
		  "multi-key try: the key behind one exclusive node reads its data, for 25 ms at most");
	CHECK(slots[b].ans.result == ZKL_RESULT_GRANTED, "its free key is granted meanwhile");
	zc_core_watch_set_reply(&core, tag, ZOK, "{\"linger\":true}", 15);
	CHECK(slots[a].zstate == ZKS_QUEUED && slots[a].ans.result == ZKL_RESULT_PENDING,
		  "it lingers: the key is waited for");
	snprintf(path, sizeof(path), "/r/tk/%s", HEAD_B);
	zc_core_watch_event(&core, tag, true, path);
	(void) zc_core_plan(&core, true, now_us);
	zc_core_barrier_reply(&core, planned(a, OP_BARRIER), ZOK);
	CHECK(slots[a].ans.result == ZKL_RESULT_GRANTED, "the node went: the multi-key try gets both keys");

	/* held, not lingering: false at once */
	multi_try_behind(&a, &b);
	zc_core_watch_set_reply(&core, planned(a, OP_WATCH), ZOK, "{\"pid\":7}", 9);
	CHECK(slots[a].ans.result == ZKL_RESULT_NOT_GRANTED, "a holder's node: the multi-key try is refused");

	/* it lingers but never goes: false at the bound, as a single try */
	multi_try_behind(&a, &b);
	zc_core_watch_set_reply(&core, planned(a, OP_WATCH), ZOK, "{\"linger\":true}", 15);
	now_us += 25000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[a].ans.result == ZKL_RESULT_NOT_GRANTED && planned(a, OP_DELETE) != 0,
		  "false once the bound is over, and that key's node is deleted");
}

/* An exclusive request of pid on key: claimed (not planned yet); its slot. */
static int
claim_key(int pid, const char *key)
{
	int			idx = claim(ZKL_MODE_EXCLUSIVE, pid);

	snprintf(slots[idx].key, sizeof(slots[idx].key), "%s", key);
	return idx;
}

/*
 * Two backends of one cluster take zk locks in opposite orders: each holds
 * one key and waits for the other's.  Once a wait is deadlock_timeout old,
 * the younger request fails with 40P01, in ZooKeeper's queue (hand-over
 * off) and waiting for a local hand-over (on); a wait behind a third
 * backend, which waits for nobody, is no deadlock.
 */
/* Slot w's node is made with sequence seq and its listing shows names[0 .. n) then it. */
static void
queue_at(int w, int seq, const char **names, int n, char *buf)
{
	names[n] = node_of(w, seq, buf);
	zc_core_create_reply(&core, planned(w, OP_CREATE), ZOK, buf, true, 10 + seq);
	listed(planned(w, OP_CREATE), names, n + 1, false);
}

/*
 * Backend 1 holds text key ka and asks for bigint key 42, backend 2 holds
 * 42 and then asks for ka (10 ms later); with hand-over off their requests queue in ZooKeeper,
 * the second behind `between` (another cluster's writer) if given.  Fills
 * the slots of the two waits.
 */
static void
opposite_orders(bool handover, const char *between, int *w1, int *w2)
{
	static char na[ZKL_NODE_BUFLEN];
	static char nb[ZKL_NODE_BUFLEN];
	static char n1[ZKL_NODE_BUFLEN];
	static char n2[ZKL_NODE_BUFLEN];
	const char *list[3];
	int			a;
	int			b;

	if (handover)
		setup_handover(0);
	else
		setup();
	core.deadlock_timeout = 1000;
	a = claim_key(1, "tka");
	list[0] = node_of(a, 0, na);
	create_and_list(a, 0, list, 1);
	b = claim_key(2, "b42");
	list[0] = node_of(b, 0, nb);
	create_and_list(b, 0, list, 1);
	CHECK(slots[a].ans.result == ZKL_RESULT_GRANTED && slots[b].ans.result == ZKL_RESULT_GRANTED, "each holds one key");
	*w1 = claim_key(1, "b42");
	(void) zc_core_plan(&core, true, now_us);
	list[0] = nb;
	if (!handover)
		queue_at(*w1, 1, list, 1, n1);
	now_us += 10000;
	*w2 = claim_key(2, "tka");
	(void) zc_core_plan(&core, true, now_us);
	list[0] = na;
	list[1] = between;
	if (!handover)
		queue_at(*w2, 3, list, between ? 2 : 1, n2);
}

/*
 * Two backends of one cluster take zk locks in opposite orders: each holds
 * one key and waits for the other's.  Once a wait is deadlock_timeout old,
 * the younger request fails with 40P01, in ZooKeeper's queue (hand-over
 * off; also with another cluster's writer between, which the second one
 * watches) and waiting for a local hand-over (on); a wait behind a third
 * backend, which waits for nobody, is no deadlock.
 */
static void
test_local_deadlock(void)
{
	static char na[ZKL_NODE_BUFLEN];
	char		n2[ZKL_NODE_BUFLEN];
	const char *list[2];
	int			a;
	int			w1;
	int			w2;
	int			on;

	for (on = 0; on < 2; on++)
	{
		opposite_orders(on, NULL, &w1, &w2);
		CHECK(slots[w1].zstate == (on ? ZKS_COHORT : ZKS_QUEUED) &&
			  slots[w2].zstate == (on ? ZKS_COHORT : ZKS_QUEUED), "each waits for the other's key");
		now_us += 500000;
		(void) zc_core_plan(&core, true, now_us);
		CHECK(slots[w1].ans.result == ZKL_RESULT_PENDING && slots[w2].ans.result == ZKL_RESULT_PENDING,
			  "before deadlock_timeout, nothing");
		now_us += 600000;
		(void) zc_core_plan(&core, true, now_us);
		CHECK(slots[w2].ans.result == ZKL_RESULT_FAILED &&
			  slots[w2].ans.sqlstate == ZKL_SQLSTATE('4', '0', 'P', '0', '1') &&
			  strstr(slots[w2].errmsg, "deadlock detected") != NULL,
			  "then the younger request fails with 40P01");
		CHECK(slots[w1].ans.result == ZKL_RESULT_PENDING, "the older one still waits");
		CHECK(on || slots[w2].zstate == ZKS_DELETING, "its node goes");
		CHECK(zc_table_deadlock_detail(&table, &slots[w2]) != NULL &&
			  strcmp(zc_table_deadlock_detail(&table, &slots[w2]),
					 "Process 2 waits for an exclusive zk_lock on key \"ka\", blocked by process 1.\n"
					 "Process 1 waits for an exclusive zk_lock on key \"42\", blocked by process 2.") == 0,
			  "its DETAIL: a line per step, from the victim's, keys as the user gave them");
		CHECK(zc_table_deadlock_detail(&table, &slots[w1]) == NULL, "the other request has none");
	}

	/* a victim of a cycle across clusters keeps the detail gwait.c gave (the same lines) */
	opposite_orders(true, NULL, &w1, &w2);
	CHECK(zc_core_fail_deadlock(&core, 2, "", "deadlock detected across clusters", "Process 2 of cluster a") &&
		  slots[w2].ans.result == ZKL_RESULT_FAILED &&
		  strcmp(zc_table_deadlock_detail(&table, &slots[w2]), "Process 2 of cluster a") == 0,
		  "a victim across clusters: its DETAIL is kept the same way");

	opposite_orders(false, WRITER_B, &w1, &w2);
	CHECK(strcmp(slots[w2].watch, WRITER_B) == 0, "the second watches the other cluster's writer");
	now_us += 1100000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w2].ans.result == ZKL_RESULT_FAILED && slots[w1].ans.result == ZKL_RESULT_PENDING,
		  "the circle through the first backend's node is found all the same");

	/* a long wait behind a holder that waits for nobody is no deadlock */
	setup();
	core.deadlock_timeout = 1000;
	a = claim_key(3, "ka");
	list[0] = node_of(a, 0, na);
	create_and_list(a, 0, list, 1);
	w2 = claim_key(2, "ka");
	(void) zc_core_plan(&core, true, now_us);
	queue_at(w2, 1, list, 1, n2);
	now_us += 5000000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w2].ans.result == ZKL_RESULT_PENDING, "a long wait alone: no victim");
}

/*
 * Deadlocks across clusters (gwait.c): a cluster's document from its slot
 * table, and the decision from every cluster's documents.
 */
static void
test_gwait(void)
{
	static char doc[ZGW_DOC_LEN];
	const char *a = "Z 1 a\nV 10 100 x tk2 x-a2\nE tk2/x-b1\nH tk1/x-a1\nH tk2/x-a2\n";
	const char *b = "Z 2 b\nV 20 200 x tk1 x-b2\nQ some later line\nE tk1/x-a1\nH tk2/x-b1\nH tk1/x-b2\n";
	const char *b_free = "Z 2 b\nV 20 200 x tk1 x-b2\nE tk1/x-c1\nH tk2/x-b1\nH tk1/x-b2\n";
	const char *b_old = "Z 2 b\nV 20 50 x tk1 x-b2\nE tk1/x-a1\nH tk2/x-b1\nH tk1/x-b2\n";
	const char *one = "Z 1 a\nV 10 100 x tk2 x-a2\nP 11\nH tk1/x-a1\nV 11 90 x tk1 x-a3\nP 10\nH tk2/x-a4\n";
	const char *docs[2];
	ZgwVictim	v;
	ZgwLocal	in;
	ZgwHeavy	heavy;
	int			w1;
	int			w2;
	int			len;

	docs[0] = a;
	docs[1] = b;
	CHECK(zc_gwait_decide(docs, 2, 2, &v) && v.pid == 20 && strcmp(v.node, "tk1/x-b2") == 0,
		  "AB/BA across two clusters: the younger transaction's cluster finds its backend the victim");
	CHECK(v.nchecks == 4 && strstr(v.detail, "Process 20 of cluster b") != NULL &&
		  strstr(v.detail, "Process 10 of cluster a") != NULL && strchr(v.detail, '\n') != NULL,
		  "the claim checks every node the cycle goes through; the detail has a line per step");
	CHECK(!zc_gwait_decide(docs, 2, 1, &v), "the other cluster leaves it to the victim's");
	docs[1] = b_old;
	CHECK(zc_gwait_decide(docs, 2, 1, &v) && v.pid == 10, "the victim is the younger, by the czxid of its first node");
	docs[1] = b_free;
	CHECK(!zc_gwait_decide(docs, 2, 1, &v) && !zc_gwait_decide(docs, 2, 2, &v),
		  "a wait for a node nobody published is no cycle");
	docs[0] = one;
	CHECK(!zc_gwait_decide(docs, 1, 1, &v), "a cycle inside one cluster is deadlock.c's");
	/* a2 (11) is on a cycle with a1 (10, the youngest) and on one with b (20) */
	docs[0] = "Z 1 a\nV 10 300 x tk2 x-a2\nP 11\nH tk1/x-a1\nV 11 90 x tk1 x-a3\nP 10\nE tk3/x-b1\nH tk2/x-a4\n";
	docs[1] = "Z 2 b\nV 20 80 x tk2 x-b2\nE tk2/x-a4\nH tk3/x-b1\n";
	CHECK(zc_gwait_decide(docs, 2, 1, &v) && v.pid == 11 && strstr(v.detail, "cluster b") != NULL,
		  "the victim is the youngest on a cycle across clusters, not on one of its own cluster");
	/* a semaphore's waiter needs some of the nodes ahead gone, any of them */
	docs[0] = "Z 1 a\nV 10 100 c mts x-a2 0\nS 1\nE mts/c-b1\nE mts/c-z9\nH tk1/x-a1\nH mts/x-a2\n";
	docs[1] = "Z 2 b\nV 20 200 x tk1 x-b2 0\nE tk1/x-a1\nH mts/c-b1\nH tk1/x-b2\n";
	CHECK(!zc_gwait_decide(docs, 2, 2, &v) && !zc_gwait_decide(docs, 2, 1, &v),
		  "a semaphore's waiter that needs one node of two gone, one of them free to go: no deadlock");
	docs[0] = "Z 1 a\nV 10 100 c mts x-a2 0\nS 2\nE mts/c-b1\nE mts/c-z9\nH tk1/x-a1\nH mts/x-a2\n";
	CHECK(zc_gwait_decide(docs, 2, 2, &v) && v.pid == 20,
		  "one that needs both gone, one of them held by a backend waiting for it: a deadlock");
	/* one cluster: 10 waits for a semaphore behind 11's node, 11 waits for 10's tk1 */
	docs[0] = "Z 1 a\nV 10 100 c mts c-a2 0\nS 1\nE mts/c-a5\nH tk1/x-a1\nH mts/c-a2\n"
		"V 11 200 x tk1 x-a3 0\nP 10\nH mts/c-a5\nH tk1/x-a3\n";
	CHECK(zc_gwait_decide(docs, 1, 1, &v) && v.pid == 11,
		  "a cycle of one cluster through a semaphore, which deadlock.c cannot see, is found here");
	/* 10 and 11 wait for each other's row locks (core's to break), 12 for 10, 11 for 12 */
	docs[0] = "Z 1 a\nV 10 100 L - - 0\nP 11\nH tk1/x-a1\nV 11 100 L - - 0\nP 10\nP 12\n"
		"V 12 300 x tk1 x-a3 0\nE tk1/x-a1\nH tk1/x-a3\n";
	CHECK(!zc_gwait_decide(docs, 1, 1, &v), "a cycle of row locks alone is core's: no zk victim for it");
	/* one cluster: 10 holds tk1 and waits for a row lock of 11, which waits for tk1 */
	docs[0] = "Z 1 a\nV 10 100 L - -\nP 11\nH tk1/x-a1\nV 11 200 x tk1 x-a2\nE tk1/x-a1\nH tk1/x-a2\n";
	CHECK(zc_gwait_decide(docs, 1, 1, &v) && v.pid == 11 && strstr(v.detail, "row or table lock") != NULL,
		  "a cycle of one cluster through a row lock: the zk waiter gives way, never the other");

	/* the document, from the slot table: local edges and another cluster's node */
	opposite_orders(false, WRITER_B, &w1, &w2);
	in.coh = &core.cohort;
	in.now = now_us;
	in.timeout_ms = 1000;
	in.cluster = "c a";
	in.session = 0x1f;
	in.heavy = &heavy;
	in.confirms = 0;
	in.nheavy = 1;
	heavy.pid = 77;
	heavy.since = 5;
	heavy.nblockers = 1;
	heavy.blockers[0] = 2;
	CHECK(zc_gwait_format(&in, doc, sizeof(doc)) == 0,
		  "nothing to publish before deadlock_timeout, a lock manager's wait or not");
	now_us += 1100000;
	in.now = now_us;
	len = zc_gwait_format(&in, doc, sizeof(doc));
	CHECK(len > 0 && strncmp(doc, "Z 1f c_a\n", 9) == 0, "then the session and the cluster's name, blanks replaced");
	CHECK(strstr(doc, "E ") != NULL && strstr(doc, WRITER_B) != NULL,
		  "the wait for the other cluster's writer is an edge to its node");
	CHECK(strstr(doc, "\nP ") != NULL && strstr(doc, "\nH ") != NULL,
		  "the waits for a local backend, and the nodes each holds");
	CHECK(strstr(doc, "\nV 77 ") != NULL && strstr(doc, " L - - 5\nP 2\n") != NULL,
		  "a lock manager's waiter is a vertex with edges to its blockers");
	CHECK(zc_gwait_format(&in, doc, 40) == 0,
		  "a document with no room for a whole backend publishes nothing");

	/* a claim names the sessions that must confirm; their documents say so with a K line */
	{
		int64_t		read_from[3] = {0x1f, 0x20, 0x2a};
		int64_t		named[4];
		char		claim[ZGW_CLAIM_LEN];
		int			clen = zc_gwait_claim_format(0xabc, read_from, 3, 0x20, claim, sizeof(claim));

		CHECK(zc_gwait_claim_sessions(claim, clen, named, 4) == 2 && named[0] == 0x1f && named[1] == 0x2a,
			  "a claim names every session the decision read but its own");
		CHECK(zc_gwait_claim_asks(claim, clen, 0x1f) == 0xabc && zc_gwait_claim_asks(claim, clen, 0x20) == 0,
			  "a named session is asked, with the claim's nonce; the claimer is not");
		in.confirms = 0xabc;
		len = zc_gwait_format(&in, doc, sizeof(doc));
		CHECK(len > 0 && zc_gwait_confirms(doc, 0xabc) && !zc_gwait_confirms(doc, 0xabd),
			  "a document written for a claim confirms that claim only");
		in.confirms = 0;
		len = zc_gwait_format(&in, doc, sizeof(doc));
		CHECK(len > 0 && !zc_gwait_confirms(doc, 0xabc), "one written before confirms nothing");
		in.confirms = 0xabc;
		CHECK(zc_gwait_format(&in, doc, len + 2) == 0 || zc_gwait_confirms(doc, 0xabc),
			  "a confirmation's line always has room: a waiter is left out rather than it");
		in.confirms = 0;
	}

	/* a victim's claim is kept while its node lives, or its delete is on its way */
	{
		const ZklSlot *s = &table.slots[w1];
		char		name[ZGW_NAME_LEN];

		snprintf(name, sizeof(name), "%s/%s", s->key, s->node);
		CHECK(zc_gwait_node_live(&table, name), "a waiting node lives");
		table.slots[w1].zstate = ZKS_DELETING;
		CHECK(zc_gwait_node_live(&table, name), "so does one whose delete is on its way");
		table.slots[w1].zstate = ZKS_GONE;
		CHECK(!zc_gwait_node_live(&table, name), "then it is gone");
		CHECK(!zc_gwait_node_live(&table, "tk9/x-none"), "a node no slot has is not live");
	}
}

/*
 * A try-lock that joined a released holder's node to be next (nobody
 * waited then) is refused when the node passes to a writer that asked
 * before it: it must not wait behind that writer's whole hold.
 */
static void
test_try_not_parked_behind_handover(void)
{
	int			h;
	int			gap;
	int			old;
	int			young;

	setup_handover(100);
	core.cohort.handover_limit = 8;
	h = lone_holder();
	(void) zc_core_plan(&core, true, now_us);
	peek_alone(h);
	(void) zc_table_abandon(&table, &slots[h]);
	gap = claim(ZKL_MODE_EXCLUSIVE, 5);
	old = claim(ZKL_MODE_EXCLUSIVE, 6);
	zc_table_free(&table, &slots[gap]);
	young = claim(ZKL_MODE_EXCLUSIVE, 7);
	slots[young].req.nowait = true;
	CHECK(young < old && slots[young].req.ticket > slots[old].req.ticket, "the younger try sits first in the table");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[old].ans.result == ZKL_RESULT_GRANTED, "the node passes to the writer that asked first");
	CHECK(slots[young].ans.result == ZKL_RESULT_NOT_GRANTED, "and the try is refused: the key is held here");
}

/* A shared request of pid: claimed and planned once (a try-lock if nowait). */
static int
ask_shared(int pid, bool nowait)
{
	int			s = claim(ZKL_MODE_SHARED, pid);

	slots[s].req.nowait = nowait;
	(void) zc_core_plan(&core, true, now_us);
	return s;
}

/* Hand-over on: pid 1 holds the key shared, alone in its queue: its slot. */
static int
lone_reader(void)
{
	static char n0[ZKL_NODE_BUFLEN];
	const char *list[1];
	int			s;

	setup();
	core.cohort.handover = true;
	core.cohort.handover_limit = 8;
	s = claim(ZKL_MODE_SHARED, 1);
	list[0] = node_of(s, 0, n0);
	create_and_list(s, 0, list, 1);
	CHECK(slots[s].ans.result == ZKL_RESULT_GRANTED && slots[s].zk.clear, "a lone reader holds, no writer ahead");
	return s;
}

/*
 * Local readers ride one node: a second reader waits for the holder's
 * child watch, then joins with no round trip and a greater token; the node
 * passes to a rider when its owner is done; an upgrade by a rider waits
 * for the other readers, and is told when they have left.
 */
static void
test_riders(void)
{
	char		node[ZKL_NODE_BUFLEN];
	char		xname[ZKL_NODE_BUFLEN];
	const char *list[2];
	int			h = lone_reader();
	int			r1;
	int			r2;
	int			x;
	int			r3;
	uint64_t	tag;

	snprintf(node, sizeof(node), "%s", slots[h].node);
	r1 = ask_shared(2, false);
	CHECK(slots[r1].zstate == ZKS_COHORT && planned(r1, OP_CREATE) == 0,
		  "a second reader waits for the holder's child watch");
	peek_alone(h);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r1].ans.result == ZKL_RESULT_GRANTED && slots[r1].zk.rides && strcmp(slots[r1].node, node) == 0 &&
		  slots[r1].zk.handed == 1 && core.nops == 0, "then joins the node: granted, no round trip");
	r2 = ask_shared(3, false);
	CHECK(slots[r2].ans.result == ZKL_RESULT_GRANTED && slots[r2].zk.handed == 2 && core.nops == 0,
		  "the next reader joins at once");
	CHECK(zc_recipe_fencing_token(slots[r2].zk.czxid, slots[r2].zk.handed) == 10 * ZKL_HANDOVER_MAX + 2,
		  "each joiner's token is greater");

	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[h].zstate == ZKS_FREE && core.nops == 0, "its owner done, the node stays: no delete");
	CHECK(slots[r1].zstate == ZKS_HELD && !slots[r1].zk.rides && zc_recipe_name_has_uuid(node, slots[r1].uuid) &&
		  slots[r2].zk.rides, "it passes to a rider");

	/* reader 3 upgrades: it waits for reader 2, whose node it is now */
	x = claim(ZKL_MODE_EXCLUSIVE, 3);
	list[0] = node;
	list[1] = node_of(x, 1, xname);
	create_and_list(x, 1, list, 2);
	CHECK(slots[x].ans.result == ZKL_RESULT_PENDING && strcmp(slots[x].watch, node) == 0,
		  "an upgrade by a rider waits for the node's other readers");
	r3 = ask_shared(4, false);
	CHECK(slots[r3].zstate == ZKS_CREATING, "no reader joins past a local writer: it queues in ZooKeeper");
	(void) zc_table_abandon(&table, &slots[r1]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r2].zstate == ZKS_HELD && !slots[r2].zk.rides, "the node passes to the upgrader");
	tag = planned(x, OP_CHILDREN);
	CHECK(tag != 0, "which reads its queue again: the others have left");
	listed(tag, list, 2, false);
	CHECK(slots[x].ans.result == ZKL_RESULT_GRANTED, "and holds the key exclusive");
}

/* A lost node: every reader riding it loses it; a reader waiting for the watch queues again. */
static void
test_riders_lost(void)
{
	const char *list[1];
	int			h = lone_reader();
	int			r1;
	int			r2;
	int			t;
	uint64_t	tag;

	r1 = ask_shared(2, false);
	peek_alone(h);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r1].zk.rides, "a rider");
	zc_core_watch_event(&core, 0, false, "/r/tk");
	t = ask_shared(5, true);
	tag = planned(h, OP_CHILDREN);
	CHECK(planned(t, OP_CREATE) != 0 && tag != 0,
		  "after an event, a try-lock does not wait for the listing it asks for");
	r2 = ask_shared(3, false);
	CHECK(slots[r2].zstate == ZKS_COHORT, "the next reader waits for it");
	list[0] = "x-00000000-0000-4000-8000-0000000000ff-9-9-0000000099";
	listed(tag, list, 1, true);
	CHECK(slots[h].ans.result == ZKL_RESULT_LOST && slots[r1].ans.result == ZKL_RESULT_LOST,
		  "the node gone from the listing: its owner and its rider lose the lock");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(r2, OP_CREATE) != 0, "the waiting reader queues in ZooKeeper");
}

/* Hand-over turned off by a reload: a node with riders still passes to them, never deleted under them. */
static void
test_riders_turned_off(void)
{
	const char *list[2];
	char		other[ZKL_NODE_BUFLEN];
	int			h = lone_reader();
	int			r1;
	int			r2;
	uint64_t	tag;

	r1 = ask_shared(2, false);
	peek_alone(h);
	(void) zc_core_plan(&core, true, now_us);
	/* a node behind ours seen, limit 1: one more join, then readers queue in ZooKeeper */
	core.cohort.handover_limit = 1;
	zc_core_watch_event(&core, 0, false, "/r/tk");
	r2 = ask_shared(3, false);
	tag = planned(h, OP_CHILDREN);
	list[0] = slots[h].node;
	snprintf(other, sizeof(other), "x-00000000-0000-4000-8000-0000000000ff-9-9-%010d", 5);
	list[1] = other;
	listed(tag, list, 2, true);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r2].zk.rides && slots[h].coh.since_foreign == 1, "one join within the bound");
	CHECK(planned(ask_shared(4, false), OP_CREATE) != 0, "past it, a reader queues in ZooKeeper");
	core.cohort.handover = false;
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_table_abandon(&table, &slots[r1]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(h, OP_DELETE) == 0 && planned(r2, OP_DELETE) == 0 && slots[r2].zstate == ZKS_HELD &&
		  !slots[r2].zk.rides, "hand-over off: the node still passes to the last rider");
	(void) zc_table_abandon(&table, &slots[r2]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(r2, OP_DELETE) != 0, "and goes with it");
}

/*
 * An upgrade behind another cluster's writer queued behind a ridden node:
 * the writer waits for the node, so once no other backend rides it, core's
 * same-backend rule lets the upgrade past the writer.  It is told, whichever
 * node it watches: when a rider leaves (the owner upgrades) and when the
 * node passes to a rider (the rider upgrades).
 */
static void
test_riders_upgrade_past_writer(void)
{
	int			by;

	for (by = 1; by <= 2; by++)
	{
		char		node[ZKL_NODE_BUFLEN];
		char		xname[ZKL_NODE_BUFLEN];
		const char *list[3];
		int			h = lone_reader();
		int			r1 = ask_shared(2, false);
		int			x;
		uint64_t	tag;

		peek_alone(h);
		(void) zc_core_plan(&core, true, now_us);
		snprintf(node, sizeof(node), "%s", slots[h].node);
		x = claim(ZKL_MODE_EXCLUSIVE, by);
		list[0] = node;
		list[1] = "x-00000000-0000-4000-8000-0000000000ff-9-9-0000000001";
		list[2] = node_of(x, 2, xname);
		create_and_list(x, 2, list, 3);
		CHECK(slots[x].ans.result == ZKL_RESULT_PENDING && strcmp(slots[x].watch, list[1]) == 0,
			  "an upgrade waits behind the other cluster's writer while another backend rides");
		/* it waits for the other reader only, which waits for nobody: no deadlock */
		core.deadlock_timeout = 1000;
		now_us += 2000000;
		(void) zc_core_plan(&core, true, now_us);
		CHECK(slots[x].ans.result == ZKL_RESULT_PENDING, "a long upgrade wait behind a rider is no deadlock");
		core.deadlock_timeout = 0;
		(void) zc_table_abandon(&table, &slots[by == 1 ? r1 : h]);
		(void) zc_core_plan(&core, true, now_us);
		tag = planned(x, OP_CHILDREN);
		CHECK(tag != 0, by == 1 ? "the rider gone, the owner's upgrade reads its queue"
			  : "the node passed to it, the rider's upgrade reads its queue");
		listed(tag, list, 3, false);
		CHECK(slots[x].ans.result == ZKL_RESULT_GRANTED, "and is granted past the writer, which waits for it");
	}
}

/*
 * The readers' bound is the key's: with two shared nodes of this cluster
 * on the key, a request seen behind one counts for both, and so do the
 * joins.  Past the limit a reader queues in ZooKeeper, whichever node it
 * could have ridden.
 */
static void
test_riders_bound_per_key(void)
{
	char		n2[ZKL_NODE_BUFLEN];
	const char *list[3];
	int			h = lone_reader();
	int			t;
	int			r;
	uint64_t	tag;

	core.cohort.handover_limit = 1;
	t = ask_shared(2, true);
	tag = planned(h, OP_CHILDREN);
	list[0] = slots[h].node;
	list[1] = node_of(t, 1, n2);
	(void) zc_core_create_reply(&core, planned(t, OP_CREATE), ZOK, n2, true, 11);
	listed(zc_core_tag(t, slots[t].req.attempt), list, 2, false);
	CHECK(slots[t].ans.result == ZKL_RESULT_GRANTED && !slots[t].zk.rides, "a try-lock made a second shared node");
	list[2] = WRITER_B;
	listed(tag, list, 3, true);
	CHECK(slots[h].coh.foreign && slots[t].coh.foreign, "a request seen behind one node counts for both");
	r = ask_shared(3, false);
	CHECK(slots[r].zk.rides && slots[h].coh.since_foreign == 1 && slots[t].coh.since_foreign == 1,
		  "one join within the limit, counted for both");
	r = ask_shared(4, false);
	CHECK(planned(r, OP_CREATE) != 0, "past it, a reader queues in ZooKeeper: the other node does not host it");
}

/*
 * The key's count outlives the node that counted: a reader's node granted
 * after the joins (its listing was still out) keeps the count, so once the
 * first node goes no reader joins the second past the same writer.  And a
 * reconnection disarms: what queued meanwhile is told one round trip later.
 */
static void
test_riders_count_outlives_node(void)
{
	char		n2[ZKL_NODE_BUFLEN];
	const char *list[3];
	int			h = lone_reader();
	int			t;
	int			r;
	uint64_t	tag;
	uint64_t	ctag;

	core.cohort.handover_limit = 1;
	t = ask_shared(2, true);
	tag = planned(h, OP_CHILDREN);
	ctag = planned(t, OP_CREATE);
	list[0] = slots[h].node;
	list[1] = node_of(t, 1, n2);
	list[2] = WRITER_B;
	listed(tag, list, 3, true);
	r = ask_shared(3, false);
	CHECK(slots[r].zk.rides && slots[h].coh.since_foreign == 1, "one join past the writer, limit 1");
	(void) zc_core_create_reply(&core, ctag, ZOK, n2, true, 11);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_table_abandon(&table, &slots[r]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(h, OP_DELETE) != 0, "the first node goes before the second's listing is back");
	listed(zc_core_tag(t, slots[t].req.attempt), list, 3, false);
	CHECK(slots[t].ans.result == ZKL_RESULT_GRANTED && slots[t].coh.foreign && slots[t].coh.since_foreign == 1,
		  "a node granted later keeps the key's count");
	r = ask_shared(4, false);
	CHECK(planned(r, OP_CREATE) != 0, "no reader joins the other past the same writer");

	/* a reconnection: nothing is joined before a listing after it */
	h = lone_reader();
	r = ask_shared(2, false);
	peek_alone(h);
	zc_core_reconnected(&core);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(!slots[r].zk.rides && planned(r, OP_CREATE) != 0,
		  "after a reconnection a waiting reader joins nothing: it queues in ZooKeeper");
}

/* The count starts again once a listing shows no writer in the key's queue at all. */
static void
test_riders_count_resets(void)
{
	char		n3[ZKL_NODE_BUFLEN];
	const char *list[2];
	int			h = lone_reader();
	int			r;
	uint64_t	tag;

	core.cohort.handover_limit = 0;
	r = ask_shared(2, false);
	tag = planned(h, OP_CHILDREN);
	list[0] = slots[h].node;
	list[1] = WRITER_B;
	listed(tag, list, 2, true);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(!slots[r].zk.rides && planned(r, OP_CREATE) != 0, "limit 0: a writer seen, no reader joins");
	zc_core_watch_event(&core, ZKL_KEY_WATCH_TAG, false, "/r/tk");	/* the writer went */
	r = ask_shared(3, false);
	tag = planned(r, OP_CREATE);
	CHECK(tag != 0, "the next reader queues in ZooKeeper");
	list[1] = node_of(r, 3, n3);
	(void) zc_core_create_reply(&core, tag, ZOK, n3, true, 13);
	listed(tag, list, 2, true);
	CHECK(!slots[h].coh.foreign && slots[h].coh.since_foreign == 0 && slots[r].ans.result == ZKL_RESULT_GRANTED,
		  "its listing shows no writer in the queue: the count starts again");
	r = ask_shared(4, false);
	CHECK(slots[r].zstate == ZKS_COHORT, "and a reader may join again, once a listing arms a node");
}

/* The core's invariants are checked here (ZC_ASSERTS): a broken one is caught, not gone past. */
static jmp_buf invariant_jump;
static const char *invariant_cond;

static void
invariant_caught(const char *cond, const char *file, int line)
{
	invariant_cond = cond;
	longjmp(invariant_jump, 1);
}

static void
test_invariants(void)
{
	ZklRequest	r = {"tk", ZKL_MODE_EXCLUSIVE, 0, 0, false, ZKL_SCOPE_XACT, "{}", 1, 1, 0, "u"};
	int			idx;

	setup();
	idx = claim(ZKL_MODE_EXCLUSIVE, 100);
	zc_invariant_broken = invariant_caught;
	invariant_cond = NULL;
	if (setjmp(invariant_jump) == 0)
		zc_table_claim(&table, idx, &r);	/* the slot is in use */
	CHECK(invariant_cond != NULL && strstr(invariant_cond, "ZKS_FREE") != NULL,
		  "claiming a slot in use breaks an invariant");
	invariant_cond = NULL;
	r.holders = 3;				/* holders for a lock */
	if (setjmp(invariant_jump) == 0)
		zc_table_claim(&table, zc_table_find_free(&table), &r);
	CHECK(invariant_cond != NULL && strstr(invariant_cond, "holders") != NULL,
		  "a lock claimed with holders breaks an invariant");
	zc_invariant_broken = NULL;
}

/*
 * An upgrade that passed a local waiter, whose turn then comes while the
 * upgrader still holds the key: the waiter waits for the upgrader, and a
 * circle through that wait is a deadlock the search finds.  C holds kb; A
 * reads ka, B waits to write it, C waits to read it behind B; A upgrades
 * (passing B and C); B gives up, so C's turn comes, held for A; A asks kb.
 */
static void
test_upgrade_held_turn_deadlock(void)
{
	static char nC2[ZKL_NODE_BUFLEN], nsA[ZKL_NODE_BUFLEN], nxB[ZKL_NODE_BUFLEN], nsC[ZKL_NODE_BUFLEN],
				nxA[ZKL_NODE_BUFLEN], nxA2[ZKL_NODE_BUFLEN];
	const char *la[6];
	const char *lb[3];
	int			xc2;
	int			sa;
	int			xb;
	int			sc;
	int			xa;
	int			xa2;
	int			k;
	uint64_t	tag;
	uint64_t	tc;

	setup();
	core.deadlock_timeout = 1000;
	xc2 = claim_key(3, "kb");
	lb[0] = node_of(xc2, 0, nC2);
	create_and_list(xc2, 0, lb, 1);
	sa = claim(ZKL_MODE_SHARED, 1);
	snprintf(slots[sa].key, sizeof(slots[sa].key), "ka");
	la[0] = node_of(sa, 0, nsA);
	create_and_list(sa, 0, la, 1);
	xb = claim_key(2, "ka");
	la[1] = node_of(xb, 1, nxB);
	create_and_list(xb, 1, la, 2);
	sc = claim(ZKL_MODE_SHARED, 3);
	snprintf(slots[sc].key, sizeof(slots[sc].key), "ka");
	la[2] = node_of(sc, 2, nsC);
	create_and_list(sc, 2, la, 3);
	xa = claim_key(1, "ka");
	la[3] = node_of(xa, 3, nxA);
	create_and_list(xa, 3, la, 4);
	CHECK(slots[xa].ans.result == ZKL_RESULT_GRANTED && slots[sc].ans.result == ZKL_RESULT_PENDING &&
		  slots[xb].ans.result == ZKL_RESULT_PENDING, "the upgrade goes ahead of the writer and the reader");
	(void) zc_table_abandon(&table, &slots[xb]);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(xb, OP_DELETE);
	tc = planned(sc, OP_CHILDREN);
	CHECK(tc != 0, "the reader behind the writer reads its queue behind the delete: an upgrade may stand ahead");
	zc_core_delete_reply(&core, tag, ZOK);
	CHECK(slots[sc].ans.result == ZKL_RESULT_PENDING, "so the delete does not grant it");
	la[1] = nsC;
	la[2] = nxA;
	listed(tc, la, 3, false);
	CHECK(slots[sc].ans.result == ZKL_RESULT_PENDING && strcmp(slots[sc].watch, nxA) == 0,
		  "its queue read again shows the upgrade ahead of it: it waits for the upgrader and watches its node");
	xa2 = claim_key(1, "kb");
	(void) zc_core_plan(&core, true, now_us);
	lb[1] = node_of(xa2, 1, nxA2);
	zc_core_create_reply(&core, planned(xa2, OP_CREATE), ZOK, nxA2, true, 11);
	listed(planned(xa2, OP_CREATE), lb, 2, false);
	for (k = 0; k < 10 && slots[sc].ans.result == ZKL_RESULT_PENDING &&
		 slots[xa2].ans.result == ZKL_RESULT_PENDING; k++)
	{
		now_us += 1000000;
		(void) zc_core_plan(&core, true, now_us);
	}
	CHECK((slots[sc].ans.result == ZKL_RESULT_FAILED) != (slots[xa2].ans.result == ZKL_RESULT_FAILED) &&
		  (strstr(slots[sc].errmsg, "deadlock") != NULL || strstr(slots[xa2].errmsg, "deadlock") != NULL),
		  "that wait is an edge of the search: one of the circle gets 40P01");
}

/*
 * A local request whose turn may have come is not passed: a try-lock whose
 * create reply was lost (looked up, its listing not back) or one decided
 * during a lock-delay pause.  The upgrade waits for it, as core's would for
 * a reader that asked first; a try is never held for an upgrade.
 */
static void
test_upgrade_passes_only_waiters(void)
{
	static char nsA[ZKL_NODE_BUFLEN], nT[ZKL_NODE_BUFLEN], nxA[ZKL_NODE_BUFLEN];
	const char *la[4];
	char		stray[ZKL_PATH_LEN];
	int			sa;
	int			t;
	int			xa;
	int			dummy;
	uint64_t	tag;
	uint64_t	st;
	uint64_t	tx;
	uint64_t	tt;

	setup();
	sa = claim(ZKL_MODE_SHARED, 1);
	la[0] = node_of(sa, 0, nsA);
	create_and_list(sa, 0, la, 1);
	t = claim(ZKL_MODE_SHARED, 3);
	slots[t].req.nowait = true;
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(t, OP_CREATE);
	la[1] = node_of(t, 1, nT);
	(void) zc_core_create_reply(&core, tag, ZCONNECTIONLOSS, NULL, false, 0);
	zc_core_children_reply(&core, tag, ZCONNECTIONLOSS, NULL, 0, false);
	(void) zc_core_plan(&core, true, now_us);
	zc_core_recover_reply(&core, planned(t, OP_RECOVER), ZOK, la, 2);
	xa = claim(ZKL_MODE_EXCLUSIVE, 1);
	(void) zc_core_plan(&core, true, now_us);
	st = planned(t, OP_STAT);
	la[2] = node_of(xa, 2, nxA);
	zc_core_create_reply(&core, planned(xa, OP_CREATE), ZOK, nxA, true, 12);
	listed(planned(xa, OP_CREATE), la, 3, false);
	CHECK(slots[xa].ans.result == ZKL_RESULT_PENDING,
		  "a try whose lost create was found, its turn not read yet: the upgrade waits for it");
	(void) zc_core_stat_reply(&core, st, ZOK, table.session_id, 11, stray);
	(void) zc_core_plan(&core, true, now_us);
	listed(planned(t, OP_CHILDREN), la, 3, false);
	CHECK(slots[t].ans.result == ZKL_RESULT_GRANTED && slots[xa].ans.result == ZKL_RESULT_PENDING,
		  "and the try is granted beside our read");

	setup();
	sa = claim(ZKL_MODE_SHARED, 1);
	la[0] = node_of(sa, 0, nsA);
	create_and_list(sa, 0, la, 1);
	dummy = claim(ZKL_MODE_SHARED, 9);
	t = claim(ZKL_MODE_SHARED, 3);
	slots[t].req.nowait = true;
	zc_table_free(&table, &slots[dummy]);
	paused = true;
	paused_until = now_us + 500000;
	la[1] = node_of(t, 1, nT);
	create_and_list(t, 1, la, 2);
	xa = claim(ZKL_MODE_EXCLUSIVE, 1);
	la[2] = node_of(xa, 2, nxA);
	create_and_list(xa, 2, la, 3);
	paused = false;
	now_us += 600000;
	(void) zc_core_plan(&core, true, now_us);
	tx = planned(xa, OP_CHILDREN);
	tt = planned(t, OP_CHILDREN);
	listed(tx, la, 3, false);
	listed(tt, la, 3, false);
	now_us += 5000000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[t].ans.result == ZKL_RESULT_GRANTED && slots[xa].ans.result == ZKL_RESULT_PENDING,
		  "a try decided during a lock-delay pause is not passed: granted after it, the upgrade waits");
}

int
main(void)
{
	test_invariants();
	test_session_lost_past_commit_check();
	test_upgrade_held_turn_deadlock();
	test_upgrade_passes_only_waiters();
	test_stale_watch();
	test_local_handover();
	test_lock_delay();
	test_session_lost();
	test_proof();
	test_resume();
	test_restart_verify();
	test_unlisted_hold_lost();
	test_holds();
	test_book();
	test_session_names();
	test_lock_delay_rules();
	test_presence();
	test_presence_incarnations();
	test_owner_asks();
	test_looks();
	test_names();
	test_semaphore();
	test_semaphore_reader_gone();
	test_semaphore_delay_one_read();
	test_group_split();
	test_group_never_alone();
	test_proof_step();
	test_cutoff();
	test_term_action();
	test_stop_step();
	test_group_member_failed();
	test_cohort();
	test_cohort_session_lost();
	test_kept_node_not_held();
	test_try_after_release();
	test_linger();
	test_linger_and_foreign_try();
	test_linger_and_foreign_multi_try();
	test_try_not_parked_behind_handover();
	test_local_deadlock();
	test_gwait();
	test_recheck_looks_at_own_node();
	test_listing_behind();
	test_refusals();
	test_linger_goes_to_first_asker();
	test_riders();
	test_riders_lost();
	test_riders_turned_off();
	test_riders_upgrade_past_writer();
	test_riders_bound_per_key();
	test_riders_count_outlives_node();
	test_riders_count_resets();
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
