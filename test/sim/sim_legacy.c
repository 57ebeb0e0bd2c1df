/*
 * sim_legacy.c — an earlier version's client on the same keys, in one seed
 * of five (clusters being upgraded one by one share the keys with those not
 * upgraded yet).
 *
 * An earlier zk_lock names its nodes without a mark (<pid>-<sequence>, no
 * ".r" or ".u<sequence>") and knows nothing of upgrades' places: it orders a
 * key's children by their sequence only, as the classic recipe does.  A
 * writer waits for the node right before it, a reader for the last writer
 * before it; it watches that one node and reads the children again when it
 * goes.  So an upgrade of this version must never be placed ahead of such a
 * node (recipe.c's upgrade_passes: bite 48): the earlier version would be
 * granted beside it.
 *
 * This is a model of another program, not of zk_lock's decisions: nothing
 * here restates src/.  Two backends of it share one session (with a
 * presence node named as an earlier version names it), each with a request
 * at a time; it holds a lock a short while and gives a wait up after a few
 * seconds.  Half of its requests are aimed: at a key a backend holds shared
 * and is about to upgrade (plan_plain's pause), one backend asks it
 * exclusive and gives that up after a while, the other then shared, behind
 * it.  Its lock-delay is an
 * earlier version's too: it cannot read this version's names, so every
 * change of <root>/.sessions (and its own new session) pauses its grants
 * for the longest lock-delay of the clusters (failure-semantics.md, mixed
 * versions); a holder whose session ended may still commit within its
 * proof's bound.  Anything unexpected
 * (a lost connection, an error) ends its session, as a crash would, and a
 * new one starts later.  A lock counts as held, from its grant to its
 * delete, only when that delete succeeded: the node was there all along.
 * A delete of its node that finds none fails the seed: nothing but it
 * deletes its nodes (zk_lock deletes only nodes of its own clusters).
 * Those spans go into the keys' history with the committed transactions',
 * and the same overlap check judges them.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

#define LEGACY_SYSID	"99"	/* no cluster's (those are 1 to NCLUSTERS) */
#define LEGACY_TIMEOUT_MS	4000
#define LEGACY_OWNER	77		/* the model's owner of its sessions (id reuse) */

/*
 * Its own random stream: the seed's stream draws as it would without it,
 * so the world around it goes on as in a seed without it (but for what its
 * nodes and sessions change).
 */
static uint64_t
l_rnd(Legacy *l)
{
	l->rng ^= l->rng << 13;
	l->rng ^= l->rng >> 7;
	l->rng ^= l->rng << 17;
	return l->rng;
}

static int
l_int(Legacy *l, int n)
{
	return (int) (l_rnd(l) % (uint64_t) n);
}

static bool
l_chance(Legacy *l, int percent)
{
	return l_int(l, 1000) < percent * 10;
}

static uint64_t
l_send(Legacy *l, ZkmReqKind kind, const char *path, int flags, bool watch)
{
	ZkmReq		req;

	memset(&req, 0, sizeof(req));
	req.kind = kind;
	req.flags = flags;
	req.watch = watch;
	req.tag = ++l->tags;
	req.wtag = watch ? req.tag : 0;
	snprintf(req.path, sizeof(req.path), "%s", path);
	zkm_send(S->m, l->client, &req);
	return req.tag;
}

static void
expect(Legacy *l, LegacyReq *r, LegacyState st, ZkmReqKind kind, const char *path, int flags, bool watch)
{
	r->st = st;
	r->want = l_send(l, kind, path, flags, watch);
}

static void
key_path(const LegacyReq *r, char *out, size_t len)
{
	snprintf(out, len, ROOT "/%s", key_name(r->key));
}

static void
idle(Legacy *l, LegacyReq *r)
{
	r->st = L_IDLE;
	r->node[0] = '\0';
	r->want = 0;
	r->next_at = zkm_now(S->m) + l_int(l, l_chance(l, 20) ? 1000000 : 200000);
}

/* The session ends as if the process died (its nodes go with the session). */
static void
crash(Legacy *l, const char *why)
{
	int			i;

	trace("legacy: %s: its session ends", why);
	zkm_close(S->m, l->client);
	l->client = -1;
	l->connected = false;
	l->open_at = zkm_now(S->m) + 500000 + l_int(l, 2000000);
	for (i = 0; i < LEGACY_REQS; i++)
		idle(l, &l->r[i]);
}

/* The longest lock-delay of the clusters, as applied (README: longer than every proof bound). */
static int64_t
delay_us(void)
{
	int64_t		most = 0;
	int			i;

	for (i = 0; i < S->ncl; i++)
	{
		int64_t		d = zc_table_lock_delay_ms(S->c[i].lock_delay, S->c[i].proof_bound);

		if (d > most)
			most = d;
	}
	return most * 1000;
}

/* The sessions' list read again, with a child watch: any change pauses grants. */
static void
watch_sessions(Legacy *l)
{
	l->swant = l_send(l, ZKM_CHILDREN, ROOT "/.sessions", 0, true);
	l->pause_until = zkm_now(S->m) + delay_us();
}

static void
create_node(Legacy *l, LegacyReq *r)
{
	char		path[ZKM_PATH];
	char		kp[ZKM_PATH];

	key_path(r, kp, sizeof(kp));
	snprintf(path, sizeof(path), "%s/%c-%s-" LEGACY_SYSID "-%d-", kp, r->mode, r->uuid, r->pid);
	expect(l, r, L_CREATING, ZKM_CREATE, path, ZKM_F_EPHEMERAL | ZKM_F_SEQUENTIAL, false);
}

/* A key some backend holds shared and will upgrade after its pause (plan_plain), or -1. */
static int
upgrade_coming(void)
{
	int			i;
	int			j;

	for (i = 0; i < S->ncl; i++)
		for (j = 0; j < S->c[i].nb; j++)
		{
			const Backend *b = &S->c[i].b[j];
			const Act  *a = &b->acts[b->next_act];

			if (b->st == B_HOLD && b->next_act >= 2 && b->next_act < b->nacts &&
				b->acts[b->next_act - 1].pause && !a->unlock && a->nkeys == 0 &&
				a->mode == ZKL_MODE_EXCLUSIVE && b->acts[b->next_act - 2].mode == ZKL_MODE_SHARED &&
				b->acts[b->next_act - 2].key == a->key)
				return a->key;
		}
	return -1;
}

static void
ask(Legacy *l, LegacyReq *r, int key, char mode, int64_t wait_us)
{
	uint64_t	u[2];

	r->key = key;
	r->mode = mode;
	u[0] = l_rnd(l);
	u[1] = l_rnd(l);
	zc_recipe_format_uuid((const unsigned char *) u, r->uuid);
	r->pid = 70000 + (int) ++l->asked;
	r->made_key = false;
	r->give_up_at = zkm_now(S->m) + wait_us;
	trace("legacy %d asks %s %c", r->pid, key_name(r->key), r->mode);
	create_node(l, r);
}

/*
 * Backend r asks a key the clusters use, read or write; or, aimed, both
 * ask the key of an upgrade to come: the first exclusive, given up after a
 * while, the second shared behind it.
 */
static void
ask_next(Legacy *l, LegacyReq *r)
{
	LegacyReq  *other = &l->r[r == &l->r[0]];
	int			k = upgrade_coming();

	if (k >= 0 && other->st == L_IDLE && l_chance(l, 50))
	{
		ask(l, r, k, ZKL_MODE_EXCLUSIVE, 1000000 + l_int(l, 2000000));
		ask(l, other, k, ZKL_MODE_SHARED, 2000000 + l_int(l, 3000000));
		return;
	}
	ask(l, r, S->hot_pct > 0 && l_chance(l, 60) ? 0 : l_int(l, NKEYS),
		l_chance(l, 50) ? ZKL_MODE_SHARED : ZKL_MODE_EXCLUSIVE, 500000 + l_int(l, 3000000));
}

/* The children read: granted, or watch the one node it waits for. */
static void
decide(Legacy *l, LegacyReq *r, const ZkmMsg *msg)
{
	const char *me = strrchr(r->node, '/') + 1;
	ZkrChild	mine;
	int			pred = -1;
	int32_t		pred_seq = 0;
	bool		found = false;
	int			i;

	(void) zc_recipe_parse_child(me, &mine);
	for (i = 0; i < msg->nchildren; i++)
	{
		ZkrChild	k;

		if (strcmp(msg->children[i], me) == 0)
			found = true;
		else if (zc_recipe_parse_child(msg->children[i], &k) &&
				 zc_recipe_seq_cmp(k.seq, mine.seq) < 0 && zc_kind_conflict(k.mode, r->mode) &&
				 (pred < 0 || zc_recipe_seq_cmp(k.seq, pred_seq) > 0))
		{
			pred = i;
			pred_seq = k.seq;
		}
	}
	if (!found)
	{
		trace("legacy %d: its node %s is gone", r->pid, me);
		idle(l, r);
	}
	else if (pred < 0 && (!l->sessions_seen || zkm_now(S->m) < l->pause_until))
	{
		/* first in line, in its lock-delay: it reads the children again after it */
		r->st = L_PAUSED;
		r->next_at = l->pause_until > zkm_now(S->m) ? l->pause_until : zkm_now(S->m) + 100000;
	}
	else if (pred < 0)
	{
		r->st = L_HELD;
		r->granted_at = zkm_now(S->m);
		r->next_at = r->granted_at + l_int(l, l_chance(l, 10) ? 1500000 : 200000);
		trace("legacy %d granted %s %c (%s)", r->pid, key_name(r->key), r->mode, me);
	}
	else
	{
		char		path[ZKM_PATH];
		char		kp[ZKM_PATH];

		key_path(r, kp, sizeof(kp));
		snprintf(path, sizeof(path), "%s/%s", kp, msg->children[pred]);
		expect(l, r, L_PEEK, ZKM_GETDATA, path, 0, true);
		r->wwant = r->want;
	}
}

static void
list(Legacy *l, LegacyReq *r)
{
	char		kp[ZKM_PATH];

	key_path(r, kp, sizeof(kp));
	expect(l, r, L_LISTING, ZKM_CHILDREN, kp, 0, false);
}

/* Its lock, held from the grant to a delete that found the node: a span. */
static void
released(Legacy *l, LegacyReq *r)
{
	Span		sp;

	memset(&sp, 0, sizeof(sp));
	sp.key = r->key;
	sp.mode = r->mode;
	sp.cluster = LEGACY_CL;
	sp.pid = r->pid;
	sp.from = r->granted_at;
	sp.to = r->released_at;
	snprintf(sp.uuid, sizeof(sp.uuid), "%s", r->uuid);
	check_span(&sp);
	add_history(&sp);
	l->spans++;
	trace("legacy %d released %s %c", r->pid, key_name(r->key), r->mode);
}

static void
l_reply(Legacy *l, LegacyReq *r, const ZkmMsg *msg)
{
	switch (r->st)
	{
		case L_MKKEY:
			if (msg->rc == ZOK || msg->rc == ZNODEEXISTS)
				create_node(l, r);
			else
				crash(l, "its key node could not be made");
			return;
		case L_CREATING:
			if (msg->rc == ZOK)
			{
				snprintf(r->node, sizeof(r->node), "%s", msg->path);
				list(l, r);
			}
			else if (msg->rc == ZNONODE && !r->made_key)
			{
				char		kp[ZKM_PATH];

				r->made_key = true;
				key_path(r, kp, sizeof(kp));
				expect(l, r, L_MKKEY, ZKM_CREATE, kp, ZKM_F_CONTAINER, false);
			}
			else
				crash(l, "its create failed");
			return;
		case L_LISTING:
			if (msg->rc == ZOK)
				decide(l, r, msg);
			else
				crash(l, "its listing failed");
			return;
		case L_PEEK:
			if (msg->rc == ZOK)
				r->st = L_WAITING;	/* the watch is set */
			else if (msg->rc == ZNONODE)
				list(l, r);
			else
				crash(l, "its read failed");
			return;
		case L_RELEASING:
		case L_GIVING_UP:
			/* no fault deletes its nodes: gone under a live session, another client deleted it */
			if (msg->rc == ZNONODE)
				fail("an earlier version's node %s was deleted by someone else", r->node);
			else if (msg->rc != ZOK)
			{
				crash(l, "its delete failed");
				return;
			}
			else if (r->st == L_RELEASING)
				released(l, r);
			idle(l, r);
			return;
		default:
			return;
	}
}

static void
l_msg(Legacy *l, const ZkmMsg *msg)
{
	int			i;

	if (msg->kind == ZKM_STATE)
	{
		if (msg->type != ZKM_ST_CONNECTED)
			crash(l, "its connection is lost");
		else if (!l->connected)
		{
			char		path[ZKM_PATH];

			/* an earlier version's presence node: the session id alone */
			l->connected = true;
			snprintf(path, sizeof(path), ROOT "/.sessions/%016" PRIx64, (uint64_t) zkm_session(S->m, l->client));
			(void) l_send(l, ZKM_CREATE, path, ZKM_F_EPHEMERAL, false);
			l->sessions_seen = false;
			watch_sessions(l);
		}
		return;
	}
	if (msg->tag == l->swant)
	{
		if (msg->kind == ZKM_EVENT)
			watch_sessions(l);
		else if (msg->rc == ZOK)
			l->sessions_seen = true;
		else if (msg->rc == ZNONODE)
			l->sessions_at = zkm_now(S->m) + 200000;	/* no cluster started yet: again later */
		else
			crash(l, "its sessions' listing failed");
		return;
	}
	for (i = 0; i < LEGACY_REQS; i++)
	{
		LegacyReq  *r = &l->r[i];

		if (msg->kind == ZKM_EVENT && r->st == L_WAITING && msg->tag == r->wwant)
			list(l, r);
		else if (msg->kind == ZKM_REPLY && msg->tag == r->want)
			l_reply(l, r, msg);
		else
			continue;
		return;
	}
}

/* What is due by r's own clock: a new request, a release, a wait given up. */
static bool
due(Legacy *l, LegacyReq *r)
{
	int64_t		now = zkm_now(S->m);

	switch (r->st)
	{
		case L_IDLE:
			if (S->quiet || now < r->next_at)
				return false;
			ask_next(l, r);
			return true;
		case L_HELD:
			if (now < r->next_at)
				return false;
			r->released_at = now;
			expect(l, r, L_RELEASING, ZKM_DELETE, r->node, 0, false);
			return true;
		case L_LISTING:
		case L_PEEK:
		case L_WAITING:
		case L_PAUSED:
			if (now >= r->give_up_at)
			{
				trace("legacy %d gives its wait up", r->pid);
				expect(l, r, L_GIVING_UP, ZKM_DELETE, r->node, 0, false);
				return true;
			}
			if (r->st != L_PAUSED || now < r->next_at)
				return false;
			list(l, r);
			return true;
		default:
			return false;
	}
}

void
legacy_draw(uint64_t seed)
{
	Legacy	   *l = &S->legacy;

	memset(l, 0, sizeof(*l));
	l->client = -1;
	l->on = (getenv("SIM_LEGACY") ? atoi(getenv("SIM_LEGACY")) != 0 : seed % 5 == 2) && S->ncl <= 3;
	l->rng = seed * 0xD1B54A32D192ED03ull + 7;
}

/*
 * Whether an upgrade waits a little after its shared lock (plan_plain): an
 * earlier version's node and another's writer may queue between the two.
 */
bool
legacy_upgrade_pause(void)
{
	Legacy	   *l = &S->legacy;

	return l->on && l_chance(l, 50);
}

/* One step of the earlier version's client, in a quarter of the steps.  Whether anything happened. */
bool
legacy_step(void)
{
	Legacy	   *l = &S->legacy;
	ZkmMsg	   *msg;
	int			i;

	if (!l->on || !l_chance(l, 25))
		return false;
	if (l->client < 0)
	{
		if (S->quiet || zkm_now(S->m) < l->open_at)
			return false;
		l->client = zkm_open_owned(S->m, LEGACY_TIMEOUT_MS, LEGACY_OWNER);
		if (l->client < 0)
		{
			l->open_at = zkm_now(S->m) + 1000000;
			return false;
		}
		trace("legacy: a new session");
		return true;
	}
	if ((msg = zkm_pop(S->m, l->client)) != NULL)
	{
		l_msg(l, msg);
		zkm_msg_free(msg);
		return true;
	}
	if (zkm_step_server(S->m, l->client) || zkm_step_reconnect(S->m, l->client))
		return true;
	if (!l->connected)
		return false;
	if (l->sessions_at != 0 && zkm_now(S->m) >= l->sessions_at)
	{
		l->sessions_at = 0;
		watch_sessions(l);
		return true;
	}
	for (i = 0; i < LEGACY_REQS; i++)
		if (due(l, &l->r[i]))
			return true;
	if (S->quiet && l->r[0].st == L_IDLE && l->r[1].st == L_IDLE)
	{
		trace("legacy: quiet, its session closes");
		zkm_close(S->m, l->client);
		l->client = -1;
		return true;
	}
	return false;
}

/* Quiet: the client finishes what it does (its server answers in order). */
bool
legacy_settle(void)
{
	Legacy	   *l = &S->legacy;

	return l->on && l->client >= 0 && zkm_step_server(S->m, l->client);
}

/* Nothing of it is left: no session open by it. */
bool
legacy_done(void)
{
	return !S->legacy.on || S->legacy.client < 0;
}
