/*
 * sim_worker.c — the worker's turn and its clean stop (turn.c, as shipped),
 * and each message handed to the shipped files: a reply to its completion,
 * a watch event to its watcher, a state change to the session.
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

/* A worker process starts (worker.c's main, after its core is set up): session.c begins. */
void
worker_start(Cluster *c)
{
	enter(c);
	zw_session_begin(&zw_session_events);	/* its events are turn.c's */
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

void
stop_close(Cluster *c, StopEnd how)
{
	int			i;

	trace("c%d stops %s", c->id, how == STOP_TOMBSTONE ? "cleanly: tombstone made" :
		  how == STOP_PLAIN ? "without a tombstone" : "with its worker dead, the session left");
	c->stopping = false;
	c->stop.marking = false;
	if (c->client >= 0 && how == STOP_DIED)
		zkm_abandon(S->m, c->client);
	else if (c->client >= 0)
	{
		trace("c%d closes its session (%s)", c->id, how == STOP_TOMBSTONE ? "clean stop" : "stop");
		enter(c);
		zw_session_end();		/* worker.c, once stop_cleanly is over */
	}
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
	if (how != STOP_DIED)
	{
		c->pm_pid++;			/* a crash-restart keeps its postmaster, a stop does not */
		c->pm_start = c_wall(c);
	}
	c->t->session_id = 0;
	c->t->session_tag = 0;
	*c->session_nonce = 0;
	for (i = 0; i < c->t->nused; i++)
		if (c->t->slots[i].zstate != ZKS_FREE)
			zc_table_free(c->t, &c->t->slots[i]);
	simpg_once_reset(c->shared);
	memset(&c->t->pause, 0, sizeof(c->t->pause));
	worker_restart(c);
	for (i = 0; i < c->nb; i++)
		if (c->b[i].st == B_DOWN)
		{
			c->b[i].st = c->b[i].txns_left > 0 && !S->quiet ? B_IDLE : B_DONE;
			c->b[i].next_at = zkm_now(S->m) + 1000000 + rnd_int(1000000);
		}
}

/*
 * worker.c's stop_cleanly(), one turn: turn.c's steps, as shipped (their
 * decisions clean_stop.c's, the tombstone presence.c's); bounded.
 */
void
stop_turn(Cluster *c)
{
	worker_read(c, 0);
	enter(c);
	switch (zw_stop_turn(&c->stop))
	{
		case ZKL_STOP_END:
			zw_stop_report(&c->stop);	/* (its LOG line goes to the trace) */
			stop_close(c, c->stop.mark == ZKL_MARK_DONE ? STOP_TOMBSTONE : STOP_PLAIN);
			break;
		case ZKL_STOP_SERVE:
			plan_turn(c);
			break;
		default:
			break;				/* worker.c waits for the tombstone's answer on the handle */
	}
}

void
worker_turn(Cluster *c)
{
	if (c->paused || zkm_now(S->m) < c->busy_until || c->in_turn)
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

/* worker.c's loop turn, between two waits: turn.c's, as shipped */
void
plan_turn(Cluster *c)
{
	int			i;
	long		wait_ms;

	enter(c);
	/* (settings are each cluster's, set in its core; its wait: the simulator's turns come often enough) */
	c->in_turn = true;
	c->reload_client = -1;
	wait_ms = zw_turn(&c->core, c->stopping, NULL);
	c->in_turn = false;
	c->reload_client = -1;
	/* worker.c's: when it is due, for a backend's release that lingers (take_here.c) */
	(void) zc_take_here_sleep(c->t, c_mono(c), wait_ms);
	if (c->block_us > 0)
	{
		/* left_session.c's close waited on a handle of its own: the worker was busy that long */
		c->busy_until = zkm_now(S->m) + c->block_us;
		c->block_us = 0;
	}
	note_grants(c);
	check_sole_blocker(c);
	check_pair_upgrades(c);
	if (c->core.nops > 0 && c->client < 0)
		fail("c%d planned ops without a session", c->id);
	/*
	 * A backend may claim once the sends are over and before the next
	 * plan: it meets what a claim made during the sends left unplanned
	 * (always after such a claim: two requests of a key then wait for one
	 * plan, the later one maybe first in the table).
	 */
	if (S->linger_ms > 0 && (c->began_in_send || chance(30)))
		backend_begins_now(c);
	c->began_in_send = false;
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
		c->burst_mode = l->req.mode;
		for (j = 0; j < c->nb; j++)
			if (c->b[j].st == B_IDLE && c->b[j].next_at > c->busy_until)
				c->b[j].next_at = zkm_now(S->m) + rnd_int((int) busy + 1);
		linger_try_due(c, key_index(l->key));
	}
}

/* ---- replies ---- */

/* A change of the handle's state: the library tells every watcher, session.c's first. */
void
on_state(Cluster *c, const ZkmMsg *msg)
{
	enter(c);
	if (client_watchers[c->client] != NULL)
		((watcher_fn) client_watchers[c->client]) (zw_client_handle(), ZOO_SESSION_EVENT, msg->type, "",
													NULL);
	watchers_session_event(c, msg->type);
	if (msg->type == ZKM_ST_CONNECTED)
	{
		c->heard_at = c_mono(c);	/* session.c: a handshake is news from the server */
		c->connect_zxid = zkm_leader_zxid(S->m);
	}
	if (msg->type == ZKM_ST_CONNECTING)
		trace("c%d connection lost", c->id);
}
