/*
 * core_plan.c — the worker's plan (core.h): what each slot needs sent now
 * (creates, lookups, follow-up reads, watches, deletes), what times out,
 * the deadlock breaker, and the commit proof's next request.
 */
#include "core_int.h"
#include "invariant.h"
#include "core_plan.h"
#include "cohort_plan.h"

/* ---- planning ---- */

/*
 * Follow-up calls a queued or held slot may owe, most urgent first: verify
 * for a committing holder; an adopted node's Stat before any decision; a
 * fresh listing (which makes a pending watch moot); then the watch.
 */
static const struct
{
	uint16_t	bit;
	uint16_t	clears;
	ZklOpKind	kind;
}			followups[] =
{
	{ZKT_VERIFY, ZKT_VERIFY, OP_VERIFY},
	{ZKT_STAT, ZKT_STAT, OP_STAT},
	{ZKT_CHILDREN, ZKT_CHILDREN | ZKT_WATCH | ZKT_BARRIER, OP_CHILDREN},
	{ZKT_BARRIER, ZKT_BARRIER | ZKT_WATCH, OP_BARRIER},
	{ZKT_WATCH, ZKT_WATCH, OP_WATCH},
	{ZKT_UNMARK, ZKT_UNMARK, OP_UNMARK},	/* last: a try-lock waits a bounded time for it */
};

/* A fresh op for slot idx at the end of the plan. */
static ZklOp *
new_op(ZklCore *c, int idx, ZklOpKind kind)
{
	ZklOp	   *op = &c->ops[c->nops++];

	op->idx = idx;
	op->kind = kind;
	op->attempt = c->t->slots[idx].req.attempt;
	op->parents = op->solo = op->batched = false;
	return op;
}

/* Plan the slot's most urgent follow-up, if any. */
static bool
plan_followup(ZklCore *c, int idx, int64_t now)
{
	ZklSlot    *s = &c->t->slots[idx];
	size_t		i;

	for (i = 0; i < lengthof_array(followups); i++)
	{
		if (s->zk.todo & followups[i].bit)
		{
			s->zk.todo &= ~followups[i].clears;
			if (followups[i].kind == OP_CHILDREN && zc_kind_counted(s->req.mode))
				zc_core_sem_checked(c, s, now);
			else if (followups[i].kind == OP_CHILDREN || followups[i].kind == OP_WATCH ||
					 (followups[i].kind == OP_STAT && s->zk.own_check))
				s->zk.checked_at = now;
			if (followups[i].kind == OP_CHILDREN)
				zc_cohort_listing_planned(s);
			if (followups[i].kind == OP_BARRIER)
				s->zk.barrier_out = true;
			new_op(c, idx, followups[i].kind);
			return true;
		}
	}
	return false;
}

/*
 * A delete is being sent.  A local waiter behind its node needs no watch
 * event to learn of it: if that node was its only blocker, the delete's
 * reply grants it (zc_core_delete_result); otherwise it reads its queue right
 * behind the delete, in the same round trip (the server answers a session
 * in order, so the read sees the node gone).  Either way a hand-over inside
 * the cluster saves a round trip; the watch still fires later and finds the
 * lock held.  Returns whether a read was asked for.
 */
bool
zc_core_tell_successor(ZklCore *c, const ZklSlot *d)
{
	ZklSlot    *w = zc_core_successor(c, d);
	int			i;

	if (w == NULL || w->zk.watch_sole)
		return false;

	/*
	 * A node that held the lock exclusively, granted with no other backend's
	 * node ahead of it (not past waiters queued behind its backend's other
	 * node: recipe.c), has none ahead, and none can come later; so once it
	 * goes, nothing blocks the waiter right behind it, unless the holder's
	 * backend has another node on the key (it may be ahead, and it blocks
	 * the waiter), or the waiter's listing showed an upgrade placed ahead
	 * that falls between the two once its shared node goes (one whose
	 * request is gone, or one nobody owns: made by a create applied after
	 * its lookup).  A waiter that shares may have readers between, and an
	 * upgrade of one of them may come to stand ahead of it (recipe.h): it
	 * reads its queue.
	 */
	if (d->ans.result == ZKL_RESULT_GRANTED && zc_kind_alone(d->req.mode) && d->zk.at_head &&
		zc_kind_alone(w->req.mode) && !w->zk.upgrade_falls)
	{
		bool		sibling = false;

		for (i = 0; i < c->t->nused && !sibling; i++)
			sibling = zc_core_same_key_owner(&c->t->slots[i], d);
		if (!sibling)
		{
			w->zk.watch_sole = true;
			/* an exclusive waiter watches its immediate predecessor: then it is first */
			w->zk.at_head = zc_kind_alone(w->req.mode);
			w->zk.first = w->zk.at_head;
			return false;
		}
	}
	w->zk.todo |= ZKT_CHILDREN;
	return true;
}

/*
 * The commit proof: while this cluster holds locks, keep it younger than
 * half of zk_lock.proof_bound, so that commits need no round trip of their
 * own; and get a fresh one whenever a committing backend asks.  Sets
 * proof_due; returns next_ms, shortened to when the proof gets old.
 */
static long
plan_proof(ZklCore *c, bool keep_fresh, int64_t now_mono, int64_t at, long next_ms)
{
	long		left = -1;

	if (c->proof_in_flight)
		return next_ms;
	if (keep_fresh)
		left = (long) ((at + (int64_t) c->proof_bound * 500 - now_mono) / 1000);
	c->proof_due = c->t->proof_wanted || (keep_fresh && left <= 0);
	if (!c->proof_due && left > 0)
		next_ms = (next_ms < 0) ? left : CORE_MIN(next_ms, left);
	return next_ms;
}

/* Whether the slot has, or may have, a node in ZooKeeper (a local waiter has none of its own). */
static bool
has_node(const ZklSlot *s)
{
	return s->zstate != ZKS_FREE && s->zstate != ZKS_NEW && s->zstate != ZKS_GONE && s->zstate != ZKS_COHORT;
}

/*
 * The root a new request goes under: the current one, unless a request of
 * this cluster for the same key still has a node under an earlier root
 * (zk_lock.root was reloaded meanwhile).  Then that root, so that inside the
 * cluster a held key stays one lock.
 */
static uint8_t
root_for(const ZklCore *c, const ZklSlot *s, bool old_roots_live)
{
	int			i;

	for (i = 0; old_roots_live && i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o != s && has_node(o) && o->zk.root_id != c->t->cur_root &&
			strcmp(o->key, s->key) == 0)
			return o->zk.root_id;
	}
	return c->t->cur_root;
}

/* Whether any request still has a node under a root other than the current one. */
static bool
old_roots_in_use(const ZklCore *c)
{
	bool		reloaded = false;
	int			i;

	/* no root other than the current one was ever set: nothing to look for */
	for (i = 0; i < ZKL_ROOTS; i++)
		reloaded |= i != c->t->cur_root && c->t->roots[i][0] != '\0';
	for (i = 0; reloaded && i < c->t->nused; i++)
		if (has_node(&c->t->slots[i]) && c->t->slots[i].zk.root_id != c->t->cur_root)
			return true;
	return false;
}

/* What one turn of planning knows. */
typedef struct Turn
{
	bool		connected;
	bool		writes_open;	/* another write may go out */
	bool		old_roots;
	int64_t		now;			/* wall */
	int64_t		mono;
	long		next_ms;		/* -1: no deadline yet */
} Turn;

static void
sooner(Turn *turn, long ms)
{
	if (turn->next_ms < 0 || ms < turn->next_ms)
		turn->next_ms = ms;
}

/* Plan slot idx's create (NEW) or lookup (RECOVER). */
static void
plan_send(ZklCore *c, int idx, Turn *turn)
{
	ZklSlot    *s = &c->t->slots[idx];
	ZklOp	   *op;

	if (s->zstate == ZKS_NEW)
	{
		c->t->counters.requests++;
		s->zk.root_id = root_for(c, s, turn->old_roots);
		s->zk.checked_at = turn->now;	/* the pipelined getChildren */
		/* the create's data says so (zc_core_node_data): a lookup adopts it as it was */
		s->coh.may_linger = zc_cohort_marks_linger(zc_core_cohort_of(c), s) && zc_core_data_markable(s->data);
	}
	s->req.attempt = ++c->t->next_attempt;
	op = new_op(c, idx, s->zstate == ZKS_NEW ? OP_CREATE : OP_RECOVER);
	op->parents = (s->zk.todo & ZKT_PARENTS) != 0;
	op->solo = (s->zk.todo & ZKT_SOLO) != 0;
	s->zk.todo &= ~(ZKT_PARENTS | ZKT_SOLO);
	s->zk.sent_at = turn->mono;
	s->zk.key_denied = false;		/* the key node's answer, if asked, comes before this one's */
	zc_slot_move(s, (s->zstate == ZKS_NEW) ? ZKS_CREATING : ZKS_RECOVERING);
}

/*
 * A multi-key request's new nodes are created in one multi, so that its
 * place is the same in every key's queue: two such requests then stand in
 * one order on all the keys they share and never wait for each other in a
 * circle.  So its NEW slots go out together, and only once none of its
 * creates is in flight or being looked up (a lost reply is looked up slot by
 * slot, and one found absent must not go ahead of its group's others).
 * Returns whether idx's group may go now; then plans every NEW member.
 */
static bool
plan_group(ZklCore *c, int idx, Turn *turn)
{
	const ZklSlot *s = &c->t->slots[idx];
	bool		placed = false;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o->req.group != s->req.group || o->zstate == ZKS_FREE)
			continue;
		if (o->zstate == ZKS_CREATING || o->zstate == ZKS_RECOVER || o->zstate == ZKS_RECOVERING)
			return false;
		/*
		 * A member failed or given up: the backend ends the whole request.
		 * The others must not go out without it, as part of a group.
		 */
		if (o->own.abandoned || (o->ans.result != ZKL_RESULT_PENDING && o->ans.result != ZKL_RESULT_GRANTED))
			return false;
		placed |= o->zstate == ZKS_QUEUED || o->zstate == ZKS_HELD;
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o->req.group != s->req.group || o->zstate != ZKS_NEW || o->own.abandoned)
			continue;

		/*
		 * A sibling kept its node from the group's multi (a lost reply's
		 * lookups disagreed: a create applied late, or a node deleted from
		 * outside): one made now would stand apart from it.
		 */
		if (placed)
			zc_core_fail_place(c, o);
		else
			plan_send(c, i, turn);
	}
	return true;
}

/* Whether the slot's timer (delayed_until) ran out, cleared then; else the plan wakes for it. */
static bool
timer_out(ZklSlot *s, Turn *turn)
{
	long		left = zc_core_ms_until(turn->mono, s->zk.delayed_until);

	if (left > 0)
	{
		sooner(turn, left);
		return false;
	}
	s->zk.delayed_until = 0;
	return true;
}

/* A request with no node: send its create (or lookup), or watch its connect deadline. */
static void
plan_unsent(ZklCore *c, int idx, Turn *turn)
{
	ZklSlot    *s = &c->t->slots[idx];
	long		left;

	if (s->own.abandoned && s->zstate == ZKS_NEW)
	{
		zc_core_free_slot(c, s);
		return;
	}
	/* a refused lookup looks again when its timer runs out */
	if (s->zstate == ZKS_RECOVER && s->zk.delayed_until != 0 && !timer_out(s, turn))
		return;
	if (turn->connected)
	{
		if (s->zstate == ZKS_NEW && !turn->writes_open)
			return;				/* held back for the next multi */
		if (s->zstate == ZKS_NEW && s->req.group != 0)
			(void) plan_group(c, idx, turn);
		else
			plan_send(c, idx, turn);
		return;
	}
	if (s->ans.result != ZKL_RESULT_PENDING || s->own.abandoned)
		return;
	left = zc_core_ms_until(turn->now, s->req.queued_at + (int64_t) c->connect_timeout * 1000);
	/* a RECOVER slot stays: its node may exist, we delete it later */
	if (c->t->auth_unusable && s->zstate == ZKS_NEW)
		zc_core_fail_slot(c, s, ERR_AUTH_SPEC, ZKS_GONE, "zk_lock.auth is unusable");
	else if (left <= 0)
		zc_core_fail_slot(c, s, ERR_NO_CONNECT, s->zstate == ZKS_NEW ? ZKS_GONE : ZKS_RECOVER,
				  "could not connect to ZooKeeper within zk_lock.connect_timeout (%d ms)",
				  c->connect_timeout);
	else
		sooner(turn, left);
}

/*
 * A waiter with nothing in flight checks its blocker again now and then: a
 * missed watch event must not leave it waiting for ever.  Re-setting the
 * watch is enough (a read of one node); the whole queue is read again only
 * when a lock-delay ends (while one is in force, nothing is read), or when
 * the blocker may be a node of ours that no request owns (which that read
 * lets us find).  Every fourth time it looks at its own node instead (one
 * exists): nothing else tells a waiter that its node was deleted from
 * outside, and until it queues again it would wait for ever, and hold up
 * whatever waits for what it holds.
 */
static void
plan_recheck(ZklCore *c, ZklSlot *s, Turn *turn)
{
	int64_t		until;
	long		left = s->zk.delayed_until ? zc_core_ms_until(turn->mono, s->zk.delayed_until) :
		zc_core_ms_until(turn->now, s->zk.checked_at + (int64_t) zc_core_recheck_ms(c) * 1000);

	if (left <= 0 && s->zk.delayed_until &&
		c->env->grants_paused(c->env->arg, turn->mono, &until))
	{
		s->zk.delayed_until = until;
		left = zc_core_ms_until(turn->mono, until);
	}
	if (left > 0)
		sooner(turn, left);
	else if (zc_kind_counted(s->req.mode) && s->zk.delayed_until)
		zc_core_sem_delay_over(c, s);
	else
	{
		/*
		 * (an upgrade over a node other local readers hold too: its edge
		 * across clusters is not what it watches, so nothing tells it when
		 * that node goes: core_grant.c's edge_of_shared)
		 */
		bool		recheck_all = s->zk.delayed_until != 0 || s->watch[0] == '\0' ||
			c->env->may_be_orphan(c->env->arg, s->watch) ||
			strcmp(zc_table_wait_edge(s), s->watch) != 0;

		s->zk.delayed_until = 0;
		s->zk.own_check = !recheck_all && ++s->zk.rechecks % 4 == 0;
		s->zk.todo |= recheck_all ? ZKT_CHILDREN : s->zk.own_check ? ZKT_STAT : ZKT_WATCH;
	}
}

/* Send the slot's delete if one is owed; returns whether a successor must read now. */
static bool
plan_delete(ZklCore *c, int idx, Turn *turn)
{
	ZklSlot    *s = &c->t->slots[idx];
	ZklOp	   *op;

	/* a refused delete is sent again when its timer runs out */
	if (!(s->zk.todo & ZKT_DELETE) && s->zk.delayed_until != 0)
	{
		if (!timer_out(s, turn))
			return false;
		s->zk.todo |= ZKT_DELETE | ZKT_SOLO;
	}
	if (!turn->connected || !turn->writes_open || !(s->zk.todo & ZKT_DELETE))
		return false;
	op = new_op(c, idx, OP_DELETE);
	op->solo = (s->zk.todo & ZKT_SOLO) != 0;
	s->zk.todo &= ~(ZKT_DELETE | ZKT_SOLO);
	s->zk.delayed_until = 0;		/* a grant's wait, from before it was given up */
	s->zk.sent_at = turn->mono;

	/*
	 * A semaphore's local waiters read right behind the delete (the server
	 * answers in order): a hand-over in one round trip, and no read owed by
	 * a waiter that was just given up (it may be the one an event chose) is
	 * lost for the others.
	 */
	if (zc_kind_counted(s->req.mode))
		return zc_core_sem_reader(c, s);
	return zc_core_tell_successor(c, s);
}

/* A queued or held slot: release it, re-check it, or send what it owes. */
static bool
plan_placed(ZklCore *c, int idx, Turn *turn)
{
	ZklSlot    *s = &c->t->slots[idx];

	if (s->own.abandoned && zc_cohort_keeps(zc_core_cohort_of(c), s))
	{
		/* a local waiter gets its node once the listing asked for is back, or it lingers then */
		if (turn->connected)
			(void) plan_followup(c, idx, turn->now);
		return false;
	}
	if (s->own.abandoned)
	{
		zc_slot_move(s, ZKS_DELETING);
		s->zk.todo = ZKT_DELETE;
		return plan_delete(c, idx, turn);
	}
	/*
	 * The node it leaned on was lost during its owner's commit, now over
	 * (zc_core_lose_slot).  Until this turn that lost node, kept in the
	 * owner's book beside it (holds.h), fails every commit of the owner.
	 */
	if (s->zk.lose_after_commit && !s->own.committing)
	{
		zc_core_lose_and_delete(c, s);
		return plan_delete(c, idx, turn);
	}
	if (s->zstate == ZKS_QUEUED && s->zk.try_until != 0 && !s->zk.delayed_until)
	{
		long		left = zc_core_ms_until(turn->mono, s->zk.try_until);

		if (left <= 0)
		{
			zc_core_refuse_try(c, s);	/* the node it waited for still stands: held after all */
			return plan_delete(c, idx, turn);
		}
		sooner(turn, left);
	}
	if (!turn->connected)
		return false;
	if (s->zstate == ZKS_QUEUED && s->zk.todo == 0)
		plan_recheck(c, s, turn);
	(void) plan_followup(c, idx, turn->now);
	return false;
}

/*
 * A deadlock's victim: its request fails with 40P01 and gives its place up;
 * detail (each step of the circle) is kept for its owner's error.
 */
static void
fail_victim(ZklCore *c, ZklSlot *s, const char *msg, const char *detail)
{
	/* only a wait closes a circle: failing a holder would take a granted lock away */
	ZC_ASSERT(zc_deadlock_waiting(s) || zc_deadlock_sem_waiting(s));
	zc_table_keep_deadlock(c->t, s, detail);
	if (s->zstate == ZKS_COHORT)
		zc_core_fail_slot(c, s, ERR_DEADLOCK, ZKS_GONE, "%s", msg);
	else
	{
		/* give up its place; its owner's abort releases what it holds */
		zc_core_fail_slot(c, s, ERR_DEADLOCK, ZKS_DELETING, "%s", msg);
		s->zk.todo = ZKT_DELETE;
	}
}

/*
 * Local deadlocks (deadlock.c): once a request has waited deadlock_timeout,
 * look for a cycle of waits among this cluster's backends, then again at
 * most once per deadlock_timeout while any wait lasts; the youngest request
 * of a cycle gets 40P01, which breaks it.
 */
static void
plan_deadlocks(ZklCore *c, Turn *turn)
{
	char		msg[ZKL_ERRMSG_LEN];
	char		detail[ZKL_DETAIL_LEN];
	int64_t		due;
	int			victim;
	ZklSlot    *s;

	if (c->deadlock_timeout <= 0 || (due = zc_deadlock_next_due(c->t, c->deadlock_timeout)) == 0)
		return;
	due = CORE_MAX(due, c->deadlock_at);
	if (turn->now < due)
	{
		sooner(turn, zc_core_ms_until(turn->now, due));
		return;
	}
	c->deadlock_at = turn->now + (int64_t) c->deadlock_timeout * 1000;
	sooner(turn, c->deadlock_timeout);
	victim = zc_deadlock_find_victim(zc_core_cohort_of(c), turn->now, c->deadlock_timeout, msg, sizeof(msg),
									 detail, sizeof(detail));
	if (victim < 0)
		return;
	s = &c->t->slots[victim];
	sooner(turn, 0);			/* its delete goes out next turn */
	fail_victim(c, s, msg, detail);
}

bool
zc_core_fail_deadlock(ZklCore *c, int pid, const char *node, const char *msg, const char *detail)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];
		size_t		klen = strlen(s->key);

		if ((!zc_deadlock_waiting(s) && !zc_deadlock_sem_waiting(s)) || s->req.owner_pid != pid)
			continue;
		/* the wait the cycle was found through, still the same request */
		if (node[0] == '\0' ? s->zstate != ZKS_COHORT :
			(strncmp(node, s->key, klen) != 0 || node[klen] != '/' ||
			 strcmp(node + klen + 1, s->node) != 0))
			continue;
		fail_victim(c, s, msg, detail);
		return true;
	}
	return false;
}

long
zc_core_plan(ZklCore *c, bool connected, int64_t proof_at)
{
	Turn		turn;
	bool		successors = false;
	bool		held = false;
	int			i;

	turn.connected = connected;
	turn.writes_open = c->writes_in_flight < WRITE_WINDOW;
	turn.old_roots = old_roots_in_use(c);
	turn.now = zc_core_wall(c);
	turn.mono = zc_core_mono(c);
	turn.next_ms = -1;
	c->nops = 0;
	c->t->writes_held = connected && !turn.writes_open;
	turn.next_ms = zc_cohort_plan(zc_core_cohort_of(c), connected, turn.now, turn.mono);
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		/* a lingering node is kept for a commit soon: keep its proof fresh too */
		held |= s->zstate == ZKS_HELD || s->zstate == ZKS_LINGER;
		switch (s->zstate)
		{
			case ZKS_NEW:
			case ZKS_RECOVER:
				plan_unsent(c, i, &turn);
				break;
			case ZKS_QUEUED:
			case ZKS_HELD:
				successors |= plan_placed(c, i, &turn);
				break;
			case ZKS_DELETING:
				successors |= plan_delete(c, i, &turn);
				break;
			case ZKS_GONE:
				if (s->own.abandoned)
					zc_core_free_slot(c, s);
				break;
			default:
				break;
		}
	}
	plan_deadlocks(c, &turn);
	/* successors told above whose turn in the loop had passed: read now */
	for (i = 0; successors && i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		if (s->zstate == ZKS_QUEUED && !s->own.abandoned && (s->zk.todo & ZKT_CHILDREN))
			(void) plan_followup(c, i, turn.now);
	}
	if (connected)
		turn.next_ms = plan_proof(c, held, turn.mono, proof_at, turn.next_ms);
	/* for a backend's own take (take_here.c): the settings this plan ran with */
	c->t->cohort.handover = c->cohort.handover;
	c->t->cohort.handover_limit = c->cohort.handover_limit;
	c->t->cohort.linger_ms = c->cohort.linger_ms;
	c->t->cohort.deadlock_ms = c->deadlock_timeout;
	/*
	 * The worker reads these ops' slots without the lock while it sends
	 * them: a backend lets none linger meanwhile, nor takes a lingering one
	 * (take_here.c), and none is for one.
	 */
	c->t->cohort.sending = c->nops > 0;
	for (i = 0; i < c->nops; i++)
		ZC_ASSERT(c->t->slots[c->ops[i].idx].zstate != ZKS_LINGER);
	return turn.next_ms;
}

