/*
 * test_cohort.c — local hand-over and linger, and other clusters' tries
 * meeting a lingering node.
 */
#include "unit_core.h"

/*
 * Local hand-over: a local waiter gets the holder's node with no round trip
 * and a greater token; a try-lock is refused locally; once a node behind is
 * seen, at most local_handover_limit more hand-overs, then requests queue in
 * ZooKeeper.  Nothing passes between a child event and the listing after it.
 */
void
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
void
holder_and_local_waiter(int *h, int *w)
{
	setup();
	core.cohort.handover = true;
	core.cohort.handover_limit = 8;
	*h = lone_holder();
	*w = ask(2, false);
	peek_alone(*h);
}

/*
 * A holder's read of its own node (a barrier, behind its blocker's delete)
 * may still be on its way when its release hands the node to a local
 * waiter: that answer then finds no slot, so the new holder looks at the
 * node itself, and a node gone (deleted from outside meanwhile) is its
 * lost lock.  A node that lingers when the answer says it is gone is gone.
 */
void
test_barrier_out_at_handover(void)
{
	char		stray[ZKL_PATH_LEN];
	uint64_t	tag;
	int			h;
	int			w;

	holder_and_local_waiter(&h, &w);
	slots[h].zk.barrier_out = true;		/* as planned behind a delete event, not answered yet */
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(w, OP_STAT);
	CHECK(slots[w].ans.result == ZKL_RESULT_GRANTED && tag != 0,
		  "handed over while the old holder's barrier read is out: the new holder looks at the node");
	(void) zc_core_stat_reply(&core, tag, ZNONODE, 0, 0, stray);
	CHECK(slots[w].ans.result == ZKL_RESULT_LOST, "the node is gone: the new holder's lock is lost");

	holder_and_local_waiter(&h, &w);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].ans.result == ZKL_RESULT_GRANTED && planned(w, OP_STAT) == 0,
		  "no read out: a hand-over looks at nothing");

	h = lingering(0);
	tag = zc_core_tag(h, slots[h].req.attempt);
	zc_core_barrier_reply(&core, tag, ZNONODE);
	CHECK(slots[h].zstate == ZKS_FREE, "a lingering node a barrier read finds gone is gone");
}

/* A lost session: the holder of a handed-over node loses it; local waiters queue again. */
void
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
void
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
void
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
int
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
 * A short transaction releases its new node before the node's first
 * watched listing is back, with nobody waiting: the node is kept for that
 * listing (no delete), then lingers; a request meanwhile waits for it with
 * no node of its own and is handed it.  A listing that shows another
 * cluster's node behind lets the node go instead.
 */
void
test_kept_to_linger(void)
{
	char		fn[ZKL_NODE_BUFLEN];
	const char *list[2];
	ZkrChild	kids[2];
	uint64_t	tag;
	int			h;
	int			n;

	setup_handover(100);
	h = lone_holder();
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(h, OP_CHILDREN);
	CHECK(tag != 0 && slots[h].coh.peek == COH_PEEK_ASKED, "granted; its watched listing is out");
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[h].zstate == ZKS_HELD && slots[h].coh.kept && planned(h, OP_DELETE) == 0,
		  "released before that listing is back: kept for it, not deleted");
	n = claim(ZKL_MODE_EXCLUSIVE, 2);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[n].zstate == ZKS_COHORT && planned(n, OP_CREATE) == 0,
		  "a request meanwhile waits for the kept node, with no node of its own");
	list[0] = slots[h].node;
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 1, kids), true);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[n].ans.result == ZKL_RESULT_GRANTED && slots[n].zk.handed == 1 && core.nops == 0,
		  "armed: handed over, no round trip");

	(void) zc_table_abandon(&table, &slots[n]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[n].zstate == ZKS_LINGER, "released with the watch armed: it lingers");
	zc_core_watch_event(&core, 0, false, "/r/tk");
	CHECK(slots[n].zstate == ZKS_DELETING, "a child event ends the linger");

	/* kept again, and another cluster's node seen behind: it goes */
	setup_handover(100);
	h = lone_holder();
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(h, OP_CHILDREN);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[h].coh.kept, "kept for the listing");
	list[0] = slots[h].node;
	snprintf(fn, sizeof(fn), "x-00000000-0000-4000-8000-0000000000ff-9-9-%010d", 1);
	list[1] = fn;
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 2, kids), true);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[h].coh.foreign && !slots[h].coh.kept && planned(h, OP_DELETE) != 0,
		  "another cluster's node behind: no linger, the node goes");

	/* linger off: a released node with the watch not armed goes at once, as before */
	setup_handover(0);
	h = lone_holder();
	(void) zc_core_plan(&core, true, now_us);
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(!slots[h].coh.kept && planned(h, OP_DELETE) != 0, "linger off: not kept, deleted");
}

/*
 * A lingering node goes to the writer that asked first, not to the one
 * that happens to sit first in the slot table (the simulator found a
 * worker that resumed from a pause handing it to the newest request).
 */
void
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
void
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

/* Answer the listing of tag with these names (watched: it set the child watch). */
void
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
 * for LINGER_WAIT_RTTS of its own round trip, at least 250 ms (false).  A
 * node without the mark, or more than one node ahead, answers false at once.
 */
void
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
	CHECK(tag != 0 && slots[t].ans.result == ZKL_RESULT_PENDING && slots[t].zk.try_until == now_us + 250000,
		  "a try behind one exclusive node reads its data, for 250 ms at most");
	zc_core_watch_set_reply(&core, tag, ZOK, "{\"linger\":true}", 15);
	CHECK(slots[t].zstate == ZKS_QUEUED && slots[t].ans.result == ZKL_RESULT_PENDING, "it lingers: the try waits");
	now_us += 249000;
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
	t = try_behind(0, 100000);
	CHECK(slots[t].zk.try_until == now_us + 400000, "the bound is four round trips when that is more");
	zc_core_watch_set_reply(&core, planned(t, OP_WATCH), ZOK, "{\"pid\":7}", 9);
	CHECK(slots[t].ans.result == ZKL_RESULT_NOT_GRANTED && slots[t].zstate == ZKS_DELETING,
		  "a holder's node: false at once");

	/* it lingers, but never goes: false at the bound, and the try's node goes */
	t = try_behind(0, 0);
	zc_core_watch_set_reply(&core, planned(t, OP_WATCH), ZOK, "{\"linger\":true}", 15);
	now_us += 250000;
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
void
test_linger_and_foreign_multi_try(void)
{
	char		path[ZKL_PATH_LEN];
	uint64_t	tag;
	int			a;
	int			b;

	multi_try_behind(&a, &b);
	tag = planned(a, OP_WATCH);
	CHECK(tag != 0 && slots[a].ans.result == ZKL_RESULT_PENDING && slots[a].zk.try_until == now_us + 250000,
		  "multi-key try: the key behind one exclusive node reads its data, for 250 ms at most");
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
	now_us += 250000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[a].ans.result == ZKL_RESULT_NOT_GRANTED && planned(a, OP_DELETE) != 0,
		  "false once the bound is over, and that key's node is deleted");
}

/*
 * After a reload of zk_lock.root, a new request goes under the new root
 * unless its key still has a node of this cluster under an older one.  A
 * local waiter has no node: it must not send a request of its key under
 * the old root (there other clusters, already on the new one, would never
 * see it), and it waits in its carrier's root once that has one.
 */
static void
reload_root(void)
{
	strcpy(table.roots[1], "/r2");
	table.cur_root = 1;
}

void
test_cohort_root_reload(void)
{
	int			b;
	int			a;
	int			h;
	int			w;

	setup_handover(0);
	core.cohort.handover_limit = 8;
	reload_root();
	b = claim(ZKL_MODE_EXCLUSIVE, 1);
	a = claim(ZKL_MODE_EXCLUSIVE, 2);
	(void) zc_core_plan(&core, false, now_us);	/* not connected: one waits, the other is not sent */
	(void) zc_core_plan(&core, true, now_us);
	if (slots[b].zstate == ZKS_COHORT)
	{
		int			x = a;			/* the table's order decides which one waits */

		a = b;
		b = x;
	}
	CHECK(slots[a].zstate == ZKS_COHORT && planned(b, OP_CREATE) != 0 && slots[b].zk.root_id == 1,
		  "a waiter behind a request not sent yet: that request goes under the new root");

	setup_handover(0);
	core.cohort.handover_limit = 8;
	h = lone_holder();
	reload_root();
	w = ask(2, false);
	CHECK(slots[w].zstate == ZKS_COHORT && slots[w].zk.root_id == 0 && slots[h].zk.root_id == 0,
		  "a waiter behind a holder under the old root waits in that root");
}
