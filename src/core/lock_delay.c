/*
 * lock_delay.c — lock-delay's decisions (lock_delay.h): the rules of the
 * sessions' list and the state presence.c keeps of it.  Pure: the host
 * does the I/O and owns the memory.
 */
#include "lock_delay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk_result.h"

#define DEAD_SUFFIX		".dead"
#define CLOSED_SUFFIX	".closed"
#define NONCE_DIGITS	16

/* Which kind of tombstone a suffix names (presence: none). */
static bool
tombstone_suffix(const char *s, int *kind)
{
	if (strcmp(s, CLOSED_SUFFIX) == 0)
		*kind = ZKL_NAME_CLOSED;
	else if (strcmp(s, DEAD_SUFFIX) == 0)
		*kind = ZKL_NAME_DEAD;
	else
		return false;
	return true;
}

/* Exactly NONCE_DIGITS hex digits at s, into *nonce. */
static bool
parse_nonce(const char *s, uint64_t *nonce)
{
	int			i;

	*nonce = 0;
	for (i = 0; i < NONCE_DIGITS; i++)
	{
		char		ch = s[i];
		int			d;

		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else
			return false;
		*nonce = *nonce << 4 | (uint64_t) d;
	}
	return true;
}

/*
 * <id>, <id>.closed, <id>.dead (an earlier version's: nonce 0), or
 * <id>.<nonce>, <id>.<nonce>.closed, <id>.<nonce>.dead.  The earlier forms
 * are tried first: "dead" reads as hex too.
 */
bool
zc_delay_parse_name(const char *name, ZklSessionName *out)
{
	char	   *end;

	memset(out, 0, sizeof(*out));
	out->id = (int64_t) strtoull(name, &end, 16);
	if (end == name)
		return false;
	out->kind = ZKL_NAME_PRESENCE;
	if (*end == '\0' || tombstone_suffix(end, &out->kind))
		return true;
	if (*end != '.' || !parse_nonce(end + 1, &out->nonce))
		return false;
	end += 1 + NONCE_DIGITS;
	return *end == '\0' || tombstone_suffix(end, &out->kind);
}

/* The name parsed as n (nonce 0: an earlier version's form, to sweep its tombstones). */
void
zc_delay_format_name(char *out, size_t len, const ZklSessionName *n)
{
	const char *suffix = n->kind == ZKL_NAME_CLOSED ? CLOSED_SUFFIX :
		n->kind == ZKL_NAME_DEAD ? DEAD_SUFFIX : "";

	if (n->nonce == 0)
		snprintf(out, len, "%016" PRIx64 "%s", (uint64_t) n->id, suffix);
	else
		snprintf(out, len, "%016" PRIx64 ".%016" PRIx64 "%s", (uint64_t) n->id, n->nonce, suffix);
}

bool
zc_delay_tombstone_for(const ZklSessionName *t, const ZklSessionName *p)
{
	return t->kind != ZKL_NAME_PRESENCE && p->kind == ZKL_NAME_PRESENCE &&
		t->nonce != 0 && t->id == p->id && t->nonce == p->nonce;
}

/* Order: id, nonce, kind (so equal names are equal entries). */
static int
cmp_name(const void *a, const void *b)
{
	const ZklSessionName *x = a;
	const ZklSessionName *y = b;

	if (x->id != y->id)
		return (x->id > y->id) - (x->id < y->id);
	if (x->nonce != y->nonce)
		return (x->nonce > y->nonce) - (x->nonce < y->nonce);
	return (x->kind > y->kind) - (x->kind < y->kind);
}

static bool
has(const ZklSessionName *names, int n, const ZklSessionName *name)
{
	int			i;

	for (i = 0; i < n; i++)
		if (cmp_name(&names[i], name) == 0)
			return true;
	return false;
}

/* How many of a's entries are not in b. */
static int
missing_from(const ZklSessionName *a, int na, const ZklSessionName *b, int nb)
{
	int			n = 0;
	int			i;

	for (i = 0; i < na; i++)
		n += !has(b, nb, &a[i]);
	return n;
}

/* Whether one of the tombstones speaks for presence node p. */
static bool
excused(const ZklSessionName *dead, int ndead, const ZklSessionName *p)
{
	int			i;

	for (i = 0; i < ndead; i++)
		if (zc_delay_tombstone_for(&dead[i], p))
			return true;
	return false;
}

bool
zc_delay_died(const ZklListing *before, const ZklListing *now)
{
	int			i;

	if (before == NULL)
		return true;
	for (i = 0; i < before->nlive; i++)
		if (!has(now->live, now->nlive, &before->live[i]) &&
			!excused(now->dead, now->ndead, &before->live[i]))
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
	if (until <= p->pause.paused_until)
		return;
	if (p->pause.paused_until <= now)
		p->host->new_pause(p->host->arg);
	p->pause.paused_until = until;
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
zc_delay_tend(ZldPresence *p, int64_t session, uint64_t nonce, bool new_root, int64_t now)
{
	int			send = 0;

	if (session != p->for_session || nonce != p->for_nonce || new_root)
	{
		p->gen++;
		p->for_session = session;
		p->for_nonce = nonce;
		p->pause.listed = false;
		p->pause.stale = false;
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

static bool
sorted_has(const ZklSessionName *names, int n, const ZklSessionName *name)
{
	return n > 0 && bsearch(name, names, n, sizeof(*names), cmp_name) != NULL;
}

/* Room for n names in each array. */
static void
reserve(ZldPresence *p, int n)
{
	const ZldHost *h = p->host;

	if (n <= p->cap)
		return;
	p->live = h->grow(h->arg, p->live, (size_t) n * sizeof(ZklSessionName));
	p->dead = h->grow(h->arg, p->dead, (size_t) n * sizeof(ZklSessionName));
	p->dead_since = h->grow(h->arg, p->dead_since, (size_t) n * sizeof(int64_t));
	p->cap = n;
}

/*
 * A listing's names, sorted: presence nodes, and tombstones of either kind.
 * Anything else is left out, and counts as an unexplained change.
 */
static void
parse_listing(const char *const *names, int n, ZklSessionName *live, int *nlive,
			  ZklSessionName *dead, int *ndead)
{
	int			i;

	*nlive = *ndead = 0;
	for (i = 0; i < n; i++)
	{
		ZklSessionName name;

		if (!zc_delay_parse_name(names[i], &name))
			continue;
		if (name.kind == ZKL_NAME_PRESENCE)
			live[(*nlive)++] = name;
		else
			dead[(*ndead)++] = name;
	}
	qsort(live, *nlive, sizeof(*live), cmp_name);
	qsort(dead, *ndead, sizeof(*dead), cmp_name);
}

/*
 * A tombstone of either kind, once listed here for ZLD_KEEP_US while the
 * incarnation it was written for (same id and nonce) is not listed: swept.
 * Every connected cluster has listed it by then; one that lists only later
 * sees the session gone without it, and delays.  Without the sweep, a
 * crash-restart's .dead would live as long as the session that wrote it.
 * since[i] becomes when dead[i] was first listed.
 */
static void
sweep_tombstones(ZldPresence *p, const ZklSessionName *dead, int64_t *since, int n,
				 const ZklSessionName *live, int nlive, int64_t now)
{
	int			i;

	p->sweep_at = 0;
	for (i = 0; i < n; i++)
	{
		ZklSessionName *was = p->ndead > 0 ?
			bsearch(&dead[i], p->dead, p->ndead, sizeof(*dead), cmp_name) : NULL;
		ZklSessionName its = dead[i];
		int64_t		due;

		its.kind = ZKL_NAME_PRESENCE;
		since[i] = was ? p->dead_since[was - p->dead] : now;
		due = since[i] + ZLD_KEEP_US;
		if (sorted_has(live, nlive, &its) || now < due)
		{
			/* no listing may come for long: ask for one when it is due */
			if (p->sweep_at == 0 || due < p->sweep_at)
				p->sweep_at = due > now + ZLD_KEEP_US / 4 ? due : now + ZLD_KEEP_US / 4;
			continue;
		}
		p->host->sweep(p->host->arg, &dead[i]);
	}
}

/* The new listing (live, dead, since: nlive, ndead) becomes the last one. */
static void
keep_listing(ZldPresence *p, const ZklSessionName *live, int nlive, const ZklSessionName *dead,
			 const int64_t *since, int ndead, int32_t cversion)
{
	p->last_cversion = cversion;
	memcpy(p->live, live, nlive * sizeof(*live));
	p->nlive = nlive;
	memcpy(p->dead, dead, ndead * sizeof(*dead));
	memcpy(p->dead_since, since, ndead * sizeof(*since));
	p->ndead = ndead;
}

/*
 * A listing of the sessions (tagged gen).  One that was known and is gone,
 * without a tombstone written by that incarnation, died (or was closed while
 * its holders live): pause.  So does the first listing, which cannot tell
 * what died just before it, and one after which the list changed more often
 * than the difference shows.
 */
ZldListed
zc_delay_listed(ZldPresence *p, uint64_t gen, int rc, const char *const *names, int n,
		   int32_t cversion, int64_t now)
{
	ZklSessionName *buf;
	int64_t    *since;
	int			nlive;
	int			ndead;
	ZklListing	before;
	ZklListing	after;
	ZklSessionName self;
	bool		died;
	bool		was_listed = p->pause.listed;
	size_t		room = n > 0 ? n : 1;

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
	reserve(p, (int) room);
	/* the new listing beside the old: live and dead names, when each tombstone was first seen */
	buf = p->host->grow(p->host->arg, NULL, 2 * room * sizeof(ZklSessionName));
	since = p->host->grow(p->host->arg, NULL, room * sizeof(int64_t));
	parse_listing(names, n, buf, &nlive, buf + room, &ndead);
	sweep_tombstones(p, buf + room, since, ndead, buf, nlive, now);
	before.live = p->live;
	before.nlive = p->nlive;
	before.dead = p->dead;
	before.ndead = p->ndead;
	before.cversion = p->last_cversion;
	after.live = buf;
	after.nlive = nlive;
	after.dead = buf + room;
	after.ndead = ndead;
	after.cversion = cversion;
	died = zc_delay_died(was_listed ? &before : NULL, &after);
	keep_listing(p, buf, nlive, buf + room, since, ndead, cversion);
	p->host->release(p->host->arg, buf);
	p->host->release(p->host->arg, since);
	if (died)
		pause_for_delay(p, now);
	/* our own presence node must be there before we grant anything */
	self.id = p->for_session;
	self.nonce = p->for_nonce;
	self.kind = ZKL_NAME_PRESENCE;
	p->present = sorted_has(p->live, p->nlive, &self);
	if (p->present)
	{
		p->pause.listed = true;
		p->pause.stale = p->list_due; /* the watch may have fired meanwhile */
	}
	else
	{
		/*
		 * Its create failed, or someone deleted it: made again, then listed
		 * again.  Meanwhile no grant: our session's death would go unseen.
		 */
		p->presence_due = true;
		p->pause.stale = true;
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
	p->pause.stale = true;
}

/*
 * A new connection of the same session: events may have been lost with the
 * old one, so the list is out of date until read again through this one.
 */
void
zc_delay_reconnected(ZldPresence *p)
{
	p->pause.stale = true;
	p->list_due = true;
}

/* A new handle: calls in flight on the old one will not be answered. */
void
zc_delay_reset(ZldPresence *p)
{
	p->gen++;
	p->for_session = 0;
	p->pause.listed = false;
	p->list_in_flight = false;
}

/*
 * Whether grants must wait, and until when (while the listing is missing or
 * out of date, that is a guess: a time to look again).
 */
bool
zc_delay_grants_paused(const ZldPresence *p, int64_t now, int64_t *until)
{
	return zc_delay_pause_holds(&p->pause, now, until);
}

bool
zc_delay_pause_holds(const ZldPause *z, int64_t now, int64_t *until)
{
	return zc_delay_paused(z->listed, z->stale, z->paused_until, now, ZLD_STALE_POLL_US, until);
}

/*
 * Whether the last listing shows the presence node of this incarnation of
 * `session` (its id and nonce).  Absent, the incarnation has ended, or not
 * been seen; and its id may belong to another session by now.
 */
bool
zc_delay_incarnation_listed(const ZldPresence *p, int64_t session, uint64_t nonce)
{
	int			i;

	for (i = 0; i < p->nlive; i++)
		if (p->live[i].id == session && p->live[i].nonce == nonce && nonce != 0)
			return true;
	return false;
}

/* Give the arrays back to the host. */
void
zc_delay_free(ZldPresence *p)
{
	const ZldHost *h = p->host;

	if (p->live)
		h->release(h->arg, p->live);
	if (p->dead)
		h->release(h->arg, p->dead);
	if (p->dead_since)
		h->release(h->arg, p->dead_since);
	p->live = p->dead = NULL;
	p->dead_since = NULL;
	p->nlive = p->ndead = p->cap = 0;
}
