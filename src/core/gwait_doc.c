/*
 * gwait_doc.c — deadlocks across clusters (gwait.h): this cluster's
 * document of its long waits, a claim's data and its confirmations.  The
 * decision from every cluster's is gwait.c's, the edges for the view
 * gwait_edges.c's.
 *
 * A document is lines of words (no word holds a blank: keys and node names
 * are encoded, a cluster name has its blanks replaced):
 *     Z <session in hex> <cluster name>
 *     V <pid> <age> <mode> <key> <node or -> <since>   a backend waiting that long
 *     E <key>/<node>                           it waits for that node (not ours)
 *     P <pid>                                  it waits for that backend of ours
 *     H <key>/<node>                           a node it holds or queues with
 * A reader skips lines it does not know, so later versions may add some.
 */
#include "gwait_int.h"
#include "gwait_doc.h"

#include "table.h"

/* ---- this cluster's document ---- */

/* A wait this detector follows: a lock's or a semaphore's, under the current root. */
static bool
counts_across(const ZklTable *t, const ZklSlot *s)
{
	return (zc_deadlock_waiting(s) || zc_deadlock_sem_waiting(s)) && s->zk.root_id == t->cur_root;
}

static bool
long_wait(const ZklTable *t, const ZklSlot *s, int64_t now, int timeout_ms)
{
	/* (the time first: the worker asks every turn while a document is out) */
	return now - s->req.requested_at >= (int64_t) timeout_ms * 1000 && counts_across(t, s);
}

int
zc_gwait_sem_waiters(const ZklTable *t, int64_t now, int timeout_ms, int *slots, int max)
{
	int			n = 0;
	int			i;

	for (i = 0; i < t->nused && n < max; i++)
		if (zc_deadlock_sem_waiting(&t->slots[i]) && long_wait(t, &t->slots[i], now, timeout_ms))
			slots[n++] = i;
	return n;
}

bool
zc_gwait_sem_wait(const ZklTable *t, int slot, const char *const *names, int n, ZgwSemWait *out)
{
	const ZklSlot *s = &t->slots[slot];
	ZkrChild	own;
	ZkrChild	c;
	int			i;

	memset(out, 0, sizeof(*out));
	if (!zc_recipe_parse_child(s->node, &own))
		return false;
	out->slot = slot;
	out->attempt = s->req.attempt;
	for (i = 0; i < n; i++)
	{
		if (!zc_recipe_parse_child(names[i], &c) || !zc_kind_counted(c.mode) ||
			zc_recipe_seq_cmp(c.seq, own.seq) >= 0)
			continue;
		if (out->nahead < ZGW_MAX_AHEAD)
			snprintf(out->ahead[out->nahead], ZKL_NODE_BUFLEN, "%s", names[i]);
		out->nahead++;
	}
	/* granted with fewer than its holders ahead (recipe.c) */
	out->need = out->nahead - s->req.holders + 1;
	if (out->nahead > ZGW_MAX_AHEAD)
	{
		/* those named stand for the rest: as many fewer must go of them */
		out->need -= out->nahead - ZGW_MAX_AHEAD;
		out->nahead = ZGW_MAX_AHEAD;
	}
	return out->need > 0;
}

/* The slot of a live local request whose node is `name` on s's key, or NULL. */
static const ZklSlot *
local_node(const ZklTable *t, const ZklSlot *s, const char *name)
{
	int			i;

	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *o = &t->slots[i];

		if (o->zstate != ZKS_FREE && o->zk.root_id == s->zk.root_id && strcmp(o->node, name) == 0 &&
			strcmp(o->key, s->key) == 0)
			return o;
	}
	return NULL;
}

/* A node the backend's slot o holds or queues with, under the current root. */
static bool
own_node(const ZklTable *t, const ZklSlot *o, int pid)
{
	return o->req.owner_pid == pid && !o->own.abandoned && o->node[0] != '\0' &&
		o->zk.root_id == t->cur_root && (o->zstate == ZKS_HELD || o->zstate == ZKS_QUEUED);
}

/*
 * Whether the node waiter s watches is queued behind a node s's backend
 * holds on the key that lets s past it (the recipe's rule,
 * zc_recipe_passes): a writer behind our read never holds up our upgrade
 * (core's rule), nor does a local request not granted yet; nothing behind
 * our exclusive node holds us up.  The core may still watch it while local
 * readers ride our node; those are what the upgrade waits for (deadlock.c's
 * edges), not that node.  Another cluster's reader behind our read does
 * hold up our upgrade.
 */
static bool
watch_behind_own(const ZklTable *t, const ZklSlot *s, const char *watch)
{
	const ZklSlot *l = local_node(t, s, watch);
	bool		waits = l != NULL && l->zstate == ZKS_QUEUED && !l->own.abandoned &&
		l->req.owner_pid != s->req.owner_pid;
	ZkrChild	w;
	ZkrChild	o;
	int			i;

	if (!zc_recipe_parse_child(watch, &w))
		return false;
	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *h = &t->slots[i];

		if (h != s && h->zstate == ZKS_HELD && own_node(t, h, s->req.owner_pid) &&
			h->zk.root_id == s->zk.root_id && strcmp(h->key, s->key) == 0 &&
			zc_recipe_parse_child(h->node, &o) && zc_recipe_seq_cmp(o.seq, w.seq) < 0 &&
			zc_recipe_passes(o.mode, w.mode, waits))
			return true;
	}
	return false;
}

static bool put_holds(const ZklTable *t, int pid, char *out, size_t len, size_t *n);

/*
 * A semaphore's wait, as last listed: "S need", then the nodes ahead.
 * None if it was not listed since it (re)queued: no edge, no deadlock.
 */
static bool
put_sem(const ZklSlot *s, int idx, const ZgwLocal *in, char *out, size_t len, size_t *n)
{
	int			i;
	int			k;

	for (i = 0; i < in->nsem; i++)
	{
		const ZgwSemWait *w = &in->sem[i];

		if (w->slot != idx || w->attempt != s->req.attempt)
			continue;
		if (!zc_gwait_put(out, len, n, "S %d\n", w->need))
			return false;
		for (k = 0; k < w->nahead; k++)
			if (!zc_gwait_put(out, len, n, "E %s/%s\n", s->key, w->ahead[k]))
				return false;
	}
	return true;
}

/* One V entry: the backend of slot w and every wait and node of it. */
static bool
put_backend(const ZgwLocal *in, const ZklSlot *w, char *out, size_t len, size_t *n)
{
	ZklCohort  *coh = in->coh;
	const ZklTable *t = coh->t;
	int64_t		now = in->now;
	int			timeout_ms = in->timeout_ms;
	int64_t		age = AGE_UNKNOWN;
	int			pid = w->req.owner_pid;
	int			i;

	for (i = 0; i < t->nused; i++)
		if (own_node(t, &t->slots[i], pid) && t->slots[i].zk.czxid > 0 && t->slots[i].zk.czxid < age)
			age = t->slots[i].zk.czxid;
	if (!zc_gwait_put(out, len, n, "V %d %" PRId64 " %c %s %s %" PRId64 "\n", pid, age, w->req.mode, w->key,
			 w->node[0] ? w->node : "-", w->req.requested_at))
		return false;
	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *s = &t->slots[i];
		const char *edge = zc_table_wait_edge(s);
		const ZklSlot *o;
		int			pids[64];
		int			np;
		int			k;

		if (s->req.owner_pid != pid || !long_wait(t, s, now, timeout_ms))
			continue;
		if (zc_kind_counted(s->req.mode))
		{
			if (!put_sem(s, i, in, out, len, n))
				return false;
			continue;
		}
		np = zc_deadlock_blockers(coh, s, pids, 64);
		for (k = 0; k < np; k++)
			if (!zc_gwait_put(out, len, n, "P %d\n", pids[k]))
				return false;
		/*
		 * another cluster's node (one of ours is an edge above; a lingering
		 * one is nobody's; one behind our own holds up nothing; an upgrade
		 * over a node other local readers hold too: core_grant.c's edge)
		 */
		if (s->zstate == ZKS_QUEUED && edge[0] != '\0' &&
			((o = local_node(t, s, edge)) == NULL) && !watch_behind_own(t, s, edge) &&
			!zc_gwait_put(out, len, n, "E %s/%s\n", s->key, edge))
			return false;
	}
	return put_holds(t, pid, out, len, n);
}

/* Nodes of backend pid under the current root, as H lines. */
static bool
put_holds(const ZklTable *t, int pid, char *out, size_t len, size_t *n)
{
	int			i;

	for (i = 0; i < t->nused; i++)
		if (own_node(t, &t->slots[i], pid) &&
			!zc_gwait_put(out, len, n, "H %s/%s\n", t->slots[i].key, t->slots[i].node))
			return false;
	return true;
}

/* One L entry: a lock manager's waiter, the backends it waits for, its nodes. */
static bool
put_heavy(const ZklTable *t, const ZgwHeavy *h, char *out, size_t len, size_t *n)
{
	int64_t		age = AGE_UNKNOWN;
	int			i;

	for (i = 0; i < t->nused; i++)
		if (own_node(t, &t->slots[i], h->pid) && t->slots[i].zk.czxid > 0 && t->slots[i].zk.czxid < age)
			age = t->slots[i].zk.czxid;
	if (!zc_gwait_put(out, len, n, "V %d %" PRId64 " L - - %" PRId64 "\n", h->pid, age, h->since))
		return false;
	for (i = 0; i < h->nblockers && i < ZGW_MAX_BLOCKERS; i++)
		if (!zc_gwait_put(out, len, n, "P %d\n", h->blockers[i]))
			return false;
	return put_holds(t, h->pid, out, len, n);
}

int
zc_gwait_format(const ZgwLocal *in, char *out, size_t len)
{
	const ZklTable *t = in->coh->t;
	char		name[ZGW_CLUSTER_LEN];
	size_t		n = 0;
	size_t		at;
	size_t		full = len;
	int			entries = 0;
	int			i;
	int			j;

	/* room kept for the confirmation: without it the document would say nothing */
	if (in->confirms != 0)
		len = len > 24 ? len - 24 : 0;
	snprintf(name, sizeof(name), "%s", in->cluster && in->cluster[0] ? in->cluster : "-");
	for (i = 0; name[i]; i++)
		if (name[i] == ' ' || name[i] == '\t' || name[i] == '\n')
			name[i] = '_';
	zc_gwait_put(out, len, &n, "Z %" PRIx64 " %s\n", (uint64_t) in->session, name);
	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *s = &t->slots[i];
		bool		first = true;

		if (!long_wait(t, s, in->now, in->timeout_ms))
			continue;
		/* each backend once, from its first long wait */
		for (j = 0; j < i && first; j++)
			first = !(t->slots[j].req.owner_pid == s->req.owner_pid &&
					  long_wait(t, &t->slots[j], in->now, in->timeout_ms));
		if (!first)
			continue;
		at = n;
		if (!put_backend(in, s, out, len, &n))
		{
			/* no room: leave this backend out whole; a smaller one may fit */
			n = at;
			out[n] = '\0';
			continue;
		}
		entries++;
	}
	for (i = 0; entries > 0 && i < in->nheavy; i++)
	{
		at = n;
		if (!put_heavy(t, &in->heavy[i], out, len, &n))
		{
			n = at;
			out[n] = '\0';
		}
	}
	if (entries > 0 && in->confirms != 0 &&
		!zc_gwait_put(out, full, &n, "K %" PRIx64 "\n", in->confirms))
		return 0;				/* (cannot be: its room was kept) */
	return entries > 0 ? (int) n : 0;
}

/* ---- the claim's confirmations ---- */

int
zc_gwait_claim_format(uint64_t nonce, const int64_t *sessions, int ns, int64_t self,
				 char *out, size_t len)
{
	size_t		n = 0;
	int			i;

	zc_gwait_put(out, len, &n, "D %" PRIx64 "\n", nonce);
	for (i = 0; i < ns; i++)
		if (sessions[i] != self)
			zc_gwait_put(out, len, &n, "C %" PRIx64 "\n", (uint64_t) sessions[i]);
	return (int) n;
}

/* Each line "<tag> <hex>" of data, to fn; stops when fn returns false. */
static void
hex_lines(const char *data, int len, bool (*fn) (char tag, uint64_t value, void *arg), void *arg)
{
	int			i = 0;

	while (i < len)
	{
		char		line[40];
		int			k = 0;
		char		tag;
		unsigned long long value;

		while (i < len && data[i] != '\n' && k < (int) sizeof(line) - 1)
			line[k++] = data[i++];
		line[k] = '\0';
		while (i < len && data[i] != '\n')
			i++;
		i++;
		if (sscanf(line, "%c %llx", &tag, &value) == 2 && !fn(tag, (uint64_t) value, arg))
			return;
	}
}

typedef struct ClaimScan
{
	uint64_t	nonce;
	int64_t		session;		/* asked about */
	bool		asked;
	int64_t    *out;
	int			n;
	int			max;
} ClaimScan;

static bool
claim_line(char tag, uint64_t value, void *arg)
{
	ClaimScan  *c = arg;

	if (tag == 'D')
		c->nonce = value;
	else if (tag == 'C')
	{
		c->asked |= (int64_t) value == c->session;
		if (c->n < c->max)
			c->out[c->n++] = (int64_t) value;
	}
	return true;
}

uint64_t
zc_gwait_claim_asks(const char *data, int len, int64_t session)
{
	ClaimScan	c = {0, session, false, NULL, 0, 0};

	hex_lines(data, len, claim_line, &c);
	return c.asked ? c.nonce : 0;
}

int
zc_gwait_claim_sessions(const char *data, int len, int64_t *out, int max)
{
	ClaimScan	c = {0, 0, false, out, 0, max};

	hex_lines(data, len, claim_line, &c);
	return c.n;
}

static bool
confirm_line(char tag, uint64_t value, void *arg)
{
	uint64_t   *nonce = arg;

	if (tag == 'K' && value == *nonce)
	{
		*nonce = 0;
		return false;
	}
	return true;
}

bool
zc_gwait_confirms(const char *doc, uint64_t nonce)
{
	uint64_t	left = nonce;

	if (nonce == 0)
		return false;
	hex_lines(doc, (int) strlen(doc), confirm_line, &left);
	return left == 0;
}

int
zc_gwait_holders(const ZklTable *t, int *pids, int max)
{
	int			n = 0;
	int			i;
	int			j;

	for (i = 0; i < t->nused && n < max; i++)
	{
		const ZklSlot *s = &t->slots[i];
		bool		known = false;

		if (!own_node(t, s, s->req.owner_pid) || s->req.owner_pid == 0 || s->zstate != ZKS_HELD)
			continue;
		for (j = 0; j < t->nused && !known; j++)
			known = t->slots[j].req.owner_pid == s->req.owner_pid &&
				(zc_deadlock_waiting(&t->slots[j]) || zc_deadlock_sem_waiting(&t->slots[j]));
		for (j = 0; j < n && !known; j++)
			known = pids[j] == s->req.owner_pid;
		if (!known)
			pids[n++] = s->req.owner_pid;
	}
	return n;
}

bool
zc_gwait_node_live(const ZklTable *t, const char *name)
{
	int			i;

	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *s = &t->slots[i];
		size_t		klen = strlen(s->key);

		if (s->zstate != ZKS_FREE && s->zstate != ZKS_GONE && s->node[0] != '\0' &&
			strncmp(name, s->key, klen) == 0 && name[klen] == '/' &&
			strcmp(name + klen + 1, s->node) == 0)
			return true;
	}
	return false;
}

int64_t
zc_gwait_next_due(const ZklTable *t, int timeout_ms)
{
	return zc_deadlock_oldest_due(t, timeout_ms, counts_across);
}

uint64_t
zc_gwait_fingerprint(const ZklTable *t, int64_t now, int timeout_ms)
{
	uint64_t	h = 1469598103934665603ULL;	/* FNV-1a */
	int			i;

	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *s = &t->slots[i];

		if (!long_wait(t, s, now, timeout_ms))
			continue;
		h = (h ^ (uint64_t) i) * 1099511628211ULL;
		h = (h ^ s->req.attempt) * 1099511628211ULL;
		h = (h ^ (uint64_t) s->zstate) * 1099511628211ULL;
		h = (h ^ zc_table_name_tag(s->watch)) * 1099511628211ULL;
		h = (h ^ zc_table_name_tag(zc_table_wait_edge(s))) * 1099511628211ULL;
	}
	return h;
}

