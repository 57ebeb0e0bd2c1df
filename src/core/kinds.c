/*
 * kinds.c — the lock kinds' table, and the questions code asks it.
 */
#include "kinds.h"

/*
 * Exclusive and shared are core's two advisory lock modes: readers share,
 * a writer excludes both.  A semaphore's requests conflict only in number:
 * they are counted against the capacity each request names.
 */
const ZklKind zc_kinds[] = {
	{ZKL_MODE_EXCLUSIVE, "exclusive", "exclusive", "an exclusive",
	ZKK_SET(ZKL_MODE_EXCLUSIVE) | ZKK_SET(ZKL_MODE_SHARED), ZKL_GRANT_ORDER, ZKL_LOCAL_HANDOVER},
	{ZKL_MODE_SHARED, "shared", "shared", "a shared",
	ZKK_SET(ZKL_MODE_EXCLUSIVE), ZKL_GRANT_ORDER, ZKL_LOCAL_RIDE},
	{ZKL_MODE_SEMAPHORE, "counting", "semaphore", "a semaphore",
	ZKK_SET(ZKL_MODE_SEMAPHORE), ZKL_GRANT_COUNT, ZKL_LOCAL_NONE},
};
const int	zc_nkinds = (int) (sizeof(zc_kinds) / sizeof(zc_kinds[0]));

/* recipe.c keeps one entry per kind in an array of ZKL_MAX_KINDS: a row too many fails to compile */
typedef char zc_kind_rows_fit[(sizeof(zc_kinds) / sizeof(zc_kinds[0]) <= ZKL_MAX_KINDS) ? 1 : -1];

bool
zc_kind_alone(char mode)
{
	const ZklKind *k = zc_kind_of(mode);
	uint32_t	ordered = 0;
	int			i;

	for (i = 0; i < zc_nkinds; i++)
		if (zc_kinds[i].grant == ZKL_GRANT_ORDER)
			ordered |= ZKK_SET(zc_kinds[i].mode);
	return k != NULL && k->grant == ZKL_GRANT_ORDER && (k->conflicts & ordered) == ordered;
}

const char *
zc_kind_name(char mode)
{
	const ZklKind *k = zc_kind_of(mode);

	return k != NULL ? k->name : NULL;
}

const char *
zc_kind_noun(char mode)
{
	const ZklKind *k = zc_kind_of(mode);

	return k != NULL ? k->noun : NULL;
}

const char *
zc_kind_a_name(char mode)
{
	const ZklKind *k = zc_kind_of(mode);

	return k != NULL ? k->a_name : NULL;
}
