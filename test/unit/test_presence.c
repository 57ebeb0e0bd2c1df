/*
 * test_presence.c — lock-delay's names and rules, looks, the owner's reads,
 * presence and its incarnations, node names.
 */
#include "unit_core.h"

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
void
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

void
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
void
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
void
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

void
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
	CHECK(pres_pauses == 1 && p.pause.paused_until == t + 1000, "paused from the session's start");
	CHECK(zc_delay_grants_paused(&p, t + 5000, &until), "not listed yet: paused");
	CHECK(zc_delay_tend(&p, 0xb, 0xbb, false, t) == 0, "nothing twice");
	gen = p.gen;
	CHECK(zc_delay_listed(&p, gen + 1, ZOK, first, 3, 3, t) == ZLD_STALE_REPLY && !p.pause.listed,
		  "a reply for an older handle is ignored");
	CHECK(zc_delay_listed(&p, gen, ZOK, first, 3, 3, t) == ZLD_LISTED && p.pause.listed && p.nlive == 2 &&
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
		  p.pause.paused_until == t + 1020 && p.presence_due,
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
	CHECK(!p.pause.listed && zc_delay_tend(&p, 0xb, 0xbb, false, t + ZLD_KEEP_US + 70) != 0 &&
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
		  !p.pause.listed, "the same id with another nonce is another session: set up again");
	zc_delay_free(&p);
	CHECK(p.live == NULL && p.cap == 0, "freed");
}

/*
 * Tombstones speak for one incarnation of a session id, and each kind is
 * swept a minute after it was first listed, once that incarnation is gone.
 */
void
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

void
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
int
queue_semaphore(int pid, int seq)
{
	int			idx = claim(ZKL_MODE_SEMAPHORE, pid);

	queue[seq] = node_of(idx, seq, made[seq]);
	create_and_list(idx, seq, queue, seq + 1);
	return idx;
}
