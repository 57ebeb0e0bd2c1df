/*
 * test_here.c — what a backend does itself, with no worker turn
 * (take_here.c): takes a lingering node, passes its released node to the
 * next local writer, joins a local holder at its claim.
 */
#include "unit_core.h"
#include "take_here.h"

/*
 * A backend takes its cluster's lingering node by itself (take_here.c), on
 * what the worker published, only where the worker's pass would give it at
 * once and nothing else of the key is here; anything else is the worker's.
 */
void
test_take_here(void)
{
	int			h;
	int			n;
	int			o;

	h = lingering(0);
	table.pause.listed = true;	/* the presence list read: no pause */
	CHECK(table.cohort.handover && table.cohort.linger_ms == 100, "the plan published its settings");
	n = claim(ZKL_MODE_EXCLUSIVE, 2);
	table.pause.paused_until = now_us + 1;
	CHECK(!zc_take_here(&table, &slots[n], now_us, now_us), "not during a lock-delay pause");
	table.pause.paused_until = 0;
	table.pause.stale = true;
	CHECK(!zc_take_here(&table, &slots[n], now_us, now_us), "nor while the presence list is out of date");
	table.pause.stale = false;
	table.conn_state = ZKC_CONNECTING;
	CHECK(!zc_take_here(&table, &slots[n], now_us, now_us), "not while disconnected");
	table.conn_state = ZKC_CONNECTED;
	CHECK(!zc_take_here(&table, &slots[n], slots[h].coh.linger_until, now_us), "not once its time is over");
	slots[h].coh.peek = COH_PEEK_ASKED;
	CHECK(!zc_take_here(&table, &slots[n], now_us, now_us), "not while the child watch is not armed");
	slots[h].coh.peek = COH_PEEK_ARMED;
	slots[h].ans.session_id++;
	CHECK(!zc_take_here(&table, &slots[n], now_us, now_us), "not a node of another session");
	slots[h].ans.session_id--;
	CHECK(zc_take_here(&table, &slots[n], now_us, now_us + 7) && slots[n].zstate == ZKS_HELD &&
		  slots[n].ans.result == ZKL_RESULT_GRANTED && slots[n].ans.granted_at == now_us + 7 &&
		  slots[n].ans.session_id == table.session_tag && slots[n].zk.handed == 1 &&
		  slots[h].zstate == ZKS_FREE && slots[n].zk.todo == 0,
		  "taken: granted in this session, handed over once, the lingering slot freed, nothing owed");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(core.nops == 0, "the worker's next plan has nothing to send for it");

	/* its release lingers at once; the worker is woken only if it would sleep past the end */
	table.worker_due = now_us + 50000;
	CHECK(!zc_release_here(&table, &slots[n], now_us, now_us, NULL) && slots[n].zstate == ZKS_LINGER &&
		  slots[n].coh.linger_until == now_us + 100000 && slots[n].req.owner_pid == 0,
		  "released: it lingers, nobody's; the worker, due before its end, is not woken");
	CHECK(zc_take_here_sleep(&table, now_us, 5000) == 100 && table.worker_due == now_us + 100000,
		  "the worker's sleep ends with the linger");
	CHECK(zc_take_here_sleep(&table, now_us, -1) == 100, "a sleep with no end too");
	o = claim(ZKL_MODE_EXCLUSIVE, 3);
	CHECK(zc_take_here(&table, &slots[o], now_us, now_us), "taken again");
	table.worker_due = now_us + 100001;
	CHECK(zc_release_here(&table, &slots[o], now_us, now_us, NULL) && slots[o].zstate == ZKS_LINGER,
		  "the worker due after the linger's end is woken");
	n = claim(ZKL_MODE_EXCLUSIVE, 4);
	CHECK(zc_take_here(&table, &slots[n], now_us, now_us), "and taken again");
	table.cohort.sending = true;
	CHECK(zc_release_here(&table, &slots[n], now_us, now_us, NULL) && slots[n].zstate == ZKS_HELD && slots[n].own.abandoned,
		  "no release lingers while the worker sends its plan's calls: the worker is woken for it");
	o = claim(ZKL_MODE_EXCLUSIVE, 5);
	CHECK(!zc_take_here(&table, &slots[o], now_us, now_us), "nor is anything taken");
	table.cohort.sending = false;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[o].zstate == ZKS_HELD && slots[o].ans.result == ZKL_RESULT_GRANTED,
		  "the worker hands the node to the request waiting here");
	n = o;
	(void) zc_table_abandon(&table, &slots[n]);
	(void) zc_core_plan(&core, true, now_us);

	/* with another request of the key here, the worker decides (who asked first) */
	CHECK(slots[n].zstate == ZKS_LINGER, "released, it lingers again");
	o = claim(ZKL_MODE_EXCLUSIVE, 3);
	h = claim(ZKL_MODE_EXCLUSIVE, 4);
	CHECK(!zc_take_here(&table, &slots[h], now_us, now_us), "another request of the key here: no take");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[o].ans.result == ZKL_RESULT_GRANTED && slots[h].zstate == ZKS_COHORT,
		  "the worker gives it to the one that asked first");

	/* a try takes it as a wait does (the worker's join); a reader, a multi-key request: the worker's */
	(void) lingering(0);
	table.pause.listed = true;
	n = claim(ZKL_MODE_SHARED, 2);
	CHECK(!zc_take_here(&table, &slots[n], now_us, now_us), "a reader: not a writer's node");
	slots[n].req.mode = ZKL_MODE_EXCLUSIVE;
	slots[n].req.group = 9;
	CHECK(!zc_take_here(&table, &slots[n], now_us, now_us), "a key of a multi-key request: no take");
	slots[n].req.group = 0;
	table.cohort.linger_ms = 0;
	CHECK(!zc_take_here(&table, &slots[n], now_us, now_us), "linger turned off: no take");
	table.cohort.linger_ms = 100;
	slots[n].req.nowait = true;
	CHECK(zc_take_here(&table, &slots[n], now_us, now_us) && slots[n].ans.result == ZKL_RESULT_GRANTED,
		  "a try-lock takes it");
}

static int	woken;

static void
count_wake(ZklSlot *s)
{
	woken = s->req.owner_pid;
}

/*
 * A release passes its node to the first local writer waiting behind it
 * itself (zc_cohort_pass_here), where the worker's release would, and wakes
 * that waiter's owner; with nothing the worker must do.
 */
void
test_pass_here(void)
{
	int			h;
	int			w;
	int			x;

	holder_and_local_waiter(&h, &w);
	x = ask(3, false);
	table.pause.listed = true;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[w].zstate == ZKS_COHORT && slots[x].zstate == ZKS_COHORT && slots[h].coh.peek == COH_PEEK_ARMED &&
		  !table.cohort.sending, "two local writers wait behind the holder, its child watch armed");
	woken = 0;
	CHECK(!zc_release_here(&table, &slots[h], now_us, now_us + 5, count_wake) &&
		  slots[w].zstate == ZKS_HELD && slots[w].ans.result == ZKL_RESULT_GRANTED &&
		  slots[w].ans.granted_at == now_us + 5 && slots[w].zk.handed == 1 && slots[h].zstate == ZKS_FREE &&
		  woken == 2 && slots[x].zstate == ZKS_COHORT && table.counters.taken_here == 1,
		  "released: the first waiter holds the node, woken, the worker not; the next still waits");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(core.nops == 0, "the worker's next plan has nothing to send");
	slots[w].coh.peek = COH_PEEK_ASKED;
	woken = 0;
	CHECK(zc_release_here(&table, &slots[w], now_us, now_us, count_wake) && woken == 0 &&
		  slots[w].zstate == ZKS_HELD && slots[w].own.abandoned,
		  "the child watch not armed: the worker decides (woken)");
	slots[w].coh.peek = COH_PEEK_ARMED;
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[x].ans.result == ZKL_RESULT_GRANTED, "and passes it once it may");
}

/*
 * A new writer behind a local holder waits there from its claim
 * (zc_join_here), and a try-lock is refused there, with no worker turn;
 * the worker is woken only to arm the holder's child watch, or when its
 * sleep would outlast the waiter's deadlock check.  Anything else is the
 * worker's: a holder done with the key, the holder's own backend asking
 * again, a reader.
 */
void
test_join_here(void)
{
	int			h;
	int			w;
	int			x;
	int			y;
	int			z;
	bool		wake = false;

	holder_and_local_waiter(&h, &w);
	core.deadlock_timeout = 1000;
	table.pause.listed = true;	/* lock-delay has nothing to wait for */
	(void) zc_core_plan(&core, true, now_us);
	CHECK(table.cohort.deadlock_ms == 1000 && slots[h].coh.peek == COH_PEEK_ARMED,
		  "the plan publishes deadlock_timeout; the holder's watch is armed");
	table.worker_due = now_us + 500 * 1000;
	x = claim(ZKL_MODE_EXCLUSIVE, 3);
	CHECK(zc_join_here(&table, &slots[x], now_us, now_us, &wake) && slots[x].zstate == ZKS_COHORT &&
		  !wake && table.counters.joined_here == 1,
		  "a writer waits behind the local holder at its claim, the worker not woken");
	y = claim(ZKL_MODE_EXCLUSIVE, 4);
	table.worker_due = now_us + 1500 * 1000;
	CHECK(zc_join_here(&table, &slots[y], now_us, now_us, &wake) && slots[y].zstate == ZKS_COHORT && wake,
		  "the worker would sleep past deadlock_timeout: woken");
	(void) zc_table_abandon(&table, &slots[y]);
	CHECK(slots[y].zstate == ZKS_FREE, "a waiter that gives up leaves nothing");
	table.worker_due = 0;
	y = claim(ZKL_MODE_EXCLUSIVE, 4);
	CHECK(zc_join_here(&table, &slots[y], now_us, now_us, &wake) && wake, "the worker sleeping for good: woken");
	(void) zc_table_abandon(&table, &slots[y]);
	table.cohort.deadlock_ms = 0;
	y = claim(ZKL_MODE_EXCLUSIVE, 4);
	CHECK(zc_join_here(&table, &slots[y], now_us, now_us, &wake) && !wake,
		  "no deadlock search (deadlock_timeout 0): not woken for one");
	(void) zc_table_abandon(&table, &slots[y]);
	table.cohort.deadlock_ms = 1000;
	table.conn_state = ZKC_STOPPED;
	y = claim(ZKL_MODE_EXCLUSIVE, 4);
	CHECK(!zc_join_here(&table, &slots[y], now_us, now_us, &wake) && slots[y].zstate == ZKS_NEW,
		  "no worker running: the request stays unsent (it fails as one no worker serves)");
	(void) zc_table_abandon(&table, &slots[y]);
	table.conn_state = ZKC_CONNECTED;
	y = claim(ZKL_MODE_EXCLUSIVE, 4);
	z = claim(ZKL_MODE_EXCLUSIVE, 5);
	CHECK(!zc_join_here(&table, &slots[z], now_us, now_us, &wake) && slots[z].zstate == ZKS_NEW,
		  "an older new writer of the key not placed yet: the worker decides, in the order they asked");
	(void) zc_table_abandon(&table, &slots[z]);
	(void) zc_table_abandon(&table, &slots[y]);
	(void) zc_table_abandon(&table, &slots[w]);
	CHECK(zc_take_here_sleep(&table, now_us, -1) == 1000 && table.worker_due == now_us + 1000 * 1000,
		  "while a writer that joined here waits, the worker sleeps at most deadlock_timeout");
	CHECK(zc_take_here_sleep(&table, now_us, 300) == 300, "or less, as its turn asked");
	y = claim(ZKL_MODE_EXCLUSIVE, 4);
	slots[y].req.nowait = true;
	CHECK(zc_join_here(&table, &slots[y], now_us, now_us, &wake) && slots[y].zstate == ZKS_GONE &&
		  slots[y].ans.result == ZKL_RESULT_NOT_GRANTED && !wake, "a try-lock is refused at once");
	(void) zc_table_abandon(&table, &slots[y]);
	slots[h].coh.peek = COH_PEEK_NONE;
	y = claim(ZKL_MODE_EXCLUSIVE, 4);
	CHECK(zc_join_here(&table, &slots[y], now_us, now_us, &wake) && wake,
		  "the holder's watch not armed: woken, to list");
	(void) zc_table_abandon(&table, &slots[y]);
	slots[h].coh.peek = COH_PEEK_ARMED;
	y = claim(ZKL_MODE_EXCLUSIVE, 1);
	CHECK(!zc_join_here(&table, &slots[y], now_us, now_us, &wake) && slots[y].zstate == ZKS_NEW,
		  "the holder's own backend asking again: the worker decides");
	(void) zc_table_abandon(&table, &slots[y]);
	y = claim(ZKL_MODE_SHARED, 4);
	CHECK(!zc_join_here(&table, &slots[y], now_us, now_us, &wake) && slots[y].zstate == ZKS_NEW,
		  "a reader: the worker decides");
	(void) zc_table_abandon(&table, &slots[y]);
	slots[h].own.abandoned = true;
	y = claim(ZKL_MODE_EXCLUSIVE, 4);
	CHECK(!zc_join_here(&table, &slots[y], now_us, now_us, &wake) && slots[y].zstate == ZKS_NEW,
		  "a holder done with the key: the worker decides");
	slots[h].own.abandoned = false;
	(void) zc_table_abandon(&table, &slots[y]);
	woken = 0;
	CHECK(!zc_release_here(&table, &slots[h], now_us, now_us, count_wake) &&
		  slots[x].ans.result == ZKL_RESULT_GRANTED && woken == 3,
		  "the holder's release passes the node to the writer that joined here");
}

/*
 * A writer back among the new requests with its old ticket (a failed create
 * keeps it) asked before the local waiter: a release does not pass the node
 * to the waiter past it, but leaves that to the worker, whose plan places
 * it first and passes in the order they asked.
 */
void
test_pass_here_older(void)
{
	int			h;
	int			w;
	int			x;

	holder_and_local_waiter(&h, &w);
	table.pause.listed = true;
	(void) zc_core_plan(&core, true, now_us);
	x = claim(ZKL_MODE_EXCLUSIVE, 3);
	slots[x].req.ticket = slots[w].req.ticket - 1;
	woken = 0;
	CHECK(zc_release_here(&table, &slots[h], now_us, now_us, count_wake) && woken == 0 &&
		  slots[w].zstate == ZKS_COHORT, "the release leaves it to the worker (woken)");
	(void) zc_core_plan(&core, true, now_us);
	CHECK(slots[x].ans.result == ZKL_RESULT_GRANTED && slots[w].zstate == ZKS_COHORT,
		  "which gives the node to the one that asked first");
}
