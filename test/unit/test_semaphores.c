/*
 * test_semaphores.c — semaphores, multi-key groups, the proof's step,
 * SIGTERM's action, a clean stop's steps, the cut-off clock.
 */
#include "unit_core.h"

/*
 * Semaphore of 1 with three local requests: a child event on the key makes
 * one waiter read (not each), and its listing decides for all of them; the
 * holders of a live request are the key's.
 */
void
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
void
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
void
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
void
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
int
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
void
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
void
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
void
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
void
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
void
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

void
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
int
ask(int pid, bool nowait)
{
	int			s = claim(ZKL_MODE_EXCLUSIVE, pid);

	slots[s].req.nowait = nowait;
	(void) zc_core_plan(&core, true, now_us);
	return s;
}

/* Answer holder h's planned listing (its child watch) with h's node alone. */
void
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
