/*
 * table.c — the backends' side of the slot table (see slot.h).  No I/O:
 * shmem.c wraps these in the lock and the latches.
 */
#include "table.h"
#include "slot_state.h"

#include "kinds.h"
#include "recipe.h"
#include "invariant.h"

#include <stdio.h>
#include <string.h>

int
zc_table_find_free(const ZklTable *t)
{
	int			i;

	/*
	 * The lowest free slot: slots in use stay packed at the bottom, so the
	 * worker's scans, which stop at nused, touch only those.
	 */
	for (i = 0; i < t->nslots; i++)
		if (t->slots[i].zstate == ZKS_FREE)
			return i;
	return -1;
}

/* src into dst of size bytes, cut short if need be (snprintf's "%s" showed in a claim's profile) */
static void
copy_str(char *dst, size_t size, const char *src)
{
	size_t		n = 0;

	while (n + 1 < size && src[n] != '\0')
		n++;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

void
zc_table_claim(ZklTable *t, int idx, const ZklRequest *r)
{
	ZklSlot    *s = &t->slots[idx];

	/* only a free slot is claimed, for a kind's request; holders only for a counted kind */
	ZC_ASSERT(s->zstate == ZKS_FREE);
	ZC_ASSERT(zc_kind_of(r->mode) != NULL && zc_kind_counted(r->mode) == (r->holders > 0));
	if (idx >= t->nused)
		t->nused = idx + 1;
	memset(s, 0, offsetof(ZklSlot, key));
	zc_slot_move(s, ZKS_NEW);
	s->ans.result = ZKL_RESULT_PENDING;
	s->req.nowait = r->nowait;
	s->own.scope = r->scope;
	s->req.mode = r->mode;
	s->req.holders = r->holders;
	s->req.group = r->group;
	s->req.owner_procno = r->procno;
	s->req.owner_pid = r->pid;
	/* a reused slot gets a new attempt number, which sets stale replies apart */
	s->req.attempt = ++t->next_attempt;
	s->req.ticket = s->req.attempt;
	s->req.requested_at = r->now;
	s->req.queued_at = r->now;
	copy_str(s->uuid, sizeof(s->uuid), r->uuid);
	copy_str(s->key, sizeof(s->key), r->key);
	s->node[0] = '\0';
	s->watch[0] = '\0';
	copy_str(s->data, sizeof(s->data), r->data);
}

void
zc_table_keep_deadlock(ZklTable *t, const ZklSlot *s, const char *detail)
{
	t->deadlock_attempt = s->req.attempt;
	snprintf(t->deadlock_detail, sizeof(t->deadlock_detail), "%s", detail);
}

const char *
zc_table_deadlock_detail(const ZklTable *t, const ZklSlot *s)
{
	return t->deadlock_attempt == s->req.attempt ? t->deadlock_detail : NULL;
}

bool
zc_table_grant(ZklTable *t, ZklSlot *s, int64_t wall)
{
	zc_slot_move(s, ZKS_HELD);
	/* a grant is of a node, made in the session that grants it */
	ZC_ASSERT(s->node[0] != '\0' && t->session_id != 0);
	if (s->ans.result != ZKL_RESULT_PENDING)
		return false;
	s->ans.session_id = t->session_tag;
	__atomic_thread_fence(__ATOMIC_RELEASE);	/* the owner reads it after the result, unlocked */
	s->ans.result = ZKL_RESULT_GRANTED;
	s->ans.granted_at = wall;
	t->counters.grants++;
	return true;
}

void
zc_table_free(ZklTable *t, ZklSlot *s)
{
	zc_slot_move(s, ZKS_FREE);
	s->own.abandoned = false;
	s->zk.todo = 0;
	s->req.owner_procno = -1;
	s->req.owner_pid = 0;
	while (t->nused > 0 && t->slots[t->nused - 1].zstate == ZKS_FREE)
		t->nused--;
}

bool
zc_table_abandon(ZklTable *t, ZklSlot *s)
{
	if (s->zstate == ZKS_NEW || s->zstate == ZKS_GONE || s->zstate == ZKS_COHORT)
	{
		/* nothing exists or is under way in ZooKeeper */
		zc_table_free(t, s);
		return false;
	}
	s->own.abandoned = true;
	return !t->writes_held;
}

int
zc_table_lock_delay_ms(int lock_delay_ms, int proof_bound_ms)
{
	return lock_delay_ms > 2 * proof_bound_ms ? lock_delay_ms : 2 * proof_bound_ms;
}

bool
zc_table_node_before(const ZklTable *t, int a, int b)
{
	const ZklSlot *sa = &t->slots[a];
	const ZklSlot *sb = &t->slots[b];
	ZkrChild	ca,
				cb;

	return sa->zk.root_id == sb->zk.root_id && strcmp(sa->key, sb->key) == 0 &&
		zc_recipe_parse_child(sa->node, &ca) && zc_recipe_parse_child(sb->node, &cb) &&
		zc_recipe_seq_cmp(ca.seq, cb.seq) < 0;
}

bool
zc_table_ask_stat(ZklSlot *s)
{
	if (s->zk.todo & ZKT_STAT)
		return false;			/* asked already */
	s->zk.todo |= ZKT_STAT;
	return true;
}

bool
zc_table_ask_verify(ZklSlot *s)
{
	s->own.verify = ZKV_ASKED;
	s->zk.todo |= ZKT_VERIFY;
	return true;
}

int
zc_table_conflicting_holder(const ZklTable *t, const ZklSlot *s, int from)
{
	int			i;

	for (i = from; i < t->nused && !zc_kind_counted(s->req.mode); i++)
	{
		const ZklSlot *o = &t->slots[i];

		if (o != s && o->zstate == ZKS_HELD && !o->own.abandoned && o->req.owner_pid != 0 &&
			(o->req.owner_pid != s->req.owner_pid || o->req.owner_procno != s->req.owner_procno) &&
			!zc_kind_counted(o->req.mode) && zc_kind_conflict(s->req.mode, o->req.mode) &&
			o->zk.root_id == s->zk.root_id && strcmp(o->key, s->key) == 0)
			return i;
	}
	return -1;
}

int
zc_table_upgraded(const ZklTable *t, const ZklSlot *s)
{
	int			i;

	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *o = &t->slots[i];

		if (o != s && o->zstate == ZKS_HELD && !o->own.abandoned &&
			o->req.owner_pid == s->req.owner_pid && o->req.owner_procno == s->req.owner_procno &&
			!zc_kind_counted(o->req.mode) && !zc_kind_conflict(o->req.mode, o->req.mode) &&
			zc_kind_conflict(s->req.mode, o->req.mode) &&
			o->zk.root_id == s->zk.root_id && strcmp(o->key, s->key) == 0)
			return i;
	}
	return -1;
}

uint64_t
zc_table_name_tag(const char *name)
{
	uint64_t	h = 1469598103934665603ULL;	/* FNV-1a */

	for (; *name; name++)
		h = (h ^ (uint64_t) (unsigned char) *name) * 1099511628211ULL;
	return h != 0 ? h : 1;
}

const char *
zc_table_wait_edge(const ZklSlot *s)
{
	return s->zk.edge_for != 0 && s->zk.edge_for == zc_table_name_tag(s->watch) ? s->zk.edge : s->watch;
}

int
zc_table_node_prefix(const ZklTable *t, const ZklSlot *s, const char *uuid, uint64_t sysid,
					 char *out, size_t outlen)
{
	int			u = zc_table_upgraded(t, s);
	ZkrChild	held;
	bool		upgrade = u >= 0 && zc_recipe_parse_child(t->slots[u].node, &held);

	return zc_recipe_node_prefix(s->req.mode, uuid, sysid, s->req.owner_pid, s->req.holders,
								 upgrade ? &held.seq : NULL, out, outlen);
}

int64_t
zc_table_session_tag(int64_t session_id, uint64_t nonce)
{
	int64_t		tag = (int64_t) ((uint64_t) session_id ^ nonce);

	return session_id == 0 ? 0 : (tag != 0 ? tag : 1);
}
