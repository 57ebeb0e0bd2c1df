/*
 * core.c — the worker's decisions (see core.h): each slot's way through the
 * recipe, from a claimed request to a granted, refused, failed or lost one
 * and back to a free slot.  No I/O, no PostgreSQL: the host performs what
 * is decided, and the simulator runs this file against a model ZooKeeper.
 * Every function here that reads or writes the table runs under the
 * slot-table lock; zcore_new_handle, zcore_write_sent and the proof's
 * functions touch only the worker's own state (ZklCore) and need none.
 */
#include "core.h"
#include "slot_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zk_result.h"		/* ZooKeeper's result codes, not its library */

#include "deadlock.h"

#include "table.h"

#define MAX_PARENT_RETRIES	5

/*
 * Write requests (creates, deletes, multis) in flight at once.  Under load,
 * what arrives meanwhile waits for a reply and then goes out as one multi:
 * the server's cost is per transaction, so batches grow with the load.  Two
 * let a lone backend's next create go out while its last delete is still
 * under way.
 */
#define WRITE_WINDOW 2

#define CORE_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CORE_MIN(a, b) ((a) < (b) ? (a) : (b))
#define lengthof_array(a) (sizeof(a) / sizeof((a)[0]))

#define ERR_EXTERNAL	ZKL_SQLSTATE('3','8','0','0','0')
#define ERR_PRIVILEGE	ZKL_SQLSTATE('4','2','5','0','1')
#define ERR_DEADLOCK	ZKL_SQLSTATE('4','0','P','0','1')
#define ERR_AUTH_SPEC	ZKL_SQLSTATE('2','8','0','0','0')
#define ERR_NO_CONNECT	ZKL_SQLSTATE('0','8','0','0','1')
#define ERR_BAD_PARAM	ZKL_SQLSTATE('2','2','0','2','3')
#define ERR_SERIALIZATION	ZKL_SQLSTATE('4','0','0','0','1')

/* a refused lookup of our node is sent again after this long */
#define LOOK_AGAIN_US	1000000

/*
 * How long another cluster's try-lock waits for a lingering node to go:
 * that cluster deletes it on the child event of the try's create, so the
 * wait is two or three round trips; bounded by a multiple of the try's own
 * round trip, and a floor for the two workers' wake-ups.
 */
#define LINGER_WAIT_RTTS	4
#define LINGER_WAIT_MIN_MS	25
#define LINGER_WAIT_MAX_MS	500	/* a round trip measured across a reconnect is no round trip */
/* Node data with the mark ends so (JSON: the object's last member). */
#define LINGER_MARK			"\"linger\":true}"

static ZklCohort *cohort_of(ZklCore *c);

static void
copy_name(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src);
}

static int64_t
wall(const ZklCore *c)
{
	return c->env->wall_now(c->env->arg);
}

static int64_t
mono(const ZklCore *c)
{
	return c->env->mono_now(c->env->arg);
}

/* Whole ms from now until `then` (µs), rounded up; 0 once passed. */
static long
ms_until(int64_t now, int64_t then)
{
	return then <= now ? 0 : (long) ((then - now + 999) / 1000);
}

uint64_t
zcore_tag(int idx, uint64_t attempt)
{
	uint64_t	mask = (UINT64_C(1) << (64 - ZKL_TAG_IDX_BITS)) - 1;

	return ((attempt & mask) << ZKL_TAG_IDX_BITS) | (uint64_t) idx;
}

int
zcore_tag_idx(uint64_t tag)
{
	return (int) (tag & ((UINT64_C(1) << ZKL_TAG_IDX_BITS) - 1));
}

/* The slot a reply belongs to, or NULL if it is stale. */
static ZklSlot *
reply_slot(const ZklCore *c, uint64_t tag)
{
	int			idx = zcore_tag_idx(tag);
	ZklSlot    *s;

	if (idx >= c->t->nslots)
		return NULL;
	s = &c->t->slots[idx];
	if (s->zstate == ZKS_FREE || zcore_tag(idx, s->attempt) != tag)
		return NULL;
	return s;
}

void
zcore_key_path(const ZklTable *t, const ZklSlot *s, char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/%s", t->roots[s->root_id], s->key);
}

void
zcore_child_path(const ZklTable *t, const ZklSlot *s, const char *name, char *out)
{
	snprintf(out, ZKL_PATH_LEN, "%s/%s/%s", t->roots[s->root_id], s->key, name);
}

/* The session ended under the request: nothing of it survives. */
static bool
session_error(int rc)
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
zcore_outcome_unknown(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZRUNTIMEINCONSISTENCY ||
		rc == ZMARSHALLINGERROR;
}

/*
 * Whether the ZooKeeper leader answered a write: it checks the session
 * before anything else, so any of these says the session was alive there
 * after the request was sent.  Connection and session errors do not.
 */
static bool
leader_answered(int rc)
{
	return rc == ZOK || rc == ZNONODE || rc == ZNODEEXISTS || rc == ZBADVERSION ||
		rc == ZNOAUTH || rc == ZNOTEMPTY;
}

static void
note_proof(ZklCore *c, int64_t sent_at)
{
	c->env->proof_note(c->env->arg, sent_at, c->t->session_id);
}

/* A write of slot s was answered with rc: maybe a fresher commit proof. */
static void
note_write_reply(ZklCore *c, const ZklSlot *s, int rc)
{
	if (leader_answered(rc))
		note_proof(c, s->sent_at);
}

static void
free_slot(ZklCore *c, ZklSlot *s)
{
	zkt_free(c->t, s);
}

static void
wake(ZklCore *c, ZklSlot *s)
{
	if (!s->abandoned && s->owner_procno >= 0)
		c->env->wake(c->env->arg, s);
}

/*
 * A granted lock is gone with the session (or the node) that made it ours.
 * The host cancels the owner's running statement so that it stops acting
 * under a lock it no longer has; its transaction can no longer commit.
 */
static void
lose_slot(ZklCore *c, ZklSlot *s)
{
	bool		held = s->zstate == ZKS_HELD;

	zks_move(s, ZKS_GONE);
	if (held)
		zcoh_node_lost(cohort_of(c), s);	/* every local holder through that node */
	if (s->abandoned)
	{
		free_slot(c, s);
		return;
	}
	s->result = ZKR_LOST;
	c->t->counters.lost++;
	c->env->interrupt(c->env->arg, s);
	wake(c, s);
}

static void fail_slot(ZklCore *c, ZklSlot *s, int sqlstate, ZklZkState zstate,
					  const char *fmt,...) __attribute__((format(printf, 5, 6)));

/* Tell the owner its request failed. */
static void
fail_slot(ZklCore *c, ZklSlot *s, int sqlstate, ZklZkState zstate, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	s->sqlstate = sqlstate;
	zks_move(s, zstate);
	if (s->result == ZKR_PENDING)
		s->result = ZKR_FAILED;
	if (sqlstate == ERR_DEADLOCK)
		c->t->counters.deadlocks++;
	wake(c, s);
	if (s->abandoned && zstate == ZKS_GONE)
		free_slot(c, s);
}

/* ZooKeeper refused us under the slot's root. */
static void
deny_slot(ZklCore *c, ZklSlot *s)
{
	/* the backend adds the host's auth_info as the detail: a root may not fit errmsg */
	fail_slot(c, s, ERR_PRIVILEGE, ZKS_GONE, "ZooKeeper denied access under zk_lock.root");
	c->env->denied(c->env->arg, s);
}

/*
 * A waiter's read answered with a session error: a leader closing the
 * session answers so at once, and an election may undo the close, so the
 * read cannot be left for zcore_session_lost() alone.  Nothing is watched;
 * the queue is read again in a second (plan_recheck), unless the session's
 * end re-queues the request first.
 */
static void
read_again_later(ZklCore *c, ZklSlot *s)
{
	s->watch[0] = '\0';
	s->watch_sole = false;
	s->todo &= ~(ZKT_CHILDREN | ZKT_WATCH | ZKT_BARRIER);
	s->delayed_until = mono(c) + LOOK_AGAIN_US;
}

/*
 * A waiter's read was refused for good (an operator's ACL on its key node,
 * say): it cannot learn when its turn comes.  The request fails, as a
 * refused create does, and gives its place up.
 */
static void
read_refused(ZklCore *c, ZklSlot *s, int rc)
{
	fail_slot(c, s, rc == ZNOAUTH ? ERR_PRIVILEGE : c->env->rc_sqlstate(rc), ZKS_DELETING,
			  "could not read the ZooKeeper lock queue of key node %s: %s", s->key,
			  c->env->rc_text(rc));
	s->todo = ZKT_DELETE;
}

/*
 * The slot has a new place in its queue (or none): what it knew of the old
 * place is void.  A predecessor watched from there must neither grant it on
 * its delete (another cluster's waiter may now stand between) nor count as
 * its only blocker.
 */
static void
forget_place(ZklSlot *s)
{
	s->watch[0] = '\0';
	s->watch_sole = false;
	s->at_head = false;
	s->first = false;
	s->clear = false;
	s->delayed_until = 0;
}

/* Put a request back at the start, as a fresh request. */
static void
requeue(ZklCore *c, ZklSlot *s)
{
	c->env->new_uuid(c->env->arg, s->uuid);
	zks_move(s, ZKS_NEW);
	s->queued_at = wall(c);
	s->todo = 0;
	s->retries = 0;
	s->key_denied = false;
	s->node[0] = '\0';
	s->try_until = 0;			/* a new node, a new wait */
	forget_place(s);
	zcoh_new_node(s);
	s->attempt = ++c->t->next_attempt;
	s->ticket = s->attempt;
}

/* Our node is gone: start over, or end if the owner is gone too. */
static void
start_over(ZklCore *c, ZklSlot *s)
{
	if (s->abandoned)
	{
		zks_move(s, ZKS_GONE);
		free_slot(c, s);
	}
	else
		requeue(c, s);
}

/* A multi-key request's member cannot have its group's one place: the request fails. */
static void
fail_place(ZklCore *c, ZklSlot *s)
{
	fail_slot(c, s, ERR_SERIALIZATION, ZKS_GONE,
			  "zk_lock lost the queue place of one key of a multi-key request (its node was deleted)");
}

/*
 * A queued node of ours is gone while our session lives: someone deleted it.
 * A lone request queues again.  A multi-key request still waiting cannot:
 * its one place in every key's queue (core.c, plan_group) is what keeps it
 * out of deadlocks with other such requests, and a node made now would
 * stand behind them on this key only.  It fails, to be retried whole.
 */
static void
lost_place(ZklCore *c, ZklSlot *s)
{
	int			i;

	for (i = 0; s->group != 0 && !s->abandoned && i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o->group == s->group && o->zstate != ZKS_FREE && o->result == ZKR_PENDING)
		{
			fail_place(c, s);
			return;
		}
	}
	start_over(c, s);
}

/*
 * A read says our node is not there, but the server that answered may be
 * behind: a new handle on the same session (a restarted worker's) can reach
 * one that has not applied our create yet.  Look the node up by its uuid
 * after a sync (ZKS_RECOVER) before giving its place up (lost_place).
 */
static void
node_not_seen(ZklSlot *s)
{
	forget_place(s);
	zcoh_new_node(s);			/* what cohort.c knew or asked of it is void, as on requeue */
	s->todo = 0;
	zks_move(s, ZKS_RECOVER);
}

/*
 * Connected again (the same session, perhaps through another server).
 * Holders committing meanwhile wait for this.  A grant that waited for a
 * barrier read (zcore_watch_event) cannot rely on it now: the new server
 * may not have applied the change the event announced, nor will it resend
 * the presence list's event from the same transaction.  Read the queue
 * instead.
 */
void
zcore_reconnected(ZklCore *c)
{
	int			i;

	/*
	 * Child events for what changed meanwhile come one round trip later:
	 * until a listing says who queued behind, nothing is handed over.
	 */
	zcoh_disarm(cohort_of(c));

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		if (s->zstate == ZKS_HELD)
			wake(c, s);
		if (s->todo & ZKT_BARRIER)
			s->todo = (s->todo & ~ZKT_BARRIER) | ZKT_CHILDREN;
	}
}

/* One slot's part of zcore_session_lost(). */
static void
forget_node(ZklCore *c, ZklSlot *s)
{
	switch (s->zstate)
	{
		case ZKS_CREATING:
		case ZKS_RECOVER:
		case ZKS_RECOVERING:
		case ZKS_QUEUED:
			if (s->abandoned)
				free_slot(c, s);
			else if (s->result != ZKR_PENDING)
				zks_move(s, ZKS_GONE);	/* failed, its node kept to be found: gone with the session */
			else
				requeue(c, s);
			break;
		case ZKS_HELD:
			lose_slot(c, s);
			break;
		case ZKS_DELETING:
		case ZKS_LINGER:
			zks_move(s, ZKS_GONE);
			if (s->abandoned)
				free_slot(c, s);
			break;
		case ZKS_COHORT:
			/* its holder's node went too: queue again, in ZooKeeper */
			if (s->abandoned)
				free_slot(c, s);
			else
				requeue(c, s);
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
zcore_session_lost(ZklCore *c)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		forget_node(c, &c->t->slots[i]);
	c->t->session_id = 0;
	c->t->conn_state = ZKC_CONNECTING;
}

/* A new handle has nothing in flight. */
void
zcore_new_handle(ZklCore *c)
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
zcore_worker_restarted(ZklCore *c)
{
	int			i;

	zcoh_forget_watches(cohort_of(c));
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];

		switch (s->zstate)
		{
			case ZKS_CREATING:
			case ZKS_RECOVERING:
				zks_move(s, ZKS_RECOVER);
				break;
			case ZKS_QUEUED:
				s->todo |= ZKT_CHILDREN;
				break;
			case ZKS_DELETING:
				s->todo |= ZKT_DELETE;
				break;
			case ZKS_HELD:
				/* a commit waits for this answer: the old worker's may be lost */
				if (s->verify == ZKV_ASKED)
					s->todo |= ZKT_VERIFY;
				break;
			default:
				break;
		}
	}
}

/* ---- replies ---- */

void
zcore_write_sent(ZklCore *c)
{
	c->writes_in_flight++;
}

static void
write_answered(ZklCore *c)
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
void
zcore_key_node_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = reply_slot(c, tag);

	if (s != NULL && s->zstate == ZKS_CREATING)
		s->key_denied = rc == ZNOAUTH;
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

		if (o->group == s->group && (o->zstate == ZKS_NEW || o->zstate == ZKS_CREATING))
			o->todo |= ZKT_PARENTS;
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

		copy_name(s->node, sizeof(s->node), base ? base + 1 : name);
		s->czxid = have_stat ? czxid : 0;
		zcoh_new_node(s);
		zks_move(s, ZKS_QUEUED); /* the pipelined getChildren decides */
		s->todo &= ~ZKT_PARENTS;	/* a group's failed multi may have asked (group_parents) */
		forget_place(s);
	}
	else if (rc == ZNONODE && s->key_denied)
		deny_slot(c, s);		/* no key node, and we may not make it */
	else if (rc == ZNONODE)
	{
		/* no key node yet (or the server just reaped an empty one) */
		if (++s->retries <= MAX_PARENT_RETRIES)
		{
			zks_move(s, ZKS_NEW);
			s->todo |= ZKT_PARENTS;
			if (s->group != 0)
				group_parents(c, s);
		}
		else
			fail_slot(c, s, ERR_EXTERNAL, ZKS_GONE,
					  "could not create the ZooKeeper node for the lock under %s",
					  c->t->roots[s->root_id]);
	}
	else if (zcore_outcome_unknown(rc))
	{
		zks_move(s, ZKS_RECOVER);	/* it may have been made: look for our uuid */
		c->t->counters.recovered++;
	}
	else if (session_error(rc))
		zks_move(s, ZKS_NEW);	/* nothing of it survives; send again */
	else if (rc == ZNOAUTH)
		deny_slot(c, s);
	else
		fail_slot(c, s, c->env->rc_sqlstate(rc), ZKS_GONE,
				  "could not create the ZooKeeper lock node: %s", c->env->rc_text(rc));
}

bool
zcore_create_reply(ZklCore *c, uint64_t tag, int rc, const char *name, bool have_stat,
				   int64_t czxid)
{
	ZklSlot    *s = reply_slot(c, tag);

	write_answered(c);
	if (s == NULL || s->zstate != ZKS_CREATING)
		return rc == ZOK;		/* the request moved on: nobody wants this node */
	note_write_reply(c, s, rc);
	create_result(c, s, rc, name, have_stat, czxid);
	return false;
}

static bool
same_owner(const ZklSlot *a, const ZklSlot *b)
{
	return a->owner_pid == b->owner_pid && a->owner_procno == b->owner_procno;
}

static bool
same_key_owner(const ZklSlot *o, const ZklSlot *s)
{
	return o != s && o->zstate != ZKS_FREE && same_owner(o, s) && strcmp(o->key, s->key) == 0;
}

/* Does the owner of s hold the key shared?  (The upgrade case.) */
static bool
holds_shared(const ZklCore *c, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o->zstate == ZKS_HELD && o->mode == ZKL_MODE_SHARED && !o->abandoned &&
			same_key_owner(o, s))
			return true;
	}
	return false;
}

/*
 * Two backends of this cluster that both hold a key shared and both wait to
 * make it exclusive wait for each other forever.  Core would find that
 * deadlock; we find it when the second of them queues, and fail that one.
 * Returns the pid of the other backend, or 0.
 */
static int
upgrade_deadlock(const ZklCore *c, const ZklSlot *s)
{
	int			i;

	if (s->mode != ZKL_MODE_EXCLUSIVE || !holds_shared(c, s))
		return 0;
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		if (o != s && o->mode == ZKL_MODE_EXCLUSIVE && o->result == ZKR_PENDING &&
			!o->abandoned && !same_owner(o, s) && strcmp(o->key, s->key) == 0 &&
			holds_shared(c, o))
			return o->owner_pid;
	}
	return 0;
}

/* How often a waiter with nothing in flight re-reads its queue. */
static long
recheck_ms(const ZklCore *c)
{
	return CORE_MAX(1000, c->t->negotiated_timeout / 2);
}

/* A try-lock never queues: take its node away at once. */
static void
refuse_try(ZklCore *c, ZklSlot *s)
{
	if (s->result == ZKR_PENDING)
		s->result = ZKR_NOT_GRANTED;
	zks_move(s, ZKS_DELETING);
	s->todo = ZKT_DELETE;
	wake(c, s);
}

/*
 * The slot's node is first in line (for its mode).  During a lock-delay
 * (presence.c) the grant waits, and the queue is read again when it ends.
 * A try-lock waits too: it never queues behind a holder, but the delay is
 * no holder, and it ends within zk_lock.lock_delay.
 */
static void
grant(ZklCore *c, ZklSlot *s)
{
	int64_t		until;

	/* a watch event seen before this answer asks for nothing more */
	s->todo &= ~(ZKT_CHILDREN | ZKT_WATCH | ZKT_BARRIER);
	if (s->result == ZKR_PENDING && c->env->grants_paused(c->env->arg, mono(c), &until))
	{
		s->delayed_until = until;
		return;
	}
	zks_move(s, ZKS_HELD);
	if (s->result == ZKR_PENDING)
	{
		s->session_id = c->t->session_id;
		__atomic_thread_fence(__ATOMIC_RELEASE);	/* the owner reads it after the result, unlocked */
		s->result = ZKR_GRANTED;
		s->granted_at = wall(c);
		c->t->counters.grants++;
		wake(c, s);
	}
}

/* ---- the linger mark (cohort.c lingers; another cluster's try-lock waits) ---- */

/* Whether the owner's data can carry the mark: a JSON object with room for it. */
static bool
data_markable(const char *data)
{
	size_t		n = strlen(data);

	/* room for the mark within ZKL_DATA_LEN: readers keep no more (queue_read.c) */
	return n >= 2 && data[0] == '{' && data[n - 1] == '}' &&
		n + strlen(LINGER_MARK) < ZKL_DATA_LEN;
}

void
zcore_node_data(const ZklSlot *s, char *out)
{
	size_t		n = strlen(s->data);

	if (s->may_linger && data_markable(s->data))
		snprintf(out, ZKL_NODE_DATA_LEN, "%.*s%s%s", (int) (n - 1), s->data,
				 n > 2 ? "," : "", LINGER_MARK);
	else
		snprintf(out, ZKL_NODE_DATA_LEN, "%s", s->data);
}

bool
zcore_data_lingers(const char *data, int len)
{
	int			k = (int) strlen(LINGER_MARK);

	return data != NULL && len >= k && memcmp(data + len - k, LINGER_MARK, k) == 0;
}

/*
 * A try-lock whose only blocker is an exclusive node of another backend at
 * the head of the queue: that node may be lingering (no holder).  Then it
 * waits, reading the node's data with a watch (wait_behind), until the node
 * goes (granted), its data says it is held (zcore_watch_set_reply), or
 * try_until: LINGER_WAIT_RTTS of the round trip of the listing that found
 * it, within [LINGER_WAIT_MIN_MS, LINGER_WAIT_MAX_MS].
 */
static bool
linger_wait(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int own, int watch, int nmine)
{
	int64_t		now = mono(c);
	int64_t		rtt = CORE_MAX(wall(c) - s->checked_at, 0);

	if (s->mode == ZKL_MODE_SEMAPHORE || s->group != 0 || kids[watch].mode != ZKL_MODE_EXCLUSIVE ||
		!zkr_sole_blocker(kids, own, watch, c->mine, c->held, nmine) ||
		zkr_foreign_ahead(kids, own, c->mine, nmine) != 1)
		return false;
	if (s->try_until == 0)
		s->try_until = now + CORE_MIN(CORE_MAX(LINGER_WAIT_RTTS * rtt,
											   (int64_t) LINGER_WAIT_MIN_MS * 1000),
									  (int64_t) LINGER_WAIT_MAX_MS * 1000);
	return now < s->try_until;
}

/* ---- local hand-over (cohort.c): the steps of ours that it takes ---- */

static void
host_grant(void *arg, ZklSlot *s)
{
	grant((ZklCore *) arg, s);
}

static void
host_lose(void *arg, ZklSlot *s)
{
	lose_slot((ZklCore *) arg, s);
}

static void
host_requeue(void *arg, ZklSlot *s)
{
	requeue((ZklCore *) arg, s);
}

static void
host_wake(void *arg, ZklSlot *s)
{
	wake((ZklCore *) arg, s);
}

static bool
host_grants_paused(void *arg, int64_t at)
{
	const ZklCore *c = arg;
	int64_t		until;

	return c->env->grants_paused(c->env->arg, at, &until);
}

/* c's hand-over state, with its table and our steps filled in. */
static ZklCohort *
cohort_of(ZklCore *c)
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

bool
zcore_listing_watches(const ZklCore *c, const ZklSlot *s)
{
	return zcoh_listing_watches(&c->cohort, s);
}

/* Queue behind children[watch]: set the watch, unless it is an upgrade deadlock or a try. */
static void
wait_behind(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int own, int watch, int nmine)
{
	int			other;

	if (!s->nowait && (other = upgrade_deadlock(c, s)) != 0)
	{
		/* give up our place; our owner's abort releases its shared lock too */
		fail_slot(c, s, ERR_DEADLOCK, ZKS_DELETING,
				  "deadlock detected: processes %d and %d both hold a zk_lock shared and wait to make it exclusive",
				  s->owner_pid, other);
		s->todo = ZKT_DELETE;
		return;
	}
	if (s->nowait && !linger_wait(c, s, kids, own, watch, nmine))
	{
		refuse_try(c, s);
		return;
	}
	copy_name(s->watch, sizeof(s->watch), kids[watch].name);
	s->watch_sole = zkr_sole_blocker(kids, own, watch, c->mine, c->held, nmine);
	/* granted when the watched node goes: alone at the head only if it was the one other */
	s->at_head = s->watch_sole && zkr_foreign_ahead(kids, own, c->mine, nmine) == 1;
	s->first = own == 1;		/* likewise, with the backend's own nodes counted */
	s->clear = zkr_exclusive_ahead(kids, own) == (kids[watch].mode == ZKL_MODE_EXCLUSIVE);
	s->todo |= ZKT_WATCH;
	if (wall(c) - s->requested_at >= (int64_t) recheck_ms(c) * 1000)
		c->env->suspect(c->env->arg, s, s->watch);
}

/* Run the recipe on a children listing. */
static void
decide(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n)
{
	int			nmine = 0;
	int			own;
	int			watch;
	int			i;

	/*
	 * This backend's other nodes on the key never block it: all of them,
	 * including ones being deleted, or one of its own could count as
	 * another backend's and be waited for for ever.
	 */
	for (i = 0; i < c->t->nused; i++)
	{
		const ZklSlot *o = &c->t->slots[i];

		/* a node local readers ride with (cohort.c) is not one backend's */
		if (same_key_owner(o, s) && !zcoh_ridden_by_others(cohort_of(c), o, s))
		{
			/* one given up no longer holds (a node kept for a hand-over: cohort.c) */
			c->held[nmine] = o->zstate == ZKS_HELD && !o->abandoned;
			c->mine[nmine++] = o->uuid;
		}
	}

	switch (zkr_decide(kids, n, s->uuid, c->mine, c->held, nmine, &own, &watch))
	{
		case ZKR_ABSENT:
			/* our node was removed behind our back, or this server is behind */
			node_not_seen(s);
			break;
		case ZKR_GRANT:
			s->at_head = zkr_foreign_ahead(kids, own, c->mine, nmine) == 0;
			s->first = own == 0;
			s->clear = zkr_exclusive_ahead(kids, own) == 0;
			grant(c, s);
			break;
		case ZKR_WAIT:
			wait_behind(c, s, kids, own, watch, nmine);
			break;
		case ZKR_MISMATCH:
			break;				/* semaphores only */
	}
}

/* ---- counting semaphores ---- */

/*
 * A semaphore waiter can be let in by the release of any node ahead of it,
 * so it cannot watch one node as a lock waiter does.  Instead every listing
 * of a semaphore key sets a child watch on the key node (worker.c), and the
 * cluster treats the key as one: a listing decides for all its local
 * waiters on the key, and a child event makes one of them read again.  A
 * release then costs one read per cluster with waiters, however many wait.
 */
static bool
sem_sibling(const ZklSlot *o, const ZklSlot *s)
{
	return o->zstate == ZKS_QUEUED && o->mode == ZKL_MODE_SEMAPHORE && !o->abandoned &&
		o->root_id == s->root_id && strcmp(o->key, s->key) == 0;
}

/* One waiter's part of a listing of its semaphore key. */
static void
sem_decide(ZklCore *c, ZklSlot *o, bool reader, const ZkrChild *kids, int n)
{
	int			own;
	int			other;
	int			i;

	switch (zkr_decide_semaphore(kids, n, o->uuid, &own, &other))
	{
		case ZKR_ABSENT:
			/* the reader's node is gone; another's may postdate the read: it reads itself */
			if (reader)
				start_over(c, o);
			else
				o->todo |= ZKT_CHILDREN;
			break;
		case ZKR_MISMATCH:
			fail_slot(c, o, ERR_BAD_PARAM, ZKS_DELETING,
					  "zk_semaphore holders %d differ from %d of a live request on the same key",
					  o->holders, other);
			o->todo = ZKT_DELETE;
			break;
		case ZKR_GRANT:
			grant(c, o);
			break;
		case ZKR_WAIT:
			if (o->nowait)
			{
				refuse_try(c, o);
				break;
			}
			o->todo &= ~ZKT_CHILDREN;	/* this listing is that read (see sem_event) */
			/* a node of ours that no request owns would hold its place for the session's life */
			if (wall(c) - o->requested_at >= (int64_t) recheck_ms(c) * 1000)
				for (i = 0; i < own; i++)
					c->env->suspect(c->env->arg, o, kids[i].name);
			break;
	}
}

/*
 * A listing of s's semaphore key: decide for every local waiter on it.  A
 * waiter that asked for a read since got this one: a child event reaches the
 * client before the reply of any read the server answers after the change.
 */
static void
sem_listing(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n)
{
	int64_t		now = wall(c);
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		/* an adopted node's Stat comes first (followups) */
		if ((o == s || sem_sibling(o, s)) && !(o->todo & ZKT_STAT))
		{
			o->checked_at = now;
			sem_decide(c, o, o == s, kids, n);
		}
	}
}

/*
 * One local waiter on s's semaphore key reads it again (its read sets the
 * watch again), unless one is due to already.  Returns whether one does.
 */
static bool
sem_reader(ZklCore *c, const ZklSlot *s)
{
	ZklSlot    *reader = NULL;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (!sem_sibling(o, s))
			continue;			/* s itself only if it waits too (not when being deleted) */
		if (o->todo & ZKT_CHILDREN)
			return true;
		if (reader == NULL)
			reader = o;
	}
	if (reader != NULL)
		reader->todo |= ZKT_CHILDREN;
	return reader != NULL;
}

/*
 * A child event on a key node: if it is a semaphore key of ours, a local
 * waiter reads it.  Returns whether the path was a semaphore key of ours.
 */
static bool
sem_event(ZklCore *c, const char *path)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];
		char		key_path[ZKL_PATH_LEN];

		if (o->zstate == ZKS_FREE || o->mode != ZKL_MODE_SEMAPHORE)
			continue;
		zcore_key_path(c->t, o, key_path);
		if (strcmp(key_path, path) == 0)
		{
			(void) sem_reader(c, o);
			return true;
		}
	}
	return false;
}

/*
 * A lock-delay ended for s's semaphore key: its local waiters were all
 * delayed by one listing, and one listing decides for them again.  s reads
 * (its turn is now) unless another waiter's read is due already.
 */
static void
sem_delay_over(ZklCore *c, ZklSlot *s)
{
	bool		due = false;
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (sem_sibling(o, s))
		{
			o->delayed_until = 0;
			due |= (o->todo & ZKT_CHILDREN) != 0;
		}
	}
	s->delayed_until = 0;
	if (!due)
		s->todo |= ZKT_CHILDREN;
}

/* A semaphore waiter's periodic re-read, or another's read just planned, counts for all. */
static void
sem_checked(ZklCore *c, const ZklSlot *s, int64_t now)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
		if (sem_sibling(&c->t->slots[i], s))
			c->t->slots[i].checked_at = now;
}

void
zcore_children_reply(ZklCore *c, uint64_t tag, int rc, const ZkrChild *kids, int n,
					 bool watched)
{
	ZklSlot    *s = reply_slot(c, tag);

	if (s == NULL || (s->zstate != ZKS_QUEUED && s->zstate != ZKS_HELD && s->zstate != ZKS_LINGER))
		return;
	/* who queues behind a node local hand-over may pass (cohort.c) */
	if (rc == ZOK)
		zcoh_listed(cohort_of(c), s, kids, n, watched);
	else
		zcoh_listing_failed(cohort_of(c), s, rc, zcore_outcome_unknown(rc) || session_error(rc));
	if (s->zstate != ZKS_QUEUED)
		return;					/* a holder's listing: for cohort.c only */
	if (rc == ZOK && s->mode == ZKL_MODE_SEMAPHORE)
		sem_listing(c, s, kids, n);
	else if (rc == ZOK)
		decide(c, s, kids, n);
	else if (zcore_outcome_unknown(rc))
		s->todo |= ZKT_CHILDREN;	/* again once reconnected */
	else if (rc == ZNONODE)
		node_not_seen(s);		/* key node gone, so is our node (or the server is behind) */
	else if (!session_error(rc))
		read_refused(c, s, rc);
	else
		read_again_later(c, s);
}

/*
 * The watch on the predecessor is set with a read of its data, not with
 * exists(): on a node that is already gone, exists() would leave a watch
 * for its creation, which never comes (names are unique), for the life of
 * the session.  A data read of a missing node sets no watch.
 */
void
zcore_watch_set_reply(ZklCore *c, uint64_t tag, int rc, const char *data, int len)
{
	ZklSlot    *s = reply_slot(c, tag);

	if (s == NULL || s->zstate != ZKS_QUEUED)
		return;

	/*
	 * ZNONODE: the predecessor went away before the watch was set.  A lost
	 * reply may or may not have set the watch.  Either way, look again.
	 */
	if (rc == ZNONODE || zcore_outcome_unknown(rc))
		s->todo |= ZKT_CHILDREN;
	/* a try-lock waits only for a node that may be lingering: a holder's answers false */
	else if (rc == ZOK && s->nowait && !zcore_data_lingers(data, len))
		refuse_try(c, s);
	else if (session_error(rc))
		read_again_later(c, s);
	/* refused (an ACL on that node): no watch; the re-checks try again */
}

/*
 * The mark is gone.  A lost reply: send it again while the node is ours.
 * ZNONODE: a held node is gone, whoever deleted it: the lock is not ours.
 */
void
zcore_unmark_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = reply_slot(c, tag);

	if (s == NULL || (s->zstate != ZKS_HELD && s->zstate != ZKS_QUEUED))
		return;
	if (zcore_outcome_unknown(rc))
		s->todo |= ZKT_UNMARK;
	else if (rc == ZNONODE && s->zstate == ZKS_HELD)
		lose_slot(c, s);
}

void
zcore_watch_event(ZklCore *c, uint64_t tag, bool deleted, const char *path)
{
	ZklSlot    *s;
	char		watched[ZKL_PATH_LEN];

	/* a key's child watch: whoever set it, routed by the key (semaphores, hand-over) */
	if (sem_event(c, path) || zcoh_event(cohort_of(c), path))
		return;
	s = reply_slot(c, tag);
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
	zcore_child_path(c->t, s, s->watch, watched);
	if (deleted && s->watch_sole && s->watch[0] != '\0' && strcmp(path, watched) == 0)
		s->todo |= ZKT_BARRIER;
	else
		s->todo |= ZKT_CHILDREN;
}

/* The read behind a sole blocker's delete event came back: grant, as decided then. */
void
zcore_barrier_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = reply_slot(c, tag);

	if (s == NULL || s->zstate != ZKS_QUEUED)
		return;
	if (rc == ZOK)
		grant(c, s);			/* nodes ahead only go: still nothing blocks it */
	else if (rc == ZNONODE)
		node_not_seen(s);		/* our node is gone, or the server is behind */
	else if (zcore_outcome_unknown(rc))
		s->todo |= ZKT_CHILDREN;
	else if (session_error(rc))
		read_again_later(c, s);
}

/* The local waiter that watches the node of slot d, if any. */
static ZklSlot *
successor(const ZklCore *c, const ZklSlot *d)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *w = &c->t->slots[i];

		if (w->zstate == ZKS_QUEUED && !w->abandoned && w->watch[0] != '\0' &&
			strcmp(w->watch, d->node) == 0 && w->root_id == d->root_id &&
			strcmp(w->key, d->key) == 0)
			return w;
	}
	return NULL;
}

/* A delete's outcome for its slot (in DELETING). */
static void
delete_result(ZklCore *c, ZklSlot *s, int rc)
{
	if (zcore_outcome_unknown(rc))
	{
		s->todo |= ZKT_DELETE;	/* retried until done or the session ends */
		c->t->counters.delete_retries++;
		return;
	}
	if (rc != ZOK && rc != ZNONODE && !session_error(rc))
	{
		/*
		 * Refused (an operator's ACL on the key node): the node blocks its
		 * key for as long as it stands, so it is sent again every re-check
		 * interval until it goes or the session ends.  Said once.
		 */
		if (!s->delete_refused)
		{
			char		msg[ZKL_ERRMSG_LEN + ZKL_NODE_BUFLEN];

			snprintf(msg, sizeof(msg), "zk_lock: could not delete lock node %s: %s; trying again",
					 s->node, c->env->rc_text(rc));
			c->env->warn(c->env->arg, msg);
		}
		s->delete_refused = true;
		s->delayed_until = mono(c) + (int64_t) recheck_ms(c) * 1000;
		c->t->counters.delete_retries++;
		return;
	}
	c->t->counters.releases++;
	if (rc == ZOK || rc == ZNONODE)
	{
		ZklSlot    *w = successor(c, s);

		if (w != NULL && w->watch_sole)
			grant(c, w);		/* see tell_successor() */
	}
	zks_move(s, ZKS_GONE);
	if (s->abandoned)
		free_slot(c, s);
}

void
zcore_delete_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = reply_slot(c, tag);

	write_answered(c);
	if (s == NULL || s->zstate != ZKS_DELETING)
		return;
	note_write_reply(c, s, rc);
	delete_result(c, s, rc);
}

/*
 * An op of a multi that the server refused because another op in it failed:
 * not applied.  Only a definite refusal says so; when the outcome of the
 * multi itself is unknown, so is each op's.
 */
static bool
rolled_back(int rc, int err)
{
	return rc != ZOK && !zcore_outcome_unknown(rc) && !session_error(rc) &&
		(err == ZOK || err == ZRUNTIMEINCONSISTENCY);
}

/* One op of a multi's reply; returns whether its created node is a stray. */
static bool
multi_op_reply(ZklCore *c, ZklSlot *s, bool del, const char *name, int rc, int err)
{
	bool		back = rolled_back(rc, err);

	/* a definite refusal names the op at fault; the others were rolled back */
	int			own = (rc != ZOK && !zcore_outcome_unknown(rc) && !back) ? err : rc;

	if (del)
	{
		if (s == NULL || s->zstate != ZKS_DELETING)
			return false;
		if (back)
		{
			s->todo |= ZKT_DELETE | ZKT_SOLO;
			c->t->counters.rolled_back++;
		}
		else
			delete_result(c, s, own);
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
		zks_move(s, ZKS_NEW);
		s->todo |= ZKT_SOLO;
		c->t->counters.rolled_back++;
	}
	else
		create_result(c, s, own, name, false, 0);
	return false;
}

void
zcore_multi_reply(ZklCore *c, int n, const uint64_t *tags, const bool *del,
				  const char *const *names, int rc, const int *errs, bool *stray)
{
	bool		noted = false;
	int			i;

	write_answered(c);
	for (i = 0; i < n; i++)
	{
		ZklSlot    *s = reply_slot(c, tags[i]);

		if (s != NULL && !noted)
		{
			note_write_reply(c, s, rc);	/* one answer for the whole multi */
			noted = true;
		}
		stray[i] = multi_op_reply(c, s, del[i], names[i], rc, errs[i]);
	}
}

void
zcore_recover_reply(ZklCore *c, uint64_t tag, int rc, const char *const *names, int n)
{
	ZklSlot    *s = reply_slot(c, tag);
	const char *found = NULL;
	int			i;

	if (s == NULL || s->zstate != ZKS_RECOVERING)
		return;
	if (zcore_outcome_unknown(rc))
	{
		zks_move(s, ZKS_RECOVER);
		return;
	}
	for (i = 0; rc == ZOK && i < n && !found; i++)
		if (zkr_name_has_uuid(names[i], s->uuid))
			found = names[i];

	if (found)
	{
		/* the create went through: adopt the node once its Stat says it is ours */
		copy_name(s->node, sizeof(s->node), found);
		forget_place(s);
		zcoh_new_node(s);
		zks_move(s, ZKS_QUEUED);
		s->todo |= ZKT_STAT;
	}
	else if ((rc == ZOK || rc == ZNONODE) && s->node[0] != '\0')
	{
		/* a node we had, not there after a sync: gone (node_not_seen) */
		zks_move(s, ZKS_GONE);
		lost_place(c, s);
	}
	else if (rc == ZOK || rc == ZNONODE)
	{
		/* it did not, or not yet: look once more later */
		c->env->ghost(c->env->arg, s);
		zks_move(s, ZKS_GONE);
		start_over(c, s);
	}
	else if (session_error(rc))
	{
		/*
		 * A leader closing the session answers so at once, and an election
		 * may yet undo the close: look again a little later, unless
		 * zcore_session_lost() re-queues it first.
		 */
		zks_move(s, ZKS_RECOVER);
		s->delayed_until = mono(c) + LOOK_AGAIN_US;
	}
	else
	{
		/*
		 * Refused (an operator's ACL on the key node): the request fails, but
		 * its node may stand, so the slot stays to look again a little later
		 * (in shared memory: a new worker looks too) and deletes it if found.
		 */
		fail_slot(c, s, rc == ZNOAUTH ? ERR_PRIVILEGE : c->env->rc_sqlstate(rc), ZKS_RECOVER,
				  "could not look up the ZooKeeper lock node under key node %s: %s", s->key,
				  c->env->rc_text(rc));
		s->delayed_until = mono(c) + LOOK_AGAIN_US;
	}
}

bool
zcore_stat_reply(ZklCore *c, uint64_t tag, int rc, int64_t owner, int64_t czxid, char *stray)
{
	ZklSlot    *s = reply_slot(c, tag);
	bool		ours = rc == ZOK && owner == c->t->session_id;

	if (s == NULL)
		return false;
	if (s->zstate == ZKS_QUEUED)
	{
		if (ours)
		{
			s->czxid = czxid;	/* the fencing token */
			/* an adopted node's place is read next; a re-check's look is done */
			if (!s->own_check)
				s->todo |= ZKT_CHILDREN;
			s->own_check = false;
		}
		else if (rc == ZNONODE)
		{
			s->own_check = false;
			node_not_seen(s);	/* gone, or the server is behind (a new handle's) */
		}
		else if (rc == ZOK)
		{
			/* another session's node: never adopt it; start over */
			zcore_child_path(c->t, s, s->node, stray);
			s->own_check = false;
			lost_place(c, s);
			return true;
		}
		else if (zcore_outcome_unknown(rc))
			s->todo |= ZKT_STAT;
	}
	else if (s->zstate == ZKS_HELD)
	{
		/* the token of a lock created inside a multi, asked for by its owner */
		if (ours)
		{
			s->czxid = czxid;
			wake(c, s);
		}
		else if (rc == ZOK || rc == ZNONODE)
			lose_slot(c, s);
		else if (zcore_outcome_unknown(rc))
			s->todo |= ZKT_STAT;
	}
	return false;
}

void
zcore_verify_reply(ZklCore *c, uint64_t tag, int rc)
{
	ZklSlot    *s = reply_slot(c, tag);

	if (s == NULL || s->zstate != ZKS_HELD || s->verify != ZKV_ASKED)
		return;
	if (rc == ZOK)
	{
		s->verify = ZKV_OK;
		wake(c, s);
	}
	else if (zcore_outcome_unknown(rc))
		s->todo |= ZKT_VERIFY;	/* again once reconnected */
	else if (rc == ZNONODE || rc == ZBADVERSION)
		lose_slot(c, s);		/* the node is gone: whoever deleted it, the lock is not ours */
	else if (!session_error(rc))
	{
		/* refused (an ACL on our node): the lock cannot be vouched for, and its node stands */
		if (!s->abandoned)
			lose_slot(c, s);
		zks_move(s, ZKS_DELETING);
		s->todo = ZKT_DELETE;
	}
	/* session errors: zcore_session_lost() marks the lock lost */
}

void
zcore_proof_sent(ZklCore *c, bool ok)
{
	c->proof_due = false;
	c->proof_in_flight = ok;
}

void
zcore_proof_reply(ZklCore *c, uint64_t gen, int rc)
{
	if (gen != c->proof_gen)
		return;					/* sent on a handle that is gone */
	c->proof_in_flight = false;
	if (leader_answered(rc))
		note_proof(c, c->proof_sent);
}

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
	op->attempt = c->t->slots[idx].attempt;
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
		if (s->todo & followups[i].bit)
		{
			s->todo &= ~followups[i].clears;
			if (followups[i].kind == OP_CHILDREN && s->mode == ZKL_MODE_SEMAPHORE)
				sem_checked(c, s, now);
			else if (followups[i].kind == OP_CHILDREN || followups[i].kind == OP_WATCH ||
					 (followups[i].kind == OP_STAT && s->own_check))
				s->checked_at = now;
			if (followups[i].kind == OP_CHILDREN)
				zcoh_listing_planned(s);
			new_op(c, idx, followups[i].kind);
			return true;
		}
	}
	return false;
}

/*
 * A delete is being sent.  A local waiter behind its node needs no watch
 * event to learn of it: if that node was its only blocker, the delete's
 * reply grants it (delete_result); otherwise it reads its queue right
 * behind the delete, in the same round trip (the server answers a session
 * in order, so the read sees the node gone).  Either way a hand-over inside
 * the cluster saves a round trip; the watch still fires later and finds the
 * lock held.  Returns whether a read was asked for.
 */
static bool
tell_successor(ZklCore *c, const ZklSlot *d)
{
	ZklSlot    *w = successor(c, d);
	int			i;

	if (w == NULL || w->watch_sole)
		return false;

	/*
	 * A node that held the lock exclusively, granted with no other backend's
	 * node ahead of it (not past waiters queued behind its backend's other
	 * node: recipe.c), has none ahead, and none can come later; so once it
	 * goes, nothing blocks the waiter right behind it, unless the holder's
	 * backend has another node on the key (it may be ahead, and it blocks
	 * the waiter).
	 */
	if (d->result == ZKR_GRANTED && d->mode == ZKL_MODE_EXCLUSIVE && d->at_head)
	{
		bool		sibling = false;

		for (i = 0; i < c->t->nused && !sibling; i++)
			sibling = same_key_owner(&c->t->slots[i], d);
		if (!sibling)
		{
			w->watch_sole = true;
			/* an exclusive waiter watches its immediate predecessor: then it is first */
			w->at_head = w->mode == ZKL_MODE_EXCLUSIVE;
			w->first = w->at_head;
			return false;
		}
	}
	w->todo |= ZKT_CHILDREN;
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

/* Whether the slot has, or may have, a node in ZooKeeper. */
static bool
has_node(const ZklSlot *s)
{
	return s->zstate != ZKS_FREE && s->zstate != ZKS_NEW && s->zstate != ZKS_GONE;
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

		if (o != s && has_node(o) && o->root_id != c->t->cur_root &&
			strcmp(o->key, s->key) == 0)
			return o->root_id;
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
		if (has_node(&c->t->slots[i]) && c->t->slots[i].root_id != c->t->cur_root)
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
		s->root_id = root_for(c, s, turn->old_roots);
		s->checked_at = turn->now;	/* the pipelined getChildren */
		/* the create's data says so (zcore_node_data): a lookup adopts it as it was */
		s->may_linger = zcoh_marks_linger(cohort_of(c), s) && data_markable(s->data);
	}
	s->attempt = ++c->t->next_attempt;
	op = new_op(c, idx, s->zstate == ZKS_NEW ? OP_CREATE : OP_RECOVER);
	op->parents = (s->todo & ZKT_PARENTS) != 0;
	op->solo = (s->todo & ZKT_SOLO) != 0;
	s->todo &= ~(ZKT_PARENTS | ZKT_SOLO);
	s->sent_at = turn->mono;
	s->key_denied = false;		/* the key node's answer, if asked, comes before this one's */
	zks_move(s, (s->zstate == ZKS_NEW) ? ZKS_CREATING : ZKS_RECOVERING);
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

		if (o->group != s->group || o->zstate == ZKS_FREE)
			continue;
		if (o->zstate == ZKS_CREATING || o->zstate == ZKS_RECOVER || o->zstate == ZKS_RECOVERING)
			return false;
		/*
		 * A member failed or given up: the backend ends the whole request.
		 * The others must not go out without it, as part of a group.
		 */
		if (o->abandoned || (o->result != ZKR_PENDING && o->result != ZKR_GRANTED))
			return false;
		placed |= o->zstate == ZKS_QUEUED || o->zstate == ZKS_HELD;
	}
	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *o = &c->t->slots[i];

		if (o->group != s->group || o->zstate != ZKS_NEW || o->abandoned)
			continue;

		/*
		 * A sibling kept its node from the group's multi (a lost reply's
		 * lookups disagreed: a create applied late, or a node deleted from
		 * outside): one made now would stand apart from it.
		 */
		if (placed)
			fail_place(c, o);
		else
			plan_send(c, i, turn);
	}
	return true;
}

/* Whether the slot's timer (delayed_until) ran out, cleared then; else the plan wakes for it. */
static bool
timer_out(ZklSlot *s, Turn *turn)
{
	long		left = ms_until(turn->mono, s->delayed_until);

	if (left > 0)
	{
		sooner(turn, left);
		return false;
	}
	s->delayed_until = 0;
	return true;
}

/* A request with no node: send its create (or lookup), or watch its connect deadline. */
static void
plan_unsent(ZklCore *c, int idx, Turn *turn)
{
	ZklSlot    *s = &c->t->slots[idx];
	long		left;

	if (s->abandoned && s->zstate == ZKS_NEW)
	{
		free_slot(c, s);
		return;
	}
	/* a refused lookup looks again when its timer runs out */
	if (s->zstate == ZKS_RECOVER && s->delayed_until != 0 && !timer_out(s, turn))
		return;
	if (turn->connected)
	{
		if (s->zstate == ZKS_NEW && !turn->writes_open)
			return;				/* held back for the next multi */
		if (s->zstate == ZKS_NEW && s->group != 0)
			(void) plan_group(c, idx, turn);
		else
			plan_send(c, idx, turn);
		return;
	}
	if (s->result != ZKR_PENDING || s->abandoned)
		return;
	left = ms_until(turn->now, s->queued_at + (int64_t) c->connect_timeout * 1000);
	/* a RECOVER slot stays: its node may exist, we delete it later */
	if (c->t->auth_unusable && s->zstate == ZKS_NEW)
		fail_slot(c, s, ERR_AUTH_SPEC, ZKS_GONE, "zk_lock.auth is unusable");
	else if (left <= 0)
		fail_slot(c, s, ERR_NO_CONNECT, s->zstate == ZKS_NEW ? ZKS_GONE : ZKS_RECOVER,
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
	long		left = s->delayed_until ? ms_until(turn->mono, s->delayed_until) :
		ms_until(turn->now, s->checked_at + (int64_t) recheck_ms(c) * 1000);

	if (left <= 0 && s->delayed_until &&
		c->env->grants_paused(c->env->arg, turn->mono, &until))
	{
		s->delayed_until = until;
		left = ms_until(turn->mono, until);
	}
	if (left > 0)
		sooner(turn, left);
	else if (s->mode == ZKL_MODE_SEMAPHORE && s->delayed_until)
		sem_delay_over(c, s);
	else
	{
		bool		recheck_all = s->delayed_until != 0 || s->watch[0] == '\0' ||
			c->env->may_be_orphan(c->env->arg, s->watch);

		s->delayed_until = 0;
		s->own_check = !recheck_all && ++s->rechecks % 4 == 0;
		s->todo |= recheck_all ? ZKT_CHILDREN : s->own_check ? ZKT_STAT : ZKT_WATCH;
	}
}

/* Send the slot's delete if one is owed; returns whether a successor must read now. */
static bool
plan_delete(ZklCore *c, int idx, Turn *turn)
{
	ZklSlot    *s = &c->t->slots[idx];
	ZklOp	   *op;

	/* a refused delete is sent again when its timer runs out */
	if (!(s->todo & ZKT_DELETE) && s->delayed_until != 0)
	{
		if (!timer_out(s, turn))
			return false;
		s->todo |= ZKT_DELETE | ZKT_SOLO;
	}
	if (!turn->connected || !turn->writes_open || !(s->todo & ZKT_DELETE))
		return false;
	op = new_op(c, idx, OP_DELETE);
	op->solo = (s->todo & ZKT_SOLO) != 0;
	s->todo &= ~(ZKT_DELETE | ZKT_SOLO);
	s->delayed_until = 0;		/* a grant's wait, from before it was given up */
	s->sent_at = turn->mono;

	/*
	 * A semaphore's local waiters read right behind the delete (the server
	 * answers in order): a hand-over in one round trip, and no read owed by
	 * a waiter that was just given up (it may be the one an event chose) is
	 * lost for the others.
	 */
	if (s->mode == ZKL_MODE_SEMAPHORE)
		return sem_reader(c, s);
	return tell_successor(c, s);
}

/* A queued or held slot: release it, re-check it, or send what it owes. */
static bool
plan_placed(ZklCore *c, int idx, Turn *turn)
{
	ZklSlot    *s = &c->t->slots[idx];

	if (s->abandoned && zcoh_keeps(cohort_of(c), s))
	{
		/* a local waiter gets its node once the listing asked for is back */
		if (turn->connected)
			(void) plan_followup(c, idx, turn->now);
		return false;
	}
	if (s->abandoned)
	{
		zks_move(s, ZKS_DELETING);
		s->todo = ZKT_DELETE;
		return plan_delete(c, idx, turn);
	}
	if (s->zstate == ZKS_QUEUED && s->try_until != 0 && !s->delayed_until)
	{
		long		left = ms_until(turn->mono, s->try_until);

		if (left <= 0)
		{
			refuse_try(c, s);	/* the node it waited for still stands: held after all */
			return plan_delete(c, idx, turn);
		}
		sooner(turn, left);
	}
	if (!turn->connected)
		return false;
	if (s->zstate == ZKS_QUEUED && s->todo == 0)
		plan_recheck(c, s, turn);
	(void) plan_followup(c, idx, turn->now);
	return false;
}

/* A deadlock's victim: its request fails with 40P01 and gives its place up. */
static void
fail_victim(ZklCore *c, ZklSlot *s, const char *msg)
{
	if (s->zstate == ZKS_COHORT)
		fail_slot(c, s, ERR_DEADLOCK, ZKS_GONE, "%s", msg);
	else
	{
		/* give up its place; its owner's abort releases what it holds */
		fail_slot(c, s, ERR_DEADLOCK, ZKS_DELETING, "%s", msg);
		s->todo = ZKT_DELETE;
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
	int64_t		due;
	int			victim;
	ZklSlot    *s;

	if (c->deadlock_timeout <= 0 || (due = zdl_next_due(c->t, c->deadlock_timeout)) == 0)
		return;
	due = CORE_MAX(due, c->deadlock_at);
	if (turn->now < due)
	{
		sooner(turn, ms_until(turn->now, due));
		return;
	}
	c->deadlock_at = turn->now + (int64_t) c->deadlock_timeout * 1000;
	sooner(turn, c->deadlock_timeout);
	victim = zdl_find_victim(cohort_of(c), turn->now, c->deadlock_timeout, msg, sizeof(msg));
	if (victim < 0)
		return;
	s = &c->t->slots[victim];
	sooner(turn, 0);			/* its delete goes out next turn */
	fail_victim(c, s, msg);
}

bool
zcore_fail_deadlock(ZklCore *c, int pid, const char *node, const char *msg)
{
	int			i;

	for (i = 0; i < c->t->nused; i++)
	{
		ZklSlot    *s = &c->t->slots[i];
		size_t		klen = strlen(s->key);

		if ((!zdl_waiting(s) && !zdl_sem_waiting(s)) || s->owner_pid != pid)
			continue;
		/* the wait the cycle was found through, still the same request */
		if (node[0] == '\0' ? s->zstate != ZKS_COHORT :
			(strncmp(node, s->key, klen) != 0 || node[klen] != '/' ||
			 strcmp(node + klen + 1, s->node) != 0))
			continue;
		fail_victim(c, s, msg);
		return true;
	}
	return false;
}

long
zcore_plan(ZklCore *c, bool connected, int64_t proof_at)
{
	Turn		turn;
	bool		successors = false;
	bool		held = false;
	int			i;

	turn.connected = connected;
	turn.writes_open = c->writes_in_flight < WRITE_WINDOW;
	turn.old_roots = old_roots_in_use(c);
	turn.now = wall(c);
	turn.mono = mono(c);
	turn.next_ms = -1;
	c->nops = 0;
	c->t->writes_held = connected && !turn.writes_open;
	turn.next_ms = zcoh_plan(cohort_of(c), connected, turn.now, turn.mono);
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
				if (s->abandoned)
					free_slot(c, s);
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

		if (s->zstate == ZKS_QUEUED && !s->abandoned && (s->todo & ZKT_CHILDREN))
			(void) plan_followup(c, i, turn.now);
	}
	if (connected)
		turn.next_ms = plan_proof(c, held, turn.mono, proof_at, turn.next_ms);
	return turn.next_ms;
}

/*
 * Whether a planned op may go inside a multi.  A multi-key request's creates
 * always do, even after a rollback or with their key nodes to make first
 * (the host sends those ahead of the multi).
 */
static bool
batchable(const ZklCore *c, const ZklOp *op)
{
	bool		grouped = op->kind == OP_CREATE && c->t->slots[op->idx].group != 0;

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
	uint64_t	group = c->t->slots[c->ops[i].idx].group;
	int			m = 0;
	int			j;

	for (j = 0; j < c->nops; j++)
	{
		const ZklOp *op = &c->ops[j];

		if (op->kind != OP_CREATE || op->batched || c->t->slots[op->idx].group != group)
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
zcore_batch_wanted(const ZklCore *c)
{
	int			eligible = 0;
	int			i;

	for (i = 0; i < c->nops; i++)
	{
		const ZklOp *op = &c->ops[i];

		if (!batchable(c, op))
			continue;
		if (++eligible >= 2 || (op->kind == OP_CREATE && c->t->slots[op->idx].group != 0))
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
zcore_next_batch(ZklCore *c, int *members)
{
	int			n = 0;
	int			i;
	int			j;

	/* the usual light-load case, one op: no multi */
	if (!zcore_batch_wanted(c))
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

		if (batchable(c, op) && op->kind == OP_CREATE && c->t->slots[op->idx].group != 0)
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
		if (op->kind == OP_CREATE && s->group != 0)
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
					c->t->slots[c->ops[members[0]].idx].group != 0))
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
