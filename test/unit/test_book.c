/*
 * test_book.c — a transaction's rules (holds.c) and a backend's book of its
 * locks (book.c).
 */
#include "unit_core.h"

/* Nodes in slot order: the lower slot's was created first. */
static bool
slot_order(void *arg, int a, int b)
{
	return a < b;
}

void
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
void
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

	/* zk_unlock_all leaves a zk_once claim to the transaction's end, where its period is recorded */
	book_ngiven_up = 0;
	zc_book_add(&b, 4, "otjob", 'x', 8, false, 1);
	zc_book_add(&b, 5, "tplain", 'x', 8, false, 1);
	zc_book_unlock_all(&b, false);
	CHECK(b.n == 1 && given_up(5) && !given_up(4), "zk_unlock_all: the plain lock goes, the claim stays");
	zc_book_xact_end(&b);
	CHECK(b.n == 0 && given_up(4), "the claim goes at the transaction's end");

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
