/*
 * Unit tests of zk_once's rules (once.c): the arguments, the grid of
 * periods, which period a call must do, the record's text, and a bounded
 * fuzz of its parser.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "keys.h"
#include "once.h"
#include "check.h"

#define S	INT64_C(1000000)		/* a second, in us */
#define DAY	(86400 * S)

void		test_once(void);

static void
test_args(void)
{
	int64_t		p = 0;

	CHECK(zc_once_check_args(0, 0, 0, S, true, &p) == ZKO_NAME_EMPTY, "empty name");
	CHECK(zc_once_check_args(257, 0, 0, S, true, &p) == ZKO_NAME_TOO_LONG, "257-byte name");
	CHECK(zc_once_check_args(256, 0, 0, S, true, &p) == ZKO_ARGS_OK && p == S, "256-byte name, 1 s");
	CHECK(zc_once_check_args(3, 1, 0, 0, true, &p) == ZKO_PERIOD_HAS_MONTHS, "a month");
	CHECK(zc_once_check_args(3, 0, 0, 0, true, &p) == ZKO_PERIOD_NOT_POSITIVE, "zero period");
	CHECK(zc_once_check_args(3, 0, 0, -1, true, &p) == ZKO_PERIOD_NOT_POSITIVE, "negative period");
	CHECK(zc_once_check_args(3, 0, 1, -DAY, true, &p) == ZKO_PERIOD_NOT_POSITIVE, "1 day - 24 h");
	CHECK(zc_once_check_args(3, 0, 1, 2 * 3600 * S, true, &p) == ZKO_ARGS_OK && p == DAY + 7200 * S,
		  "1 day 2 h counts 26 h");
	CHECK(zc_once_check_args(3, 0, INT32_MAX, INT64_MAX - 1, true, &p) == ZKO_PERIOD_TOO_LONG,
		  "a period past 64 bits");
	CHECK(zc_once_check_args(3, 0, 0, S, false, &p) == ZKO_ANCHOR_NOT_FINITE, "infinite anchor");
}

static void
test_claim_key(void)
{
	char		key[ZKL_KEY_BUFLEN];
	char		raw[ZKL_KEY_BUFLEN];
	char		kind = 0;

	CHECK(zc_keys_encode_text_key("night ly", 8, key, sizeof(key)) > 0 && zc_keys_once_key(key) > 0 &&
		  key[0] == ZKL_KEY_ONCE && key[1] == ZKL_KEY_TEXT, "a job's claim key: 'o' before its name's text key");
	CHECK(zc_keys_is_once_key(key) && !zc_keys_is_semaphore_key(key), "told apart from a semaphore's");
	CHECK(zc_keys_decode_key(key, &kind, raw, sizeof(raw)) < 0, "no lock's key decodes as a claim");
	CHECK(zc_keys_decode_key(key + 1, &kind, raw, sizeof(raw)) == 8 && strcmp(raw, "night ly") == 0,
		  "behind its letter, the job's name");
	CHECK(!zc_keys_is_once_key("tonce") && !zc_keys_is_once_key("o"), "a text key starting with o is no claim");
}

static void
test_grid(void)
{
	int64_t		st = 0;

	CHECK(zc_once_latest_due(10 * S, 3 * S, 0, &st) && st == 9 * S, "10 s on a 3 s grid: 9 s");
	CHECK(zc_once_latest_due(9 * S, 3 * S, 0, &st) && st == 9 * S, "a boundary is its own period");
	CHECK(zc_once_latest_due(9 * S - 1, 3 * S, 0, &st) && st == 6 * S, "1 us before a boundary");
	CHECK(zc_once_latest_due(-1, 3 * S, 0, &st) && st == -3 * S, "before the anchor: floor, not truncation");
	CHECK(zc_once_latest_due(5 * S, 3 * S, 7 * S, &st) && st == 4 * S, "an anchor in the future");
	CHECK(zc_once_latest_due(123, 1, 0, &st) && st == 123, "a 1 us period");
	CHECK(zc_once_latest_due(2 * DAY + 3 * 3600 * S, DAY, 2 * 3600 * S, &st) && st == 2 * DAY + 2 * 3600 * S,
		  "daily at 02:00");
	CHECK(!zc_once_latest_due(INT64_MAX, S, INT64_MIN, &st), "now - anchor past 64 bits");
	CHECK(!zc_once_latest_due(INT64_MIN + 5, 100, INT64_MIN + 10, &st), "a start before 64 bits");
	CHECK(!zc_once_latest_due(S, 0, 0, &st), "a zero period has no grid");
}

static ZkoBy
by(int pid)
{
	ZkoBy		b;

	memset(&b, 0, sizeof(b));
	b.sysid = UINT64_C(7300000000000000001);
	b.pid = pid;
	b.xid = 4242;
	strcpy(b.uuid, "11111111-1111-4111-8111-111111111111");
	strcpy(b.cluster, "east 1");
	b.at = 31 * S + 5;
	return b;
}

static void
test_decide(void)
{
	ZkoRecord	r;
	ZkoRecord	d;
	ZkoBy		b = by(77);
	int64_t		st = -1;
	int64_t		sk = -1;

	CHECK(zc_once_decide(NULL, 10 * S, 0, 35 * S, false, &st, &sk) == ZKO_DUE && st == 30 * S && sk == 0,
		  "no record: the period begun now");
	zc_once_baseline(&r, 10 * S, 0, 30 * S);
	CHECK(zc_once_decide(&r, 10 * S, 0, 39 * S, false, &st, &sk) == ZKO_DUE && st == 30 * S,
		  "baseline: its first period is owed (a failed first run)");
	CHECK(zc_once_decide(&r, 10 * S, 0, 29 * S, false, &st, &sk) == ZKO_NOT_DUE,
		  "a clock behind the baseline finds nothing");
	CHECK(zc_once_decide(&r, 5 * S, 0, 39 * S, false, &st, &sk) == ZKO_OTHER_PERIOD, "another period");
	CHECK(zc_once_decide(&r, 10 * S, 1, 39 * S, false, &st, &sk) == ZKO_OTHER_PERIOD, "another anchor");

	CHECK(zc_once_sealed(&r, 30 * S, 0, &b, &d) && d.has_done && d.done == 30 * S && d.has_by &&
		  d.by.pid == 77, "sealed");
	r = d;
	CHECK(zc_once_decide(&r, 10 * S, 0, 39 * S, false, &st, &sk) == ZKO_NOT_DUE, "done: nothing more");
	CHECK(zc_once_decide(&r, 10 * S, 0, 20 * S, false, &st, &sk) == ZKO_NOT_DUE,
		  "a clock stepped back never redoes a period");
	CHECK(zc_once_decide(&r, 10 * S, 0, 40 * S, false, &st, &sk) == ZKO_DUE && st == 40 * S && sk == 0,
		  "the next period, as it begins");
	CHECK(zc_once_decide(&r, 10 * S, 0, 75 * S, false, &st, &sk) == ZKO_DUE && st == 40 * S && sk == 0,
		  "after an outage: the earliest owed");
	CHECK(zc_once_decide(&r, 10 * S, 0, 75 * S, true, &st, &sk) == ZKO_DUE && st == 70 * S && sk == 3,
		  "latest: 70 s, passing 40, 50 and 60 over");
	CHECK(!zc_once_sealed(&r, 30 * S, 0, &b, &d), "a seal never moves done back or repeats it");
	CHECK(!zc_once_sealed(&r, 20 * S, 0, &b, &d), "nor below it");
	CHECK(zc_once_sealed(&r, 70 * S, 3, &b, &d) && d.done == 70 * S && d.skipped == 3, "a latest seal");
	CHECK(!zc_once_sealed(&d, 80 * S, 2, &b, &r), "the skip count never shrinks");
	r.done = INT64_MAX - 5;
	CHECK(zc_once_decide(&r, 10 * S, 0, INT64_MAX, false, &st, &sk) == ZKO_OUT_OF_RANGE,
		  "done + period past 64 bits");
}

static bool
same_record(const ZkoRecord *a, const ZkoRecord *b)
{
	return a->period == b->period && a->anchor == b->anchor && a->first == b->first &&
		a->has_done == b->has_done && (!a->has_done || a->done == b->done) && a->skipped == b->skipped &&
		a->has_by == b->has_by &&
		(!a->has_by || (a->by.sysid == b->by.sysid && a->by.pid == b->by.pid && a->by.xid == b->by.xid &&
						strcmp(a->by.uuid, b->by.uuid) == 0 && a->by.at == b->by.at));
}

static ZkoParse
parse(const char *text, ZkoRecord *r)
{
	return zc_once_parse(text, strlen(text), r);
}

static void
test_record(void)
{
	ZkoRecord	r;
	ZkoRecord	d;
	ZkoRecord	back;
	ZkoBy		b = by(9);
	char		text[ZKO_RECORD_LEN];
	int			n;

	zc_once_baseline(&r, DAY, 2 * 3600 * S, 20 * DAY + 2 * 3600 * S);
	n = zc_once_format(&r, text, sizeof(text));
	CHECK(n > 0 && parse(text, &back) == ZKO_PARSE_OK && same_record(&r, &back), "baseline round trip");
	CHECK(strstr(text, "done") == NULL && strstr(text, "by ") == NULL, "a baseline names no done period");
	CHECK(zc_once_sealed(&r, 21 * DAY + 2 * 3600 * S, 0, &b, &d), "sealed");
	n = zc_once_format(&d, text, sizeof(text));
	CHECK(n > 0 && zc_once_parse(text, n, &back) == ZKO_PARSE_OK && same_record(&d, &back),
		  "sealed round trip");
	CHECK(strcmp(back.by.cluster, "east_1") == 0, "a cluster name's blank becomes _");
	CHECK(zc_once_format(&d, text, 40) == -1, "too small a buffer");

	CHECK(parse("zk_once 1\nperiod 10\nanchor 0\nfirst 20\nlater words here\nskipped 0\n", &back) ==
		  ZKO_PARSE_OK && back.first == 20, "an unknown line is skipped");
	CHECK(parse("zk_once 2\nwhatever\n", &back) == ZKO_PARSE_LATER, "a later version");
	CHECK(parse("zk_once 0\nperiod 10\nanchor 0\nfirst 20\n", &back) == ZKO_PARSE_BAD, "version 0");
	CHECK(parse("zk_once 1\nperiod 10\nanchor 0\n", &back) == ZKO_PARSE_BAD, "no first");
	CHECK(parse("zk_once 1\nperiod 0\nanchor 0\nfirst 0\n", &back) == ZKO_PARSE_BAD, "a zero period");
	CHECK(parse("zk_once 1\nperiod 10\nanchor 0\nfirst 25\n", &back) == ZKO_PARSE_BAD, "first off the grid");
	CHECK(parse("zk_once 1\nperiod 10\nanchor 0\nfirst 20\ndone 10\n", &back) == ZKO_PARSE_BAD,
		  "done before first");
	CHECK(parse("zk_once 1\nperiod 10\nanchor 0\nfirst 20\ndone 35\n", &back) == ZKO_PARSE_BAD,
		  "done off the grid");
	CHECK(parse("zk_once 1\nperiod 10x\nanchor 0\nfirst 20\n", &back) == ZKO_PARSE_BAD, "a word after a number");
	CHECK(parse("zk_once 1\nperiod 10\nanchor 0\nfirst 20\nby 1 2 3 u c\n", &back) == ZKO_PARSE_BAD,
		  "a committer without a done period");
	CHECK(parse("zk_once 1\nperiod 10\nanchor 0\nfirst 20\nskipped -1\n", &back) == ZKO_PARSE_BAD,
		  "a negative skip count");
	CHECK(zc_once_parse("zk_once 1\n\0period", 17, &back) == ZKO_PARSE_BAD, "a NUL inside");
	CHECK(parse("", &back) == ZKO_PARSE_BAD && parse("zk_lock 1\n", &back) == ZKO_PARSE_BAD, "not a record");
}

/* A bounded fuzz: random bytes and mutated records never crash the parser, and what it takes round-trips. */
static void
test_fuzz(void)
{
	uint64_t	x = UINT64_C(88172645463325252);
	ZkoRecord	r;
	ZkoRecord	back;
	ZkoBy		b = by(3);
	char		good[ZKO_RECORD_LEN];
	char		buf[ZKO_RECORD_LEN * 3];
	char		again[ZKO_RECORD_LEN * 2];
	int			glen;
	int			bad_trips = 0;
	int			oks = 0;
	int			i;

	zc_once_baseline(&r, 10 * S, 0, 20 * S);
	zc_once_sealed(&r, 40 * S, 2, &b, &back);
	glen = zc_once_format(&back, good, sizeof(good));
	for (i = 0; i < 200000; i++)
	{
		size_t		len;
		int			j;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (i % 2 == 0)
		{
			/* a record with a few bytes changed, cut or lengthened */
			memcpy(buf, good, glen);
			len = glen;
			for (j = 0; j < 1 + (int) (x % 4); j++)
				buf[(x >> (8 + 8 * j)) % len] = "0123456789 -\nzx\t"[(x >> (4 * j)) % 16];
			if (x % 7 == 0)
				len = (x >> 20) % (glen + 1);
		}
		else
		{
			len = x % sizeof(buf);
			for (j = 0; j < (int) len; j++)
				buf[j] = (char) (x >> ((j % 8) * 8)) + j;
		}
		if (zc_once_parse(buf, len, &r) != ZKO_PARSE_OK)
			continue;
		oks++;
		if (zc_once_format(&r, again, sizeof(again)) < 0 || parse(again, &back) != ZKO_PARSE_OK ||
			!same_record(&r, &back))
			bad_trips++;
	}
	CHECK(bad_trips == 0, "every record the parser takes formats and parses back the same");
	CHECK(oks > 1000, "the fuzz reaches records the parser takes");
}

void
test_once(void)
{
	test_args();
	test_claim_key();
	test_grid();
	test_decide();
	test_record();
	test_fuzz();
}
