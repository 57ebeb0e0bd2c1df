/*
 * test_deadlock.c — deadlocks inside the cluster and across clusters
 * (gwait.c), a try behind a hand-over.
 */
#include "unit_core.h"

/* An exclusive request of pid on key: claimed (not planned yet); its slot. */
int
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
void
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
void
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
void
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
