/*
 * core_reply.c — the worker's decisions (core.h) on each reply and watch
 * event ZooKeeper sends: a create's, a listing's, a delete's, a multi's,
 * a lookup's, a Stat's, a verify's and the commit proof's.
 */
#include "core_int.h"
#include "core_reply.h"
#include "cohort_plan.h"
#include "core_grant.h"

void
zc_core_key_node_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);

	if (s != NULL && s->zstate == ZKS_CREATING)
		s->zk.key_denied = rc == ZNOAUTH;
}

/*
 * A multi-key request's multi failed for want of one key node: the others
 * may be missing too (new keys often come together), and the multi shows
 * only the first.  Make every member's key node ahead of the next try.
 */
static void
group_parents(ZklCore *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o->req.group == s->req.group && (o->zstate == ZKS_NEW || o->zstate == ZKS_CREATING))
			o->zk.todo |= ZKT_PARENTS;
	}
}

/*
 * A create's outcome for its slot (in CREATING).  Without a Stat (a create
 * inside a multi returns none) the token is read when asked for.
 */
static void
create_result(ZklCore *c, ZklSlot *s, int rc, const char *name, bool have_stat, int64_t czxid)
{
	if (rc == ZOK)
	{
		const char *base = strrchr(name, '/');

		zc_core_copy_name(s->node, sizeof(s->node), base ? base + 1 : name);
		s->zk.czxid = have_stat ? czxid : 0;
		zc_cohort_new_node(s);
		zc_slot_move(s, ZKS_QUEUED); /* the pipelined getChildren decides */
		s->zk.todo &= ~ZKT_PARENTS;	/* a group's failed multi may have asked (group_parents) */
		zc_core_forget_place(s);
	}
	else if (rc == ZNONODE && s->zk.key_denied)
		zc_core_deny_slot(c, s);		/* no key node, and we may not make it */
	else if (rc == ZNONODE)
	{
		/* no key node yet (or the server just reaped an empty one) */
		if (++s->zk.retries <= MAX_PARENT_RETRIES)
		{
			zc_slot_move(s, ZKS_NEW);
			s->zk.todo |= ZKT_PARENTS;
			if (s->req.group != 0)
				group_parents(c, s);
		}
		else
			zc_core_fail_slot(c, s, ERR_EXTERNAL, ZKS_GONE,
					  "could not create the ZooKeeper node for the lock under %s",
					  c->t->roots[s->zk.root_id]);
	}
	else if (zc_core_outcome_unknown(rc))
	{
		zc_slot_move(s, ZKS_RECOVER);	/* it may have been made: look for our uuid */
		c->t->counters.recovered++;
	}
	else if (zc_core_session_error(rc))
		zc_slot_move(s, ZKS_NEW);	/* nothing of it survives; send again */
	else if (rc == ZNOAUTH)
		zc_core_deny_slot(c, s);
	else
		zc_core_fail_slot(c, s, c->env->rc_sqlstate(rc), ZKS_GONE,
				  "could not create the ZooKeeper lock node: %s", c->env->rc_text(rc));
}

bool
zc_core_create_reply(ZklCore *c, uint64_t tag, int rc, const char *name, bool have_stat,
				   int64_t czxid)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);

	zc_core_write_answered(c);
	if (s == NULL || s->zstate != ZKS_CREATING)
		return rc == ZOK;		/* the request moved on: nobody wants this node */
	zc_core_note_write_reply(c, s, rc);
	create_result(c, s, rc, name, have_stat, czxid);
	return false;
}

void
zc_core_children_reply(ZklCore *c, uint64_t tag, int rc, const ZkrChild *kids, int n,
					 bool watched)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);

	if (s == NULL || (s->zstate != ZKS_QUEUED && s->zstate != ZKS_HELD && s->zstate != ZKS_LINGER))
		return;
	if (rc == ZOK)
		zc_core_look_up_unlisted(c, s, kids, n);
	/* who queues behind a node local hand-over may pass (cohort.c) */
	if (rc == ZOK)
		zc_cohort_listed(zc_core_cohort_of(c), s, kids, n, watched);
	else
		zc_cohort_listing_failed(zc_core_cohort_of(c), s, rc,
								 zc_core_outcome_unknown(rc) || zc_core_session_error(rc));
	if (s->zstate != ZKS_QUEUED)
		return;					/* a holder's listing: for cohort.c only */
	if (rc == ZOK && zc_kind_counted(s->req.mode))
		zc_core_sem_listing(c, s, kids, n);
	else if (rc == ZOK)
		zc_core_decide(c, s, kids, n);
	else if (zc_core_outcome_unknown(rc))
		s->zk.todo |= ZKT_CHILDREN;	/* again once reconnected */
	else if (rc == ZNONODE)
		zc_core_node_not_seen(s);		/* key node gone, so is our node (or the server is behind) */
	else if (!zc_core_session_error(rc))
		zc_core_read_refused(c, s, rc);
	else
		zc_core_read_again_later(c, s);
}

/*
 * The watch on the predecessor is set with a read of its data, not with
 * exists(): on a node that is already gone, exists() would leave a watch
 * for its creation, which never comes (names are unique), for the life of
 * the session.  A data read of a missing node sets no watch.
 */
void
zc_core_watch_set_reply(ZklCore *c, uint64_t tag, int rc, const char *data, int len)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);

	if (s == NULL || s->zstate != ZKS_QUEUED)
		return;

	/*
	 * ZNONODE: the predecessor went away before the watch was set.  A lost
	 * reply may or may not have set the watch.  Either way, look again.
	 */
	if (rc == ZNONODE || zc_core_outcome_unknown(rc))
		s->zk.todo |= ZKT_CHILDREN;
	/* a try-lock waits only for a node that may be lingering: a holder's answers false */
	else if (rc == ZOK && s->req.nowait && !zc_core_data_lingers(data, len))
		zc_core_refuse_try(c, s);
	else if (zc_core_session_error(rc))
		zc_core_read_again_later(c, s);
	/* refused (an ACL on that node): no watch; the re-checks try again */
}

/*
 * The mark is gone.  A lost reply: send it again while the node is ours.
 * ZNONODE: a held node is gone, whoever deleted it: the lock is not ours.
 */
void
zc_core_unmark_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);

	if (s == NULL || (s->zstate != ZKS_HELD && s->zstate != ZKS_QUEUED))
		return;
	if (zc_core_outcome_unknown(rc))
		s->zk.todo |= ZKT_UNMARK;
	else if (rc == ZNONODE && s->zstate == ZKS_HELD)
		zc_core_lose_slot(c, s);
}

void
zc_core_watch_event(ZklCore *c, uint64_t tag, bool deleted, const char *path)
{
	ZklSlot    *s;
	char		watched[ZKL_PATH_LEN];

	/* a key's child watch: whoever set it, routed by the key (semaphores, hand-over) */
	if (zc_core_sem_event(c, path) || zc_cohort_event(zc_core_cohort_of(c), path))
		return;
	s = zc_core_reply_slot(c, tag);
	if (s == NULL || s->zstate != ZKS_QUEUED)
		return;

	/*
	 * Our only blocker deleted: the lock is ours without reading the queue
	 * again, once one read of our own node has come back.  The delete may be
	 * a session's death, and the server may send this event before the one
	 * on the sessions' presence list from the same transaction (presence.c);
	 * a reply comes after both, so by then any lock-delay is known.
	 * Anything else (an older watch, a data change): read the queue.
	 */
	zc_core_child_path(c->t, s, s->watch, watched);
	if (deleted && s->zk.watch_sole && s->watch[0] != '\0' && strcmp(path, watched) == 0)
		s->zk.todo |= ZKT_BARRIER;
	else
		s->zk.todo |= ZKT_CHILDREN;
}

/* The read behind a sole blocker's delete event came back: grant, as decided then. */
void
zc_core_barrier_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);

	if (s == NULL)
		return;					/* (a taker of its node looks at it itself: take_node) */
	s->zk.barrier_out = false;
	/*
	 * Granted meanwhile (the blocker's delete reply, a listing), maybe
	 * released since to linger: the read was of our own node, and "no
	 * node" on our session's connection says it is gone, whoever deleted
	 * it.  The lock is lost at once, as a look at a held node finds it
	 * (zc_core_stat_reply); the next listing would tell too, but only once
	 * something asks for one.
	 */
	if ((s->zstate == ZKS_HELD || s->zstate == ZKS_LINGER) && rc == ZNONODE)
	{
		zc_cohort_node_gone(zc_core_cohort_of(c), s);
		return;
	}
	if (s->zstate != ZKS_QUEUED)
		return;
	if (rc == ZOK)
		zc_core_grant(c, s);			/* nodes ahead only go: still nothing blocks it */
	else if (rc == ZNONODE)
		zc_core_node_not_seen(s);		/* our node is gone, or the server is behind */
	else if (zc_core_outcome_unknown(rc))
		s->zk.todo |= ZKT_CHILDREN;
	else if (zc_core_session_error(rc))
		zc_core_read_again_later(c, s);
}

/* The local waiter that watches the node of slot d, if any. */
ZklSlot *
zc_core_successor(const ZklCore *c, const ZklSlot *d)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w->zstate == ZKS_QUEUED && !w->own.abandoned && w->watch[0] != '\0' &&
			strcmp(w->watch, d->node) == 0 && w->zk.root_id == d->zk.root_id &&
			strcmp(w->key, d->key) == 0)
			return w;
	}
	return NULL;
}

/* A delete's outcome for its slot (in DELETING). */
void
zc_core_delete_result(ZklCore *c, ZklSlot *s, int rc)
{
	if (zc_core_outcome_unknown(rc))
	{
		s->zk.todo |= ZKT_DELETE;	/* retried until done or the session ends */
		c->t->counters.delete_retries++;
		return;
	}
	if (rc != ZOK && rc != ZNONODE && !zc_core_session_error(rc))
	{
		/*
		 * Refused (an operator's ACL on the key node): the node blocks its
		 * key for as long as it stands, so it is sent again every re-check
		 * interval until it goes or the session ends.  Said once.
		 */
		if (!s->zk.delete_refused)
		{
			char		msg[ZKL_ERRMSG_LEN + ZKL_NODE_BUFLEN];

			snprintf(msg, sizeof(msg), "zk_lock: could not delete lock node %s: %s; trying again",
					 s->node, c->env->rc_text(rc));
			c->env->warn(c->env->arg, msg);
		}
		s->zk.delete_refused = true;
		s->zk.delayed_until = zc_core_mono(c) + (int64_t) zc_core_recheck_ms(c) * 1000;
		c->t->counters.delete_retries++;
		return;
	}
	c->t->counters.releases++;
	if (rc == ZOK || rc == ZNONODE)
	{
		ZklSlot    *w = zc_core_successor(c, s);

		if (w != NULL && w->zk.watch_sole)
			zc_core_grant(c, w);		/* see zc_core_tell_successor() */
	}
	zc_slot_move(s, ZKS_GONE);
	if (s->own.abandoned)
		zc_core_free_slot(c, s);
}

void
zc_core_delete_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);

	zc_core_write_answered(c);
	if (s == NULL || s->zstate != ZKS_DELETING)
		return;
	zc_core_note_write_reply(c, s, rc);
	zc_core_delete_result(c, s, rc);
}

/*
 * An op of a multi that the server refused because another op in it failed:
 * not applied.  Only a definite refusal says so; when the outcome of the
 * multi itself is unknown, so is each op's.
 */
static bool
rolled_back(int rc, int err)
{
	return rc != ZOK && !zc_core_outcome_unknown(rc) && !zc_core_session_error(rc) &&
		(err == ZOK || err == ZRUNTIMEINCONSISTENCY);
}

/* One op of a multi's reply; returns whether its created node is a stray. */
static bool
multi_op_reply(ZklCore *c, ZklSlot *s, bool del, const char *name, int rc, int err)
{
	bool		back = rolled_back(rc, err);

	/* a definite refusal names the op at fault; the others were rolled back */
	int			own = (rc != ZOK && !zc_core_outcome_unknown(rc) && !back) ? err : rc;

	if (del)
	{
		if (s == NULL || s->zstate != ZKS_DELETING)
			return false;
		if (back)
		{
			s->zk.todo |= ZKT_DELETE | ZKT_SOLO;
			c->t->counters.rolled_back++;
		}
		else
			zc_core_delete_result(c, s, own);
		return false;
	}
	if (s == NULL || s->zstate != ZKS_CREATING)
		return rc == ZOK;
	if (back)
	{
		/*
		 * A neighbour failed: send it again, alone, since it may fail the
		 * same way (a new key's node is missing for each new key).
		 */
		zc_slot_move(s, ZKS_NEW);
		s->zk.todo |= ZKT_SOLO;
		c->t->counters.rolled_back++;
	}
	else
		create_result(c, s, own, name, false, 0);
	return false;
}

void
zc_core_multi_reply(ZklCore *c, int n, const uint64_t *tags, const bool *del,
				  const char *const *names, int rc, const int *errs, bool *stray)
{
	bool		noted = false;
	int			i;

	zc_core_write_answered(c);
	for (i = 0; i < n; i++)
	{
		ZklSlot    *s = zc_core_reply_slot(c, tags[i]);

		if (s != NULL && !noted)
		{
			zc_core_note_write_reply(c, s, rc);	/* one answer for the whole multi */
			noted = true;
		}
		stray[i] = multi_op_reply(c, s, del[i], names[i], rc, errs[i]);
	}
}

void
zc_core_recover_reply(ZklCore *c, uint64_t tag, int rc, const char *const *names, int n)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);
	const char *found = NULL;
	int			i;

	if (s == NULL || s->zstate != ZKS_RECOVERING)
		return;
	if (zc_core_outcome_unknown(rc))
	{
		zc_slot_move(s, ZKS_RECOVER);
		return;
	}
	for (i = 0; rc == ZOK && i < n && !found; i++)
		if (zc_recipe_name_has_uuid(names[i], s->uuid))
			found = names[i];

	if (found)
	{
		/* the create went through: adopt the node once its Stat says it is ours */
		zc_core_copy_name(s->node, sizeof(s->node), found);
		zc_core_forget_place(s);
		zc_cohort_new_node(s);
		zc_slot_move(s, ZKS_QUEUED);
		s->zk.todo |= ZKT_STAT;
	}
	else if ((rc == ZOK || rc == ZNONODE) && s->node[0] != '\0')
	{
		/* a node we had, not there after a sync: gone (zc_core_node_not_seen) */
		zc_slot_move(s, ZKS_GONE);
		zc_core_lost_place(c, s);
	}
	else if (rc == ZOK || rc == ZNONODE)
	{
		/* it did not, or not yet: look once more later */
		c->env->ghost(c->env->arg, s);
		zc_slot_move(s, ZKS_GONE);
		zc_core_start_over(c, s);
	}
	else if (zc_core_session_error(rc))
	{
		/*
		 * A leader closing the session answers so at once, and an election
		 * may yet undo the close: look again a little later, unless
		 * zc_core_session_lost() re-queues it first.
		 */
		zc_slot_move(s, ZKS_RECOVER);
		s->zk.delayed_until = zc_core_mono(c) + LOOK_AGAIN_US;
	}
	else
	{
		/*
		 * Refused (an operator's ACL on the key node): the request fails, but
		 * its node may stand, so the slot stays to look again a little later
		 * (in shared memory: a new worker looks too) and deletes it if found.
		 */
		zc_core_fail_slot(c, s, rc == ZNOAUTH ? ERR_PRIVILEGE : c->env->rc_sqlstate(rc), ZKS_RECOVER,
				  "could not look up the ZooKeeper lock node under key node %s: %s", s->key,
				  c->env->rc_text(rc));
		s->zk.delayed_until = zc_core_mono(c) + LOOK_AGAIN_US;
	}
}

bool
zc_core_stat_reply(ZklCore *c, uint64_t tag, int rc, int64_t owner, int64_t czxid, char *stray)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);
	bool		ours = rc == ZOK && owner == c->t->session_id;

	if (s == NULL)
		return false;
	if (s->zstate == ZKS_QUEUED)
	{
		if (ours)
		{
			s->zk.czxid = czxid;	/* the fencing token */
			/* an adopted node's place is read next; a re-check's look is done */
			if (!s->zk.own_check)
				s->zk.todo |= ZKT_CHILDREN;
			s->zk.own_check = false;
		}
		else if (rc == ZNONODE)
		{
			s->zk.own_check = false;
			zc_core_node_not_seen(s);	/* gone, or the server is behind (a new handle's) */
		}
		else if (rc == ZOK)
		{
			/* another session's node: never adopt it; start over */
			zc_core_child_path(c->t, s, s->node, stray);
			s->zk.own_check = false;
			zc_core_lost_place(c, s);
			return true;
		}
		else if (zc_core_outcome_unknown(rc))
			s->zk.todo |= ZKT_STAT;
	}
	else if (s->zstate == ZKS_HELD)
	{
		/* the token of a lock created inside a multi, asked for by its owner */
		if (ours)
		{
			s->zk.czxid = czxid;
			zc_core_wake(c, s);
		}
		else if (rc == ZOK || rc == ZNONODE)
			zc_core_lose_slot(c, s);
		else if (zc_core_outcome_unknown(rc))
			s->zk.todo |= ZKT_STAT;
	}
	return false;
}

void
zc_core_verify_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = zc_core_reply_slot(c, tag);

	if (s == NULL || s->zstate != ZKS_HELD || s->own.verify != ZKV_ASKED)
		return;
	if (rc == ZOK)
	{
		s->own.verify = ZKV_OK;
		zc_core_wake(c, s);
	}
	else if (zc_core_outcome_unknown(rc))
		s->zk.todo |= ZKT_VERIFY;	/* again once reconnected */
	else if (rc == ZNONODE || rc == ZBADVERSION)
		zc_core_lose_slot(c, s);		/* the node is gone: whoever deleted it, the lock is not ours */
	else if (!zc_core_session_error(rc))
	{
		/* refused (an ACL on our node): the lock cannot be vouched for, and its node stands */
		zc_core_lose_and_delete(c, s);
	}
	/* session errors: zc_core_session_lost() marks the lock lost */
}

void
zc_core_proof_sent(ZklCore *c, bool ok)
{
	c->proof_due = false;
	c->proof_in_flight = ok;
}

void
zc_core_proof_reply(ZklCore *c, uint64_t gen, int rc)
{
	if (gen != c->proof_gen)
		return;					/* sent on a handle that is gone */
	c->proof_in_flight = false;
	if (zc_core_leader_answered(rc))
		zc_core_note_proof(c, c->proof_sent);
}

