/*
 * lock_delay.c — lock-delay's decisions (lock_delay.h): the rules of the
 * sessions' list and the state presence.c keeps of it.  Pure: the host
 * does the I/O and owns the memory.
 */
#include "lock_delay.h"

#include <stdlib.h>
#include <string.h>

#include "zk_result.h"

#define DEAD_SUFFIX		".dead"
#define CLOSED_SUFFIX	".closed"

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
zc_delay_died(const ZklListing *before, const ZklListing *now)
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
zc_delay_paused(bool listed, bool stale, int64_t paused_until, int64_t now, int64_t poll_us,
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

void
zc_delay_init(ZldPresence *p, const ZldHost *host)
{
	memset(p, 0, sizeof(*p));
	p->host = host;
	p->last_cversion = -1;
}

/* No grant before `until` (extends, never shortens, the pause). */
static void
pause_until(ZldPresence *p, int64_t until, int64_t now)
{
	if (until <= p->paused_until)
		return;
	if (p->paused_until <= now)
		p->host->new_pause(p->host->arg);
	p->paused_until = until;
}

static void
pause_for_delay(ZldPresence *p, int64_t now)
{
	pause_until(p, now + p->host->delay_us(p->host->arg), now);
}

/*
 * Each loop turn while connected under `session`: set up its presence
 * (again after a new session, or a new root: blind until listed), retry what
 * failed, list whenever the watch fired or a tombstone is due for sweeping.
 */
int
zc_delay_tend(ZldPresence *p, int64_t session, bool new_root, int64_t now)
{
	int			send = 0;

	if (session != p->for_session || new_root)
	{
		p->gen++;
		p->for_session = session;
		p->listed = false;
		p->stale = false;
		p->list_in_flight = false;
		p->presence_due = true;
		p->next_try = 0;
		p->last_cversion = -1;
		pause_for_delay(p, now);
	}
	if (now < p->next_try)
		return 0;
	if (p->sweep_at != 0 && now >= p->sweep_at)
	{
		p->sweep_at = 0;
		p->list_due = true;		/* a tombstone to sweep: the listing does it */
	}
	if (p->presence_due)
	{
		send |= ZLD_SEND_PRESENCE;
		p->presence_due = false;
		p->list_due = true;
	}
	if (p->list_due && !p->list_in_flight)
	{
		send |= ZLD_SEND_LIST;
		p->list_due = false;
		p->list_in_flight = true;
	}
	return send;
}

/* The listing zc_delay_tend asked for could not be sent. */
void
zc_delay_list_not_sent(ZldPresence *p)
{
	p->list_in_flight = false;
	p->list_due = true;
}

static int
cmp_session(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

static bool
sorted_has(const int64_t *ids, int n, int64_t id)
{
	return bsearch(&id, ids, n, sizeof(int64_t), cmp_session) != NULL;
}

/* Room for n ids in each array. */
static void
reserve(ZldPresence *p, int n)
{
	const ZldHost *h = p->host;
	size_t		size;

	if (n <= p->cap)
		return;
	size = (size_t) n * sizeof(int64_t);
	p->live = h->grow(h->arg, p->live, size);
	p->dead = h->grow(h->arg, p->dead, size);
	p->closed = h->grow(h->arg, p->closed, size);
	p->closed_since = h->grow(h->arg, p->closed_since, size);
	p->cap = n;
}

/*
 * A listing's names into sorted ids: presence nodes (hex), tombstones
 * (hex.dead: a crash-restart's mark of its old session; hex.closed: a clean
 * stop's).  Anything else is left out, and counts as an unexplained change.
 */
static void
parse_listing(const char *const *names, int n, int64_t *live, int *nlive, int64_t *dead,
			  int *ndead, int64_t *closed, int *nclosed)
{
	int			i;

	*nlive = *ndead = *nclosed = 0;
	for (i = 0; i < n; i++)
	{
		char	   *end;
		int64_t		id = (int64_t) strtoull(names[i], &end, 16);

		if (end == names[i])
			continue;
		if (*end == '\0')
			live[(*nlive)++] = id;
		else if (strcmp(end, CLOSED_SUFFIX) == 0)
			dead[(*ndead)++] = closed[(*nclosed)++] = id;
		else if (strcmp(end, DEAD_SUFFIX) == 0)
			dead[(*ndead)++] = id;
	}
	qsort(live, *nlive, sizeof(int64_t), cmp_session);
	qsort(dead, *ndead, sizeof(int64_t), cmp_session);
	qsort(closed, *nclosed, sizeof(int64_t), cmp_session);
}

/*
 * A clean stop's tombstone whose session is gone, once listed here for
 * ZLD_CLOSED_KEEP_US: swept (every connected cluster has listed it by then;
 * one that lists only later sees the session gone without it, and delays).
 * since[i] becomes when closed[i] was first listed.
 */
static void
sweep_closed(ZldPresence *p, const int64_t *closed, int64_t *since, int n, const int64_t *live,
			 int nlive, int64_t now)
{
	int			i;

	p->sweep_at = 0;
	for (i = 0; i < n; i++)
	{
		int64_t    *was = p->nclosed > 0 ?
			bsearch(&closed[i], p->closed, p->nclosed, sizeof(int64_t), cmp_session) : NULL;
		int64_t		due;

		since[i] = was ? p->closed_since[was - p->closed] : now;
		due = since[i] + ZLD_CLOSED_KEEP_US;
		if (sorted_has(live, nlive, closed[i]) || now < due)
		{
			/* no listing may come for long: ask for one when it is due */
			if (p->sweep_at == 0 || due < p->sweep_at)
				p->sweep_at = due > now + ZLD_CLOSED_KEEP_US / 4 ? due : now + ZLD_CLOSED_KEEP_US / 4;
			continue;
		}
		p->host->sweep(p->host->arg, closed[i]);
	}
}

/*
 * A listing of the sessions (tagged gen).  One that was known and is gone,
 * without a tombstone, died (or was closed while its holders live): pause.
 * So does the first listing, which cannot tell what died just before it,
 * and one after which the list changed more often than the difference shows.
 */
ZldListed
zc_delay_listed(ZldPresence *p, uint64_t gen, int rc, const char *const *names, int n,
		   int32_t cversion, int64_t now)
{
	int64_t    *buf;
	int			nlive;
	int			ndead;
	int			nclosed;
	ZklListing	before;
	ZklListing	after;
	bool		died;
	bool		was_listed = p->listed;

	if (gen != p->gen)
		return ZLD_STALE_REPLY;
	p->list_in_flight = false;
	if (rc != ZOK)
	{
		p->list_due = true;		/* still paused meanwhile */
		p->presence_due |= rc == ZNONODE;	/* the sessions' node is missing */
		p->next_try = now + ZLD_RETRY_US;
		return ZLD_LIST_FAILED;
	}
	reserve(p, n > 0 ? n : 1);
	/* the new listing beside the old: live, dead, closed, since */
	buf = p->host->grow(p->host->arg, NULL, 4 * (size_t) (n > 0 ? n : 1) * sizeof(int64_t));
	parse_listing(names, n, buf, &nlive, buf + n, &ndead, buf + 2 * n, &nclosed);
	sweep_closed(p, buf + 2 * n, buf + 3 * n, nclosed, buf, nlive, now);
	before.live = p->live;
	before.nlive = p->nlive;
	before.dead = p->dead;
	before.ndead = p->ndead;
	before.cversion = p->last_cversion;
	after.live = buf;
	after.nlive = nlive;
	after.dead = buf + n;
	after.ndead = ndead;
	after.cversion = cversion;
	died = zc_delay_died(was_listed ? &before : NULL, &after);
	p->last_cversion = cversion;
	memcpy(p->live, buf, nlive * sizeof(int64_t));
	p->nlive = nlive;
	memcpy(p->dead, buf + n, ndead * sizeof(int64_t));
	p->ndead = ndead;
	memcpy(p->closed, buf + 2 * n, nclosed * sizeof(int64_t));
	memcpy(p->closed_since, buf + 3 * n, nclosed * sizeof(int64_t));
	p->nclosed = nclosed;
	p->host->release(p->host->arg, buf);
	if (died)
		pause_for_delay(p, now);
	/* our own presence node must be there before we grant anything */
	p->present = sorted_has(p->live, p->nlive, p->for_session);
	if (p->present)
	{
		p->listed = true;
		p->stale = p->list_due; /* the watch may have fired meanwhile */
	}
	else
	{
		/*
		 * Its create failed, or someone deleted it: made again, then listed
		 * again.  Meanwhile no grant: our session's death would go unseen.
		 */
		p->presence_due = true;
		p->stale = true;
		p->next_try = now + ZLD_RETRY_US;
	}
	return died && was_listed ? ZLD_DIED : ZLD_LISTED;
}

/* Our presence node's create (tagged gen) failed. */
void
zc_delay_presence_failed(ZldPresence *p, uint64_t gen, int64_t now)
{
	if (gen != p->gen)
		return;
	p->presence_due = true;
	p->next_try = now + ZLD_RETRY_US;
}

/* A child event on the sessions node (tagged gen): list again (the watch is one-shot). */
void
zc_delay_watch_fired(ZldPresence *p, uint64_t gen)
{
	if (gen != p->gen)
		return;
	p->list_due = true;
	p->stale = true;
}

/*
 * A new connection of the same session: events may have been lost with the
 * old one, so the list is out of date until read again through this one.
 */
void
zc_delay_reconnected(ZldPresence *p)
{
	p->stale = true;
	p->list_due = true;
}

/* A new handle: calls in flight on the old one will not be answered. */
void
zc_delay_reset(ZldPresence *p)
{
	p->gen++;
	p->for_session = 0;
	p->listed = false;
	p->list_in_flight = false;
}

/*
 * Whether grants must wait, and until when (while the listing is missing or
 * out of date, that is a guess: a time to look again).
 */
bool
zc_delay_grants_paused(const ZldPresence *p, int64_t now, int64_t *until)
{
	return zc_delay_paused(p->listed, p->stale, p->paused_until, now, ZLD_STALE_POLL_US, until);
}
