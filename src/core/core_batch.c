/*
 * core_batch.c — which planned writes go out together in one multi
 * (core.h): a multi-key request's creates always do; under load, others
 * join them, up to a batch.
 */
#include "core_int.h"
#include "core_batch.h"

/*
 * Whether a planned op may go inside a multi.  A multi-key request's creates
 * always do, even after a rollback or with their key nodes to make first
 * (the host sends those ahead of the multi).
 */
static bool
batchable(const ZklCore *c, const ZklOp *op)
{
	bool		grouped = op->kind == OP_CREATE && c->t->slots[op->idx].req.group != 0;

	return (op->kind == OP_CREATE || op->kind == OP_DELETE) && !op->batched &&
		(grouped || (!op->parents && !op->solo));
}

/* Whether a create for key is among members[0..n). */
static bool
creates_key(const ZklCore *c, const int *members, int n, const char *key)
{
	int			j;

	for (j = 0; j < n; j++)
		if (c->ops[members[j]].kind == OP_CREATE &&
			strcmp(c->t->slots[c->ops[members[j]].idx].key, key) == 0)
			return true;
	return false;
}

/*
 * The planned creates of op i's group, wherever they stand in the plan, into
 * grp; how many, or 0 when the group cannot join this multi whole (a key
 * already in it, or no room).
 */
static int
group_ops(const ZklCore *c, int i, const int *members, int n, int *grp)
{
	uint64_t	group = c->t->slots[c->ops[i].idx].req.group;
	int			m = 0;
	int			j;

	for (j = 0; j < c->nops; j++)
	{
		const ZklOp *op = &c->ops[j];

		if (op->kind != OP_CREATE || op->batched || c->t->slots[op->idx].req.group != group)
			continue;
		if (n + m >= ZKL_BATCH_MAX || creates_key(c, members, n, c->t->slots[op->idx].key))
			return 0;
		grp[m++] = j;
	}
	return m;
}

/*
 * Whether the planned ops call for a multi: two that may share one, or any
 * multi-key request's create (those never go one by one: a create alone
 * takes its place in one key's queue only).
 */
bool
zc_core_batch_wanted(const ZklCore *c)
{
	int			eligible = 0;
	int			i;

	for (i = 0; i < c->nops; i++)
	{
		const ZklOp *op = &c->ops[i];

		if (!batchable(c, op))
			continue;
		if (++eligible >= 2 || (op->kind == OP_CREATE && c->t->slots[op->idx].req.group != 0))
			return true;
	}
	return false;
}

/*
 * Creates and deletes of several slots go out as one multi: one transaction
 * for the server instead of one each, and one round trip serves both the
 * locks being released and those being asked for.  A multi is all or
 * nothing, so when one op fails the others were not applied and are simply
 * sent again.  Two creates for one key never share a multi, which would
 * give their nodes the same czxid, so each holder's fencing token stays
 * strictly greater than the one before.
 */
int
zc_core_next_batch(ZklCore *c, int *members)
{
	int			n = 0;
	int			i;
	int			j;

	/* the usual light-load case, one op: no multi */
	if (!zc_core_batch_wanted(c))
		return 0;
	/*
	 * A multi-key request's creates never go one by one, nor split: each
	 * batch starts with one whole group, if any is left, so it always fits,
	 * and a batch that holds a group is a multi even when nothing else
	 * joins it (so no group is ever left to go out as single creates).
	 */
	for (i = 0; i < c->nops && n == 0; i++)
	{
		const ZklOp *op = &c->ops[i];

		if (batchable(c, op) && op->kind == OP_CREATE && c->t->slots[op->idx].req.group != 0)
			n = group_ops(c, i, members, 0, members);
	}
	for (j = 0; j < n; j++)
		c->ops[members[j]].batched = true;
	for (i = 0; i < c->nops && n < ZKL_BATCH_MAX; i++)
	{
		ZklOp	   *op = &c->ops[i];
		const ZklSlot *s = &c->t->slots[op->idx];
		int			grp[ZKL_BATCH_MAX];
		int			m;

		if (!batchable(c, op))
			continue;
		if (op->kind == OP_CREATE && s->req.group != 0)
		{
			/* another group: whole, or in a later multi */
			m = group_ops(c, i, members, n, grp);
			for (j = 0; j < m; j++)
			{
				c->ops[grp[j]].batched = true;
				members[n++] = grp[j];
			}
			continue;
		}
		if (op->kind == OP_CREATE && creates_key(c, members, n, s->key))
			continue;
		op->batched = true;
		members[n++] = i;
	}
	if (n == 1 && !(c->ops[members[0]].kind == OP_CREATE &&
					c->t->slots[c->ops[members[0]].idx].req.group != 0))
	{
		/* one plain op left for a multi: it goes out on its own */
		c->ops[members[0]].batched = false;
		return 0;
	}
	if (n == 0)
		return 0;
	c->t->counters.batched += n;
	return n;
}

