/*
 * sim_request.c — a backend's lock requests as lockfuncs.c and shmem.c make
 * them: keys held in the mode stack, the others claimed under the table
 * lock, where a claim may take a lingering node, ride, or join a local
 * holder at once (take_here.c, as shipped), and the worker woken or not.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/* A multi-key request: one slot per key, claimed at once, sharing a group (shmem.c). */
void
request_group(Cluster *c, Backend *b, const Act *a)
{
	ZklRequest	r;
	char		uuid[ZKL_UUID_LEN + 1];
	int			fresh[NKEYS];
	int			nfresh = 0;
	int			free_slots = 0;
	int			i;

	/*
	 * As lockfuncs.c's acquire_keys: keys this backend holds in the mode
	 * stack (once the rest is granted), a lost one fails the request; the
	 * others are claimed, as a group only when there are two or more.
	 */
	b->npstack = 0;
	if (refused_for_loss(c, b))
		return;
	for (i = 0; i < a->nkeys; i++)
	{
		int			held = find_hold(b, a->keys[i], a->mode);

		if (held >= 0 && book_lost(b, b->book.h[held].slot))
		{
			b->txns_left--;
			end_xact(c, b, "aborts: stacking onto a lost lock");
			return;
		}
		if (held >= 0)
			b->pstack[b->npstack++] = held;
		else
			fresh[nfresh++] = a->keys[i];
	}
	if (nfresh <= 1)
	{
		Act			one = *a;

		if (nfresh == 0)
		{
			apply_stacks(c, b);
			next_act(c, b);
			return;
		}
		one.nkeys = 0;
		one.key = fresh[0];
		request(c, b, &one);
		return;
	}
	for (i = 0; i < c->t->nslots; i++)
		free_slots += c->t->slots[i].zstate == ZKS_FREE;
	if (free_slots < nfresh)
	{
		end_xact(c, b, "aborts: out of slots");
		return;
	}
	r.mode = a->mode;
	r.holders = 0;
	r.nowait = a->kind == 2;
	r.scope = ZKL_SCOPE_XACT;
	r.data = "{\"sim\":1}";
	r.procno = b->pid;
	r.pid = b->pid;
	r.now = c_wall(c);
	r.group = ++c->t->next_attempt;
	for (i = 0; i < nfresh; i++)
	{
		env_new_uuid(NULL, uuid);
		r.uuid = uuid;
		r.key = key_name(fresh[i]);
		b->group[i] = zc_table_find_free(c->t);
		zc_table_claim(c->t, b->group[i], &r);
	}
	b->ngroup = nfresh;
	zc_book_set_pending(&b->book, b->group, nfresh);
	b->waiting = -1;
	b->wait_session = false;
	b->deadline = a->kind == 1 ? zkm_now(S->m) + 300000 + rnd_int(6000000) : 0;
	b->st = B_WAIT;
	trace("c%d b%d asks {%s %s%s%s} %c%s", c->id, b->pid, key_name(fresh[0]), key_name(fresh[1]),
		  nfresh > 2 ? " " : "", nfresh > 2 ? key_name(fresh[2]) : "", a->mode,
		  r.nowait ? " try" : (b->deadline ? " timed" : ""));
	worker_turn(c);
}

void
request(Cluster *c, Backend *b, const Act *a)
{
	ZklRequest	r;
	char		uuid[ZKL_UUID_LEN + 1];
	int			held = find_hold(b, a->key, a->mode);
	int			idx;
	bool		wake = true;

	if (refused_for_loss(c, b))
		return;
	if (held >= 0)
	{
		/* stacks, as core does; onto a lost lock it fails */
		if (book_lost(b, b->book.h[held].slot))
		{
			b->txns_left--;
			end_xact(c, b, "aborts: stacking onto a lost lock");
			return;
		}
		zc_book_stack(&b->book, held, a->session, b->subid);
		if (a->session)
			app_take(c, b, &c->t->slots[b->book.h[held].slot]);
		else
			app_count_xact(b, a->key, a->mode, 1);
		next_act(c, b);
		return;
	}
	idx = zc_table_find_free(c->t);
	if (idx < 0)
	{
		end_xact(c, b, "aborts: out of slots");
		return;
	}
	env_new_uuid(NULL, uuid);
	r.key = key_name(a->key);
	r.mode = a->mode;
	r.holders = a->holders;
	r.group = 0;
	r.nowait = a->kind == 2;
	r.scope = a->session ? ZKL_SCOPE_SESSION : ZKL_SCOPE_XACT;
	r.data = "{\"sim\":1}";
	r.procno = b->pid;
	r.pid = b->pid;
	r.now = c_wall(c);
	r.uuid = uuid;
	zc_table_claim(c->t, idx, &r);
	/* shmem.c's claim: a lingering node taken at once, under the same lock hold */
	if (zc_take_here(c->t, &c->t->slots[idx], c_mono(c), r.now))
	{
		int64_t		until;

		const ZklSlot *t = &c->t->slots[idx];

		taken_here++;
		rides_here += t->zk.rides;
		reader_takes_here += !t->zk.rides && t->req.mode == ZKL_MODE_SHARED;
		trace("c%d b%d %s %s's node itself (slot %d)", c->id, b->pid,
			  t->zk.rides ? "rides a local reader's" : "takes the lingering", r.key, idx);
		/* as the worker's grants: never while lock-delay pauses them (the pause it published) */
		if (env_grants_paused(c, c_mono(c), &until))
			fail("c%d b%d took %s's node itself during a lock-delay pause", c->id, b->pid, r.key);
		note_grants(c);			/* judged as it is made */
	}
	/* or it waits behind a local holder (a try is refused), the worker woken only if it must be */
	else if (zc_join_here(c->t, &c->t->slots[idx], c_mono(c), r.now, &wake))
	{
		joined_here++;
		trace("c%d b%d %s behind a local holder of %s itself (slot %d)", c->id, b->pid,
			  c->t->slots[idx].zstate == ZKS_COHORT ? "waits" : "is refused", r.key, idx);
	}
	zc_book_set_pending(&b->book, &idx, 1);
	b->waiting = idx;
	b->wait_session = a->session;
	b->deadline = a->kind == 1 ? zkm_now(S->m) + 300000 + rnd_int(6000000) : 0;
	if (b->deadline && b->hasty)
		b->deadline = zkm_now(S->m) + 1000 + rnd_int(S->linger_ms * 1000);
	b->hasty = false;
	b->st = B_WAIT;
	trace("c%d b%d asks %s %c%s (slot %d)", c->id, b->pid, r.key, r.mode,
		  r.nowait ? " try" : (b->deadline ? " timed" : ""), idx);
	wall_step_behind(c, idx);
	if (wake)
		worker_turn(c);
}
