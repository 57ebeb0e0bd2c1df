/*
 * libFuzzer target for the key encoding (src/keys.c).  For any input:
 *  - a text key of 1..256 bytes encodes to a name ZooKeeper accepts: one
 *    path component of printable ASCII, never "." or "..", that decodes back
 *    to exactly the same bytes (so the encoding is injective);
 *  - two different keys never share a name;
 *  - a bigint key and an (int, int) key round-trip;
 *  - a text key's semaphore key is a name of its own, never read as a lock's;
 *  - any string the decoder accepts is the encoding of what it decoded to,
 *    so no two names stand for one key.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

/* What ZooKeeper accepts in a node name, restricted to what we produce. */
static void
check_name(const char *name, int len)
{
	int			i;

	CHECK(len > 1 && (size_t) len == strlen(name));
	CHECK(strcmp(name, ".") != 0 && strcmp(name, "..") != 0);
	for (i = 0; i < len; i++)
		CHECK(name[i] >= 0x20 && name[i] <= 0x7E && name[i] != '/');
}

static void
check_text(const uint8_t *key, size_t n)
{
	char		name[ZKL_KEY_BUFLEN];
	char		back[ZKL_MAX_KEY_BYTES + 1];
	char		kind;
	int			len = zc_keys_encode_text_key((const char *) key, n, name, sizeof(name));

	if (n == 0 || n > ZKL_MAX_KEY_BYTES)
	{
		CHECK(len == -1);
		return;
	}
	CHECK(len > 0);
	check_name(name, len);
	CHECK(zc_keys_decode_key(name, &kind, back, sizeof(back)) == (int) n);
	CHECK(kind == ZKL_KEY_TEXT && memcmp(back, key, n) == 0);

	/* its semaphore's key: a name too, never read as a lock key, the lock key inside */
	CHECK(zc_keys_semaphore_key(name) == len + 1);
	check_name(name, len + 1);
	CHECK(zc_keys_is_semaphore_key(name) && zc_keys_decode_key(name, &kind, back, sizeof(back)) == -1);
	CHECK(zc_keys_decode_key(name + 1, &kind, back, sizeof(back)) == (int) n && memcmp(back, key, n) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		a[ZKL_KEY_BUFLEN];
	char		b[ZKL_KEY_BUFLEN];
	char		back[ZKL_KEY_BUFLEN];
	char		again[ZKL_KEY_BUFLEN];
	char		kind;
	char	   *end;
	int64_t		v;
	int			n;
	size_t		half = size / 2;

	check_text(data, size);

	/* the two halves: different keys, different names */
	if (half > 0 && half <= ZKL_MAX_KEY_BYTES && size - half <= ZKL_MAX_KEY_BYTES)
	{
		int			la = zc_keys_encode_text_key((const char *) data, half, a, sizeof(a));
		int			lb = zc_keys_encode_text_key((const char *) data + half, size - half, b, sizeof(b));
		int			same_key = half == size - half && memcmp(data, data + half, half) == 0;

		CHECK(la > 0 && lb > 0);
		CHECK(same_key == (la == lb && strcmp(a, b) == 0));
	}

	/* bigint keys */
	if (size >= sizeof(v))
	{
		memcpy(&v, data, sizeof(v));
		n = zc_keys_encode_bigint_key(v, a, sizeof(a));
		check_name(a, n);
		CHECK(zc_keys_decode_key(a, &kind, back, sizeof(back)) == n - 1 && kind == ZKL_KEY_BIGINT);
		CHECK(strtoll(back, NULL, 10) == v);
	}

	/* (int, int) keys round-trip */
	if (size >= 2 * sizeof(int32_t))
	{
		int32_t		k[2];

		memcpy(k, data, sizeof(k));
		n = zc_keys_encode_pair_key(k[0], k[1], a, sizeof(a));
		check_name(a, n);
		CHECK(zc_keys_decode_key(a, &kind, back, sizeof(back)) == n - 1 && kind == ZKL_KEY_PAIR);
		CHECK(strtol(back, &end, 10) == k[0] && *end == ',' && strtol(end + 1, NULL, 10) == k[1]);
	}

	/* the decoder accepts canonical names only */
	if (size < sizeof(a))
	{
		memcpy(a, data, size);
		a[size] = '\0';
		n = zc_keys_decode_key(a, &kind, back, sizeof(back));
		if (n > 0 && kind == ZKL_KEY_TEXT)
		{
			CHECK(zc_keys_encode_text_key(back, (size_t) n, again, sizeof(again)) > 0);
			CHECK(strcmp(again, a) == 0);
		}
		if (n > 0 && kind == ZKL_KEY_PAIR)
		{
			long		k1 = strtol(back, &end, 10);

			CHECK(*end == ',');
			CHECK(zc_keys_encode_pair_key((int32_t) k1, (int32_t) strtol(end + 1, NULL, 10),
									  again, sizeof(again)) > 0);
			CHECK(strcmp(again, a) == 0);
		}
	}
	return 0;
}
