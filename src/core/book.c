/*
 * book.c — a backend's book of its granted locks (book.h).
 */
#include "book.h"
#include "invariant.h"

#include <string.h>

/* Slots given up at once, per call of host->abandon. */
#define ABANDON_BATCH	64

int
zc_book_find(const ZklBook *b, const char *key, char mode)
{
	int			i;

	for (i = 0; i < b->n; i++)
		if (b->h[i].mode == mode && strcmp(b->h[i].key, key) == 0)
			return i;
	return -1;
}

int
zc_book_find_held(const ZklBook *b, const char *key, char mode)
{
	int			i = zc_book_find(b, key, mode);

	return (i >= 0 && zc_holds_holds(&b->h[i]) > 0) ? i : -1;
}

/*
 * The book's counts agree: a lock's transaction-level acquisitions are its
 * subtransactions' (innermost last, each with some), nothing is counted
 * below zero, and it has room for what it counts.
 */
static void
book_check(const ZklBook *b)
{
#ifdef ZC_ASSERTS
	int			i;
	int			k;

	ZC_ASSERT(b->n >= 0 && b->n <= b->max && b->npending >= 0 && b->npending <= ZKL_MULTI_KEYS);
	for (i = 0; i < b->n; i++)
	{
		const ZkbExtra *x = &b->x[i];
		int			sum = 0;

		ZC_ASSERT(b->h[i].nxact >= 0 && b->h[i].nsession >= 0);
		ZC_ASSERT(x->ndepth >= 0 && x->ndepth <= x->maxdepth);
		for (k = 0; k < x->ndepth; k++)
		{
			ZC_ASSERT(x->depth[k].count > 0);
			ZC_ASSERT(k == 0 || x->depth[k - 1].subid < x->depth[k].subid);
			sum += x->depth[k].count;
		}
		ZC_ASSERT(sum == b->h[i].nxact);
	}
#endif
}

/* Tell the slot's readers (zk_locks) at which levels lock i is held. */
static void
publish_scope(const ZklBook *b, int i)
{
	b->host->scope(b->host->arg, b->h[i].slot,
				   (uint8_t) ((b->h[i].nxact > 0 ? ZKL_SCOPE_XACT : 0) |
							  (b->h[i].nsession > 0 ? ZKL_SCOPE_SESSION : 0)));
}

/*
 * Drop locks whose holds are all gone, giving their slots up, unless
 * another mode of the key keeps the node (holds.h).  A lost lock given up
 * this way still fails the commit: giving it up does not undo that another
 * cluster may have held it meanwhile.  Allocates nothing.
 */
static void
release_empty(ZklBook *b)
{
	int			slots[ABANDON_BATCH];
	int			nrel = 0;
	int			nkept = 0;
	int			i;

	/* decided for all before any moves: a kept node depends on the other locks */
	for (i = 0; i < b->n; i++)
		b->x[i].keep = zc_holds_holds(&b->h[i]) > 0 ||
			zc_holds_keeps_node(b->h, b->n, i, b->host->node_before, b->host->arg);
	for (i = 0; i < b->n; i++)
	{
		if (b->x[i].keep)
		{
			b->h[nkept] = b->h[i];
			b->x[nkept] = b->x[i];
			publish_scope(b, nkept++);
			continue;
		}
		zc_holds_released(&b->proof, b->h[i].key, b->host->lost(b->host->arg, b->h[i].slot));
		if (b->proof.lost_key == b->h[i].key)
		{
			/* a lost key is named at commit: copied, as the key's memory goes now */
			strncpy(b->lost_key, b->h[i].key, sizeof(b->lost_key) - 1);
			b->lost_key[sizeof(b->lost_key) - 1] = '\0';
			b->proof.lost_key = b->lost_key;
		}
		slots[nrel++] = b->h[i].slot;
		b->host->release(b->host->arg, b->x[i].key);
		b->host->release(b->host->arg, b->x[i].depth);
		/* the host gives slots up without calling back into the book: half-moved is fine */
		if (nrel == ABANDON_BATCH)
		{
			b->host->abandon(b->host->arg, slots, nrel);
			nrel = 0;
		}
	}
	b->n = nkept;
	if (nrel > 0)
		b->host->abandon(b->host->arg, slots, nrel);
}

void
zc_book_set_pending(ZklBook *b, const int *slots, int n)
{
	if (n > ZKL_MULTI_KEYS)
		n = ZKL_MULTI_KEYS;		/* callers ask no more: a request has that many keys at most */
	if (n > 0)
		memcpy(b->pending, slots, n * sizeof(int));
	b->npending = n;
}

static void
abandon_pending(ZklBook *b)
{
	int			n = b->npending;

	b->npending = 0;
	if (n > 0)
		b->host->abandon(b->host->arg, b->pending, n);
}

/* Room for one more subtransaction level of lock i, if its next acquisition needs one. */
static void
reserve_depth(ZklBook *b, int i, uint32_t subid)
{
	ZkbExtra   *x = &b->x[i];

	if ((x->ndepth == 0 || x->depth[x->ndepth - 1].subid != subid) && x->ndepth == x->maxdepth)
	{
		x->depth = b->host->grow(b->host->arg, x->depth, 2 * x->maxdepth * sizeof(ZkbDepth));
		x->maxdepth *= 2;
	}
}

/* One more acquisition of lock i (room reserved). */
static void
add_hold(ZklBook *b, int i, bool session_level, uint32_t subid)
{
	ZkbExtra   *x = &b->x[i];

	if (session_level)
		b->h[i].nsession++;
	else
	{
		b->h[i].nxact++;
		if (x->ndepth > 0 && x->depth[x->ndepth - 1].subid == subid)
			x->depth[x->ndepth - 1].count++;
		else
		{
			x->depth[x->ndepth].subid = subid;
			x->depth[x->ndepth].count = 1;
			x->ndepth++;
		}
		zc_holds_granted(&b->proof, x->session);	/* the transaction runs under it now */
	}
	publish_scope(b, i);
}

void
zc_book_add(ZklBook *b, int slot, const char *key, char mode, int64_t session,
		bool session_level, uint32_t subid)
{
	ZkbExtra	x;
	size_t		len = strlen(key) + 1;
	int			i;

	/* everything that can fail first: then the slot is ours, never orphaned */
	if (b->n == b->max)
	{
		int			newmax = b->max < 8 ? 8 : 2 * b->max;

		b->h = b->h ? b->host->grow(b->host->arg, b->h, newmax * sizeof(ZklHold))
			: b->host->alloc(b->host->arg, newmax * sizeof(ZklHold));
		b->x = b->x ? b->host->grow(b->host->arg, b->x, newmax * sizeof(ZkbExtra))
			: b->host->alloc(b->host->arg, newmax * sizeof(ZkbExtra));
		b->max = newmax;
	}
	x.key = b->host->alloc(b->host->arg, len);
	x.maxdepth = 4;
	x.depth = b->host->alloc(b->host->arg, x.maxdepth * sizeof(ZkbDepth));
	memcpy(x.key, key, len);
	x.session = session;
	x.ndepth = 0;
	x.keep = true;

	i = b->n++;
	b->x[i] = x;
	b->h[i].slot = slot;
	b->h[i].mode = mode;
	b->h[i].key = x.key;
	b->h[i].nxact = 0;
	b->h[i].nsession = 0;
	add_hold(b, i, session_level, subid);
	for (i = 0; i < b->npending; i++)
		if (b->pending[i] == slot)
			b->pending[i--] = b->pending[--b->npending];
	zc_holds_granted(&b->proof, session);
	book_check(b);
}

void
zc_book_stack(ZklBook *b, int i, bool session_level, uint32_t subid)
{
	if (!session_level)
		reserve_depth(b, i, subid);
	add_hold(b, i, session_level, subid);
	book_check(b);
}

bool
zc_book_unlock(ZklBook *b, const char *key, char mode, bool session_level)
{
	int			i = zc_book_find(b, key, mode);

	if (i < 0 || (session_level ? b->h[i].nsession : b->h[i].nxact) == 0)
		return false;
	if (session_level)
	{
		/* this transaction ran under it: its commit needs the same proof */
		zc_holds_granted(&b->proof, b->x[i].session);
		b->h[i].nsession--;
	}
	else
	{
		ZkbExtra   *x = &b->x[i];

		if (--x->depth[x->ndepth - 1].count == 0)
			x->ndepth--;
		b->h[i].nxact--;
	}
	if (zc_holds_holds(&b->h[i]) == 0)
		release_empty(b);
	else
		publish_scope(b, i);
	book_check(b);
	return true;
}

void
zc_book_release_level(ZklBook *b, bool session_level)
{
	int			i;

	abandon_pending(b);
	for (i = 0; i < b->n; i++)
	{
		b->h[i].nxact = 0;
		b->x[i].ndepth = 0;
		if (session_level)
			b->h[i].nsession = 0;
	}
	release_empty(b);
	book_check(b);
}

void
zc_book_unlock_all(ZklBook *b, bool session_level)
{
	int			i;

	if (!session_level)
	{
		abandon_pending(b);
		for (i = 0; i < b->n; i++)
		{
			/* a zk_once claim stays till the transaction ends: its period is recorded then */
			if (zc_keys_is_once_key(b->h[i].key))
				continue;
			b->h[i].nxact = 0;
			b->x[i].ndepth = 0;
		}
		release_empty(b);
		book_check(b);
		return;
	}
	for (i = 0; i < b->n; i++)
	{
		if (b->h[i].nsession > 0)
			zc_holds_granted(&b->proof, b->x[i].session);	/* as in zc_book_unlock */
		b->h[i].nsession = 0;
	}
	release_empty(b);
	book_check(b);
}

void
zc_book_xact_end(ZklBook *b)
{
	zc_book_release_level(b, false);
	memset(&b->proof, 0, sizeof(b->proof));
}

void
zc_book_subxact_abort(ZklBook *b, uint32_t subid)
{
	int			i;

	abandon_pending(b);
	for (i = 0; i < b->n; i++)
	{
		ZkbExtra   *x = &b->x[i];

		while (x->ndepth > 0 && x->depth[x->ndepth - 1].subid == subid)
			b->h[i].nxact -= x->depth[--x->ndepth].count;
	}
	release_empty(b);
	book_check(b);
}

void
zc_book_subxact_commit(ZklBook *b, uint32_t subid, uint32_t parent)
{
	int			i;

	for (i = 0; i < b->n; i++)
	{
		ZkbExtra   *x = &b->x[i];
		ZkbDepth   *top;

		if (x->ndepth == 0 || x->depth[x->ndepth - 1].subid != subid)
			continue;
		top = &x->depth[x->ndepth - 1];
		if (x->ndepth > 1 && x->depth[x->ndepth - 2].subid == parent)
		{
			x->depth[x->ndepth - 2].count += top->count;
			x->ndepth--;
		}
		else
			top->subid = parent;
	}
	book_check(b);
}

int
zc_book_unacknowledged_loss(const ZklBook *b)
{
	int			i;

	for (i = 0; i < b->n; i++)
		if (zc_holds_loss_unacknowledged(&b->h[i], b->host->lost(b->host->arg, b->h[i].slot)))
			return i;
	return -1;
}

bool
zc_book_acknowledge(ZklBook *b, const char *key, char mode, char *first)
{
	bool		acked = false;
	int			i;

	for (i = 0; i < b->n; i++)
	{
		if ((key == NULL || (b->h[i].mode == mode && strcmp(b->h[i].key, key) == 0)) &&
			zc_holds_acknowledge(&b->h[i], b->host->lost(b->host->arg, b->h[i].slot)))
		{
			zc_holds_granted(&b->proof, b->x[i].session);	/* this transaction ran under it */
			if (!acked)
			{
				strncpy(first, b->h[i].key, ZKL_KEY_BUFLEN - 1);
				first[ZKL_KEY_BUFLEN - 1] = '\0';
			}
			acked = true;
		}
	}
	if (key == NULL)
		zc_book_unlock_all(b, true);
	else if (acked)
		release_empty(b);
	return acked;
}

void
zc_book_discard_all(ZklBook *b, bool alone)
{
	zc_book_release_level(b, true);
	if (alone)
		memset(&b->proof, 0, sizeof(b->proof));
}

bool
zc_book_holds_xact_locks(const ZklBook *b)
{
	int			i;

	for (i = 0; i < b->n; i++)
		if (b->h[i].nxact > 0)
			return true;
	return false;
}

void
zc_book_at_commit(ZklBook *b)
{
	int			i;

	for (i = 0; i < b->n; i++)
		if (b->h[i].nsession > 0)
			zc_holds_granted(&b->proof, b->x[i].session);
}

void
zc_book_free(ZklBook *b)
{
	int			i;

	for (i = 0; i < b->n; i++)
	{
		b->host->release(b->host->arg, b->x[i].key);
		b->host->release(b->host->arg, b->x[i].depth);
	}
	if (b->h)
		b->host->release(b->host->arg, b->h);
	if (b->x)
		b->host->release(b->host->arg, b->x);
	b->h = NULL;
	b->x = NULL;
	b->n = b->max = 0;
}
