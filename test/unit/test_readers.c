/*
 * test_readers.c — readers with no worker turn (take_here.c), readers'
 * nodes that linger or are kept, and readers that come together.
 */
#include "unit_core.h"
#include "take_here.h"
#include "slot_state.h"

/*
 * Hand-over on, with this linger (ms): pid 1 holds the key shared, alone
 * in its queue, its own listing behind its create armed the child watch
 * (a reader's does), and the plan published what backends read: its slot.
 */
static int
lone_reader_armed(int linger_ms)
{
	static char n0[ZKL_NODE_BUFLEN];
	const char *list[1];
	ZkrChild	kids[1];
	uint64_t	tag;
	int			s;

	setup_handover(linger_ms);
	core.cohort.handover_limit = 8;
	table.pause.listed = true;	/* the presence list read: no pause */
	s = claim(ZKL_MODE_SHARED, 1);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(s, OP_CREATE);
	(void) zc_core_create_reply(&core, tag, ZOK, node_of(s, 0, n0), true, 10);
	list[0] = n0;
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 1, kids), true);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[s].ans.result == ZKL_RESULT_GRANTED && slots[s].zk.clear && slots[s].coh.peek == COH_PEEK_ARMED &&
		  slots[s].coh.may_linger == (linger_ms > 0), "a lone reader holds, armed; its node marked if linger is on");
	return s;
}

/*
 * Readers with no worker turn (take_here.c): a new reader rides a local
 * reader's armed node itself; a rider's release goes, an owner's passes
 * the node to a rider, the last one's lingers (zk_lock.linger) and the
 * next reader takes it; a local writer, a pause or an unarmed watch leave
 * it to the worker, which takes a reader's lingering node the same way.
 */
void
test_readers_here(void)
{
	char		node[ZKL_NODE_BUFLEN];
	int			h = lone_reader_armed(100);
	int			r1;
	int			r2;
	int			x;

	snprintf(node, sizeof(node), "%s", slots[h].node);
	r1 = claim(ZKL_MODE_SHARED, 2);
	table.pause.paused_until = now_us + 1;
	CHECK(!zc_take_here(&table, &slots[r1], now_us, now_us), "no ride during a lock-delay pause");
	table.pause.paused_until = 0;
	table.conn_state = ZKC_CONNECTING;
	CHECK(!zc_take_here(&table, &slots[r1], now_us, now_us), "nor while disconnected");
	table.conn_state = ZKC_CONNECTED;
	slots[h].coh.peek = COH_PEEK_ASKED;
	CHECK(!zc_take_here(&table, &slots[r1], now_us, now_us), "nor while the holder's child watch is not armed");
	slots[h].coh.peek = COH_PEEK_ARMED;
	x = claim(ZKL_MODE_EXCLUSIVE, 9);
	CHECK(!zc_take_here(&table, &slots[r1], now_us, now_us), "nor past a local writer's request");
	(void) zc_table_abandon(&table, &slots[x]);
	CHECK(zc_take_here(&table, &slots[r1], now_us, now_us + 3) && slots[r1].zk.rides &&
		  slots[r1].ans.result == ZKL_RESULT_GRANTED && slots[r1].ans.granted_at == now_us + 3 &&
		  strcmp(slots[r1].node, node) == 0 && slots[r1].zk.handed == 1 && slots[r1].zk.todo == 0,
		  "rides the node itself: granted, a greater token, nothing owed");
	r2 = claim(ZKL_MODE_SHARED, 3);
	CHECK(zc_take_here(&table, &slots[r2], now_us, now_us) && slots[r2].zk.handed == 2, "so does the next reader");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(core.nops == 0, "the worker's next plan has nothing to send");

	CHECK(!zc_release_here(&table, &slots[r2], now_us, now_us, NULL) && slots[r2].zstate == ZKS_FREE,
		  "a rider's release: it goes, the worker not woken");
	CHECK(!zc_release_here(&table, &slots[h], now_us, now_us, NULL) && slots[h].zstate == ZKS_FREE &&
		  slots[r1].zstate == ZKS_HELD && !slots[r1].zk.rides && zc_recipe_name_has_uuid(node, slots[r1].uuid),
		  "the owner's: its node passes to the rider");
	table.worker_due = now_us + 50000;
	CHECK(!zc_release_here(&table, &slots[r1], now_us, now_us, NULL) && slots[r1].zstate == ZKS_LINGER &&
		  slots[r1].req.owner_pid == 0, "the last reader's: its node lingers, nobody's");
	h = claim(ZKL_MODE_EXCLUSIVE, 4);
	CHECK(!zc_take_here(&table, &slots[h], now_us, now_us), "a writer does not take a reader's node");
	(void) zc_table_abandon(&table, &slots[h]);
	h = claim(ZKL_MODE_SHARED, 4);
	CHECK(zc_take_here(&table, &slots[h], now_us, now_us) && slots[h].zstate == ZKS_HELD && !slots[h].zk.rides &&
		  slots[h].zk.clear && slots[h].zk.handed == 3 && zc_recipe_name_has_uuid(node, slots[h].uuid),
		  "the next reader takes it as its own");

	/* the worker takes it alike for a reader the backend could not (it was sending) */
	CHECK(!zc_release_here(&table, &slots[h], now_us, now_us, NULL) && slots[h].zstate == ZKS_LINGER, "lingers again");
	table.cohort.sending = true;
	r1 = claim(ZKL_MODE_SHARED, 5);
	CHECK(!zc_take_here(&table, &slots[r1], now_us, now_us), "nothing taken while the worker sends");
	table.cohort.sending = false;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r1].ans.result == ZKL_RESULT_GRANTED && !slots[r1].zk.rides && slots[r1].zk.handed == 4 &&
		  core.nops == 0, "the worker's plan takes it: no round trip");

	/* a local writer ends a reader's linger: it would wait behind the node */
	CHECK(!zc_release_here(&table, &slots[r1], now_us, now_us, NULL) && slots[r1].zstate == ZKS_LINGER, "lingers");
	x = claim(ZKL_MODE_EXCLUSIVE, 6);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(r1, OP_DELETE) != 0 && slots[x].zstate == ZKS_CREATING,
		  "a local writer: the worker ends the linger, the writer queues in ZooKeeper");
}

/*
 * A reader's node released while its child watch is off and a local
 * reader waits: kept for the listing that arms it (the reader waits for it,
 * with no node of its own), then it lingers and the reader takes it; kept
 * again, and let go once linger is turned off meanwhile.
 */
void
test_readers_kept(void)
{
	const char *list[1];
	ZkrChild	kids[1];
	uint64_t	tag;
	int			h = lone_reader_armed(100);
	int			w;

	zc_core_watch_event(&core, 0, false, "/r/tk");
	CHECK(slots[h].coh.peek == COH_PEEK_NONE, "someone came or went: the watch is off");
	(void) zc_table_abandon(&table, &slots[h]);
	w = claim(ZKL_MODE_SHARED, 2);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(h, OP_CHILDREN);
	CHECK(slots[h].zstate == ZKS_HELD && slots[h].coh.kept && tag != 0 && planned(h, OP_DELETE) == 0 &&
		  slots[w].zstate == ZKS_COHORT && planned(w, OP_CREATE) == 0,
		  "released, a reader waiting: the node is kept for its listing, and the reader waits for it");
	list[0] = slots[h].node;
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 1, kids), true);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].ans.result == ZKL_RESULT_GRANTED && !slots[w].zk.rides && slots[h].zstate == ZKS_FREE &&
		  core.nops == 0, "armed: it lingers, and the reader takes it with no round trip");

	zc_core_watch_event(&core, 0, false, "/r/tk");
	(void) zc_table_abandon(&table, &slots[w]);
	h = claim(ZKL_MODE_SHARED, 3);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].coh.kept && slots[h].zstate == ZKS_COHORT, "kept again, a reader waiting for it");
	core.cohort.linger_ms = 0;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(!slots[w].coh.kept && planned(w, OP_DELETE) != 0 && planned(h, OP_CREATE) != 0,
		  "linger turned off meanwhile: the node goes, and the reader queues in ZooKeeper");

	/* with nobody waiting too: kept for the listing, then it lingers */
	h = lone_reader_armed(100);
	zc_core_watch_event(&core, 0, false, "/r/tk");
	(void) zc_table_abandon(&table, &slots[h]);
	(void) zc_core_plan(&core, true, now_us);
	tag = planned(h, OP_CHILDREN);
	CHECK(slots[h].zstate == ZKS_HELD && slots[h].coh.kept && tag != 0 && planned(h, OP_DELETE) == 0,
		  "released, nobody waiting: kept for its listing");
	list[0] = slots[h].node;
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(list, 1, kids), true);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[h].zstate == ZKS_LINGER && core.nops == 0, "armed: it lingers");
}

/* Plan; slot s's create, answered with node seq and listed with names (armed). */
static void
made_and_listed(int s, int seq, const char *const *names, int n)
{
	char		name[ZKL_NODE_BUFLEN];
	ZkrChild	kids[4];
	uint64_t	tag;

	(void) zc_core_plan(&core, true, now_us);
	tag = planned(s, OP_CREATE);
	CHECK(tag != 0, "its create is planned");
	(void) zc_core_create_reply(&core, tag, ZOK, node_of(s, seq, name), true, 10 + seq);
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(names, n, kids), true);
}

/*
 * Readers that come together with no node to join queue one node, the
 * first asker's, wherever it sits in the table, and join it once it is
 * granted with its child watch; so do readers whose node's watch went
 * off while they waited for it.
 */
void
test_readers_together(void)
{
	char		a[ZKL_NODE_BUFLEN];
	const char *list[1];
	int			r[3];
	int			i;

	setup_handover(100);
	core.cohort.handover_limit = 8;
	table.pause.listed = true;
	for (i = 0; i < 3; i++)
		r[i] = claim(ZKL_MODE_SHARED, i + 1);
	slots[r[2]].req.ticket = 0;	/* the last in the table asked first */
	list[0] = node_of(r[2], 0, a);
	made_and_listed(r[2], 0, list, 1);
	CHECK(planned(r[0], OP_CREATE) == 0 && planned(r[1], OP_CREATE) == 0 && slots[r[0]].zstate == ZKS_COHORT &&
		  slots[r[1]].zstate == ZKS_COHORT, "three readers, no node: only the first asker's is made, the others wait");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r[2]].ans.result == ZKL_RESULT_GRANTED && slots[r[0]].zk.rides && slots[r[1]].zk.rides &&
		  slots[r[0]].ans.result == ZKL_RESULT_GRANTED && core.nops == 0, "granted and armed: both join it");

	for (i = 0; i < 2; i++)
		(void) zc_table_abandon(&table, &slots[r[i]]);
	(void) zc_core_plan(&core, true, now_us);
	zc_core_watch_event(&core, 0, false, "/r/tk");
	r[0] = claim(ZKL_MODE_SHARED, 4);
	r[1] = claim(ZKL_MODE_SHARED, 5);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r[0]].zstate == ZKS_COHORT && slots[r[1]].zstate == ZKS_COHORT && planned(r[2], OP_CHILDREN) != 0,
		  "the watch went off: both wait for the holder's listing");
	listed(planned(r[2], OP_CHILDREN), list, 1, true);
	zc_core_watch_event(&core, 0, false, "/r/tk");
	(void) zc_core_plan(&core, true, now_us);
	CHECK((planned(r[0], OP_CREATE) != 0) + (planned(r[1], OP_CREATE) != 0) == 1,
		  "off again before they joined: one of them queues a node, the other waits for it");
}

/*
 * A reader's node released beside another node of the key (its own had
 * no hand-over left) lingers only for a reader waiting, who takes it in
 * the same plan; with none waiting it goes, and one found lingering there
 * ends.
 */
void
test_readers_beside(void)
{
	char		a[ZKL_NODE_BUFLEN];
	char		b[ZKL_NODE_BUFLEN];
	const char *list[2];
	int			h;
	int			r;
	int			w;

	setup_handover(100);
	core.cohort.handover_limit = 8;
	table.pause.listed = true;
	h = claim(ZKL_MODE_SHARED, 1);
	list[0] = node_of(h, 0, a);
	made_and_listed(h, 0, list, 1);
	(void) zc_core_plan(&core, true, now_us);
	slots[h].coh.node_handed = ZKL_HANDOVER_MAX - 1;
	r = claim(ZKL_MODE_SHARED, 2);
	list[1] = node_of(r, 1, b);
	made_and_listed(r, 1, list, 2);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[h].ans.result == ZKL_RESULT_GRANTED && slots[r].ans.result == ZKL_RESULT_GRANTED &&
		  !slots[r].zk.rides && slots[r].coh.peek == COH_PEEK_ARMED, "a node with no hand-over left: a second node");

	(void) zc_table_abandon(&table, &slots[r]);
	w = claim(ZKL_MODE_SHARED, 3);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].ans.result == ZKL_RESULT_GRANTED && !slots[w].zk.rides && strcmp(slots[w].node, b) == 0 &&
		  slots[w].zk.handed == 1 && core.nops == 0, "released, a reader waiting: it takes the node, no round trip");

	(void) zc_table_abandon(&table, &slots[w]);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(w, OP_DELETE) != 0, "released beside another node, nobody waiting: it goes");

	r = claim(ZKL_MODE_SHARED, 4);
	list[1] = node_of(r, 2, b);
	made_and_listed(r, 2, list, 2);
	(void) zc_core_plan(&core, true, now_us);
	zc_slot_move(&slots[r], ZKS_LINGER);
	slots[r].coh.linger_until = now_us + 100000;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(r, OP_DELETE) != 0, "one found lingering beside another node ends");
}

/*
 * Reader r waits for the listing of h's node after its watch went off;
 * the listing comes back armed, and the watch goes off again before r
 * joins.
 */
static void
listing_for_nothing(int h, int r)
{
	const char *list[1];

	list[0] = slots[h].node;
	zc_core_watch_event(&core, 0, false, "/r/tk");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r].zstate == ZKS_COHORT && planned(h, OP_CHILDREN) != 0, "a reader waits for the node's listing");
	listed(planned(h, OP_CHILDREN), list, 1, true);
	zc_core_watch_event(&core, 0, false, "/r/tk");
}

/*
 * A parked reader waits in the root of the node it waits for (gwait_doc.c
 * counts its wait under the current root only); and when the child watch
 * of the node readers wait to join goes off, the first of them queues a
 * node of its own however many new readers come meanwhile.
 */
void
test_readers_parked(void)
{
	int			h;
	int			r1;
	int			r2;

	setup_handover(100);
	core.cohort.handover_limit = 8;
	table.pause.listed = true;
	strcpy(table.roots[1], "/r2");
	table.cur_root = 1;
	h = claim(ZKL_MODE_SHARED, 1);
	r1 = claim(ZKL_MODE_SHARED, 2);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(h, OP_CREATE) != 0 && slots[h].zk.root_id == 1 && slots[r1].zstate == ZKS_COHORT,
		  "a root reloaded: the first reader's node goes under the new root, the second waits for it");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r1].zk.root_id == 1, "in that root");

	h = lone_reader_armed(100);
	r1 = claim(ZKL_MODE_SHARED, 2);
	listing_for_nothing(h, r1);
	r2 = claim(ZKL_MODE_SHARED, 3);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(r1, OP_CREATE) != 0 && slots[r2].zstate == ZKS_COHORT,
		  "the watch off again: it queues a node of its own though a new reader came, who waits");
}

/*
 * The first reader to queue a node when the watch went off is the one that
 * asked first, wherever it sits in the table: a younger reader placed
 * before it in the same plan asks for the listing again, which must not
 * keep the older one waiting for it.
 */
void
test_readers_parked_order(void)
{
	int			h = lone_reader_armed(100);
	int			d;
	int			x;
	int			s;

	d = claim(ZKL_MODE_SHARED, 9);
	x = claim(ZKL_MODE_SHARED, 2);
	zc_table_free(&table, &slots[d]);	/* a free slot below x */
	listing_for_nothing(h, x);
	s = claim(ZKL_MODE_SHARED, 3);
	CHECK(s < x, "a new reader sits before it in the table");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(x, OP_CREATE) != 0 && slots[s].zstate == ZKS_COHORT,
		  "the watch off again: the first reader queues a node all the same, the new one waits");
}
