/*
 * key_text.c — an encoded key as people read it, in error messages and in
 * the zk_locks view.  Used by backends (lockfuncs.c, xact.c, views.c).
 */
#include "postgres.h"

#include "common/string.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"

#include "keys.h"
#include "key_text.h"

/*
 * Encoded key for display: the user's key as given (text) or its number.
 * Text keys are kept as UTF-8; in a database of another encoding their
 * non-ASCII characters are shown as \uXXXX escapes.  A conversion could
 * fail, and this runs in error reports too, so it never converts.
 */
char *
zb_display_key(const char *encoded)
{
	char		buf[ZKL_KEY_BUFLEN];
	char		kind;
	StringInfoData out;
	const unsigned char *p;

	/* a semaphore's key reads as the key it was given as, a zk_once claim's as its job's name */
	if (zc_keys_is_semaphore_key(encoded) || zc_keys_is_once_key(encoded))
		encoded++;
	if (zc_keys_decode_key(encoded, &kind, buf, sizeof(buf)) < 0)
		return pstrdup(encoded);
	if (kind != ZKL_KEY_TEXT || GetDatabaseEncoding() == PG_UTF8 ||
		pg_is_ascii(buf))
		return pstrdup(buf);
	initStringInfo(&out);
	for (p = (const unsigned char *) buf; *p; p += pg_utf_mblen(p))
	{
		if (*p < 0x80)
			appendStringInfoChar(&out, (char) *p);
		else
			appendStringInfo(&out, "\\u%04X", (unsigned int) utf8_to_unicode(p));
	}
	return out.data;
}
