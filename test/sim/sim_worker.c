/*
 * sim_worker.c — the worker's turn: the parts of src/worker restated here
 * (session.c's session, left_session.c's close, worker.c's loop and clean
 * stop), the shipped files' tends, and each message handed to them: a
 * reply to its completion, a watch event to its watcher, a state change to
 * the session.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/* ---- the worker: session (session.c), presence (presence.c), orphans ---- */

void
proof_forget(Cluster *c)
{
	c->proof_at = 0;
	c->proof_session = 0;
}

void
session_lost(Cluster *c)
{
	proof_forget(c);
	zc_core_session_lost(&c->core);
}

/* One of the sessions' names: its path. */
void
pres_path(char *out, int64_t id, uint64_t nonce, int kind)
{
	ZklSessionName n;
	char		leaf[ZLD_NAME_LEN];

	n.id = id;
	n.nonce = nonce;
	n.kind = kind;
	zc_delay_format_name(leaf, sizeof(leaf), &n);
	snprintf(out, ZKM_PATH, SESSIONS "/%s", leaf);
}

void
open_session(Cluster *c)
{
	c->t->conn_state = ZKC_CONNECTING;
	zc_core_new_handle(&c->core);
	drop_outs(c, false);		/* (a stop or a crash closed the old handle) */
	enter(c);
	zw_presence_reset();		/* worker.c's session_new_handle */
	/*
	 * An id handed out again may come back to the cluster that had it: the
	 * commit check and local hand-over tell incarnations apart by the
	 * session's tag (zc_table_session_tag), not by its id.
	 */
	c->client = zkm_open_avoiding(S->m, c->session_timeout, c->own_ids, 0);
	c->fresh_handle = true;
	c->confirming = false;
	trace("c%d opens a session", c->id);
}

void
close_session(Cluster *c, const char *why)
{
	trace("c%d closes its session (%s)", c->id, why);
	session_lost(c);
	zkm_close(S->m, c->client);
	c->client = -1;
	drop_outs(c, false);
	c->confirming = false;
	c->next_open = c_mono(c) + 1000000;
}

/* session.c's use of the cut-off clock (cutoff.c, run as is): lost at 11/12 of the timeout. */
void
session_tend(Cluster *c)
{
	int64_t		now = c_wall(c);	/* session.c reads GetCurrentTimestamp() */

	if (c->client >= 0 &&
		zc_cutoff_ms_left(c->t->conn_state == ZKC_CONNECTING, c->t->session_id, c->t->negotiated_timeout,
					c->last_heard, now) == 0)
		close_session(c, "cut off past the timeout");
	if (c->client < 0 && c_mono(c) >= c->next_open && !S->failed)
		open_session(c);
}

/* worker.c's loop turn: presence.c, as shipped */
void
presence_tend(Cluster *c)
{
	enter(c);
	zw_presence_tend();
}

/*
 * left_session.c's zw_left_tend: once the new session is up and listed,
 * mark the session left from before the crash-restart dead (an ephemeral
 * .dead of ours: its holders are all dead, so no lock-delay), then close it.
 */

void
left_tend(Cluster *c)
{
	if (c->left_session == 0)
		return;
	enter(c);
	if (!zw_presence_listed())
		return;
	if (!zw_presence_incarnation_listed(c->left_session, c->left_nonce))
	{
		trace("c%d leaves session %" PRIx64 " alone: not listed as ours (ended, or another session's now)",
			  c->id, c->left_session);
		left_alone++;
		c->left_session = 0;
		return;
	}
	switch (zw_presence_mark_dead(c->left_session, c->left_nonce))
	{
		case ZKL_MARK_PENDING:
			return;
		case ZKL_MARK_FAILED:
			left_close(c, false);
			break;
		case ZKL_MARK_DONE:
			left_close(c, true);
			break;
	}
}

/* close_left_session: a handle on the old session, connected (within a bound) just to close it */
void
left_close(Cluster *c, bool marked)
{
	int			h = zkm_resume(S->m, c->left_session);

	if (!marked)
		trace("c%d could not mark session %" PRIx64 " dead: the others delay", c->id,
			  c->left_session);
	if (h >= 0)
	{
		int			bound = c->t->negotiated_timeout / 3 > 100 ? c->t->negotiated_timeout / 3 : 100;
		bool		up;

		/* connected, or told it expired: one round trip; no server to answer: the bound */
		up = zkm_step_reconnect(S->m, h);
		trace("c%d closes session %" PRIx64 " left from before its crash%s", c->id,
			  c->left_session, zkm_connected(S->m, h) ? "" : up ? ": expired" : ": unreachable");
		zkm_close(S->m, h);
		/* the worker waits for that handle meanwhile: its own session is not served */
		bound = bound < CONNECT_TIMEOUT ? bound : CONNECT_TIMEOUT;
		c->busy_until = zkm_now(S->m) + (up ? 2000 : (int64_t) bound * 1000);
	}
	c->left_session = 0;
}

/* worker.c's loop turn: the looks that are due (orphans.c) */
void
ghosts_tend(Cluster *c)
{
	enter(c);
	(void) zw_send_looks();
}

/* ---- sending what core.c planned ---- */

/*
 * One turn of the worker's loop, as in worker.c: woken (latch or socket),
 * it first reads what has arrived, up to MAX_REPLIES_PER_WAKE messages
 * (zk_client.c), then plans once and sends.  What has arrived of what the
 * servers sent is drawn: all of it, or a few messages (the rest is still
 * on the way), so that plans fall between replies too.
 */
void
worker_read(Cluster *c, int at_least)
{
	int			most = chance(60) ? 256 : at_least + rnd_int(3);
	int			i;

	for (i = 0; i < most && handle_next(c); i++)
		;
}

/* Whether no slot is in use (worker.c's table_empty). */
bool
table_empty(const Cluster *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].zstate != ZKS_FREE)
			return false;
	return true;
}

void
stop_close(Cluster *c, StopEnd how)
{
	int			i;

	trace("c%d stops %s", c->id, how == STOP_TOMBSTONE ? "cleanly: tombstone made" :
		  how == STOP_PLAIN ? "without a tombstone" : "with its worker dead, the session left");
	c->stopping = false;
	c->marking = false;
	if (c->client >= 0 && how == STOP_DIED)
		zkm_abandon(S->m, c->client);
	else if (c->client >= 0)
		close_session(c, how == STOP_TOMBSTONE ? "clean stop" : "stop");
	c->client = -1;
	/*
	 * A new postmaster: new shared memory (every slot free), a new session.
	 * A backend still publishing its commit belongs to the old one: its
	 * book names slots that are gone, and it exits once published.
	 */
	for (i = 0; i < c->nb; i++)
		if (c->b[i].st == B_PUBLISH)
		{
			zc_book_free(&c->b[i].book);
			c->b[i].exits = true;
		}
	c->t->session_id = 0;
	c->t->session_tag = 0;
	*c->session_nonce = 0;
	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].zstate != ZKS_FREE)
			zc_table_free(c->t, &c->t->slots[i]);
	worker_restart(c);
	for (i = 0; i < c->nb; i++)
		if (c->b[i].st == B_DOWN)
		{
			c->b[i].st = c->b[i].txns_left > 0 && !S->quiet ? B_IDLE : B_DONE;
			c->b[i].next_at = zkm_now(S->m) + 1000000 + rnd_int(1000000);
		}
}

/*
 * worker.c's stop_cleanly(), one turn: serve until every slot is free, then
 * ask for the tombstone and plan nothing more; bounded.
 */
void
stop_turn(Cluster *c)
{
	worker_read(c, 0);
	if (!c->stopping)
		return;
	if (zkm_now(S->m) >= c->stop_deadline || c->client < 0 ||
		c->t->conn_state != ZKC_CONNECTED)
	{
		stop_close(c, STOP_PLAIN);
		return;
	}
	if (!c->marking && !table_empty(c))
	{
		plan_turn(c);
		return;
	}
	if (!c->marking)
		trace("c%d: every slot free, asks for its tombstone", c->id);
	c->marking = true;
	enter(c);
	switch (zw_presence_mark_closed())
	{
		case ZKL_MARK_PENDING:
			break;
		case ZKL_MARK_DONE:
			stop_close(c, STOP_TOMBSTONE);
			break;
		case ZKL_MARK_FAILED:
			stop_close(c, STOP_PLAIN);
			break;
	}
}

void
worker_turn(Cluster *c)
{
	if (c->paused || zkm_now(S->m) < c->busy_until)
		return;
	if (c->stopping)
	{
		stop_turn(c);
		return;
	}
	worker_read(c, 0);
	plan_turn(c);
}

/*
 * A node of cluster c starts to linger on key k: an idle backend of another
 * cluster tries the key while it lingers, alone or with another key (a
 * multi-key try), so that tries meet other clusters' lingering nodes often
 * (a lingering node is no holder: check_try_refusal).
 */
void
linger_try_due(Cluster *c, int k)
{
	int64_t		now = zkm_now(S->m);
	Cluster    *d;
	int			j;

	if (S->ncl < 2 || S->quiet)
		return;
	d = &S->c[(c->id + 1 + rnd_int(S->ncl - 1)) % S->ncl];
	d->linger_try_key = k;
	d->linger_try_until = now + (int64_t) S->linger_ms * 1000;
	for (j = 0; j < d->nb; j++)
		if (d->b[j].st == B_IDLE && d->b[j].sess_key < 0)
		{
			int64_t		at = now + rnd_int(S->linger_ms * 500 + 1);

			if (at < d->b[j].next_at)
				d->b[j].next_at = at;
			return;
		}
}

void
plan_turn(Cluster *c)
{
	int			i;

	session_tend(c);
	if (c->client >= 0 && c->confirming && c->confirm_due && zkm_connected(S->m, c->client))
		send_confirm(c);
	presence_tend(c);
	left_tend(c);
	gw_tend(c);
	enter(c);
	(void) zw_requests_plan();
	note_grants(c);
	check_sole_blocker(c);
	if (c->core.nops > 0 && c->client < 0)
		fail("c%d planned ops without a session", c->id);
	if (c->client < 0)
		return;
	enter(c);
	zw_requests_send();
	if (c->core.proof_due)
		zw_requests_send_proof();
	ghosts_tend(c);
	note_grants(c);
	/*
	 * A node starts to linger: the worker is then busy for one to two
	 * lingers, and the cluster's backends that begin a transaction
	 * meanwhile come for the key in a burst, some with a lock_timeout of a
	 * few ms.  So requests of several backends meet in one plan, and a
	 * later one may sit first in the table (in the slot of one that gave
	 * up between them): the node goes to the one that asked first.
	 */
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *l = &c->t->slots[i];
		int64_t		busy;
		int			j;

		if (l->zstate != ZKS_LINGER || c->linger_seen[i] == l->req.attempt)
			continue;
		c->linger_seen[i] = l->req.attempt;
		busy = (int64_t) (S->linger_ms + rnd_int(S->linger_ms + 1)) * 1000;
		c->busy_until = c->burst_until = zkm_now(S->m) + busy;
		c->burst_key = key_index(l->key);
		for (j = 0; j < c->nb; j++)
			if (c->b[j].st == B_IDLE && c->b[j].next_at > c->busy_until)
				c->b[j].next_at = zkm_now(S->m) + rnd_int((int) busy + 1);
		linger_try_due(c, key_index(l->key));
	}
}

/* ---- replies ---- */

/* session.c's confirm_done: the presence node behind the sync says whose the session is */
void
confirm_done(int rc, const struct Stat *stat, const void *data)
{
	Cluster    *c = cur_cl;

	if (!c->confirming || (uintptr_t) data != c->confirm_gen)
		return;					/* a connection or handle since */
	switch (zc_resume_confirmed(rc, rc == ZOK ? stat->ephemeralOwner : 0, c->t->session_id))
	{
		case ZKL_CONFIRM_OURS:
			c->confirming = false;
			connection_made(c);
			trace("c%d: its presence node is there: the session is its own", c->id);
			break;
		case ZKL_CONFIRM_ENDED:
			resumes_refused++;
			close_session(c, "resumed, but its presence node is gone: another session has the id");
			break;
		case ZKL_CONFIRM_AGAIN:
			c->confirm_due = true;
			break;
		case ZKL_CONFIRM_WAIT:
			break;
	}
}

/* session.c's look at a resumed session: presence.c's zw_presence_confirm */
void
send_confirm(Cluster *c)
{
	c->confirm_due = false;
	enter(c);
	if (zw_presence_confirm(c->t->session_id, *c->session_nonce, confirm_done,
							(const void *) (uintptr_t) c->confirm_gen) != ZOK)
		c->confirm_due = true;
}

/* The connection is the session's: serve on it. */
void
connection_made(Cluster *c)
{
	c->t->conn_state = ZKC_CONNECTED;
	zc_core_reconnected(&c->core);
	enter(c);
	zw_presence_reconnected();
}

void
on_state(Cluster *c, const ZkmMsg *msg)
{
	watchers_session_event(c, msg->type);
	if (msg->type == ZKM_ST_CONNECTED)
	{
		int64_t		id = zkm_session(S->m, c->client);
		bool		old_lost;
		ZklConnected what = zc_resume_connected(c->fresh_handle, c->t->session_id, id, &old_lost);

		if (old_lost)
			session_lost(c);
		/* session.c: a handle not resuming one gets a new session, whatever its id */
		if (what == ZKL_CONN_NEW)
		{
			*c->session_nonce = next_nonce();
			c->own_ids = realloc(c->own_ids, (c->nown_ids + 1) * sizeof(int64_t));
			c->own_ids[c->nown_ids++] = id;
		}
		c->fresh_handle = false;
		c->t->session_id = id;
		c->t->session_tag = zc_table_session_tag(id, *c->session_nonce);
		c->t->negotiated_timeout = zkm_timeout(S->m, c->client);
		c->last_heard = c_wall(c);
		c->confirming = what == ZKL_CONN_CONFIRM;
		c->confirm_gen++;
		if (c->confirming)
			send_confirm(c);
		else
			connection_made(c);
		trace("c%d connected, session %" PRIx64 "%s", c->id, id,
			  c->confirming ? ": resumed, asks for its presence node" : "");
	}
	else if (msg->type == ZKM_ST_CONNECTING)
	{
		c->t->conn_state = ZKC_CONNECTING;
		trace("c%d connection lost", c->id);
	}
	else if (msg->type == ZKM_ST_EXPIRED)
		close_session(c, "expired");
}
