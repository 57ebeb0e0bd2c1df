/*
 * sim_plan.c — a backend's script: what its next transaction takes, in which
 * order and mode, with savepoints, multi-key requests, semaphores and
 * session-level episodes.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

void
add_pause(Backend *b)
{
	add_act(b, false, 0, 0, 0);
	b->acts[b->nacts - 1].pause = true;
}

void
add_act(Backend *b, bool unlock, int key, char mode, int kind)
{
	Act		   *a = &b->acts[b->nacts++];

	memset(a, 0, sizeof(*a));
	a->unlock = unlock;
	a->key = key;
	a->mode = mode;
	a->kind = kind;
}

void
add_session_act(Backend *b, bool unlock, int key, char mode, int kind)
{
	add_act(b, unlock, key, mode, kind);
	b->acts[b->nacts - 1].session = true;
}

/*
 * A session-level lock episode: one transaction takes it, the next ones run
 * under it, the last one gives it up.  Requests while it is held never wait
 * for ever: they would not follow the one key order that keeps clusters out
 * of deadlock.
 */
bool
plan_session(Backend *b, int k)
{
	if (b->sess_key < 0)
	{
		/* more of them where own_id_unlock_plan aims at their release */
		if (!chance(S->aim.aim_own_id ? 25 : 8))
			return false;
		b->sess_key = k;
		b->sess_mode = chance(70) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED;
		b->sess_txns = 1 + rnd_int(3);
		b->sess_asked = 1 + (chance(30) ? 1 : 0);	/* the second one stacks */
		/*
		 * now and then (off the seed's stream) behind a lock of the key at
		 * transaction level: once that one's node is released at commit it
		 * stays while the session's lock is held (holds.c)
		 */
		if (aside_chance(30))
		{
			add_act(b, false, k, ZKL_MODE_EXCLUSIVE, 1);
			/*
			 * in the seeds that delete held nodes, half of them then read: a
			 * node of its own, granted leaning on that one (sim_aims.c's
			 * committing_moment); the other seeds draw as before
			 */
			if (S->fault_weight[F_DELETE_HOLDER] > 0 && aside_chance(50))
				b->sess_mode = ZKL_MODE_SHARED;
		}
		add_session_act(b, false, k, b->sess_mode, chance(50) ? 1 : 2);
		if (b->sess_asked > 1)
			add_session_act(b, false, k, b->sess_mode, 1);
		return true;
	}
	if (--b->sess_txns <= 0)
	{
		int			how = rnd_int(100);

		if (how < 15)
		{
			/* DISCARD ALL (a pooler's reset), alone in its transaction */
			add_session_act(b, true, b->sess_key, b->sess_mode, 0);
			b->acts[b->nacts - 1].discard = true;
			b->sess_key = -1;
			return true;
		}
		own_id_unlock_plan(b);
		if (chance(50))
			add_pause(b);
		if (how < 30)
		{
			add_session_act(b, true, b->sess_key, b->sess_mode, 0);
			b->acts[b->nacts - 1].all = true;
		}
		else
			while (b->sess_asked-- > 0)
				add_session_act(b, true, b->sess_key, b->sess_mode, 0);
		b->sess_key = -1;
		return true;
	}
	/* under it: maybe the same key at transaction level, either mode */
	if (chance(30))
		k = b->sess_key;
	add_act(b, false, k, chance(60) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED, chance(50) ? 1 : 2);
	if (chance(30))
		add_pause(b);
	return true;
}

bool
holds_session(const Backend *b)
{
	int			i;

	for (i = 0; i < b->book.n; i++)
		if (b->book.h[i].nsession > 0)
			return true;
	return false;
}

/*
 * A savepoint somewhere in the transaction's script, rolled back or
 * released later: what was taken inside a rolled-back one goes (xact.c's
 * subtransaction callback, book.c), stacked acquisitions one by one.
 */
void
add_savepoint(Backend *b)
{
	Act			acts[MAXACTS];
	Act			mark;
	int			at;
	int			end;
	int			n = 0;
	int			i;

	if (b->nacts + 2 > MAXACTS)
		return;
	at = rnd_int(b->nacts + 1);
	end = at + rnd_int(b->nacts - at + 1);
	add_act(b, false, 0, 0, 0);	/* a blank act, copied below */
	mark = b->acts[--b->nacts];
	for (i = 0; i <= b->nacts; i++)
	{
		if (i == at)
		{
			acts[n] = mark;
			acts[n++].sp = SP_BEGIN;
		}
		if (i == end)
		{
			acts[n] = mark;
			acts[n++].sp = chance(60) ? SP_ROLLBACK : SP_RELEASE;
		}
		if (i < b->nacts)
			acts[n++] = b->acts[i];
	}
	memcpy(b->acts, acts, n * sizeof(Act));
	b->nacts = n;
}

/* Savepoints in about one transaction of seven, nested now and then. */
void
plan_savepoints(Backend *b)
{
	if (chance(15))
	{
		add_savepoint(b);
		if (chance(30))
			add_savepoint(b);
	}
}

void
do_savepoint(Cluster *c, Backend *b, const Act *a)
{
	if (a->sp == SP_BEGIN && b->nsub < MAXSUB)
	{
		b->subs[b->nsub++] = b->subid;
		b->subid = ++b->next_subid;
		memset(b->xlev[b->nsub], 0, sizeof(b->xlev[0]));
	}
	else if (a->sp != SP_BEGIN && b->nsub > 0)
	{
		uint32_t	parent = b->subs[b->nsub - 1];
		int			k;
		int			m;

		if (a->sp == SP_ROLLBACK)
			zc_book_subxact_abort(&b->book, b->subid);
		else
		{
			zc_book_subxact_commit(&b->book, b->subid, parent);
			for (k = 0; k < NALL; k++)
				for (m = 0; m < 3; m++)
					b->xlev[b->nsub - 1][k][m] += b->xlev[b->nsub][k][m];
		}
		b->nsub--;
		b->subid = parent;
	}
	trace("c%d b%d %s savepoint", c->id, b->pid,
		  a->sp == SP_BEGIN ? "takes a" : a->sp == SP_ROLLBACK ? "rolls back to its" : "releases its");
	next_act(c, b);
}

/*
 * A multi-key request, alone in its transaction, naming two or three keys
 * in a random order and mostly waiting for ever: two of them that waited
 * for each other in a circle would never finish (check_end).
 */
void
plan_multi(Backend *b)
{
	Act		   *a;
	int			i;

	add_act(b, false, 0, chance(70) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED,
			chance(60) ? 0 : (chance(60) ? 1 : 2));
	a = &b->acts[b->nacts - 1];
	/* an array of one key is a multi-key request too (one multi of one create) */
	a->nkeys = chance(15) ? 1 : 2 + (chance(50) ? 1 : 0);
	for (i = 0; i < NKEYS; i++)
		a->keys[i] = i;
	for (i = NKEYS - 1; i > 0; i--)
	{
		int			j = rnd_int(i + 1);
		int			t = a->keys[i];

		a->keys[i] = a->keys[j];
		a->keys[j] = t;
	}
	if (chance(30))
		add_pause(b);
}

/*
 * A semaphore transaction: the semaphore alone (with other locks, holders
 * waiting for each other's locks across clusters would deadlock, as with
 * locks taken in different orders).  Now and then with other holders, which
 * must fail (22023) behind live requests of another number; it may stack,
 * and may be given up early.
 */
void
plan_semaphore(Backend *b)
{
	/* now and then another number: fewer, or more (the riskier: 22023 must stop it) */
	int			holders = chance(S->mismatch_pct) ?
		(chance(50) ? SEM_HOLDERS - 1 : SEM_HOLDERS + 2) : SEM_HOLDERS;

	add_act(b, false, SEM_KEY, ZKL_MODE_SEMAPHORE, chance(25) ? 0 : (chance(75) ? 1 : 2));
	b->acts[b->nacts - 1].holders = holders;
	if (chance(10))
	{
		add_act(b, false, SEM_KEY, ZKL_MODE_SEMAPHORE, 1);	/* stacks */
		b->acts[b->nacts - 1].holders = holders;
	}
	if (chance(30))
		add_pause(b);
	if (chance(15))
		add_act(b, true, SEM_KEY, ZKL_MODE_SEMAPHORE, 0);
}

/*
 * A reader of key k that will upgrade: another idle backend of its cluster
 * begins within a few milliseconds and does the same, so that two readers
 * of one cluster, often on one node (one rides the other's), both ask it
 * exclusive, with other clusters' readers and writers queued around them.
 */
static bool
pair_due(Backend *b, int k)
{
	Cluster    *c = b->cl;
	int			j;

	for (j = 0; j < c->nb; j++)
		if (&c->b[j] != b && c->b[j].st == B_IDLE && c->b[j].sess_key < 0)
		{
			c->pair_key = k;
			c->pair_until = zkm_now(S->m) + 50000;
			c->b[j].next_at = zkm_now(S->m) + rnd_int(20000);
			return true;
		}
	return false;
}

/* A transaction's script: which locks it takes and gives up, in order. */
void
plan_xact(Backend *b)
{
	int			k = rnd_int(NKEYS);
	int			pattern = rnd_int(100);
	int			i;

	if (S->circle_sem_pct > 50 && chance(20))
		pattern = 10 + rnd_int(6);	/* (those seeds draw circles of two keys more often too) */
	b->nacts = 0;
	b->next_act = 0;
	b->subid = b->next_subid = 1;	/* the top transaction's */
	b->nsub = 0;
	memset(b->xlev, 0, sizeof(b->xlev));
	if (zkm_now(S->m) < b->cl->burst_until && b->sess_key < 0)
	{
		/* one of a burst for a lingering node (plan_turn, send_pair_aim) */
		add_act(b, false, b->cl->burst_key, b->cl->burst_mode, chance(40) ? 1 : 0);
		b->hasty = b->acts[0].kind == 1 && chance(50);
		return;
	}
	if (zkm_now(S->m) < b->cl->linger_try_until && b->sess_key < 0)
	{
		/* another cluster's node lingers on the key (linger_try_due) */
		b->cl->linger_try_until = 0;
		add_act(b, false, b->cl->linger_try_key, ZKL_MODE_EXCLUSIVE, 2);
		if (chance(50))
		{
			b->acts[0].nkeys = 2;
			b->acts[0].keys[0] = b->cl->linger_try_key;
			b->acts[0].keys[1] = (b->cl->linger_try_key + 1 + rnd_int(NKEYS - 1)) % NKEYS;
		}
		return;
	}
	if (zkm_now(S->m) < b->cl->pair_until && b->sess_key < 0)
	{
		/* another reader of this cluster upgrades the key (pair_due): this one too */
		b->cl->pair_until = 0;
		add_act(b, false, b->cl->pair_key, ZKL_MODE_SHARED, 1);
		add_act(b, false, b->cl->pair_key, ZKL_MODE_EXCLUSIVE, 1);
		return;
	}
	if (plan_once(b))
		return;
	if (plan_session(b, k))
	{
		plan_savepoints(b);
		return;
	}
	if (chance(S->hot_pct))
	{
		/*
		 * One hot key: local hand-overs, local readers riding one node,
		 * upgrades of a ridden lock, and other clusters' waiters behind
		 * them all.
		 */
		bool		reads = chance(S->hot_read_pct);
		int			hk = reads && S->hot_home && chance(70) ? b->cl->id % NKEYS : 0;

		add_act(b, false, hk, reads ? ZKL_MODE_SHARED : ZKL_MODE_EXCLUSIVE,
				chance(50) ? 0 : (chance(70) ? 1 : 2));
		/*
		 * A writer that gives the key up and asks it shared at once: its
		 * node, kept for a local waiter's hand-over until the holder's
		 * listing is back, is what the shared request counts as its
		 * backend's own (core's same-backend rule) meanwhile.
		 */
		if (!reads && chance(50))
		{
			add_act(b, true, 0, ZKL_MODE_EXCLUSIVE, 0);
			add_act(b, false, 0, ZKL_MODE_SHARED, chance(50) ? 0 : 1);
		}
		if (reads && chance(S->hot_upgrade_pct))
		{
			/* (the first of a pair waits a little: the second asks first, riding its node) */
			if (S->pair_upgrades && pair_due(b, hk))
				add_pause(b);
			add_act(b, false, hk, ZKL_MODE_EXCLUSIVE, chance(50) ? 1 : 2);
		}
	}
	else if (pattern >= 100 - S->sem_pct)
	{
		plan_semaphore(b);
		return;
	}
	else if (pattern >= 100 - S->sem_pct - S->multi_pct)
	{
		plan_multi(b);
		return;
	}
	else
		plan_plain(b, k, pattern);
	plan_savepoints(b);
	/* under a session-level lock no wait is for ever: it breaks the one key order */
	for (i = 0; i < b->nacts; i++)
		if (holds_session(b) && !b->acts[i].unlock && b->acts[i].kind == 0)
			b->acts[i].kind = 1;
}

void
plan_plain(Backend *b, int k, int pattern)
{
	if (pattern < 10)
	{
		/* an upgrade: shared, then exclusive; two upgraders wait for each other, so never for ever */
		add_act(b, false, k, ZKL_MODE_SHARED, 1);
		/*
		 * Often a while between the read and its upgrade: other backends'
		 * readers and writers (an earlier version's client's too, in its
		 * seeds: drawn from its stream) queue between the two.  In the even
		 * seeds only, and drawn off the seed's stream (aside_chance): the
		 * odd ones run as before (bite 42 is caught there, seed 3315),
		 * and the even ones draw as before but for the pauses themselves.
		 */
		if (S->legacy.on ? legacy_upgrade_pause() : S->seed % 2 == 0 && aside_chance(40))
			add_pause(b);
		add_act(b, false, k, ZKL_MODE_EXCLUSIVE, chance(50) ? 1 : 2);
		/*
		 * The shared lock given up under the upgrade: a local writer that the
		 * upgrade went ahead of is first in line now, and must still wait
		 * for the upgrade's node (core.c's grant).
		 */
		if (chance(40))
		{
			add_act(b, true, k, ZKL_MODE_SHARED, 0);
			add_pause(b);
		}
	}
	else if (pattern < 16)
	{
		/*
		 * Two keys in either order, the second maybe shared: backends that
		 * meet in a circle are broken by a deadlock search (40P01), of
		 * their cluster's (deadlock.c) or across clusters (gwait.c), or by
		 * a wait's timeout.  A wait for ever leaves it to the searches.
		 */
		int			first = rnd_int(NKEYS);
		int			second = (first + 1 + rnd_int(NKEYS - 1)) % NKEYS;
		int			i;

		if (chance(S->circle_sem_pct))
		{
			/* a semaphore and a lock, in either order: circles through the semaphore */
			if (chance(50))
				second = SEM_KEY;
			else
			{
				second = first;
				first = SEM_KEY;
			}
		}
		add_act(b, false, first, ZKL_MODE_EXCLUSIVE, chance(50) ? 0 : 1);
		add_pause(b);
		add_act(b, false, second, chance(70) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED,
				chance(50) ? 0 : 1);
		for (i = b->nacts - 3; i < b->nacts; i++)
			if (!b->acts[i].pause && b->acts[i].key == SEM_KEY)
			{
				b->acts[i].mode = ZKL_MODE_SEMAPHORE;
				b->acts[i].holders = SEM_HOLDERS;
			}
	}
	else if (pattern < 22)
	{
		/* exclusive, then shared (granted at once), then the exclusive given up */
		add_act(b, false, k, ZKL_MODE_EXCLUSIVE, chance(50) ? 0 : 1);
		add_act(b, false, k, ZKL_MODE_SHARED, 0);
		if (chance(50))
			add_pause(b);
		add_act(b, true, k, ZKL_MODE_EXCLUSIVE, 0);
	}
	else
	{
		int			n = 1 + (chance(30) ? 1 : 0);
		int			i;

		/*
		 * Several keys in one order everywhere: no deadlock among these; but
		 * a multi-key request's place is one on all its keys, and one taken
		 * key by key can hold one of them and wait for another behind it, as
		 * with core's locks: such waits are bounded (lock_timeout).
		 */
		k = rnd_int(NKEYS - n + 1);
		for (i = 0; i < n; i++)
		{
			add_act(b, false, k + i, chance(70) ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED,
					(chance(25) && n == 1) ? 0 : (chance(75) ? 1 : 2));
			if (chance(10))
				add_act(b, false, k + i, b->acts[b->nacts - 1].mode, 1);	/* stacks */
		}
		if (chance(20))
		{
			/* given up before the commit, maybe after idling a while */
			if (chance(50))
				add_pause(b);
			add_act(b, true, k, b->acts[0].mode, 0);
		}
	}
}
