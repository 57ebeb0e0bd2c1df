/*
 * test_riders.c — readers riding on a reader's node, the invariants,
 * upgrades.
 */
#include "unit_core.h"
#include "gwait.h"

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
void
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
void
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
void
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
void
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
void
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
void
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
void
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
	CHECK(slots[r].zk.rides && slots[r].ans.result == ZKL_RESULT_GRANTED,
		  "and a reader joins again: the node whose listing armed it, not the one whose watch went off");
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

void
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
void
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
void
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

/*
 * pid 1 holds the key shared, pid 2 rides its node; `upgrader` asks it
 * exclusive, with another cluster's nodes foreign[] queued after the
 * shared node: the document of waits across clusters once it waited past
 * deadlock_timeout.
 */
static const char *
upgrade_over_shared(int upgrader, const char *const *foreign, int nforeign, int *xp)
{
	static char doc[ZGW_DOC_LEN];
	char		node[ZKL_NODE_BUFLEN];
	char		xname[ZKL_NODE_BUFLEN];
	const char *list[8];
	int			h = lone_reader();
	int			r1;
	int			x;
	int			i;
	ZgwLocal	in;

	snprintf(node, sizeof(node), "%s", slots[h].node);
	r1 = ask_shared(2, false);
	peek_alone(h);
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[r1].zk.rides, "pid 2 rides pid 1's node");
	x = claim(ZKL_MODE_EXCLUSIVE, upgrader);
	list[0] = node;
	for (i = 0; i < nforeign; i++)
		list[1 + i] = foreign[i];
	list[1 + nforeign] = node_of(x, 1 + nforeign, xname);
	create_and_list(x, 1 + nforeign, list, 2 + nforeign);
	CHECK(slots[x].ans.result == ZKL_RESULT_PENDING && slots[x].watch[0] != '\0',
		  "the upgrade waits, its listing watching a node");
	memset(&in, 0, sizeof(in));
	in.coh = &core.cohort;
	now_us += 1100000;
	in.now = now_us;
	in.timeout_ms = 1000;
	in.cluster = "a";
	in.session = 0x1f;
	CHECK(zc_gwait_format(&in, doc, sizeof(doc)) > 0, "past deadlock_timeout its wait is published");
	*xp = x;
	return doc;
}

/*
 * An upgrade over a node other local readers hold too waits for them (P
 * lines) and, across clusters, for what the recipe would watch were that
 * node its own: not a reader of another cluster queued behind a writer
 * behind our node (that reader waits for us: a false edge made a cycle,
 * and a victim of a deadlock that was none), but a reader granted right
 * behind our node, which does hold it up.
 */
void
test_rider_upgrade_edges(void)
{
	static const char writer[] = "x-00000000-0000-4000-8000-0000000000fe-9-8.r-0000000001";
	static const char behind[] = "s-00000000-0000-4000-8000-0000000000fd-9-9.r-0000000002";
	static const char granted[] = "s-00000000-0000-4000-8000-0000000000fc-9-9.r-0000000001";
	const char *const past[2] = {writer, behind};
	const char *const right[1] = {granted};
	const char *doc;
	int			x;

	doc = upgrade_over_shared(2, past, 2, &x);
	CHECK(strstr(doc, "\nV 2 ") != NULL && strstr(doc, "\nP 1\n") != NULL,
		  "a rider's upgrade waits for the node's owner");
	CHECK(strstr(doc, "\nE ") == NULL,
		  "and for no node of another cluster: the reader behind the writer waits for us");
	(void) zc_core_plan(&core, true, now_us);
	if (planned(x, OP_WATCH) != 0)
		zc_core_watch_set_reply(&core, planned(x, OP_WATCH), ZOK, "{}", 2);
	now_us += 2001000;			/* recheck_ms */
	(void) zc_core_plan(&core, true, now_us);
	CHECK(planned(x, OP_CHILDREN) != 0,
		  "its re-check reads the queue again: nothing tells it when the node of its edge goes");
	doc = upgrade_over_shared(1, past, 2, &x);
	CHECK(strstr(doc, "\nV 1 ") != NULL && strstr(doc, "\nP 2\n") != NULL && strstr(doc, "\nE ") == NULL,
		  "the owner's upgrade likewise waits for its rider, and for no node of another cluster");
	doc = upgrade_over_shared(2, right, 1, &x);
	CHECK(strstr(doc, "\nE tk/") != NULL && strstr(doc, granted) != NULL,
		  "another cluster's reader granted right behind our node holds it up: an edge");
}
