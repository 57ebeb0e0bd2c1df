/*
 * lock_delay.c — lock-delay's decisions (lock_delay.h).
 */
#include "lock_delay.h"

#include <stddef.h>

static bool
has(const int64_t *ids, int n, int64_t id)
{
	int			i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* How many of a's entries are not in b. */
static int
missing_from(const int64_t *a, int na, const int64_t *b, int nb)
{
	int			n = 0;
	int			i;

	for (i = 0; i < na; i++)
		n += !has(b, nb, a[i]);
	return n;
}

bool
zld_died(const ZklListing *before, const ZklListing *now)
{
	int			i;

	if (before == NULL)
		return true;
	for (i = 0; i < before->nlive; i++)
		if (!has(now->live, now->nlive, before->live[i]) &&
			!has(now->dead, now->ndead, before->live[i]))
			return true;
	/* the sessions node's cversion counts its children's changes */
	return (int64_t) now->cversion - before->cversion >
		missing_from(before->live, before->nlive, now->live, now->nlive) +
		missing_from(now->live, now->nlive, before->live, before->nlive) +
		missing_from(before->dead, before->ndead, now->dead, now->ndead) +
		missing_from(now->dead, now->ndead, before->dead, before->ndead);
}

bool
zld_paused(bool listed, bool stale, int64_t paused_until, int64_t now, int64_t poll_us,
		   int64_t *until)
{
	if (!listed || stale)
	{
		*until = paused_until > now + poll_us ? paused_until : now + poll_us;
		return true;
	}
	*until = paused_until;
	return now < paused_until;
}
