/*
 * recipe.c — decisions of the lock recipe, kept free of I/O.
 */
#include "recipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEQ_DIGITS 10
/* "x-" + uuid + "-" ... "-" + sequence */
#define MIN_NAME_LEN (2 + ZKL_UUID_LEN + 1 + 1 + SEQ_DIGITS)

/*
 * ZooKeeper appends the sequence with "%010d" of a signed 32-bit counter:
 * ten digits while it is positive; past 2^31 it turns negative, as a '-'
 * and nine or ten digits ("-000000001", "-2147483648").  The name itself
 * ends "-<pid>-" before the sequence, so a negative one follows "--".
 */
static bool
parse_sequence(const char *name, size_t len, int32_t *seq, size_t *start)
{
	const char *p = name + len;
	int			digits = 0;
	bool		negative;
	int64_t		v = 0;

	while (p > name && p[-1] >= '0' && p[-1] <= '9' && digits <= SEQ_DIGITS)
	{
		p--;
		digits++;
	}
	if (p - name < 2 || p[-1] != '-')
		return false;
	negative = p[-2] == '-';
	if (negative ? (digits != SEQ_DIGITS - 1 && digits != SEQ_DIGITS) : digits != SEQ_DIGITS)
		return false;
	*start = (size_t) (p - name) - (negative ? 1 : 0);
	for (; *p; p++)
		v = v * 10 + (*p - '0');
	if (negative)
		v = -v;
	if (v < INT32_MIN || v > INT32_MAX)
		return false;
	*seq = (int32_t) v;
	return true;
}

/*
 * A semaphore node's holders: the digits after the last '.' of the owner
 * part, which ends at `end` (the '-' before the sequence).
 */
static bool
parse_holders(const char *name, size_t end, int32_t *holders)
{
	size_t		p = end;
	int64_t		v = 0;

	while (p > 2 + ZKL_UUID_LEN && name[p - 1] >= '0' && name[p - 1] <= '9')
		p--;
	if (p == end || end - p > 7 || name[p - 1] != '.' || name[p] == '0')
		return false;
	for (; p < end; p++)
		v = v * 10 + (name[p] - '0');
	if (v < 1 || v > ZKL_MAX_HOLDERS)
		return false;
	*holders = (int32_t) v;
	return true;
}

/*
 * A lock node's mark after the pid (recipe.h): ".r", or ".u<sequence>" of
 * the shared node an upgrade upgrades.  The owner part ends at `end` (the
 * '-' before the sequence).  No mark, or one we do not know, is an earlier
 * version's node: it relists not.
 */
static void
parse_mark(const char *name, size_t end, ZkrChild *out)
{
	size_t		from = 2 + ZKL_UUID_LEN + 1;
	size_t		dot = end;
	size_t		p;
	int64_t		v = 0;

	out->relists = false;
	out->upgrade = false;
	out->anchor = 0;
	while (dot > from && name[dot - 1] != '.')
		dot--;
	if (dot == from)
		return;
	if (end - dot == 1 && name[dot] == 'r')
	{
		out->relists = true;
		return;
	}
	if (name[dot] != 'u' || end - dot < 2 || end - dot > 11)
		return;
	for (p = dot + 1; p < end; p++)
	{
		if (name[p] < '0' || name[p] > '9')
			return;
		v = v * 10 + (name[p] - '0');
	}
	if (v > UINT32_MAX)
		return;
	out->relists = true;
	out->upgrade = true;
	out->anchor = (int32_t) (uint32_t) v;
}

bool
zc_recipe_parse_child(const char *name, ZkrChild *out)
{
	size_t		len = strlen(name);
	size_t		start;

	if (len < MIN_NAME_LEN)
		return false;
	if (zc_kind_of(name[0]) == NULL ||
		name[1] != '-' || name[2 + ZKL_UUID_LEN] != '-')
		return false;
	if (!parse_sequence(name, len, &out->seq, &start))
		return false;
	out->holders = 0;
	out->relists = false;
	out->upgrade = false;
	out->anchor = 0;
	out->placed = false;
	if (zc_kind_counted(name[0]) && !parse_holders(name, start - 1, &out->holders))
		return false;
	if (!zc_kind_counted(name[0]))
		parse_mark(name, start - 1, out);
	out->name = name;
	out->mode = name[0];
	return true;
}

bool
zc_recipe_name_has_uuid(const char *name, const char *uuid)
{
	return strlen(name) >= MIN_NAME_LEN &&
		memcmp(name + 2, uuid, ZKL_UUID_LEN) == 0;
}

/*
 * The owner part of a lock node's name, "<sysid>-<pid>-" between its uuid
 * and its sequence: where it starts and how long it is.
 */
static bool
owner_part(const char *name, size_t *from, size_t *len)
{
	size_t		n = strlen(name);
	size_t		start;
	int32_t		seq;

	if (n < MIN_NAME_LEN || !parse_sequence(name, n, &seq, &start))
		return false;
	*from = 2 + ZKL_UUID_LEN + 1;
	if (start < *from)
		return false;
	/* "<sysid>-<pid>", without a mark or a semaphore's holders */
	for (*len = 0; *from + *len < start - 1 && name[*from + *len] != '.'; (*len)++)
		;
	return true;
}

bool
zc_recipe_same_owner(const char *a, const char *b)
{
	size_t		fa,
				la,
				fb,
				lb;

	return owner_part(a, &fa, &la) && owner_part(b, &fb, &lb) && la == lb &&
		memcmp(a + fa, b + fb, la) == 0;
}

bool
zc_recipe_uuid_of(const char *name, char out[ZKL_UUID_LEN + 1])
{
	if (strlen(name) < MIN_NAME_LEN)
		return false;
	memcpy(out, name + 2, ZKL_UUID_LEN);
	out[ZKL_UUID_LEN] = '\0';
	return true;
}

/* Was the node made by a cluster with this system identifier? */
bool
zc_recipe_name_has_sysid(const char *name, uint64_t sysid)
{
	char		want[24];
	int			n = snprintf(want, sizeof(want), "-%llu-", (unsigned long long) sysid);

	return strlen(name) >= MIN_NAME_LEN &&
		strncmp(name + 2 + ZKL_UUID_LEN, want, n) == 0;
}

int
zc_recipe_seq_cmp(int32_t a, int32_t b)
{
	int32_t		d = (int32_t) ((uint32_t) a - (uint32_t) b);

	return (d > 0) - (d < 0);
}

static int
child_cmp(const void *a, const void *b)
{
	return zc_recipe_seq_cmp(((const ZkrChild *) a)->seq, ((const ZkrChild *) b)->seq);
}

/* Where a node stands: its own sequence, or a placed upgrade's right behind its anchor's. */
static int32_t
place_of(const ZkrChild *c)
{
	return c->placed ? c->anchor : c->seq;
}

static int
queue_cmp(const void *a, const void *b)
{
	const ZkrChild *x = a;
	const ZkrChild *y = b;
	int			d = zc_recipe_seq_cmp(place_of(x), place_of(y));

	if (d != 0)
		return d;
	if (x->placed != y->placed)
		return x->placed ? 1 : -1;	/* the anchor first, then its upgrades */
	return zc_recipe_seq_cmp(x->seq, y->seq);
}

/* Index of the child with sequence seq in children sorted by sequence, or -1. */
static int
find_seq(const ZkrChild *children, int n, int32_t seq)
{
	int			lo = 0;
	int			hi = n - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			d = zc_recipe_seq_cmp(children[mid].seq, seq);

		if (d == 0)
			return mid;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Whether a node of this mode may be upgraded: a lock kind that others may hold beside it. */
static bool
sharing(char mode)
{
	return zc_kind_of(mode) != NULL && !zc_kind_counted(mode) && !zc_kind_conflict(mode, mode);
}

int
zc_recipe_collect(const char *const *names, int n, ZkrChild *out)
{
	int			i;
	int			kept = 0;
	bool		placed = false;

	for (i = 0; i < n; i++)
		if (zc_recipe_parse_child(names[i], &out[kept]))
			kept++;
	if (kept > 1)				/* (out may be NULL for an empty listing: qsort wants a base) */
		qsort(out, kept, sizeof(ZkrChild), child_cmp);
	for (i = 0; i < kept; i++)
	{
		int			a = out[i].upgrade ? find_seq(out, kept, out[i].anchor) : -1;

		/* an upgrade's anchor was made before it; a name that says otherwise stays put */
		out[i].placed = a >= 0 && a < i && sharing(out[a].mode) && zc_kind_conflict(out[i].mode, out[a].mode);
		placed |= out[i].placed;
	}
	if (placed)
		qsort(out, kept, sizeof(ZkrChild), queue_cmp);
	return kept;
}

/* Index in mine[] of the backend's node c, or -1. */
static int
mine_index(const ZkrChild *c, const char *const *mine, int nmine)
{
	int			i;

	for (i = 0; i < nmine; i++)
		if (zc_recipe_name_has_uuid(c->name, mine[i]))
			return i;
	return -1;
}

/*
 * The backend's granted nodes: the sequence of the first one made of each
 * kind, so that "does this node wait for us" is O(kinds).  Made before, not
 * sorted before: a node waits for what was made before it (a placed
 * upgrade included).
 */
typedef struct OwnHolds
{
	bool		any[ZKL_MAX_KINDS];
	int32_t		first[ZKL_MAX_KINDS];
} OwnHolds;

static OwnHolds
own_holds(const ZkrChild *children, int n, const ZkrBackend *b)
{
	OwnHolds	h;
	int			i;

	for (i = 0; i < ZKL_MAX_KINDS; i++)
		h.any[i] = false;
	for (i = 0; b->held != NULL && i < n; i++)
	{
		int			m = mine_index(&children[i], b->mine, b->nmine);
		const ZklKind *k = zc_kind_of(children[i].mode);

		if (m < 0 || !b->held[m] || k == NULL)
			continue;
		if (!h.any[k - zc_kinds] || zc_recipe_seq_cmp(children[i].seq, h.first[k - zc_kinds]) < 0)
		{
			h.any[k - zc_kinds] = true;
			h.first[k - zc_kinds] = children[i].seq;
		}
	}
	return h;
}

/*
 * Whether children[i] blocks a request of the backend in the given mode:
 * when their kinds conflict (a writer is blocked by any lock node, a reader
 * by writers; a semaphore's node, which only an outside client could put
 * under a lock key, by none).  Never by the backend's own nodes, nor by a
 * node queued behind one the backend holds that waits for the backend: one
 * that conflicts with it, or one of this cluster known to wait (b->waits).
 * A wait of another cluster is not known: its node may hold the key (a
 * waiter ahead of it may have gone), so only a conflict with our held node
 * proves it waits.
 */
static bool
blocks(const ZkrChild *children, int i, char mode, const ZkrBackend *b, const OwnHolds *h)
{
	const ZkrChild *c = &children[i];
	bool		waits;
	int			k;

	if (!zc_kind_conflict(mode, c->mode))
		return false;
	if (mine_index(c, b->mine, b->nmine) >= 0)
		return false;
	waits = mine_index(c, b->waits, b->nwaits) >= 0;
	for (k = 0; k < zc_nkinds; k++)
		if (h->any[k] && zc_recipe_seq_cmp(h->first[k], c->seq) < 0 &&
			zc_recipe_passes(zc_kinds[k].mode, c->mode, waits))
			return false;
	return true;
}

bool
zc_recipe_passes(char held_mode, char mode, bool waits)
{
	return waits || zc_kind_conflict(held_mode, mode);
}

bool
zc_recipe_blocks(const ZkrChild *children, int n, int i, char mode, const ZkrBackend *b)
{
	OwnHolds	h = own_holds(children, n, b);

	return blocks(children, i, mode, b, &h);
}

bool
zc_recipe_ahead(const ZkrChild *children, int own, int i)
{
	return children[own].placed ? zc_recipe_seq_cmp(children[i].seq, children[own].seq) < 0 : i < own;
}

bool
zc_recipe_behind(const ZkrChild *children, int own, int i)
{
	return i > own || zc_recipe_seq_cmp(children[i].seq, children[own].seq) > 0;
}

/*
 * What a placed upgrade children[me] may pass besides (upgrade_passes):
 * only while the backend holds the upgraded node a (then nothing granted
 * stands behind a that conflicts with it, and a stays while the upgrade
 * lives: holds.c).  a: its index, -1 when it passes nothing this way.
 */
static int
upgrade_anchor(const ZkrChild *children, int n, int me, const ZkrBackend *b)
{
	int			a = -1;
	int			m;
	int			j;

	for (j = 0; children[me].placed && j < n && a < 0; j++)
		if (children[j].seq == children[me].anchor)
			a = j;
	m = a >= 0 ? mine_index(&children[a], b->mine, b->nmine) : -1;
	return m >= 0 && b->held != NULL && b->held[m] ? a : -1;
}

/*
 * Whether the placed upgrade children[me] passes children[i], a node made
 * before it that conflicts: i relists, was made after the upgraded node a,
 * and a node j of another backend, made after a and before i, stands ahead
 * of i and conflicts with both a and i.  j waits for our shared node; i
 * waits for j, as its own listing showed j ahead of it (made before i), and
 * once j goes, i reads its queue again and finds the upgrade ahead.  A j
 * made after i (a later upgrade placed ahead of it) may have come after i
 * was granted, and one of i's own backend never held i up: neither
 * counts.  A placed upgrade i is not passed: it waits by its own rule, which
 * may pass j.  What i's backend holds, if anything, holds up the upgrade by
 * itself.
 */
static bool
upgrade_passes(const ZkrChild *children, int me, int a, int i, const ZkrBackend *b)
{
	int			j;

	if (a < 0 || !children[i].relists || children[i].placed ||
		zc_recipe_seq_cmp(children[i].seq, children[a].seq) <= 0)
		return false;
	for (j = 0; j < i; j++)
		if (j != me && zc_recipe_seq_cmp(children[a].seq, children[j].seq) < 0 &&
			zc_recipe_seq_cmp(children[j].seq, children[i].seq) < 0 &&
			zc_kind_conflict(children[a].mode, children[j].mode) &&
			zc_kind_conflict(children[i].mode, children[j].mode) &&
			mine_index(&children[j], b->mine, b->nmine) < 0 &&
			!zc_recipe_same_owner(children[j].name, children[i].name))
			return true;
	return false;
}

/* Whether children[i] is a local upgrade not granted, placed ahead of children[me] but made after it. */
static bool
pending_ahead(const ZkrChild *children, int me, int i, const ZkrBackend *b)
{
	return children[i].placed && !children[me].placed && b->pending != NULL &&
		zc_recipe_seq_cmp(children[i].seq, children[me].seq) > 0 && b->pending(b->arg, children[i].name);
}

/* Whether children[i] holds up children[me]: it stands ahead, blocks, and is not passed (a: upgrade_anchor). */
static bool
holds_up(const ZkrChild *children, int me, int a, int i, const ZkrBackend *b, const OwnHolds *h)
{
	return i != me && zc_recipe_ahead(children, me, i) && blocks(children, i, children[me].mode, b, h) &&
		!upgrade_passes(children, me, a, i, b) && !pending_ahead(children, me, i, b);
}

ZkrVerdict
zc_recipe_decide(const ZkrChild *children, int n, const char *own_uuid,
				 const ZkrBackend *b, int *own, int *watch)
{
	int			me = -1;
	OwnHolds	h;
	int			a;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (zc_recipe_name_has_uuid(children[i].name, own_uuid))
		{
			me = i;
			break;
		}
	}
	*own = me;
	*watch = -1;
	if (me < 0)
		return ZKR_ABSENT;

	h = own_holds(children, n, b);
	a = upgrade_anchor(children, n, me, b);
	if (children[me].placed)
	{
		/* an upgrade watches the one made last of what holds it up */
		for (i = 0; i < n; i++)
			if (holds_up(children, me, a, i, b, &h) &&
				(*watch < 0 || zc_recipe_seq_cmp(children[i].seq, children[*watch].seq) > 0))
				*watch = i;
		return *watch >= 0 ? ZKR_WAIT : ZKR_GRANT;
	}
	/* walk back from our node to the nearest node that conflicts */
	for (i = me - 1; i >= 0; i--)
	{
		if (!holds_up(children, me, a, i, b, &h))
			continue;
		*watch = i;
		return ZKR_WAIT;
	}
	return ZKR_GRANT;
}

bool
zc_recipe_sole_blocker(const ZkrChild *children, int own, int watch, const ZkrBackend *b)
{
	OwnHolds	h = own_holds(children, own, b);
	int			i;

	if (children[own].placed)
		return false;			/* what it passed may change: it reads again */
	for (i = watch - 1; i >= 0; i--)
		if (blocks(children, i, children[own].mode, b, &h) && !pending_ahead(children, own, i, b))
			return false;
	return true;
}

bool
zc_recipe_upgrade_may_come(const ZkrChild *children, int own, int watch, const ZkrBackend *b)
{
	int			i;

	if (children[own].placed)
		return true;
	for (i = 0; i < own; i++)
		if (i != watch && children[i].relists && sharing(children[i].mode) &&
			mine_index(&children[i], b->mine, b->nmine) < 0)
			return true;
	return false;
}

bool
zc_recipe_upgrade_may_fall(const ZkrChild *children, int own, int watch, const ZkrBackend *b)
{
	int			i;

	for (i = 0; i < watch; i++)
		if (children[i].placed && zc_recipe_seq_cmp(children[i].seq, children[watch].seq) > 0 &&
			zc_recipe_seq_cmp(children[i].seq, children[own].seq) < 0 &&
			mine_index(&children[i], b->mine, b->nmine) < 0)
			return true;
	return false;
}

int
zc_recipe_foreign_ahead(const ZkrChild *children, int n, int own, const ZkrBackend *b)
{
	int			k = 0;
	int			i;

	for (i = 0; i < n; i++)
		k += i != own && zc_recipe_ahead(children, own, i) && mine_index(&children[i], b->mine, b->nmine) < 0;
	return k;
}

int
zc_recipe_alone_ahead(const ZkrChild *children, int n, int own)
{
	int			k = 0;
	int			i;

	for (i = 0; i < n; i++)
		k += i != own && zc_recipe_ahead(children, own, i) && zc_kind_alone(children[i].mode);
	return k;
}

ZkrVerdict
zc_recipe_decide_semaphore(const ZkrChild *children, int n, const char *own_uuid,
					 int *own, int *other)
{
	int			first = -1;
	int			ahead = 0;
	int			i;

	*own = -1;
	*other = 0;
	for (i = 0; i < n; i++)
	{
		if (!zc_kind_counted(children[i].mode))
			continue;
		if (zc_recipe_name_has_uuid(children[i].name, own_uuid))
		{
			*own = i;
			break;
		}
		if (first < 0)
			first = i;
		ahead++;
	}
	if (*own < 0)
		return ZKR_ABSENT;

	/*
	 * Every node ahead must agree, not only the oldest: a node with other
	 * holders behind the oldest would be let in by its own count once the
	 * oldest goes, and all behind it by theirs.  A node granted stays ahead
	 * of all later ones, so the live granted nodes of a key share one value.
	 */
	for (i = first; first >= 0 && i < *own; i++)
	{
		if (zc_kind_counted(children[i].mode) &&
			children[i].holders != children[*own].holders)
		{
			*other = children[i].holders;
			return ZKR_MISMATCH;
		}
	}
	/* a backend has one node per semaphore (requests stack), so all ahead are others' */
	return ahead < children[*own].holders ? ZKR_GRANT : ZKR_WAIT;
}

void
zc_recipe_format_uuid(const unsigned char bytes[16], char out[ZKL_UUID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[16];
	char	   *p = out;
	int			i;

	memcpy(b, bytes, 16);
	b[6] = (unsigned char) ((b[6] & 0x0F) | 0x40);	/* version 4 */
	b[8] = (unsigned char) ((b[8] & 0x3F) | 0x80);	/* RFC 4122 variant */
	/* by hand: every request makes one, and snprintf's 16 conversions showed in a cycle's profile */
	for (i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[b[i] >> 4];
		*p++ = hex[b[i] & 0x0F];
	}
	*p = '\0';
}

int64_t
zc_recipe_fencing_token(int64_t czxid, int handed)
{
	if (czxid < 0 || czxid > (INT64_MAX >> ZKL_TOKEN_SHIFT) || handed < 0 ||
		handed >= ZKL_HANDOVER_MAX)
		return -1;
	return czxid * ZKL_HANDOVER_MAX + handed;
}

int
zc_recipe_node_prefix(char mode, const char *uuid, uint64_t sysid, int pid, int holders,
				const int32_t *anchor, char *out, size_t outlen)
{
	int			n = zc_kind_counted(mode) ?
		snprintf(out, outlen, "%c-%s-%llu-%d.%d-", mode, uuid,
				 (unsigned long long) sysid, pid, holders) :
		anchor != NULL ?
		snprintf(out, outlen, "%c-%s-%llu-%d.u%u-", mode, uuid,
				 (unsigned long long) sysid, pid, (unsigned) (uint32_t) *anchor) :
		snprintf(out, outlen, "%c-%s-%llu-%d.r-", mode, uuid,
				 (unsigned long long) sysid, pid);

	return (n < 0 || (size_t) n >= outlen) ? -1 : n;
}
