/*
 * keys.c — injective, reversible key encoding for ZooKeeper node names.
 *
 * A node name may not contain '/', and ZooKeeper refuses NUL, control
 * characters and several Unicode ranges.  Rather than decode UTF-8 to find
 * the refused code points, every byte outside printable ASCII is written as
 * %XX, as is '%' itself; that is injective (percent-decoding inverts it) and
 * never yields a name ZooKeeper refuses.  The leading kind letter keeps text,
 * bigint and (int, int) keys apart and makes "." and ".." impossible.
 */
#include "keys.h"

#include <stdio.h>
#include <string.h>

static const char hexdigits[] = "0123456789ABCDEF";

static int
needs_escape(unsigned char c)
{
	return c < 0x20 || c > 0x7E || c == '/' || c == '%';
}

int
zc_keys_encode_text_key(const char *raw, size_t len, char *out, size_t outlen)
{
	size_t		i;
	size_t		o = 0;

	if (len == 0 || len > ZKL_MAX_KEY_BYTES || outlen < 2)
		return -1;
	out[o++] = ZKL_KEY_TEXT;
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) raw[i];

		if (needs_escape(c))
		{
			if (o + 3 >= outlen)
				return -1;
			out[o++] = '%';
			out[o++] = hexdigits[c >> 4];
			out[o++] = hexdigits[c & 0x0F];
		}
		else
		{
			if (o + 1 >= outlen)
				return -1;
			out[o++] = (char) c;
		}
	}
	out[o] = '\0';
	return (int) o;
}

int
zc_keys_encode_bigint_key(int64_t key, char *out, size_t outlen)
{
	int			n = snprintf(out, outlen, "%c%lld", ZKL_KEY_BIGINT, (long long) key);

	return (n < 0 || (size_t) n >= outlen) ? -1 : n;
}

int
zc_keys_encode_pair_key(int32_t key1, int32_t key2, char *out, size_t outlen)
{
	int			n = snprintf(out, outlen, "%c%d.%d", ZKL_KEY_PAIR, (int) key1, (int) key2);

	return (n < 0 || (size_t) n >= outlen) ? -1 : n;
}

/*
 * One canonical int32 in decimal at *p (no '+', no leading zero, no "-0"):
 * advances *p past it, false if there is none.
 */
static int
take_int32(const char **p)
{
	const char *s = *p;
	int			neg = (*s == '-');
	long long	v = 0;
	int			digits = 0;

	s += neg;
	if (*s == '0' && (neg || (s[1] >= '0' && s[1] <= '9')))
		return 0;
	while (*s >= '0' && *s <= '9' && digits <= 10)
	{
		v = v * 10 + (*s++ - '0');
		digits++;
	}
	if (digits == 0 || digits > 10 || (neg ? -v < INT32_MIN : v > INT32_MAX))
		return 0;
	*p = s;
	return 1;
}

static int
decode_pair(const char *name, char *out, size_t outlen)
{
	const char *p = name + 1;
	const char *first = p;
	size_t		len;

	if (!take_int32(&p) || *p != '.')
		return -1;
	len = (size_t) (p - first);
	p++;
	if (!take_int32(&p) || *p != '\0')
		return -1;
	if (strlen(name + 1) + 1 > outlen)
		return -1;
	memcpy(out, first, len);
	out[len] = ',';
	strcpy(out + len + 1, first + len + 1);
	return (int) strlen(out);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The key behind a letter that names its key space (a semaphore's, a zk_once claim's). */
static int
prefix_key(char *encoded, char letter)
{
	size_t		len = strlen(encoded);

	memmove(encoded + 1, encoded, len + 1);
	encoded[0] = letter;
	return (int) len + 1;
}

int
zc_keys_semaphore_key(char *encoded)
{
	return prefix_key(encoded, ZKL_KEY_SEMAPHORE);
}

int
zc_keys_is_semaphore_key(const char *encoded)
{
	return encoded[0] == ZKL_KEY_SEMAPHORE;
}

int
zc_keys_once_key(char *encoded)
{
	return prefix_key(encoded, ZKL_KEY_ONCE);
}

int
zc_keys_is_once_key(const char *encoded)
{
	return encoded[0] == ZKL_KEY_ONCE && encoded[1] == ZKL_KEY_TEXT;
}

int
zc_keys_decode_key(const char *name, char *kind, char *out, size_t outlen)
{
	const char *p;
	size_t		o = 0;


	if (name[0] == ZKL_KEY_BIGINT)
	{
		size_t		len = strlen(name + 1);

		if (len == 0 || len + 1 > outlen)
			return -1;
		memcpy(out, name + 1, len + 1);
		*kind = ZKL_KEY_BIGINT;
		return (int) len;
	}
	if (name[0] == ZKL_KEY_PAIR)
	{
		*kind = ZKL_KEY_PAIR;
		return decode_pair(name, out, outlen);
	}
	if (name[0] != ZKL_KEY_TEXT || name[1] == '\0')
		return -1;
	for (p = name + 1; *p; p++)
	{
		unsigned char c = (unsigned char) *p;

		if (c == '%')
		{
			int			hi = hexval(p[1]);
			int			lo = hi < 0 ? -1 : hexval(p[2]);

			if (lo < 0)
				return -1;
			c = (unsigned char) (hi << 4 | lo);
			/* only what the encoder escapes may appear escaped */
			if (!needs_escape(c))
				return -1;
			p += 2;
		}
		else if (needs_escape(c))
			return -1;
		/* longer than any key we encode: not one of ours */
		if (o + 1 >= outlen || o >= ZKL_MAX_KEY_BYTES)
			return -1;
		out[o++] = (char) c;
	}
	out[o] = '\0';
	*kind = ZKL_KEY_TEXT;
	return (int) o;
}
