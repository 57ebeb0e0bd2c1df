/*
 * Unit tests for the I/O-free parts of zk_lock: key encoding (keys.c),
 * the lock recipe's decisions (recipe.c), and zk_once's rules (test_once.c).  Prints "N passed, M failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "recipe.h"
#include "check.h"

int			passed;
int			failed;

void		test_once(void);	/* test_once.c */

/* ZKL_NODE_BUFLEN of slot.h, which this test does not include */
#define ZKR_TEST_NODE_BUFLEN 96

/* What a backend knows beyond the listing, for the recipe's calls (no local waits). */
#define BK(mine, held, n) (&(ZkrBackend) {(mine), (held), (n), NULL, 0, NULL, NULL})


static const char *U1 = "11111111-1111-4111-8111-111111111111";
static const char *U2 = "22222222-2222-4222-8222-222222222222";
static const char *U3 = "33333333-3333-4333-8333-333333333333";
static const char *U4 = "44444444-4444-4444-8444-444444444444";

static char names[8][128];

static const char *
node(int i, char mode, const char *uuid, const char *seq)
{
	snprintf(names[i], sizeof(names[i]), "%c-%s-7300000000000000001-4242-%s", mode, uuid, seq);
	return names[i];
}

/* ZooKeeper refuses '/', NUL, control characters and some Unicode ranges. */
static int
zk_acceptable(const char *name)
{
	const unsigned char *p;

	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || name[0] == '\0')
		return 0;
	for (p = (const unsigned char *) name; *p; p++)
		if (*p == '/' || *p < 0x20 || *p >= 0x7F)
			return 0;
	return 1;
}

static void
roundtrip(const char *raw, size_t len, const char *what)
{
	char		enc[ZKL_KEY_BUFLEN];
	char		dec[ZKL_KEY_BUFLEN];
	char		kind = 0;
	int			n = zc_keys_encode_text_key(raw, len, enc, sizeof(enc));
	int			m;

	CHECK(n > 0, what);
	if (n <= 0)
		return;
	CHECK(zk_acceptable(enc), what);
	m = zc_keys_decode_key(enc, &kind, dec, sizeof(dec));
	CHECK(m == (int) len && kind == ZKL_KEY_TEXT && memcmp(dec, raw, len) == 0, what);
}

static void
test_keys(void)
{
	char		enc[ZKL_KEY_BUFLEN];
	char		enc2[ZKL_KEY_BUFLEN];
	char		dec[ZKL_KEY_BUFLEN];
	char		big[ZKL_MAX_KEY_BYTES + 2];
	char		kind;
	int			i;

	roundtrip("orders", 6, "plain key");
	roundtrip("a/b", 3, "slash escaped");
	roundtrip("100%", 4, "percent escaped");
	roundtrip(".", 1, "dot key");
	roundtrip("..", 2, "dotdot key");
	roundtrip("tab\there", 8, "control byte");
	roundtrip("\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87", 8, "cyrillic");
	roundtrip("\xf0\x9f\x94\x92", 4, "emoji");
	roundtrip("\xef\xbf\xbf", 3, "U+FFFF is escaped");

	zc_keys_encode_text_key("a/b", 3, enc, sizeof(enc));
	CHECK(strcmp(enc, "ta%2Fb") == 0, "slash encodes as %2F");
	zc_keys_encode_text_key("a%2Fb", 5, enc2, sizeof(enc2));
	CHECK(strcmp(enc, enc2) != 0, "a/b and a%2Fb differ (injective)");
	zc_keys_encode_text_key("Key", 3, enc, sizeof(enc));
	zc_keys_encode_text_key("key", 3, enc2, sizeof(enc2));
	CHECK(strcmp(enc, enc2) != 0, "case is kept");

	CHECK(zc_keys_encode_text_key("", 0, enc, sizeof(enc)) == -1, "empty key refused");
	memset(big, '\xff', sizeof(big));
	CHECK(zc_keys_encode_text_key(big, ZKL_MAX_KEY_BYTES, enc, sizeof(enc)) > 0,
		  "longest key, every byte escaped, fits the buffer");
	CHECK(zc_keys_encode_text_key(big, ZKL_MAX_KEY_BYTES + 1, enc, sizeof(enc)) == -1,
		  "one byte too long refused");
	CHECK(zc_keys_encode_text_key("abc", 3, enc, 3) == -1, "small buffer refused, no overflow");

	/* text and bigint key spaces never meet */
	zc_keys_encode_text_key("1", 1, enc, sizeof(enc));
	zc_keys_encode_bigint_key(1, enc2, sizeof(enc2));
	CHECK(strcmp(enc, enc2) != 0, "text '1' and bigint 1 differ");
	zc_keys_encode_bigint_key(-9223372036854775807LL - 1, enc, sizeof(enc));
	CHECK(strcmp(enc, "b-9223372036854775808") == 0, "bigint min");
	CHECK(zc_keys_decode_key(enc, &kind, dec, sizeof(dec)) > 0 && kind == ZKL_KEY_BIGINT &&
		  strcmp(dec, "-9223372036854775808") == 0, "bigint decodes");

	/* (int, int) keys: a key space of their own, as core's pg_advisory_lock(int, int) */
	CHECK(zc_keys_encode_pair_key(42, 1000, enc, sizeof(enc)) > 0 && strcmp(enc, "p42.1000") == 0, "pair");
	zc_keys_encode_bigint_key(42, enc2, sizeof(enc2));
	CHECK(strcmp(enc, enc2) != 0, "pair (42, 1000) and bigint 42 differ");
	zc_keys_encode_pair_key(-2147483647 - 1, 2147483647, enc, sizeof(enc));
	CHECK(strcmp(enc, "p-2147483648.2147483647") == 0, "pair extremes");
	CHECK(zc_keys_decode_key(enc, &kind, dec, sizeof(dec)) > 0 && kind == ZKL_KEY_PAIR &&
		  strcmp(dec, "-2147483648,2147483647") == 0, "pair decodes as key1,key2");
	zc_keys_encode_pair_key(1, 23, enc, sizeof(enc));
	zc_keys_encode_pair_key(12, 3, enc2, sizeof(enc2));
	CHECK(strcmp(enc, enc2) != 0, "(1, 23) and (12, 3) differ");
	CHECK(zc_keys_encode_pair_key(1, 2, enc, 4) == -1, "small buffer refused, no overflow");
	{
		static const char *const bad[] = {
			"p", "p1", "p1.", "p.1", "p01.1", "p1.-0", "p+1.1", "p1.1.", "p1.2147483648",
			"p-2147483649.0", "p99999999999.1", "p1 .1", "p1,1"
		};

		for (i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
			CHECK(zc_keys_decode_key(bad[i], &kind, dec, sizeof(dec)) == -1, bad[i]);
	}
	CHECK(zc_keys_decode_key("p0.-7", &kind, dec, sizeof(dec)) == 4 && strcmp(dec, "0,-7") == 0, "p0.-7 decodes");

	CHECK(zc_keys_decode_key("x", &kind, dec, sizeof(dec)) == -1, "foreign name refused");
	CHECK(zc_keys_decode_key("ta%2", &kind, dec, sizeof(dec)) == -1, "truncated escape refused");
	CHECK(zc_keys_decode_key("t%61", &kind, dec, sizeof(dec)) == -1, "needless escape refused (one name per key)");
	/* found by fuzzing: a name decoding to more than the longest key is not ours */
	memset(enc, 'k', ZKL_MAX_KEY_BYTES + 1);
	enc[0] = ZKL_KEY_TEXT;
	enc[ZKL_MAX_KEY_BYTES + 1] = '\0';
	CHECK(zc_keys_decode_key(enc, &kind, dec, sizeof(dec)) == ZKL_MAX_KEY_BYTES, "longest key decodes");
	enc[ZKL_MAX_KEY_BYTES + 1] = 'k';
	enc[ZKL_MAX_KEY_BYTES + 2] = '\0';
	CHECK(zc_keys_decode_key(enc, &kind, dec, sizeof(dec)) == -1, "a name for a longer key is refused");

	/* every single byte round-trips and stays acceptable */
	for (i = 1; i < 256; i++)
	{
		char		c = (char) i;

		roundtrip(&c, 1, "single byte");
	}
}

static void
test_recipe(void)
{
	ZkrChild	kids[8];
	const char *list[8];
	int			n;
	int			own;
	int			watch;
	char		uuid[ZKL_UUID_LEN + 1];
	unsigned char bytes[16] = {0};
	char		prefix[96];

	/* sorted by the sequence as an integer, whatever the order given */
	list[0] = node(0, 'x', U3, "0000000010");
	list[1] = node(1, 'x', U1, "0000000002");
	list[2] = node(2, 'x', U2, "0000000009");
	list[3] = "not-a-lock-node";
	n = zc_recipe_collect(list, 4, kids);
	CHECK(n == 3, "foreign child skipped");
	CHECK(kids[0].seq == 2 && kids[1].seq == 9 && kids[2].seq == 10, "sorted by sequence");

	CHECK(zc_recipe_decide(kids, n, U1, BK(NULL, NULL, 0), &own, &watch) == ZKR_GRANT && own == 0, "lowest is granted");
	CHECK(zc_recipe_decide(kids, n, U3, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT && watch == 1,
		  "exclusive watches its immediate predecessor only");
	CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_ABSENT, "own node missing");
	CHECK(zc_recipe_decide(kids, n, U2, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  zc_recipe_sole_blocker(kids, own, watch, BK(NULL, NULL, 0)), "second in line: its predecessor is its only blocker");
	CHECK(zc_recipe_decide(kids, n, U3, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  !zc_recipe_sole_blocker(kids, own, watch, BK(NULL, NULL, 0)), "third in line: the first still blocks it");

	/* shared: only exclusive nodes before it block; watch the last of them */
	list[0] = node(0, 's', U1, "0000000001");
	list[1] = node(1, 'x', U2, "0000000002");
	list[2] = node(2, 's', U3, "0000000003");
	list[3] = node(3, 's', U4, "0000000004");
	n = zc_recipe_collect(list, 4, kids);
	CHECK(zc_recipe_decide(kids, n, U1, BK(NULL, NULL, 0), &own, &watch) == ZKR_GRANT, "first reader granted");
	CHECK(zc_recipe_decide(kids, n, U2, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT && watch == 0,
		  "writer waits for the reader before it");
	CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT && watch == 1,
		  "reader behind a writer watches that writer, not the reader before it");
	CHECK(zc_recipe_sole_blocker(kids, own, watch, BK(NULL, NULL, 0)),
		  "readers ahead of that writer do not block a reader");
	CHECK(zc_recipe_decide(kids, n, U2, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  zc_recipe_sole_blocker(kids, own, watch, BK(NULL, NULL, 0)), "a writer behind one reader: that reader alone");
	list[2] = node(2, 'x', U3, "0000000003");
	n = zc_recipe_collect(list, 4, kids);
	CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT && watch == 2 &&
		  !zc_recipe_sole_blocker(kids, own, watch, BK(NULL, NULL, 0)), "a reader behind two writers: the earlier one blocks too");

	/* a backend's own nodes never block it: a reader upgrading to writer */
	{
		const char *mine1[] = {U1};
		const char *mine3[] = {U3};

		list[0] = node(0, 's', U1, "0000000001");
		list[1] = node(1, 's', U2, "0000000002");
		list[2] = node(2, 'x', U3, "0000000003");
		n = zc_recipe_collect(list, 3, kids);
		CHECK(zc_recipe_decide(kids, n, U3, BK(mine1, NULL, 1), &own, &watch) == ZKR_WAIT && watch == 1,
			  "upgrading writer skips its own reader, waits for the other reader");
		CHECK(zc_recipe_sole_blocker(kids, own, watch, BK(mine1, NULL, 1)),
			  "and its own reader ahead does not count as a blocker");
		CHECK(!zc_recipe_sole_blocker(kids, own, watch, BK(NULL, NULL, 0)),
			  "another backend's reader there would");
		list[1] = node(1, 'x', U2, "0000000002");
		list[2] = node(2, 's', U3, "0000000003");
		n = zc_recipe_collect(list, 3, kids);
		CHECK(zc_recipe_decide(kids, n, U3, BK(mine1, NULL, 1), &own, &watch) == ZKR_WAIT && watch == 1,
			  "a reader still waits for another backend's writer");
		list[0] = node(0, 'x', U1, "0000000001");
		list[1] = node(1, 's', U3, "0000000002");
		n = zc_recipe_collect(list, 2, kids);
		CHECK(zc_recipe_decide(kids, n, U3, BK(mine1, NULL, 1), &own, &watch) == ZKR_GRANT,
			  "a writer may also read: its own exclusive node does not block its shared one");
		CHECK(zc_recipe_decide(kids, n, U3, BK(mine3, NULL, 0), &own, &watch) == ZKR_WAIT && watch == 0,
			  "without the ownership, the same reader waits");
	}

	/*
	 * Same key, same backend, as core: a holder's further request is not
	 * held up by waiters queued behind its own grant; another cluster's
	 * holder still counts.
	 */
	{
		const char *mine1[] = {U1};
		const bool	held[] = {true};
		const bool	waiting[] = {false};

		list[0] = node(0, 'x', U1, "0000000001");	/* ours, held exclusive */
		list[1] = node(1, 'x', U2, "0000000002");	/* another cluster waits */
		list[2] = node(2, 's', U3, "0000000003");	/* ours: asks shared */
		n = zc_recipe_collect(list, 3, kids);
		CHECK(zc_recipe_decide(kids, n, U3, BK(mine1, held, 1), &own, &watch) == ZKR_GRANT,
			  "exclusive holder asks shared: granted past the waiter behind it");
		CHECK(zc_recipe_foreign_ahead(kids, n, own, BK(mine1, NULL, 1)) == 1,
			  "and granted with another cluster's node ahead: not alone at the head");
		CHECK(zc_recipe_foreign_ahead(kids, n, 0, BK(mine1, NULL, 1)) == 0, "the first node is");
		CHECK(zc_recipe_decide(kids, n, U3, BK(mine1, waiting, 1), &own, &watch) == ZKR_WAIT && watch == 1,
			  "while our first node only waits, the other waiter still blocks");
		CHECK(zc_recipe_decide(kids, n, U2, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT && watch == 0,
			  "and the other cluster's waiter keeps waiting for our first node");

		list[0] = node(0, 's', U1, "0000000001");	/* ours, held shared */
		list[2] = node(2, 'x', U3, "0000000003");	/* ours: asks exclusive */
		n = zc_recipe_collect(list, 3, kids);
		CHECK(zc_recipe_decide(kids, n, U3, BK(mine1, held, 1), &own, &watch) == ZKR_GRANT,
			  "shared holder asks exclusive, no other reader: granted past a writer waiting for it");

		list[3] = node(3, 's', U4, "0000000000");	/* another cluster reads, ahead */
		n = zc_recipe_collect(list, 4, kids);
		CHECK(zc_recipe_decide(kids, n, U3, BK(mine1, held, 1), &own, &watch) == ZKR_WAIT &&
			  strcmp(kids[watch].name, list[3]) == 0,
			  "another cluster's reader ahead still blocks the upgrade");
		CHECK(zc_recipe_sole_blocker(kids, own, watch, BK(mine1, held, 1)),
			  "and is its only blocker: the writer behind our read waits for us");

		list[3] = node(3, 's', U4, "0000000002");	/* a reader behind ours holds too */
		list[1] = node(1, 'x', U2, "0000000004");
		list[2] = node(2, 'x', U3, "0000000005");
		n = zc_recipe_collect(list, 4, kids);
		CHECK(zc_recipe_decide(kids, n, U3, BK(mine1, held, 1), &own, &watch) == ZKR_WAIT &&
			  strcmp(kids[watch].name, list[3]) == 0,
			  "a reader queued behind our read shares it, so it blocks our upgrade");

		/*
		 * The three-way upgrade: we hold shared, a writer waits behind us,
		 * a reader behind it, and we ask exclusive.  Core grants us at once.
		 */
		list[0] = node(0, 's', U1, "0000000001");	/* ours, held shared */
		list[1] = node(1, 'x', U2, "0000000002");	/* waits for us */
		list[2] = node(2, 's', U4, "0000000003");	/* waits for the writer */
		list[3] = node(3, 'x', U3, "0000000004");	/* ours: asks exclusive */
		n = zc_recipe_collect(list, 4, kids);
		{
			const char *local[] = {U2, U4};
			ZkrBackend	b = {mine1, held, 1, local, 2, NULL, NULL};

			CHECK(zc_recipe_decide(kids, n, U3, &b, &own, &watch) == ZKR_GRANT,
				  "three-way upgrade, waiters of this cluster: granted past both");
			CHECK(zc_recipe_blocks(kids, 3, 2, 'x', BK(mine1, held, 1)) &&
				  !zc_recipe_blocks(kids, 3, 2, 'x', &b),
				  "the searches' test: the reader blocks unless known to wait");
			b.nwaits = 1;	/* the writer ours, the reader another cluster's */
			CHECK(zc_recipe_decide(kids, n, U3, &b, &own, &watch) == ZKR_WAIT &&
				  strcmp(kids[watch].name, list[2]) == 0,
				  "another cluster's reader may hold the key (the writer may have gone): waited for");
			CHECK(zc_recipe_decide(kids, n, U3, BK(mine1, waiting, 1), &own, &watch) == ZKR_WAIT &&
				  strcmp(kids[watch].name, list[2]) == 0,
				  "and without our shared lock held, the waiters are waited for");
		}
		CHECK(zc_recipe_passes('s', 'x', false) && !zc_recipe_passes('s', 's', false) &&
			  zc_recipe_passes('s', 's', true) && zc_recipe_passes('x', 's', false),
			  "the rule: conflicts with the held node, or known to wait");
	}

	/*
	 * The counter wraps: past 2147483647 ZooKeeper writes "-2147483648"
	 * (eleven characters), then counts up through "-000000001" to
	 * "0000000000".  Nodes made after the wrap come later in the queue.
	 */
	list[0] = node(0, 'x', U3, "-2147483648");
	list[1] = node(1, 'x', U1, "2147483646");
	list[2] = node(2, 'x', U2, "2147483647");
	list[3] = node(3, 'x', U4, "-2147483647");
	n = zc_recipe_collect(list, 4, kids);
	CHECK(n == 4, "names on both sides of the wrap parse");
	CHECK(n == 4 && kids[0].seq == 2147483646 && kids[1].seq == 2147483647 &&
		  kids[2].seq == INT32_MIN && kids[3].seq == INT32_MIN + 1,
		  "ordered across the wrap as serial numbers");
	CHECK(zc_recipe_decide(kids, n, U1, BK(NULL, NULL, 0), &own, &watch) == ZKR_GRANT,
		  "the node made before the wrap holds the lock");
	CHECK(zc_recipe_decide(kids, n, U3, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT && watch == 1,
		  "the first node after the wrap waits for the last one before it");
	list[0] = node(0, 'x', U1, "-000000001");
	list[1] = node(1, 'x', U2, "0000000000");
	n = zc_recipe_collect(list, 2, kids);
	CHECK(n == 2 && kids[0].seq == -1 && kids[1].seq == 0, "-1 comes before 0");
	CHECK(zc_recipe_seq_cmp(INT32_MAX, INT32_MIN) < 0 && zc_recipe_seq_cmp(-1, 0) < 0 &&
		  zc_recipe_seq_cmp(5, 5) == 0 && zc_recipe_seq_cmp(7, 3) > 0, "serial comparison");
	list[0] = node(0, 'x', U1, "-00000001");	/* too short for %010d */
	list[1] = node(1, 'x', U1, "000000001");
	list[2] = node(2, 'x', U1, "00000000001");
	list[3] = node(3, 'x', U1, "-21474836480");
	CHECK(zc_recipe_collect(list, 4, kids) == 0, "sequences ZooKeeper never writes are refused");

	list[0] = "x-short-0000000001";
	CHECK(zc_recipe_collect(list, 1, kids) == 0, "malformed name skipped");

	zc_recipe_format_uuid(bytes, uuid);
	CHECK(strlen(uuid) == ZKL_UUID_LEN && uuid[14] == '4', "uuid v4 format");
	{
		char		want[ZKL_UUID_LEN + 1];
		char		got[ZKL_UUID_LEN + 1];
		unsigned char w[16];
		unsigned char v[16];
		int			i;

		for (i = 0; i < 16; i++)
			w[i] = (unsigned char) (i * 37 + 11);	/* every nibble value, both halves */
		zc_recipe_format_uuid(w, got);
		memcpy(v, w, 16);
		v[6] = (unsigned char) ((v[6] & 0x0F) | 0x40);
		v[8] = (unsigned char) ((v[8] & 0x3F) | 0x80);
		snprintf(want, sizeof(want), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
				 v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]);
		CHECK(strcmp(got, want) == 0, "the uuid's hex digits are the bytes', as printf writes them");
	}
	CHECK(zc_recipe_node_prefix('x', uuid, 7300000000000000001ULL, 4242, 0, NULL, prefix, sizeof(prefix)) > 0,
		  "prefix fits");
	snprintf(names[7], sizeof(names[7]), "%s0000000003", prefix);
	CHECK(zc_recipe_parse_child(names[7], &kids[0]) && kids[0].seq == 3 && kids[0].mode == 'x',
		  "a node made from our prefix parses back");
	CHECK(zc_recipe_name_has_uuid(names[7], uuid), "and carries its uuid");
	CHECK(zc_recipe_name_has_sysid(names[7], 7300000000000000001ULL), "and its cluster's system identifier");
	CHECK(!zc_recipe_name_has_sysid(names[7], 730000000000000000ULL), "not a prefix of it");
	CHECK(!zc_recipe_name_has_sysid(names[7], 4242), "nor the pid");
}

/* A semaphore node: holders after the pid. */
static const char *
sem_node(int i, const char *uuid, int pid, const char *holders, const char *seq)
{
	snprintf(names[i], sizeof(names[i]), "c-%s-7300000000000000001-%d.%s-%s", uuid, pid, holders, seq);
	return names[i];
}

static void
test_semaphore_recipe(void)
{
	ZkrChild	kids[8];
	const char *list[8];
	char		key[ZKL_KEY_BUFLEN];
	char		dec[ZKL_KEY_BUFLEN];
	char		prefix[96];
	char		kind = 0;
	int			n;
	int			own;
	int			other;

	list[0] = sem_node(0, U1, 10, "2", "0000000001");
	list[1] = sem_node(1, U2, 11, "2", "0000000002");
	list[2] = sem_node(2, U3, 12, "2", "0000000003");
	list[3] = sem_node(3, U4, 13, "3", "0000000004");
	n = zc_recipe_collect(list, 4, kids);
	CHECK(n == 4 && kids[0].holders == 2 && kids[3].holders == 3 && kids[0].mode == 'c',
		  "semaphore nodes parse, with their holders");
	CHECK(zc_recipe_decide_semaphore(kids, n, U1, &own, &other) == ZKR_GRANT && own == 0, "first of 2 is in");
	CHECK(zc_recipe_decide_semaphore(kids, n, U2, &own, &other) == ZKR_GRANT && own == 1, "second of 2 is in");
	CHECK(zc_recipe_decide_semaphore(kids, n, U3, &own, &other) == ZKR_WAIT, "third of 2 waits");
	CHECK(zc_recipe_decide_semaphore(kids, n, U4, &own, &other) == ZKR_MISMATCH && other == 2,
		  "holders 3 behind live requests of 2: mismatch, naming 2");
	CHECK(zc_recipe_decide_semaphore(kids + 1, n - 1, U3, &own, &other) == ZKR_GRANT,
		  "once the first goes, the third is in (any node ahead may go first)");
	CHECK(zc_recipe_decide_semaphore(kids, n, "99999999-9999-4999-8999-999999999999", &own, &other) == ZKR_ABSENT,
		  "own node missing");
	CHECK(zc_recipe_decide_semaphore(kids + 3, 1, U4, &own, &other) == ZKR_GRANT,
		  "alone, any holders value is the key's");
	/* F(3) holds, F'(5) queued, Z(3) behind: Z must not go by the oldest alone */
	list[0] = sem_node(0, U1, 10, "3", "0000000001");
	list[1] = sem_node(1, U2, 11, "5", "0000000002");
	list[2] = sem_node(2, U3, 12, "3", "0000000003");
	n = zc_recipe_collect(list, 3, kids);
	CHECK(zc_recipe_decide_semaphore(kids, n, U3, &own, &other) == ZKR_MISMATCH && other == 5,
		  "a differing node behind the oldest fails the request too (else 5 could get in past 3)");
	CHECK(zc_recipe_decide_semaphore(kids + 1, n - 1, U3, &own, &other) == ZKR_MISMATCH && other == 5,
		  "and once the oldest goes, the 5 ahead still counts against a 3");

	/* names ZooKeeper could hold but we never make are not semaphore nodes */
	list[0] = sem_node(0, U1, 10, "0", "0000000001");
	list[1] = sem_node(1, U1, 10, "02", "0000000001");
	list[2] = sem_node(2, U1, 10, "10000000", "0000000001");
	snprintf(names[3], sizeof(names[3]), "c-%s-7300000000000000001-10-0000000001", U1);
	list[3] = names[3];
	CHECK(zc_recipe_collect(list, 4, kids) == 0, "holders 0, leading zeros, too many or none: refused");

	CHECK(zc_recipe_node_prefix('c', U1, 7300000000000000001ULL, 4242, 1000000, NULL, prefix, sizeof(prefix)) > 0,
		  "semaphore prefix fits, at the most holders");
	snprintf(names[7], sizeof(names[7]), "%s-2147483648", prefix);
	CHECK(zc_recipe_parse_child(names[7], &kids[0]) && kids[0].holders == 1000000 && kids[0].seq == INT32_MIN,
		  "and parses back past the sequence wrap");
	CHECK(zc_recipe_same_owner(names[7], names[7]) && zc_recipe_name_has_sysid(names[7], 7300000000000000001ULL),
		  "owner and cluster read as for locks");

	/* the key space: text and bigint keys get an own one */
	CHECK(zc_keys_encode_text_key("pool", 4, key, sizeof(key)) > 0 && zc_keys_semaphore_key(key) == 6 &&
		  strcmp(key, "mtpool") == 0 && zc_keys_is_semaphore_key(key), "semaphore key of text");
	CHECK(zc_keys_decode_key(key + 1, &kind, dec, sizeof(dec)) == 4 && kind == ZKL_KEY_TEXT &&
		  strcmp(dec, "pool") == 0, "the key inside decodes to the key");
	CHECK(zc_keys_decode_key(key, &kind, dec, sizeof(dec)) < 0,
		  "the decoder takes lock keys only: one name per key and kind");
	CHECK(zc_keys_encode_bigint_key(-42, key, sizeof(key)) > 0 && zc_keys_semaphore_key(key) > 0 &&
		  zc_keys_is_semaphore_key(key) && zc_keys_decode_key(key + 1, &kind, dec, sizeof(dec)) > 0 &&
		  kind == ZKL_KEY_BIGINT && strcmp(dec, "-42") == 0, "and of bigint");
	memset(dec, 'a', ZKL_MAX_KEY_BYTES);
	memset(dec, 0x01, ZKL_MAX_KEY_BYTES);
	CHECK(zc_keys_encode_text_key(dec, ZKL_MAX_KEY_BYTES, key, sizeof(key)) > 0 &&
		  zc_keys_semaphore_key(key) == 2 + 3 * ZKL_MAX_KEY_BYTES, "the longest key still fits as a semaphore's");
}

/* The kinds' table: the rules code asks it for, as core's two modes and a semaphore have them. */
static void
test_kinds(void)
{
	int			i;
	int			j;

	CHECK(zc_nkinds <= ZKL_MAX_KINDS, "the table fits ZKL_MAX_KINDS");
	for (i = 0; i < zc_nkinds; i++)
	{
		const ZklKind *k = &zc_kinds[i];

		CHECK(zc_kind_of(k->mode) == k, "a kind's letter finds its own row (letters unique)");
		CHECK(k->mode >= 'a' && k->mode <= 'z', "a kind's letter is lower-case (ZKK_SET)");
		CHECK(k->name != NULL && k->noun != NULL && k->a_name != NULL, "every kind is named");
		for (j = 0; j < zc_nkinds; j++)
		{
			char		m = zc_kinds[j].mode;

			CHECK(zc_kind_conflict(k->mode, m) == zc_kind_conflict(m, k->mode), "conflict is symmetric");
			/* a counted kind lives in its own key space: it meets no ordered kind */
			if (zc_kinds[j].grant != k->grant)
				CHECK(!zc_kind_conflict(k->mode, m), "kinds of different grant rules never meet");
		}
		CHECK(!(k->local == ZKL_LOCAL_RIDE && zc_kind_conflict(k->mode, k->mode)),
			  "only a kind that does not conflict with itself can be joined");
		CHECK(!(k->local == ZKL_LOCAL_HANDOVER && !zc_kind_alone(k->mode)),
			  "a node passes from holder to holder only of a kind that holds its key alone");
	}
	CHECK(zc_kind_conflict('x', 'x') && zc_kind_conflict('x', 's') && !zc_kind_conflict('s', 's'),
		  "core's modes: writers exclude all, readers share");
	CHECK(zc_kind_alone('x') && !zc_kind_alone('s') && !zc_kind_alone('c'), "only exclusive holds alone");
	CHECK(zc_kind_counted('c') && !zc_kind_counted('x') && !zc_kind_counted('s'), "only the semaphore counts");
	CHECK(zc_kind_hands_over('x') && zc_kind_rides('s') && zc_kind_local('c') == ZKL_LOCAL_NONE,
		  "local sharing: exclusive hands over, shared rides, semaphore neither");
	CHECK(zc_kind_of('L') == NULL && !zc_kind_conflict('x', 'L') && !zc_kind_conflict('x', '\0') &&
		  zc_kind_name('?') == NULL && !zc_kind_counted('?'), "an unknown letter is no kind");
}

/* A node of this version (marked: it relists, recipe.h) of pid `pid`; anchor >= 0: an upgrade of that node. */
static const char *
node_v(int i, char mode, const char *uuid, int pid, int anchor, int seq)
{
	char		prefix[96];
	int32_t		a = anchor;

	zc_recipe_node_prefix(mode, uuid, 7300000000000000001ULL, pid, 0, anchor >= 0 ? &a : NULL,
						  prefix, sizeof(prefix));
	snprintf(names[i], sizeof(names[i]), "%s%010d", prefix, seq);
	return names[i];
}

static bool
pending_u4(void *arg, const char *name)
{
	return zc_recipe_name_has_uuid(name, U4);
}

/*
 * Upgrades across clusters: a backend that holds a key shared and asks it
 * exclusive names its shared node, stands right behind it in every
 * cluster's order, and passes what waits behind a writer it holds up.
 */
static void
test_upgrade_recipe(void)
{
	ZkrChild	kids[8];
	const char *list[8];
	const char *mineU[] = {U1};
	const bool	held[] = {true};
	const bool	not_held[] = {false};
	int			n;
	int			own;
	int			watch;
	int			i;

	/* names */
	list[0] = node_v(0, 's', U1, 11, -1, 1);
	list[1] = node_v(1, 'x', U3, 11, 1, 4);
	CHECK(zc_recipe_parse_child(list[0], &kids[0]) && kids[0].relists && !kids[0].upgrade && kids[0].seq == 1,
		  "a node of this version relists");
	CHECK(zc_recipe_parse_child(list[1], &kids[1]) && kids[1].relists && kids[1].upgrade && kids[1].anchor == 1 &&
		  kids[1].seq == 4, "an upgrade names the node it upgrades");
	CHECK(zc_recipe_same_owner(list[0], list[1]), "both are one backend's");
	CHECK(zc_recipe_parse_child(node(2, 's', U2, "0000000002"), &kids[2]) && !kids[2].relists,
		  "an earlier version's node does not");
	snprintf(names[3], sizeof(names[3]), "x-%s-7300000000000000001-11.u-0000000005", U4);
	CHECK(zc_recipe_parse_child(names[3], &kids[3]) && !kids[3].upgrade && !kids[3].relists,
		  "a mark we do not know is an earlier version's");
	{
		int32_t		wrap = INT32_MIN + 3;
		char		prefix[96];

		CHECK(zc_recipe_node_prefix('x', U3, 7300000000000000001ULL, 2147483647, 0, &wrap, prefix,
									sizeof(prefix)) > 0 && strlen(prefix) + 11 < ZKR_TEST_NODE_BUFLEN,
			  "the longest upgrade name fits a node buffer");
		snprintf(names[4], sizeof(names[4]), "%s-2147483640", prefix);
		CHECK(zc_recipe_parse_child(names[4], &kids[4]) && kids[4].upgrade && kids[4].anchor == wrap,
			  "an anchor past the sequence wrap reads back");
	}

	/* the three-way upgrade: W writes behind our read, R reads behind W, we ask exclusive */
	list[0] = node_v(0, 's', U1, 11, -1, 1);	/* ours, held */
	list[1] = node_v(1, 'x', U2, 22, -1, 2);	/* W, another cluster */
	list[2] = node_v(2, 's', U4, 33, -1, 3);	/* R, a third */
	list[3] = node_v(3, 'x', U3, 11, 1, 4);		/* our upgrade */
	n = zc_recipe_collect(list, 4, kids);
	CHECK(n == 4 && strcmp(kids[1].name, list[3]) == 0 && kids[1].placed,
		  "the upgrade stands right behind the node it upgrades");
	CHECK(zc_recipe_decide(kids, n, U3, BK(mineU, held, 1), &own, &watch) == ZKR_GRANT,
		  "and passes the writer and the reader behind it: granted at once, as core's");
	CHECK(zc_recipe_foreign_ahead(kids, n, own, BK(mineU, held, 1)) == 2,
		  "not alone: what it passed was made before it");
	CHECK(zc_recipe_decide(kids, n, U3, BK(mineU, not_held, 1), &own, &watch) == ZKR_WAIT,
		  "only while it holds the node it upgrades");
	CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[1]) == 0 && zc_recipe_upgrade_may_come(kids, own, watch, BK(NULL, NULL, 0)),
		  "the reader waits for the writer, and reads its queue again once the writer goes");
	CHECK(zc_recipe_decide(kids, n, U2, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[3]) == 0, "the writer waits for the upgrade, ahead of it now");
	list[1] = list[2];
	list[2] = list[3];
	n = zc_recipe_collect(list, 3, kids);
	CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[2]) == 0,
		  "the writer gone, the reader finds the upgrade ahead of it and waits for it");
	CHECK(zc_recipe_decide(kids, n, U3, BK(mineU, held, 1), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[1]) == 0,
		  "and had the upgrade listed then, the reader would hold it up: it may hold the key");
	{
		ZkrBackend	b = {NULL, NULL, 0, NULL, 0, pending_u4, NULL};

		list[1] = node_v(1, 's', U2, 22, -1, 2);	/* a reader that came first */
		list[2] = node_v(2, 'x', U4, 11, 1, 4);		/* an upgrade of this cluster not granted */
		n = zc_recipe_collect(list, 3, kids);
		CHECK(zc_recipe_decide(kids, n, U2, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT,
			  "a reader made before an upgrade waits for it elsewhere");
		CHECK(zc_recipe_decide(kids, n, U2, &b, &own, &watch) == ZKR_GRANT,
			  "not in the upgrade's own cluster while it is not granted: it came first");
	}

	/* what the upgrade does not pass */
	list[0] = node_v(0, 's', U1, 11, -1, 1);
	list[1] = node_v(1, 's', U4, 33, -1, 2);	/* granted beside our read */
	list[2] = node_v(2, 'x', U2, 22, -1, 3);
	list[3] = node_v(3, 'x', U3, 11, 1, 4);
	n = zc_recipe_collect(list, 4, kids);
	CHECK(zc_recipe_decide(kids, n, U3, BK(mineU, held, 1), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[1]) == 0, "a reader right behind ours may hold the key: waited for");
	list[1] = node_v(1, 'x', U2, 22, -1, 2);
	list[2] = node(2, 's', U4, "0000000003");	/* an earlier version's reader behind the writer */
	n = zc_recipe_collect(list, 4, kids);
	CHECK(zc_recipe_decide(kids, n, U3, BK(mineU, held, 1), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[2]) == 0,
		  "an earlier version's reader is not passed: it may be granted without reading its queue again");
	list[2] = node_v(2, 'x', U4, 33, 0, 3);		/* another upgrade (of a node not listed): placed nowhere */
	n = zc_recipe_collect(list, 4, kids);
	CHECK(!kids[3].placed && zc_recipe_decide(kids, n, U3, BK(mineU, held, 1), &own, &watch) == ZKR_GRANT,
		  "a writer behind our read is passed, as before");

	/*
	 * A review's two listings: the node i passes only on a j its own listing
	 * showed ahead of it.  A j of i's own backend (a create whose reply was
	 * lost, not deleted yet) never held i up; nor did a j made after i (a
	 * rider's upgrade of our read, given up, not deleted yet): i may have been
	 * granted before either.
	 */
	list[0] = node_v(0, 's', U1, 11, -1, 1);
	list[1] = node_v(1, 'x', U2, 22, -1, 2);	/* i's backend's own, going */
	list[2] = node_v(2, 's', U4, 22, -1, 3);	/* i */
	list[3] = node_v(3, 'x', U3, 11, 1, 4);
	n = zc_recipe_collect(list, 4, kids);
	CHECK(zc_recipe_decide(kids, n, U3, BK(mineU, held, 1), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[2]) == 0, "a reader behind a writer of its own backend is not passed");
	list[1] = node_v(1, 's', U4, 33, -1, 2);	/* i, granted at once */
	list[2] = node_v(2, 'x', U2, 77, 1, 3);		/* a rider's upgrade of our read, given up */
	n = zc_recipe_collect(list, 4, kids);
	CHECK(zc_recipe_decide(kids, n, U3, BK(mineU, held, 1), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[1]) == 0, "nor one behind a writer made after it");

	/* two upgraders of one key: each waits for the other's read (a deadlock the searches break) */
	list[0] = node_v(0, 's', U1, 11, -1, 1);
	list[1] = node_v(1, 's', U2, 22, -1, 2);
	list[2] = node_v(2, 'x', U3, 11, 1, 3);
	list[3] = node_v(3, 'x', U4, 22, 2, 4);
	n = zc_recipe_collect(list, 4, kids);
	for (i = 0; i < n; i++)
	{
		static const int32_t order[] = {1, 3, 2, 4};

		CHECK(kids[i].seq == order[i], "each upgrade right behind its read");
	}
	CHECK(zc_recipe_decide(kids, n, U3, BK(mineU, held, 1), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[1]) == 0, "the first upgrader waits for the other's read");
	{
		const char *mine2[] = {U2};

		CHECK(zc_recipe_decide(kids, n, U4, BK(mine2, held, 1), &own, &watch) == ZKR_WAIT &&
			  strcmp(kids[watch].name, list[0]) == 0,
			  "and the second for the first one's read (that one's upgrade waits for us)");
	}

	/* an anchor that is no shared node, or made after the upgrade, places nothing */
	list[0] = node_v(0, 'x', U1, 11, -1, 1);
	list[1] = node_v(1, 'x', U3, 11, 1, 2);
	n = zc_recipe_collect(list, 2, kids);
	CHECK(!kids[1].placed, "an exclusive node is not upgraded");
	list[0] = node_v(0, 'x', U3, 11, 5, 1);
	list[1] = node_v(1, 's', U1, 11, -1, 5);
	n = zc_recipe_collect(list, 2, kids);
	CHECK(!kids[0].placed && kids[0].seq == 1, "nor is a node made after the upgrade");

	/*
	 * An upgrade placed ahead of the node a writer watches, made after that
	 * node: once its read goes, it stands by its own sequence, between them
	 * (a seed's orphan: an upgrade created after its lookup left).
	 */
	list[0] = node_v(0, 's', U1, 11, -1, 1);	/* the read */
	list[1] = node_v(1, 'x', U2, 22, -1, 2);	/* the watched writer */
	list[2] = node_v(2, 'x', U3, 11, 1, 3);		/* the upgrade, placed behind the read */
	list[3] = node_v(3, 'x', U4, 33, -1, 4);	/* the waiter */
	n = zc_recipe_collect(list, 4, kids);
	CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[1]) == 0 && zc_recipe_upgrade_may_fall(kids, own, watch, BK(NULL, NULL, 0)),
		  "a waiter behind a writer, with an upgrade placed ahead of it made later: it may fall between");
	n = zc_recipe_collect((const char *const[]) {list[1], list[2], list[3]}, 3, kids);
	CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  strcmp(kids[watch].name, list[2]) == 0, "and once the read goes, the waiter waits for it");
	{
		const char *mine4[] = {U3};

		n = zc_recipe_collect(list, 4, kids);
		CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
			  !zc_recipe_upgrade_may_fall(kids, own, watch, BK(mine4, NULL, 1)),
			  "not one of the waiter's own backend (it never blocks it)");
	}
	list[2] = node_v(2, 'x', U3, 11, 1, 5);		/* made after the waiter */
	n = zc_recipe_collect(list, 4, kids);
	CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  !zc_recipe_upgrade_may_fall(kids, own, watch, BK(NULL, NULL, 0)),
		  "nor one made after the waiter: it falls behind it");
	list[2] = node_v(2, 'x', U3, 22, -1, 3);	/* no upgrade */
	n = zc_recipe_collect(list, 4, kids);
	CHECK(zc_recipe_decide(kids, n, U4, BK(NULL, NULL, 0), &own, &watch) == ZKR_WAIT &&
		  !zc_recipe_upgrade_may_fall(kids, own, watch, BK(NULL, NULL, 0)), "nor a plain writer");
}

int
main(void)
{
	test_keys();
	test_recipe();
	test_upgrade_recipe();
	test_semaphore_recipe();
	test_kinds();
	test_once();
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
