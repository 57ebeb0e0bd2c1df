/*
 * sim_backend.c — a backend's steps: its waits and their timeouts, its
 * grants, its commits (check, mark, publish) and what it is told of losses.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/* The application took a session-level lock on slot s (granted, or stacked). */
void
app_take(Cluster *c, Backend *b, const ZklSlot *s)
{
	int			k = key_index(s->key);
	int			i;

	for (i = 0; i < b->napp; i++)
		if (b->app[i].key == k && b->app[i].mode == s->req.mode)
		{
			b->app_count[i]++;
			return;
		}
	if (b->napp == MAXHOLD)
		return;
	fill_span(c, b, s, &b->app[b->napp]);
	b->app_count[b->napp++] = 1;
}

/*
 * The application unlocked one acquisition of key (-1: every key), or all
 * of them (its acknowledgement of a loss too).  The transaction ran under
 * what it gave up until now, as under a lock released early (but DISCARD
 * ALL, alone in its transaction: ran_under false).
 */
void
app_release(Backend *b, int key, char mode, bool all, bool ran_under)
{
	int			n = 0;
	int			i;

	for (i = 0; i < b->napp; i++)
	{
		if (key < 0 || (b->app[i].key == key && b->app[i].mode == mode))
			b->app_count[i] = all ? 0 : b->app_count[i] - 1;
		if (b->app_count[i] > 0)
		{
			b->app[n] = b->app[i];
			b->app_count[n++] = b->app_count[i];
		}
		else if (ran_under && b->nspans < MAXSPANS)
		{
			b->spans[b->nspans] = b->app[i];
			b->spans[b->nspans++].to = zkm_now(S->m);
			/* given up beside a node of the key deleted from outside, still held: as end_span */
			if (beside_gone_held(b->cl, b->pid, b->app[i].key))
				taint(b->app[i].uuid);
		}
	}
	b->napp = n;
}

/*
 * An error told the backend of a lost session-level lock (xact.c's
 * session_lost_error): the statement or commit fails.  An application
 * acknowledges the loss at once, or (a wrapper that retries on 40001)
 * only when its episode ends.
 */
void
told_of_session_loss(Cluster *c, Backend *b, const char *how)
{
	b->told_lost = true;
	if (chance(50))
		b->sess_txns = 0;
	b->txns_left--;
	end_xact(c, b, how);
}

/*
 * Every zk_* call but an acknowledgement: a lost session-level lock not
 * acknowledged fails it (xact.c's zb_check_losses).  Returns whether it did.
 */
bool
refused_for_loss(Cluster *c, Backend *b)
{
	if (unacknowledged(c, b) < 0)
		return false;
	told_of_session_loss(c, b, "aborts: a zk_* call finds a session-level lock lost");
	return true;
}

/*
 * zk_session_unlock, zk_session_unlock_all, DISCARD ALL: the
 * acknowledgements of xact.c (zb_acknowledge_losses, zb_discard_all).
 * Returns whether the transaction ended.
 */
bool
acknowledge(Cluster *c, Backend *b, const Act *a)
{
	char		first[ZKL_KEY_BUFLEN];
	bool		acked;

	if (a->discard)
	{
		/* alone in its transaction: nothing ran under what it gave up */
		acked = zc_book_unacknowledged_loss(&b->book) >= 0;
		zc_book_discard_all(&b->book, true);
	}
	else
		acked = zc_book_acknowledge(&b->book, a->all ? NULL : key_name(a->key), a->mode, first);
	if (a->all || a->discard)
		app_release(b, -1, 0, true, !a->discard);
	else if (acked)
		app_release(b, a->key, a->mode, true, true);
	if (acked)
		b->told_lost = false;
	if (a->discard)
	{
		b->lost_seen = false;
		trace("c%d b%d DISCARD ALL%s", c->id, b->pid, acked ? " (acknowledges a loss)" : "");
		return false;
	}
	if (!acked)
		return false;
	if (chance(30))
	{
		/* the application catches the call's error (a savepoint) and goes on to commit */
		trace("c%d b%d acknowledges a lost session-level lock, catches the error", c->id, b->pid);
		return false;
	}
	b->txns_left--;
	end_xact(c, b, "aborts: its unlock acknowledges a lost session-level lock");
	return true;
}

void
do_unlock(Cluster *c, Backend *b, const Act *a)
{
	if (a->session && acknowledge(c, b, a))
		return;
	if (!a->discard && refused_for_loss(c, b))
		return;
	if (!a->all && !a->discard && zc_book_unlock(&b->book, key_name(a->key), a->mode, a->session) &&
		a->session)
		app_release(b, a->key, a->mode, false, true);
	if (!a->session)
		app_count_xact(b, a->key, a->mode, -1);
	trace("c%d b%d unlocks %s %c%s", c->id, b->pid, key_name(a->key), a->mode,
		  a->session ? " (session)" : "");
	next_act(c, b);
}

/* A multi-key request granted: its keys held already stack now (xact.c's add_hold). */
void
apply_stacks(Cluster *c, Backend *b)
{
	int			i;

	for (i = 0; i < b->npstack; i++)
	{
		const ZklHold *h = &b->book.h[b->pstack[i]];

		app_count_xact(b, key_index(h->key), h->mode, 1);
		zc_book_stack(&b->book, b->pstack[i], false, b->subid);
	}
	b->npstack = 0;
}

void
next_act(Cluster *c, Backend *b)
{
	check_book(c, b);
	b->npstack = 0;
	b->waiting = -1;
	b->deadline = 0;
	if (b->next_act < b->nacts)
	{
		const Act  *a = &b->acts[b->next_act++];

		if (a->pause)
		{
			b->st = B_HOLD;
			b->next_at = zkm_now(S->m) + (a->pause_us > 0 ? a->pause_us : rnd_int(3000000));
			if (a->own_id_kill)
				own_id_unlock_tend(b, a->pause_us);
		}
		else if (a->sp)
			do_savepoint(c, b, a);
		else if (a->once)
			once_act(c, b, a);
		else if (a->unlock)
			do_unlock(c, b, a);
		else if (a->nkeys > 0)
			request_group(c, b, a);
		else
		{
			if (a->once_claim)
				once_clock(c, b);
			request(c, b, a);
		}
		return;
	}
	b->st = B_HOLD;
	b->next_at = zkm_now(S->m) + rnd_int(chance(10) ? 3000000 : 400000);
}

/* Slot s's lock, held from its grant on. */
void
fill_span(Cluster *c, Backend *b, const ZklSlot *s, Span *sp)
{
	sp->key = key_index(s->key);
	sp->mode = s->req.mode;
	sp->holders = s->req.holders;
	sp->cluster = c->id;
	sp->pid = b->pid;
	sp->from = S->granted_at[c->id][s - c->t->slots];	/* the model's time, not the cluster's clock */
	slot_uuid(s, sp->uuid);
	sp->to = 0;
	sp->excused = false;
}

/* The transaction holds slot s's lock from its grant on (checked at commit). */
void
open_span(Cluster *c, Backend *b, const ZklSlot *s)
{
	if (b->nspans < MAXSPANS)
		fill_span(c, b, s, &b->spans[b->nspans++]);
}

/* A granted slot is the transaction's now. */
void
take_grant(Cluster *c, Backend *b, int idx)
{
	ZklSlot    *s = &c->t->slots[idx];

	zc_book_add(&b->book, idx, s->key, s->req.mode, s->ans.session_id, b->wait_session, b->subid);
	if (b->wait_session)
		app_take(c, b, s);
	else
	{
		app_count_xact(b, key_index(s->key), s->req.mode, 1);
		open_span(c, b, s);
	}
	trace("c%d b%d granted %s %c node %s", c->id, b->pid, s->key, s->req.mode, s->node);
}

/* A try's answer, counted once per request if a key of it waited for a node that may linger. */
void
count_linger_wait(Cluster *c, Backend *b, bool granted)
{
	int			i;

	for (i = 0; i < b->ngroup; i++)
		if (c->t->slots[b->group[i]].req.nowait && c->t->slots[b->group[i]].zk.try_until != 0)
		{
			linger_waits[granted]++;
			return;
		}
}

/* A multi-key request: all granted, or any other answer gives all of it up. */
void
wait_group_step(Cluster *c, Backend *b)
{
	int			granted = 0;
	int			i;

	for (i = 0; i < b->ngroup; i++)
	{
		ZklResult	res = c->t->slots[b->group[i]].ans.result;

		if (res == ZKL_RESULT_GRANTED)
			granted++;
		else if (res == ZKL_RESULT_NOT_GRANTED)
		{
			count_linger_wait(c, b, false);
			abandon_group(c, b);
			trace("c%d b%d multi-key try refused", c->id, b->pid);
			next_act(c, b);
			return;
		}
		else if (res != ZKL_RESULT_PENDING)
		{
			b->txns_left--;
			end_xact(c, b, res == ZKL_RESULT_LOST ? "aborts: a lock was lost while it waited" : "aborts");
			return;
		}
	}
	if (granted == b->ngroup)
	{
		count_linger_wait(c, b, true);
		for (i = 0; i < b->ngroup; i++)
			take_grant(c, b, b->group[i]);
		b->ngroup = 0;
		apply_stacks(c, b);
		next_act(c, b);
	}
	else if (b->deadline && zkm_now(S->m) >= b->deadline)
	{
		b->txns_left--;
		end_xact(c, b, "times out");
	}
}

void
wait_step(Cluster *c, Backend *b)
{
	ZklSlot    *s;
	ZklResult	res;

	if (b->ngroup > 0)
	{
		wait_group_step(c, b);
		return;
	}
	s = &c->t->slots[b->waiting];
	res = s->ans.result;

	if (res == ZKL_RESULT_PENDING && any_lost(c, b))
	{
		/* the worker cancels the waiting statement (core.c's lose_slot): a session-level loss first */
		if (unacknowledged(c, b) >= 0)
		{
			told_of_session_loss(c, b, "aborts: a session-level lock was lost while it waited");
			return;
		}
		b->txns_left--;
		end_xact(c, b, "aborts: a lock was lost while it waited");
		return;
	}
	if (res == ZKL_RESULT_PENDING && b->deadline && zkm_now(S->m) >= b->deadline)
	{
		/* zkl_cancel_slots: give up only if still unanswered */
		zc_book_set_pending(&b->book, NULL, 0);
		(void) zc_release_here(c->t, s, c_mono(c), c_wall(c), NULL);
		note_grants(c);		/* a hand-over it made, judged as it is made */
		b->waiting = -1;
		b->txns_left--;
		end_xact(c, b, "times out");
		return;
	}
	if (res == ZKL_RESULT_PENDING)
		return;
	if (s->req.nowait && s->zk.try_until != 0)
		linger_waits[res == ZKL_RESULT_GRANTED]++;
	if (res == ZKL_RESULT_GRANTED)
	{
		take_grant(c, b, b->waiting);
		apply_stacks(c, b);
		next_act(c, b);
	}
	else if (res == ZKL_RESULT_NOT_GRANTED)
	{
		zc_book_set_pending(&b->book, NULL, 0);
		(void) zc_release_here(c->t, s, c_mono(c), c_wall(c), NULL);
		note_grants(c);		/* a hand-over it made, judged as it is made */
		trace("c%d b%d try-lock refused %s", c->id, b->pid, s->key);
		next_act(c, b);
	}
	else
	{
		trace("c%d b%d request failed: %s", c->id, b->pid, s->errmsg);
		deadlocks_broken += strncmp(s->errmsg, "deadlock detected: processes", 28) == 0;
		b->txns_left--;
		end_xact(c, b, "aborts");
	}
}

bool
any_lost(Cluster *c, Backend *b)
{
	int			i;

	for (i = 0; i < b->book.n; i++)
		if (book_lost(b, b->book.h[i].slot))
			return true;
	return false;
}

/*
 * The commit rule of xact.c, now: a transaction also runs under the
 * session-level locks held at its commit.
 */
ZklCommitVerdict
commit_verdict(Cluster *c, Backend *b)
{
	ZklBook		now = b->book;	/* its proof only is changed: a copy will do */

	zc_book_at_commit(&now);
	return zc_holds_commit_verdict(&now.proof, unacknowledged(c, b) >= 0, any_lost(c, b), c->proof_at,
							  c->proof_session,
							  c->t->session_tag, c_mono(c), c->proof_bound);
}

/*
 * Each session-level lock the application believes it holds at commit (not
 * what the bookkeeping says): the transaction ran under it from its grant.
 */
void
add_session_spans(Backend *b)
{
	int			i;

	for (i = 0; i < b->napp && b->nspans < MAXSPANS; i++)
		b->spans[b->nspans++] = b->app[i];
}

/* held.c's mark of a commit past its check, on the backend's slots. */
void
mark_committing(Cluster *c, Backend *b, bool on)
{
	int			i;

	for (i = 0; i < b->book.n; i++)
		c->t->slots[b->book.h[i].slot].own.committing = on;
}

void
commit_step(Cluster *c, Backend *b)
{
	ZklCommitVerdict v = commit_verdict(c, b);

	b->gone_in_commit = 0;

	/* lost stays lost: unlocking a lost lock does not make the commit go through */
	if (b->lost_seen && v != ZKH_LOST && v != ZKH_SESSION_LOST)
		fail("c%d b%d lost a lock of its transaction, yet its commit is not refused as lost",
			 c->id, b->pid);

	if (v == ZKH_WAIT && zkm_now(S->m) < b->deadline)
	{
		c->t->proof_wanted = true;
		return;
	}
	if (v == ZKH_COMMIT)
		taint_beside_gone(c, b);
	if (v == ZKH_COMMIT && S->commit_pause_us > 0)
	{
		mark_committing(c, b, true);
		b->st = B_PUBLISH;
		b->next_at = zkm_now(S->m) + rnd_int((int) S->commit_pause_us + 1);
		return;
	}
	publish(c, b, v);
}

/* The commit's record is visible now: the transaction held its locks until this moment. */

void
publish(Cluster *c, Backend *b, ZklCommitVerdict v)
{
	bool		exits = c->stopping || b->exits;	/* (end_xact may end the stop) */

	mark_committing(c, b, false);

	if (v == ZKH_SESSION_LOST)
		told_of_session_loss(c, b, "commit fails: a session-level lock is lost");
	else
		settle(c, b, v);
	if (exits)
	{
		b->exits = false;
		backend_exit(c, b);		/* it was past its commit check when the stop began */
	}
}

/* A commit's outcome once its record is visible (or not). */
void
settle(Cluster *c, Backend *b, ZklCommitVerdict v)
{
	b->txns_left--;
	if (v == ZKH_COMMIT)
	{
		/* a lost session-level lock: no commit until the application acknowledges it */
		if (b->told_lost)
			fail("c%d b%d commits, told of a session-level loss it has not acknowledged",
				 c->id, b->pid);
		add_session_spans(b);
		check_commit(b);
		b->commits++;
		S->commits++;
		if (once_committed(c, b))
			return;				/* it seals its period first */
		end_xact(c, b, "commits");
	}
	else
		end_xact(c, b, v == ZKH_WAIT ? "commit fails: no proof in time" : "commit fails: lost or ended");
}

/*
 * An idle backend of c whose next transaction is due begins it now (whether
 * one did): called between the worker's read of a reply and its plan, while
 * it sends the plan's calls, and after them, so that a backend's own take
 * (take_here.c) meets what a reply or another claim left unplanned.
 */
bool
backend_begins_now(Cluster *c)
{
	int			i;

	for (i = 0; i < c->nb; i++)
		if (c->b[i].st == B_IDLE && c->b[i].next_at <= zkm_now(S->m))
			return backend_step(c, &c->b[i]);
	return false;
}

bool
backend_step(Cluster *c, Backend *b)
{
	int64_t		now = zkm_now(S->m);

	switch (b->st)
	{
		case B_IDLE:
			if (now < b->next_at)
				return false;
			plan_xact(b);
			next_act(c, b);
			return true;
		case B_WAIT:
			wait_step(c, b);
			return true;
		case B_HOLD:
			/* idle in transaction: a lost lock's cancel finds no statement to end */
			if (now < b->next_at)
				return false;
			if (b->next_act < b->nacts)
			{
				next_act(c, b);
				return true;
			}
			if (now < b->stay_until)
				return false;
			if (chance(15))
			{
				b->txns_left--;
				end_xact(c, b, "rolls back");
				return true;
			}
			b->st = B_COMMIT;
			b->deadline = now + (int64_t) (c->session_timeout + 2000) * 1000;
			commit_step(c, b);
			return true;
		case B_COMMIT:
			commit_step(c, b);
			return true;
		case B_PUBLISH:
			if (now < b->next_at)
				return false;
			publish(c, b, ZKH_COMMIT);
			return true;
		case B_ONCE:
		case B_SEAL:
			once_step(c, b);
			return true;
		case B_DOWN:
		case B_DONE:
			return false;
	}
	return false;
}
