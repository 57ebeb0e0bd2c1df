/*
 * core.c — the worker's decisions (see core.h): each slot's way through the
 * recipe, from a claimed request to a granted, refused, failed or lost one
 * and back to a free slot.  No I/O, no PostgreSQL: the host performs what
 * is decided, and the simulator runs these files against a model ZooKeeper.
 * This file, the ground the others stand on: a slot's grant, failures and
 * losses, the steps of ours local hand-over takes (cohort.c), and what a
 * new connection, handle, session or worker means for every slot.
 * Replies are in core_reply.c, the decisions on a queue read in
 * core_grant.c, planning in core_plan.c, batching in core_batch.c.
 * Every function here that reads or writes the table runs under the
 * slot-table lock; zc_core_new_handle, zc_core_write_sent and the proof's
 * functions touch only the worker's own state (ZklCore) and need none.
 */
#include "core_int.h"
#include "table.h"
#include "cohort_plan.h"
#include "invariant.h"

void
zc_core_copy_name(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src);
}

int64_t
zc_core_wall(const ZklCore *c)
{
	return c->env->wall_now(c->env->arg);
}

int64_t
zc_core_mono(const ZklCore *c)
{
	return c->env->mono_now(c->env->arg);
}

/* Whole ms from now until `then` (µs), rounded up; 0 once passed. */
long
zc_core_ms_until(int64_t now, int64_t then)
{
	return then <= now ? 0 : (long) ((then - now + 999) / 1000);
}

uint64_t
zc_core_tag(int idx, uint64_t attempt)
{
	uint64_t	mask = (UINT64_C(1) << (64 - ZKL_TAG_IDX_BITS)) - 1;

	return ((attempt & mask) << ZKL_TAG_IDX_BITS) | (uint64_t) idx;
}

int
zc_core_tag_idx(uint64_t tag)
{
	return (int) (tag & ((UINT64_C(1) << ZKL_TAG_IDX_BITS) - 1));
}

/* The slot a reply belongs to, or NULL if it is stale. */
ZklSlot *
zc_core_reply_slot(const ZklCore *c, uint64_t tag)
{
	int			idx = zc_core_tag_idx(tag);
	ZklSlot    *s;

	if (idx >= c->t->nslots)
		return NULL;
	s = &c->t->slots[idx];
	if (s->zstate == ZKS_FREE || zc_core_tag(idx, s->req.attempt) != tag)
		return NULL;
	return s;
}

void
zc_core_key_path(const ZklTable *t, const ZklSlot *s, char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/%s", t->roots[s->zk.root_id], s->key);
}

void
zc_core_child_path(const ZklTable *t, const ZklSlot *s, const char *name, char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/%s/%s", t->roots[s->zk.root_id], s->key, name);
}

/* The session ended under the request: nothing of it survives. */
bool
zc_core_session_error(int rc)
{
	return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE;
}

/*
 * The request may or may not have been applied: its reply was lost, the
 * library could not match it to its request (seen under connection resets),
 * or the server failed while it answered (ZMARSHALLINGERROR comes after the
 * change may have taken effect).  Every other answer is a definite one.
 */
bool
zc_core_outcome_unknown(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZRUNTIMEINCONSISTENCY ||
		rc == ZMARSHALLINGERROR;
}

/*
 * Whether the ZooKeeper leader answered a write: it checks the session
 * before anything else, so any of these says the session was alive there
 * after the request was sent.  Connection and session errors do not.
 */
bool
zc_core_leader_answered(int rc)
{
	return rc == ZOK || rc == ZNONODE || rc == ZNODEEXISTS || rc == ZBADVERSION ||
		rc == ZNOAUTH || rc == ZNOTEMPTY;
}

/*
 * Only a connection known to be the session's proves it (resume.h): a
 * resumed id may be another session's until its presence node is seen.
 */
void
zc_core_note_proof(ZklCore *c, int64_t sent_at)
{
	if (c->t->conn_state != ZKC_CONNECTED)
		return;
	c->env->proof_note(c->env->arg, sent_at, c->t->session_tag);
}

/* A write of slot s was answered with rc: maybe a fresher commit proof. */
void
zc_core_note_write_reply(ZklCore *c, const ZklSlot *s, int rc)
{
	if (zc_core_leader_answered(rc))
		zc_core_note_proof(c, s->zk.sent_at);
}

void
zc_core_free_slot(ZklCore *c, ZklSlot *s)
{
	zc_table_free(c->t, s);
}

void
zc_core_wake(ZklCore *c, ZklSlot *s)
{
	if (!s->own.abandoned && s->req.owner_procno >= 0)
		c->env->wake(c->env->arg, s);
}

bool
zc_core_same_key_owner(const ZklSlot *o, const ZklSlot *s)
{
	return o != s && o->zstate != ZKS_FREE && o->req.owner_pid == s->req.owner_pid &&
		o->req.owner_procno == s->req.owner_procno && strcmp(o->key, s->key) == 0;
}

/*
 * A granted lock is gone with the session (or the node) that made it ours.
 * The host cancels the owner's running statement so that it stops acting
 * under a lock it no longer has; its transaction can no longer commit.
 * An owner past its commit check is not cancelled: its commit was decided,
 * and a cancel would only cut the rest of it in half (say, postgres_fdw's
 * remote commits done and the local one not).  That is the commit window
 * lock-delay covers (docs/failure-semantics.md).
 */
void
zc_core_lose_slot(ZklCore *c, ZklSlot *s)
{
	bool		held = s->zstate == ZKS_HELD;
	int			i;

	zc_slot_move(s, ZKS_GONE);
	if (held)
		zc_cohort_node_lost(zc_core_cohort_of(c), s);	/* every local holder through that node */
	/*
	 * The owner's later locks on the key go with it: one granted past other
	 * backends' waiters passed them because they wait for the owner's
	 * earlier node, and an upgrade stands where its read stood (recipe.h);
	 * with that node gone those waiters may wait for nothing and be granted
	 * beside them.  So those locks are lost too, and their nodes go.  (Once
	 * a lock is released, holds.c keeps its node while later ones are held:
	 * only a node deleted from outside, refused, or a session's end comes
	 * here so.)  Not a rider's (it passed nothing: it holds through another
	 * backend's granted node).  An owner's past its commit check waits: its
	 * commit goes on, and a transaction-level lock's release deletes the
	 * node after it; a session-level one outlives the commit, and is lost
	 * once it is over (core_plan.c).
	 */
	for (i = 0; held && !s->own.abandoned && i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o->zstate != ZKS_HELD || o->zk.rides || !zc_core_same_key_owner(o, s) ||
			!zc_table_node_before(c->t, (int) (s - c->t->slots), i))
			continue;
		if (!o->own.committing)
			zc_core_lose_and_delete(c, o);
		else if (o->own.scope & ZKL_SCOPE_SESSION)
			o->zk.lose_after_commit = true;
	}
	if (s->own.abandoned)
	{
		zc_core_free_slot(c, s);
		return;
	}
	s->ans.result = ZKL_RESULT_LOST;
	c->t->counters.lost++;
	if (!s->own.committing)
		c->env->interrupt(c->env->arg, s);
	zc_core_wake(c, s);
}


/*
 * A held lock that cannot be vouched for while its node stands: lost (its
 * riders too), and its node deleted.
 */
void
zc_core_lose_and_delete(ZklCore *c, ZklSlot *s)
{
	if (s->own.abandoned)
	{
		/* given up, held for its riders: they lose it; the slot goes with its delete */
		zc_slot_move(s, ZKS_DELETING);
		zc_cohort_node_lost(zc_core_cohort_of(c), s);
	}
	else
	{
		zc_core_lose_slot(c, s);
		zc_slot_move(s, ZKS_DELETING);
	}
	s->zk.todo = ZKT_DELETE;
}

/* Tell the owner its request failed. */
void
zc_core_fail_slot(ZklCore *c, ZklSlot *s, int sqlstate, ZklZkState zstate, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	s->ans.sqlstate = sqlstate;
	zc_slot_move(s, zstate);
	if (s->ans.result == ZKL_RESULT_PENDING)
		s->ans.result = ZKL_RESULT_FAILED;
	if (sqlstate == ERR_DEADLOCK)
		c->t->counters.deadlocks++;
	zc_core_wake(c, s);
	if (s->own.abandoned && zstate == ZKS_GONE)
		zc_core_free_slot(c, s);
}

/* ZooKeeper refused us under the slot's root. */
void
zc_core_deny_slot(ZklCore *c, ZklSlot *s)
{
	/* the backend adds the host's auth_info as the detail: a root may not fit errmsg */
	zc_core_fail_slot(c, s, ERR_PRIVILEGE, ZKS_GONE, "ZooKeeper denied access under zk_lock.root");
	c->env->denied(c->env->arg, s);
}

/*
 * A waiter's read answered with a session error: a leader closing the
 * session answers so at once, and an election may undo the close, so the
 * read cannot be left for zc_core_session_lost() alone.  Nothing is watched;
 * the queue is read again in a second (plan_recheck), unless the session's
 * end re-queues the request first.
 */
void
zc_core_read_again_later(ZklCore *c, ZklSlot *s)
{
	s->watch[0] = '\0';
	s->zk.watch_sole = false;
	s->zk.todo &= ~(ZKT_CHILDREN | ZKT_WATCH | ZKT_BARRIER);
	s->zk.delayed_until = zc_core_mono(c) + LOOK_AGAIN_US;
}

/*
 * A waiter's read was refused for good (an operator's ACL on its key node,
 * say): it cannot learn when its turn comes.  The request fails, as a
 * refused create does, and gives its place up.
 */
void
zc_core_read_refused(ZklCore *c, ZklSlot *s, int rc)
{
	zc_core_fail_slot(c, s, rc == ZNOAUTH ? ERR_PRIVILEGE : c->env->rc_sqlstate(rc), ZKS_DELETING,
			  "could not read the ZooKeeper lock queue of key node %s: %s", s->key,
			  c->env->rc_text(rc));
	s->zk.todo = ZKT_DELETE;
}

/*
 * The slot has a new place in its queue (or none): what it knew of the old
 * place is void.  A predecessor watched from there must neither grant it on
 * its delete (another cluster's waiter may now stand between) nor count as
 * its only blocker.
 */
void
zc_core_forget_place(ZklSlot *s)
{
	s->watch[0] = '\0';
	s->zk.watch_sole = false;
	s->zk.at_head = false;
	s->zk.first = false;
	s->zk.clear = false;
	s->zk.delayed_until = 0;
}

/* Put a request back at the start, as a fresh request. */
void
zc_core_requeue(ZklCore *c, ZklSlot *s)
{
	c->env->new_uuid(c->env->arg, s->uuid);
	zc_slot_move(s, ZKS_NEW);
	s->req.queued_at = zc_core_wall(c);
	s->zk.todo = 0;
	s->zk.retries = 0;
	s->zk.key_denied = false;
	s->node[0] = '\0';
	s->zk.try_until = 0;			/* a new node, a new wait */
	zc_core_forget_place(s);
	zc_cohort_new_node(s);
	s->req.attempt = ++c->t->next_attempt;
	s->req.ticket = s->req.attempt;
}

/* Our node is gone: start over, or end if the owner is gone too. */
void
zc_core_start_over(ZklCore *c, ZklSlot *s)
{
	if (s->own.abandoned)
	{
		zc_slot_move(s, ZKS_GONE);
		zc_core_free_slot(c, s);
	}
	else
		zc_core_requeue(c, s);
}

/* A multi-key request's member cannot have its group's one place: the request fails. */
void
zc_core_fail_place(ZklCore *c, ZklSlot *s)
{
	zc_core_fail_slot(c, s, ERR_SERIALIZATION, ZKS_GONE,
			  "zk_lock lost the queue place of one key of a multi-key request (its node was deleted)");
}

/*
 * A queued node of ours is gone while our session lives: someone deleted it.
 * A lone request queues again.  A multi-key request still waiting cannot:
 * its one place in every key's queue (core.c, plan_group) is what keeps it
 * out of deadlocks with other such requests, and a node made now would
 * stand behind them on this key only.  It fails, to be retried whole.
 */
void
zc_core_lost_place(ZklCore *c, ZklSlot *s)
{
	int			i;

	for (i = 0; s->req.group != 0 && !s->own.abandoned && i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o->req.group == s->req.group && o->zstate != ZKS_FREE && o->ans.result == ZKL_RESULT_PENDING)
		{
			zc_core_fail_place(c, s);
			return;
		}
	}
	zc_core_start_over(c, s);
}

/*
 * A read says our node is not there, but the server that answered may be
 * behind: a new handle on the same session (a restarted worker's) can reach
 * one that has not applied our create yet.  Look the node up by its uuid
 * after a sync (ZKS_RECOVER) before giving its place up (zc_core_lost_place).
 */
void
zc_core_node_not_seen(ZklSlot *s)
{
	zc_core_forget_place(s);
	zc_cohort_new_node(s);			/* what cohort.c knew or asked of it is void, as on requeue */
	s->zk.todo = 0;
	zc_slot_move(s, ZKS_RECOVER);
}

/*
 * Connected again (the same session, perhaps through another server).
 * Holders committing meanwhile wait for this.  A grant that waited for a
 * barrier read (zc_core_watch_event) cannot rely on it now: the new server
 * may not have applied the change the event announced, nor will it resend
 * the presence list's event from the same transaction.  Read the queue
 * instead.
 */
void
zc_core_reconnected(ZklCore *c)
{
	int			i;

	/*
	 * Child events for what changed meanwhile come one round trip later:
	 * until a listing says who queued behind, nothing is handed over.
	 */
	zc_cohort_disarm(zc_core_cohort_of(c));

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		if (s->zstate == ZKS_HELD)
			zc_core_wake(c, s);
		if (s->zk.todo & ZKT_BARRIER)
			s->zk.todo = (s->zk.todo & ~ZKT_BARRIER) | ZKT_CHILDREN;
	}
}

/* One slot's part of zc_core_session_lost(). */
static void
forget_node(ZklCore *c, ZklSlot *s)
{
	switch (s->zstate)
	{
		case ZKS_CREATING:
		case ZKS_RECOVER:
		case ZKS_RECOVERING:
		case ZKS_QUEUED:
			if (s->own.abandoned)
				zc_core_free_slot(c, s);
			else if (s->ans.result != ZKL_RESULT_PENDING)
				zc_slot_move(s, ZKS_GONE);	/* failed, its node kept to be found: gone with the session */
			else
				zc_core_requeue(c, s);
			break;
		case ZKS_HELD:
			zc_core_lose_slot(c, s);
			break;
		case ZKS_DELETING:
		case ZKS_LINGER:
			zc_slot_move(s, ZKS_GONE);
			if (s->own.abandoned)
				zc_core_free_slot(c, s);
			break;
		case ZKS_COHORT:
			/* its holder's node went too: queue again, in ZooKeeper */
			if (s->own.abandoned)
				zc_core_free_slot(c, s);
			else
				zc_core_requeue(c, s);
			break;
		default:
			break;
	}
}

/*
 * The session that held our nodes is gone (expired, or closed by us): every
 * node is gone with it.  Waiters queue again in the next session; holders
 * have lost their locks and must not commit.
 */
void
zc_core_session_lost(ZklCore *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		forget_node(c, &c->t->slots[i]);
	c->t->session_id = 0;
	c->t->session_tag = 0;
	c->t->conn_state = ZKC_CONNECTING;
}

/* A new handle has nothing in flight. */
void
zc_core_new_handle(ZklCore *c)
{
	c->writes_in_flight = 0;
	c->proof_in_flight = false;
	c->proof_due = false;
	c->proof_gen++;
}

/*
 * A new worker process takes over slots whose calls were in flight in the
 * previous one; it resumes the same session, so redo what may be lost.
 */
void
zc_core_worker_restarted(ZklCore *c)
{
	int			i;

	zc_cohort_forget_watches(zc_core_cohort_of(c));
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		switch (s->zstate)
		{
			case ZKS_CREATING:
			case ZKS_RECOVERING:
				zc_slot_move(s, ZKS_RECOVER);
				break;
			case ZKS_QUEUED:
				s->zk.todo |= ZKT_CHILDREN;
				break;
			case ZKS_DELETING:
				s->zk.todo |= ZKT_DELETE;
				break;
			case ZKS_HELD:
				/* a commit waits for this answer: the old worker's may be lost */
				if (s->own.verify == ZKV_ASKED)
					s->zk.todo |= ZKT_VERIFY;
				/*
				 * so may a lookup of the node (a listing showed it gone,
				 * zc_core_look_up_unlisted): one look costs little
				 */
				if (s->node[0] != '\0' && !s->zk.rides)
					s->zk.todo |= ZKT_STAT;
				break;
			default:
				break;
		}
	}
}

/* ---- replies ---- */

void
zc_core_write_sent(ZklCore *c)
{
	c->writes_in_flight++;
}

void
zc_core_write_answered(ZklCore *c)
{
	c->writes_in_flight = CORE_MAX(c->writes_in_flight - 1, 0);
}

/*
 * The key node's create: refused means the root is someone else's (or an
 * ACL refuses us there).  The node's own create went right behind it, and
 * its answer decides: made (the key node was there after all), or refused
 * for want of the key node, which is then this refusal.  Failing the slot
 * here would leave that node, if made, to nobody.
 */

/* A try-lock never queues: take its node away at once. */
void
zc_core_refuse_try(ZklCore *c, ZklSlot *s)
{
	if (s->ans.result == ZKL_RESULT_PENDING)
		s->ans.result = ZKL_RESULT_NOT_GRANTED;
	zc_slot_move(s, ZKS_DELETING);
	s->zk.todo = ZKT_DELETE;
	zc_core_wake(c, s);
}

/*
 * The slot's node is first in line (for its mode).  During a lock-delay
 * (presence.c) the grant waits, and the queue is read again when it ends.
 * A try-lock waits too: it never queues behind a holder, but the delay is
 * no holder, and it ends within zk_lock.lock_delay.
 */
void
zc_core_grant(ZklCore *c, ZklSlot *s)
{
	int			held_by;
	int64_t		until;

	/* a watch event seen before this answer asks for nothing more */
	s->zk.todo &= ~(ZKT_CHILDREN | ZKT_WATCH | ZKT_BARRIER);
	if (s->zstate == ZKS_QUEUED && s->ans.result == ZKL_RESULT_PENDING &&
		(held_by = zc_table_conflicting_holder(c->t, s, 0)) >= 0)
	{
		/* an upgrade went ahead of us: read the queue again once its node goes */
		c->t->counters.held_for_local++;
		if (s->req.nowait)
		{
			zc_core_refuse_try(c, s);	/* held: a try gets false, as core's */
			return;
		}
		zc_core_copy_name(s->watch, sizeof(s->watch), c->t->slots[held_by].node);
		s->zk.edge_for = 0;		/* (a local node: no edge across clusters) */
		s->zk.watch_sole = false;
		s->zk.at_head = false;
		s->zk.upgrade_falls = true;	/* not read from a listing: assume it may */
		s->zk.todo |= ZKT_WATCH;
		return;
	}
	if (s->ans.result == ZKL_RESULT_PENDING && c->env->grants_paused(c->env->arg, zc_core_mono(c), &until))
	{
		s->zk.delayed_until = until;
		return;
	}
	if (zc_table_grant(c->t, s, zc_core_wall(c)))
		zc_core_wake(c, s);
}

/* ---- local hand-over (cohort.c): the steps of ours that it takes ---- */

static void
host_grant(void *arg, ZklSlot *s)
{
	zc_core_grant((ZklCore *) arg, s);
}

static void
host_lose(void *arg, ZklSlot *s)
{
	zc_core_lose_slot((ZklCore *) arg, s);
}

static void
host_requeue(void *arg, ZklSlot *s)
{
	zc_core_requeue((ZklCore *) arg, s);
}

static void
host_wake(void *arg, ZklSlot *s)
{
	zc_core_wake((ZklCore *) arg, s);
}

static bool
host_grants_paused(void *arg, int64_t at)
{
	const ZklCore *c = arg;
	int64_t		until;

	return c->env->grants_paused(c->env->arg, at, &until);
}

/* c's hand-over state, with its table and our steps filled in. */
ZklCohort *
zc_core_cohort_of(ZklCore *c)
{
	c->cohort_host.arg = c;
	c->cohort_host.grant = host_grant;
	c->cohort_host.lose = host_lose;
	c->cohort_host.requeue = host_requeue;
	c->cohort_host.wake = host_wake;
	c->cohort_host.grants_paused = host_grants_paused;
	c->cohort.t = c->t;
	c->cohort.host = &c->cohort_host;
	return &c->cohort;
}
