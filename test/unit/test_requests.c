/*
 * test_requests.c — a request's path through the worker: listings, lookups
 * after a refusal, a stale watch, lock-delay, a lost session, the commit
 * proof, a resumed session.
 */
#include "unit_core.h"

/*
 * After a worker restart, the new handle may reach a server that has not
 * applied our create: its listing misses our node.  The lookup after a
 * sync finds it: the same node is kept, not left to nobody for a new one.
 */
void
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
void
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
void
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
void
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

/*
 * W's barrier read (its own node, after its sole blocker's delete event)
 * may come back after W was granted by that blocker's delete reply; its
 * node deleted from outside in between, the read's "no node" loses the
 * lock at once (a simulator seed: another cluster was granted on the next
 * listing while W still held).
 */
/* (W granted by D's delete reply while its barrier read is out: that read's tag) */
static uint64_t
granted_with_barrier_out(int *w)
{
	char		path[ZKL_PATH_LEN];
	uint64_t	barrier;
	uint64_t	del;
	int			d;

	setup();
	holder_and_waiter(&d, w);
	CHECK(slots[*w].zk.watch_sole, "W waits on D alone");
	(void) zc_table_abandon(&table, &slots[d]);
	(void) zc_core_plan(&core, true, now_us);
	del = planned(d, OP_DELETE);
	zc_core_child_path(&table, &slots[d], slots[d].node, path);
	zc_core_watch_event(&core, zc_core_tag(*w, slots[*w].req.attempt), true, path);
	(void) zc_core_plan(&core, true, now_us);
	barrier = planned(*w, OP_BARRIER);
	CHECK(del != 0 && barrier != 0, "D's delete and W's barrier read are both on their way");
	zc_core_delete_reply(&core, del, ZOK);
	CHECK(slots[*w].zstate == ZKS_HELD && slots[*w].ans.result == ZKL_RESULT_GRANTED,
		  "D's delete reply grants W before its barrier read is back");
	return barrier;
}

void
test_barrier_after_grant(void)
{
	uint64_t	barrier;
	int			w;

	barrier = granted_with_barrier_out(&w);
	zc_core_barrier_reply(&core, barrier, ZNONODE);
	CHECK(slots[w].ans.result == ZKL_RESULT_LOST && slots[w].zstate != ZKS_HELD,
		  "the barrier read found W's node gone: the lock is lost at once");

	/* found there, it stays held */
	barrier = granted_with_barrier_out(&w);
	zc_core_barrier_reply(&core, barrier, ZCONNECTIONLOSS);
	CHECK(slots[w].zstate == ZKS_HELD && slots[w].ans.result == ZKL_RESULT_GRANTED,
		  "the barrier read's connection was lost: that says nothing of the node, W still holds");
	zc_core_barrier_reply(&core, barrier, ZOK);
	CHECK(slots[w].zstate == ZKS_HELD && slots[w].ans.result == ZKL_RESULT_GRANTED,
		  "the barrier read found it: W still holds");
}

/*
 * A seed's orphan: another backend's upgrade of its read R stands right
 * behind R, ahead of local holder D and waiter W; made after D, it falls
 * between them once R goes (by its own sequence).  D, granted then at the
 * head, must not hand W the key by its delete's reply alone: W reads its
 * queue and finds the upgrade ahead.
 */
void
test_fallen_upgrade(void)
{
	static const char r0[] = "s-00000000-0000-4000-8000-0000000000a1-9-50.r-0000000000";
	static const char u2[] = "x-00000000-0000-4000-8000-0000000000a2-9-50.u0-0000000002";
	const char *list[4];
	ZkrChild	kids[4];
	int			d;
	int			w;
	uint64_t	tag;

	setup();
	d = claim(ZKL_MODE_EXCLUSIVE, 1);
	list[0] = r0;
	list[1] = node_of(d, 1, made[0]);
	create_and_list(d, 1, list, 2);
	list[2] = u2;
	w = claim(ZKL_MODE_EXCLUSIVE, 2);
	list[3] = node_of(w, 3, made[1]);
	create_and_list(w, 3, list, 4);
	CHECK(zc_recipe_collect(list, 4, kids) == 4 && kids[1].placed && strcmp(slots[w].watch, made[0]) == 0 &&
		  slots[w].zk.upgrade_falls, "W watches D, with the upgrade placed ahead of D");
	/* R goes; D reads its queue: granted, nothing ahead */
	slots[d].zk.todo |= ZKT_CHILDREN;
	(void) zc_core_plan(&core, true, now_us);
	zc_core_children_reply(&core, planned(d, OP_CHILDREN), ZOK, kids, zc_recipe_collect(list + 1, 3, kids), false);
	CHECK(slots[d].ans.result == ZKL_RESULT_GRANTED && slots[d].zk.at_head, "D is granted at the head");
	(void) zc_table_abandon(&table, &slots[d]);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(d, OP_DELETE);
	CHECK(tag != 0 && !slots[w].zk.watch_sole && planned(w, OP_CHILDREN) != 0,
		  "D's delete goes, and W reads its queue behind it");
	zc_core_delete_reply(&core, tag, ZOK);
	CHECK(slots[w].ans.result == ZKL_RESULT_PENDING, "the delete's reply does not grant W");
	zc_core_children_reply(&core, planned(w, OP_CHILDREN), ZOK, kids, zc_recipe_collect(list + 2, 2, kids), false);
	CHECK(slots[w].ans.result == ZKL_RESULT_PENDING && strcmp(slots[w].watch, u2) == 0,
		  "W's listing shows the upgrade ahead: it waits for it");
}

/*
 * As below, pid 1's exclusive lock (*h) and its shared one at `scope`, both
 * past the commit check when the exclusive node is found gone; returns the
 * shared one's slot.
 */
static int
lost_while_committing(const char **list, uint8_t scope, int *h)
{
	char		stray[ZKL_PATH_LEN];
	int			r;

	setup();
	*h = lone_holder();
	r = claim(ZKL_MODE_SHARED, 1);
	slots[r].own.scope = scope;
	list[2] = node_of(r, 2, made[0]);
	create_and_list(r, 2, list, 3);
	slots[*h].own.committing = slots[r].own.committing = true;
	slots[*h].zk.todo |= ZKT_STAT;
	(void) zc_core_plan(&core, true, now_us);
	(void) zc_core_stat_reply(&core, planned(*h, OP_STAT), ZNONODE, 0, 0, stray);
	(void) zc_core_plan(&core, true, now_us);
	return r;
}

/*
 * pid 1 holds the key exclusive and is granted it shared too, past another
 * cluster's writer F that waits for its exclusive node (core's rule).  That
 * node is deleted from outside and found gone: F may be granted now, so the
 * shared lock is lost with it, and its node deleted.
 */
void
test_lost_with_other_lock(void)
{
	static const char f1[] = "x-00000000-0000-4000-8000-0000000000f1-9-50.r-0000000001";
	const char *list[3];
	char		stray[ZKL_PATH_LEN];
	int			h;
	int			r;

	setup();
	h = lone_holder();
	r = claim(ZKL_MODE_SHARED, 1);
	list[0] = slots[h].node;
	list[1] = f1;
	list[2] = node_of(r, 2, made[0]);
	create_and_list(r, 2, list, 3);
	CHECK(slots[r].ans.result == ZKL_RESULT_GRANTED && !slots[r].zk.at_head,
		  "the shared request is granted past the writer that waits for the exclusive node");
	slots[h].zk.todo |= ZKT_STAT;	/* as a listing without it asks */
	(void) zc_core_plan(&core, true, now_us);
	(void) zc_core_stat_reply(&core, planned(h, OP_STAT), ZNONODE, 0, 0, stray);
	CHECK(slots[h].ans.result == ZKL_RESULT_LOST, "the exclusive node is gone: lost");
	CHECK(slots[r].ans.result == ZKL_RESULT_LOST && slots[r].zstate == ZKS_DELETING &&
		  (slots[r].zk.todo & ZKT_DELETE), "and the shared lock with it, its node deleted");
	CHECK(interrupts == 2, "both owners' statements are cancelled");

	/* the later node lost: the earlier one passed nothing for it, and stays */
	setup();
	h = lone_holder();
	r = claim(ZKL_MODE_SHARED, 1);
	list[2] = node_of(r, 2, made[0]);
	create_and_list(r, 2, list, 3);
	slots[r].zk.todo |= ZKT_STAT;
	(void) zc_core_plan(&core, true, now_us);
	(void) zc_core_stat_reply(&core, planned(r, OP_STAT), ZNONODE, 0, 0, stray);
	CHECK(slots[r].ans.result == ZKL_RESULT_LOST && slots[h].zstate == ZKS_HELD &&
		  slots[h].ans.result == ZKL_RESULT_GRANTED, "the shared node gone: the exclusive lock stays");

	/* an owner past its commit check: its commit goes on, and its release deletes the node */
	r = lost_while_committing(list, ZKL_SCOPE_XACT, &h);
	CHECK(slots[h].ans.result == ZKL_RESULT_LOST && slots[r].zstate == ZKS_HELD,
		  "past the commit check, the later lock's node is left to its release");
	slots[r].own.committing = false;	/* the commit is over: r, transaction-level, is given up */
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r].zstate == ZKS_HELD && slots[r].ans.result == ZKL_RESULT_GRANTED && planned(r, OP_DELETE) == 0,
		  "a transaction-level lock is left to its owner's release");

	/*
	 * The same at session level: it outlives the commit, so once the commit
	 * is over it is lost, its owner told (its next statement fails), and its
	 * node deleted; not before (the commit was decided).
	 */
	r = lost_while_committing(list, ZKL_SCOPE_SESSION, &h);
	CHECK(slots[h].ans.result == ZKL_RESULT_LOST && slots[r].zstate == ZKS_HELD &&
		  slots[r].ans.result == ZKL_RESULT_GRANTED && interrupts == 0,
		  "past the commit check, a session-level lock is kept while the commit goes on");
	slots[h].own.committing = slots[r].own.committing = false;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(r, OP_DELETE) != 0 && slots[r].ans.result == ZKL_RESULT_LOST && interrupts == 1,
		  "once it is over, the session-level lock is lost, its owner told, its node deleted");
}

/* The local hand-over: a waiter whose only blocker is a local holder is granted by the delete's reply. */
void
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

/*
 * A local reader behind a local writer at the head, with another
 * cluster's reader between them: the writer's delete must not grant the
 * reader by itself, for that other reader may upgrade, and its exclusive
 * node then stands ahead of ours (recipe.h).  The reader reads its queue.
 */
void
test_reader_behind_writer_reads(void)
{
	char		fn[ZKL_NODE_BUFLEN];
	char		wn[ZKL_NODE_BUFLEN];
	const char *list[3];
	int			d;
	int			w;
	uint64_t	tag;

	setup();
	d = claim(ZKL_MODE_EXCLUSIVE, 1);
	queue[0] = node_of(d, 0, made[0]);
	create_and_list(d, 0, queue, 1);
	CHECK(slots[d].ans.result == ZKL_RESULT_GRANTED && slots[d].zk.at_head, "the writer holds, at the head");
	w = claim(ZKL_MODE_SHARED, 2);
	list[0] = queue[0];
	snprintf(fn, sizeof(fn), "s-00000000-0000-4000-8000-0000000000ff-9-9.r-%010d", 1);
	list[1] = fn;
	list[2] = node_of(w, 2, wn);
	create_and_list(w, 2, list, 3);
	CHECK(slots[w].ans.result == ZKL_RESULT_PENDING && strcmp(slots[w].watch, queue[0]) == 0,
		  "the reader waits for the writer");
	(void) zc_table_abandon(&table, &slots[d]);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(d, OP_DELETE);
	CHECK(planned(w, OP_CHILDREN) != 0, "the reader reads its queue right behind the delete");
	zc_core_delete_reply(&core, tag, ZOK);
	CHECK(slots[w].ans.result == ZKL_RESULT_PENDING, "the writer's delete grants no reader past another reader");
}

/* A grant during a lock-delay waits; the queue is read again once it ends. */
void
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
void
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
void
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
int
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
void
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
void
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

/*
 * A held node missing from a listing is looked up; the worker restarts
 * before the answer: the new one looks again, and a node gone is lost
 * (not held through a phantom until the owner's commit).
 */
void
test_restart_lookup(void)
{
	int			s;
	uint64_t	tag;

	setup();
	s = lone_holder();
	slots[s].zk.todo |= ZKT_STAT;	/* as zc_core_look_up_unlisted asks */
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(s, OP_STAT) != 0, "the lookup is sent");
	zc_core_worker_restarted(&core);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(s, OP_STAT);
	CHECK(tag != 0, "a restarted worker looks again");
	(void) zc_core_stat_reply(&core, tag, ZNONODE, 0, 0, NULL);
	CHECK(slots[s].ans.result == ZKL_RESULT_LOST, "the node is gone: the lock is lost");
}

/* While locks are held, a commit proof is kept fresh; its reply notes the send time. */
void
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
void
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
