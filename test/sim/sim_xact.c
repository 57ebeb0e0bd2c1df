/*
 * sim_xact.c — backends: the application's own count of its locks, the book of
 * them (book.c's host, run as is), the checks of a commit against the
 * spans it held, and a transaction's end.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/* ---- backends ---- */

/*
 * The lock a request of key in mode stacks onto (lockfuncs.c asks xact.c's
 * zb_local_held): one held, or one given up whose node stays for the
 * key's other mode, which a repeat request takes back.
 */
int
find_hold(Backend *b, int key, char mode)
{
	return zc_book_find(&b->book, key_name(key), mode);
}

int
mode_index(char mode)
{
	return mode == ZKL_MODE_EXCLUSIVE ? 0 : mode == ZKL_MODE_SHARED ? 1 : 2;
}

/*
 * The book against the application's own count of its transaction-level
 * acquisitions (stacking, unlocks, savepoints rolled back or released).
 */
void
check_book(Cluster *c, Backend *b)
{
	static const char modes[3] = {ZKL_MODE_EXCLUSIVE, ZKL_MODE_SHARED, ZKL_MODE_SEMAPHORE};
	int			k;
	int			m;

	for (k = 0; k < NALL; k++)
		for (m = 0; m < 3; m++)
		{
			int			i = zc_book_find(&b->book, key_name(k), modes[m]);
			int			n = i >= 0 ? b->book.h[i].nxact : 0;
			int			want = 0;
			int			d;

			for (d = 0; d <= b->nsub; d++)
				want += b->xlev[d][k][m];
			if (n != want)
				fail("c%d b%d holds %s %c %d times at transaction level, its application counts %d",
					 c->id, b->pid, key_name(k), modes[m], n, want);
		}
	/* a lock held at no level is given up, unless its node stays for the key's other mode */
	for (k = 0; k < b->book.n; k++)
		if (zc_holds_holds(&b->book.h[k]) == 0 && !zc_holds_keeps_node(b->book.h, b->book.n, k, book_node_before, b))
			fail("c%d b%d keeps %s %c, held at no level, with no other mode of the key held",
				 c->id, b->pid, b->book.h[k].key, b->book.h[k].mode);
}

/* The application takes (+1) or gives up (-1) a transaction-level lock of key in mode. */
void
app_count_xact(Backend *b, int key, char mode, int delta)
{
	int			d = b->nsub;

	if (delta > 0)
		b->xlev[d][key][mode_index(mode)]++;
	else
	{
		while (d > 0 && b->xlev[d][key][mode_index(mode)] == 0)
			d--;
		if (b->xlev[d][key][mode_index(mode)] > 0)
			b->xlev[d][key][mode_index(mode)]--;
	}
}

/* A lost session-level lock not acknowledged yet, or -1. */
int
unacknowledged(Cluster *c, Backend *b)
{
	return zc_book_unacknowledged_loss(&b->book);
}

bool
tainted(const char *uuid)
{
	int			i;

	for (i = 0; i < S->ntainted && i < 64; i++)
		if (strcmp(S->tainted[i], uuid) == 0)
			return true;
	return false;
}

/* The request uuid of the node a slot holds through: a rider's is its host's (cohort.c). */
void
slot_uuid(const ZklSlot *s, char out[ZKL_UUID_LEN + 1])
{
	if (!s->zk.rides || !zc_recipe_uuid_of(s->node, out))
		snprintf(out, ZKL_UUID_LEN + 1, "%s", s->uuid);
}

/* Promise nothing more to the request of this uuid (the list holds 64). */
void
taint(const char *uuid)
{
	if (!tainted(uuid) && S->ntainted < 64)
		snprintf(S->tainted[S->ntainted++], ZKL_UUID_LEN + 1, "%s", uuid);
}

bool
slot_tainted(const ZklSlot *s)
{
	char		uuid[ZKL_UUID_LEN + 1];

	slot_uuid(s, uuid);
	return tainted(uuid);
}

/* The lock of slot s is given up now: its span ends. */
void
end_span(Backend *b, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < b->nspans; i++)
		if (b->spans[i].to == 0 && b->spans[i].key == key_index(s->key) &&
			b->spans[i].mode == s->req.mode)
		{
			b->spans[i].to = zkm_now(S->m);
			/* given up beside a node of the key deleted from outside, still held: promised nothing */
			if (beside_gone_held(&S->c[b->spans[i].cluster], b->spans[i].pid, b->spans[i].key))
				taint(b->spans[i].uuid);
		}
}

/*
 * A semaphore span commits: at no moment of it were more committed
 * transactions inside than its holders (the moments to look at are its start
 * and the starts of the others inside it).
 */
void
check_semaphore_commit(const Span *sp)
{
	const Span *in[HISTORY];
	int			nin = 0;
	int			n = S->nhistory[sp->key] < HISTORY ? S->nhistory[sp->key] : HISTORY;
	int			i;
	int			j;

	for (i = 0; i < n; i++)
	{
		const Span *o = &S->history[sp->key][i];

		if (!tainted(o->uuid) && !o->excused && o->from < sp->to && sp->from < o->to)
			in[nin++] = o;
	}
	for (i = -1; i < nin; i++)
	{
		int64_t		at = i < 0 ? sp->from : in[i]->from;
		int			inside = 1;

		if (at < sp->from)
			continue;
		for (j = 0; j < nin; j++)
			inside += in[j]->from <= at && at < in[j]->to;
		if (inside > sp->holders)
			fail("committed transactions overlap: %d inside %s at %.3f, holders %d (c%d b%d)",
				 inside, key_name(sp->key), at / 1e6, sp->holders, sp->cluster, sp->pid);
	}
}

/*
 * A committed lock's span: it may not have overlapped a conflicting lock of
 * another committed transaction (both orders are checked, at the later
 * commit); then it joins the key's history.
 */
void
check_span(Span *sp)
{
	int			k = sp->key;
	int			n = S->nhistory[k] < HISTORY ? S->nhistory[k] : HISTORY;
	int			j;

	if (sp->to == 0)
		sp->to = zkm_now(S->m);
	if (sp->mode == ZKL_MODE_SEMAPHORE && !tainted(sp->uuid) && !sp->excused)
		check_semaphore_commit(sp);
	for (j = 0; j < n && !tainted(sp->uuid) && !sp->excused; j++)
	{
		const Span *o = &S->history[k][j];

		if (tainted(o->uuid) || o->excused || (o->cluster == sp->cluster && o->pid == sp->pid))
			continue;			/* a backend's own locks never conflict (session-level spans repeat) */
		if (conflict(o->mode, sp->mode) && o->from < sp->to && sp->from < o->to)
			fail("committed transactions overlap: %s held %s %c %.3f-%.3f, %s held it %c %.3f-%.3f",
				 span_who(sp), key_name(k), sp->mode, sp->from / 1e6, sp->to / 1e6,
				 span_who(o), o->mode, o->from / 1e6, o->to / 1e6);
	}
}

/* "c1 b104", or an earlier version's client (sim_legacy.c) */
const char *
span_who(const Span *sp)
{
	static char buf[2][40];
	static int	n;

	n = (n + 1) % 2;
	if (sp->cluster == LEGACY_CL)
		snprintf(buf[n], sizeof(buf[n]), "an earlier version's client %d", sp->pid);
	else
		snprintf(buf[n], sizeof(buf[n]), "c%d b%d", sp->cluster, sp->pid);
	return buf[n];
}

/* A checked span joins its key's history (the last HISTORY of them). */
void
add_history(const Span *sp)
{
	S->history[sp->key][S->nhistory[sp->key]++ % HISTORY] = *sp;
}

/* A transaction commits: every lock it held at any point, released early or not. */
void
check_commit(Backend *b)
{
	int			i;

	for (i = 0; i < b->nspans; i++)
		b->spans[i].excused = (b->gone_in_commit >> b->spans[i].key) & 1;
	for (i = 0; i < b->nspans; i++)
		check_span(&b->spans[i]);
	for (i = 0; i < b->nspans; i++)
		add_history(&b->spans[i]);
}

/* ---- the book's host (book.h): a backend's memory and its cluster's slot table ---- */

void *
book_alloc(void *arg, size_t size)
{
	void	   *p = malloc(size);

	if (p == NULL)
		exit(2);
	return p;
}

void *
book_grow(void *arg, void *p, size_t size)
{
	p = realloc(p, size);
	if (p == NULL)
		exit(2);
	return p;
}

void
book_release(void *arg, void *p)
{
	free(p);
}

bool
book_lost(void *arg, int slot)
{
	const Backend *b = arg;

	return b->cl->t->slots[slot].ans.result == ZKL_RESULT_LOST;
}

void
book_scope(void *arg, int slot, uint8_t scope)
{
	const Backend *b = arg;

	b->cl->t->slots[slot].own.scope = scope;
}

bool
book_node_before(void *arg, int a, int b)
{
	const Backend *bk = arg;

	return zc_table_node_before(bk->cl->t, a, b);
}

/* A lock given up: its span ends (a transaction-level one's), its slot is abandoned. */
void
book_abandon(void *arg, const int *slots, int n)
{
	Backend    *b = arg;
	int			i;

	for (i = 0; i < n; i++)
	{
		end_span(b, &b->cl->t->slots[slots[i]]);
		(void) zc_release_here(b->cl->t, &b->cl->t->slots[slots[i]], c_mono(b->cl), c_wall(b->cl), NULL);	/* shmem.c's */
		note_grants(b->cl);		/* a hand-over it made, judged as it is made */
	}
}

void
book_init(Cluster *c, Backend *b)
{
	const ZkbHost host = {b, book_alloc, book_grow, book_release, book_lost, book_scope, book_abandon,
	book_node_before};

	b->cl = c;
	b->host = host;
	b->book.host = &b->host;
}

/* Give up every slot of the multi-key request waited for (lockfuncs.c's abandon_all). */
void
abandon_group(Cluster *c, Backend *b)
{
	int			i;

	zc_book_set_pending(&b->book, NULL, 0);	/* lockfuncs.c's abandon_all */
	for (i = 0; i < b->ngroup; i++)
		(void) zc_release_here(c->t, &c->t->slots[b->group[i]], c_mono(c), c_wall(c), NULL);
	note_grants(c);				/* a hand-over it made, judged as it is made */
	b->ngroup = 0;
}

/* The backend exits: every lock of it goes, session-level ones too (xact.c's exit_callback). */
void
release_all(Cluster *c, Backend *b)
{
	zc_book_release_level(&b->book, true);
	memset(&b->book.proof, 0, sizeof(b->book.proof));	/* a new backend starts afresh */
	b->lost_seen = false;
	b->sess_key = -1;
	b->napp = 0;
	b->told_lost = false;
}

void
end_xact(Cluster *c, Backend *b, const char *how)
{
	int			i;

	once_end(c, b);
	if (b->st == B_WAIT)
		b->gave_up_at = zkm_now(S->m);
	/* a request still waited for is the book's pending one: the abort gives it up */
	zc_book_xact_end(&b->book);		/* session-level ones stay */
	b->ngroup = 0;
	for (i = 0; i < b->book.n; i++)
		if (b->book.h[i].nsession > 0 && c->t->slots[b->book.h[i].slot].own.abandoned)
			fail("c%d b%d: the end of a transaction released a session-level lock on %s",
				 c->id, b->pid, b->book.h[i].key);
	if (b->txns_left <= 0 || S->quiet)
		release_all(c, b);		/* the backend exits */
	b->nspans = 0;
	b->lost_seen = false;
	trace("c%d b%d %s", c->id, b->pid, how);
	b->waiting = -1;
	b->deadline = 0;
	b->st = b->txns_left > 0 && !S->quiet ? B_IDLE : B_DONE;
	/* hot seeds: back at once, as a client in a loop */
	b->next_at = zkm_now(S->m) + rnd_int(S->hot_pct ? 20000 : 300000);
	worker_turn(c);
}
