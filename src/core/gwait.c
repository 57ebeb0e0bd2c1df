/*
 * gwait.c — deadlocks across clusters (gwait.h): this cluster's document,
 * and the decision from every cluster's.
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
#include "gwait.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadlock.h"
#include "keys.h"

#define MAX_VERTS	512
#define MAX_EDGES	4096
#define MAX_HOLDS	4096
#define HEAVY		'L'			/* a vertex waiting in the lock manager */
#define AGE_UNKNOWN	INT64_MAX		/* no node's czxid known yet: counts as the youngest */

/* ---- this cluster's document ---- */

/* A wait this detector follows: a lock's or a semaphore's, under the current root. */
static bool
counts_across(const ZklTable *t, const ZklSlot *s)
{
	return (zdl_waiting(s) || zdl_sem_waiting(s)) && s->root_id == t->cur_root;
}

static bool
long_wait(const ZklTable *t, const ZklSlot *s, int64_t now, int timeout_ms)
{
	/* (the time first: the worker asks every turn while a document is out) */
	return now - s->requested_at >= (int64_t) timeout_ms * 1000 && counts_across(t, s);
}

int
zgw_sem_waiters(const ZklTable *t, int64_t now, int timeout_ms, int *slots, int max)
{
	int			n = 0;
	int			i;

	for (i = 0; i < t->nused && n < max; i++)
		if (zdl_sem_waiting(&t->slots[i]) && long_wait(t, &t->slots[i], now, timeout_ms))
			slots[n++] = i;
	return n;
}

bool
zgw_sem_wait(const ZklTable *t, int slot, const char *const *names, int n, ZgwSemWait *out)
{
	const ZklSlot *s = &t->slots[slot];
	ZkrChild	own;
	ZkrChild	c;
	int			i;

	memset(out, 0, sizeof(*out));
	if (!zkr_parse_child(s->node, &own))
		return false;
	out->slot = slot;
	out->attempt = s->attempt;
	for (i = 0; i < n; i++)
	{
		if (!zkr_parse_child(names[i], &c) || c.mode != ZKL_MODE_SEMAPHORE ||
			zkr_seq_cmp(c.seq, own.seq) >= 0)
			continue;
		if (out->nahead < ZGW_MAX_AHEAD)
			snprintf(out->ahead[out->nahead], ZKL_NODE_BUFLEN, "%s", names[i]);
		out->nahead++;
	}
	/* granted with fewer than its holders ahead (recipe.c) */
	out->need = out->nahead - s->holders + 1;
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

		if (o->zstate != ZKS_FREE && o->root_id == s->root_id && strcmp(o->node, name) == 0 &&
			strcmp(o->key, s->key) == 0)
			return o;
	}
	return NULL;
}

/* A node the backend's slot o holds or queues with, under the current root. */
static bool
own_node(const ZklTable *t, const ZklSlot *o, int pid)
{
	return o->owner_pid == pid && !o->abandoned && o->node[0] != '\0' &&
		o->root_id == t->cur_root && (o->zstate == ZKS_HELD || o->zstate == ZKS_QUEUED);
}

/*
 * Whether the node waiter s watches is queued behind a node s's backend
 * holds on the key that makes it harmless (recipe.c's blocks): a writer
 * behind our read never holds up our upgrade (core's rule), nothing
 * behind our exclusive node holds us up.  The core may still watch it
 * while local readers ride our node; those are what the upgrade waits for
 * (deadlock.c's edges), not that writer.  A reader behind our read does
 * hold up our upgrade.
 */
static bool
watch_behind_own(const ZklTable *t, const ZklSlot *s)
{
	ZkrChild	w;
	ZkrChild	o;
	int			i;

	if (!zkr_parse_child(s->watch, &w))
		return false;
	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *h = &t->slots[i];

		if (h != s && h->zstate == ZKS_HELD && own_node(t, h, s->owner_pid) &&
			h->root_id == s->root_id && strcmp(h->key, s->key) == 0 &&
			zkr_parse_child(h->node, &o) && zkr_seq_cmp(o.seq, w.seq) < 0 &&
			(o.mode == ZKL_MODE_EXCLUSIVE || w.mode == ZKL_MODE_EXCLUSIVE))
			return true;
	}
	return false;
}

/* Append to out at *n, as far as it goes; false once it does not fit. */
static bool
put(char *out, size_t len, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static bool
put(char *out, size_t len, size_t *n, const char *fmt, ...)
{
	va_list		ap;
	int			w;

	if (*n >= len)
		return false;
	va_start(ap, fmt);
	w = vsnprintf(out + *n, len - *n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t) w >= len - *n)
	{
		out[*n] = '\0';			/* the whole line or none of it */
		*n = len;
		return false;
	}
	*n += (size_t) w;
	return true;
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

		if (w->slot != idx || w->attempt != s->attempt)
			continue;
		if (!put(out, len, n, "S %d\n", w->need))
			return false;
		for (k = 0; k < w->nahead; k++)
			if (!put(out, len, n, "E %s/%s\n", s->key, w->ahead[k]))
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
	int			pid = w->owner_pid;
	int			i;

	for (i = 0; i < t->nused; i++)
		if (own_node(t, &t->slots[i], pid) && t->slots[i].czxid > 0 && t->slots[i].czxid < age)
			age = t->slots[i].czxid;
	if (!put(out, len, n, "V %d %" PRId64 " %c %s %s %" PRId64 "\n", pid, age, w->mode, w->key,
			 w->node[0] ? w->node : "-", w->requested_at))
		return false;
	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *s = &t->slots[i];
		const ZklSlot *o;
		int			pids[64];
		int			np;
		int			k;

		if (s->owner_pid != pid || !long_wait(t, s, now, timeout_ms))
			continue;
		if (s->mode == ZKL_MODE_SEMAPHORE)
		{
			if (!put_sem(s, i, in, out, len, n))
				return false;
			continue;
		}
		np = zdl_blockers(coh, s, pids, 64);
		for (k = 0; k < np; k++)
			if (!put(out, len, n, "P %d\n", pids[k]))
				return false;
		/*
		 * another cluster's node (one of ours is an edge above; a lingering
		 * one is nobody's; one behind our own holds up nothing)
		 */
		if (s->zstate == ZKS_QUEUED && s->watch[0] != '\0' &&
			((o = local_node(t, s, s->watch)) == NULL) && !watch_behind_own(t, s) &&
			!put(out, len, n, "E %s/%s\n", s->key, s->watch))
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
			!put(out, len, n, "H %s/%s\n", t->slots[i].key, t->slots[i].node))
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
		if (own_node(t, &t->slots[i], h->pid) && t->slots[i].czxid > 0 && t->slots[i].czxid < age)
			age = t->slots[i].czxid;
	if (!put(out, len, n, "V %d %" PRId64 " L - - %" PRId64 "\n", h->pid, age, h->since))
		return false;
	for (i = 0; i < h->nblockers && i < ZGW_MAX_BLOCKERS; i++)
		if (!put(out, len, n, "P %d\n", h->blockers[i]))
			return false;
	return put_holds(t, h->pid, out, len, n);
}

int
zgw_format(const ZgwLocal *in, char *out, size_t len)
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
	put(out, len, &n, "Z %" PRIx64 " %s\n", (uint64_t) in->session, name);
	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *s = &t->slots[i];
		bool		first = true;

		if (!long_wait(t, s, in->now, in->timeout_ms))
			continue;
		/* each backend once, from its first long wait */
		for (j = 0; j < i && first; j++)
			first = !(t->slots[j].owner_pid == s->owner_pid &&
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
		!put(out, full, &n, "K %" PRIx64 "\n", in->confirms))
		return 0;				/* (cannot be: its room was kept) */
	return entries > 0 ? (int) n : 0;
}

/* ---- the claim's confirmations ---- */

int
zgw_claim_format(uint64_t nonce, const int64_t *sessions, int ns, int64_t self,
				 char *out, size_t len)
{
	size_t		n = 0;
	int			i;

	put(out, len, &n, "D %" PRIx64 "\n", nonce);
	for (i = 0; i < ns; i++)
		if (sessions[i] != self)
			put(out, len, &n, "C %" PRIx64 "\n", (uint64_t) sessions[i]);
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
zgw_claim_asks(const char *data, int len, int64_t session)
{
	ClaimScan	c = {0, session, false, NULL, 0, 0};

	hex_lines(data, len, claim_line, &c);
	return c.asked ? c.nonce : 0;
}

int
zgw_claim_sessions(const char *data, int len, int64_t *out, int max)
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
zgw_confirms(const char *doc, uint64_t nonce)
{
	uint64_t	left = nonce;

	if (nonce == 0)
		return false;
	hex_lines(doc, (int) strlen(doc), confirm_line, &left);
	return left == 0;
}

int
zgw_holders(const ZklTable *t, int *pids, int max)
{
	int			n = 0;
	int			i;
	int			j;

	for (i = 0; i < t->nused && n < max; i++)
	{
		const ZklSlot *s = &t->slots[i];
		bool		known = false;

		if (!own_node(t, s, s->owner_pid) || s->owner_pid == 0 || s->zstate != ZKS_HELD)
			continue;
		for (j = 0; j < t->nused && !known; j++)
			known = t->slots[j].owner_pid == s->owner_pid &&
				(zdl_waiting(&t->slots[j]) || zdl_sem_waiting(&t->slots[j]));
		for (j = 0; j < n && !known; j++)
			known = pids[j] == s->owner_pid;
		if (!known)
			pids[n++] = s->owner_pid;
	}
	return n;
}

bool
zgw_node_live(const ZklTable *t, const char *name)
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
zgw_next_due(const ZklTable *t, int timeout_ms)
{
	return zdl_oldest_due(t, timeout_ms, counts_across);
}

uint64_t
zgw_fingerprint(const ZklTable *t, int64_t now, int timeout_ms)
{
	uint64_t	h = 1469598103934665603ULL;	/* FNV-1a */
	int			i;
	int			j;

	for (i = 0; i < t->nused; i++)
	{
		const ZklSlot *s = &t->slots[i];

		if (!long_wait(t, s, now, timeout_ms))
			continue;
		h = (h ^ (uint64_t) i) * 1099511628211ULL;
		h = (h ^ s->attempt) * 1099511628211ULL;
		h = (h ^ (uint64_t) s->zstate) * 1099511628211ULL;
		for (j = 0; s->watch[j]; j++)
			h = (h ^ (uint64_t) (unsigned char) s->watch[j]) * 1099511628211ULL;
	}
	return h;
}

/* ---- the decision ---- */

typedef struct Word
{
	const char *p;
	int			len;
} Word;

typedef struct Vert
{
	int64_t		session;
	int			pid;
	int64_t		age;
	char		mode;
	Word		key;
	Word		node;			/* its waiting node ("-": none) */
	Word		cluster;
	int64_t		since;			/* wall, its cluster's clock: when the wait began */
	int			need;			/* 0: waits for every edge; else for this many of them (S) */
	int			unknown;		/* of those, nodes no cluster published: they go */
	bool		goes;			/* it can go on: not deadlocked */
	/* Tarjan's */
	int			index;
	int			low;
	bool		on_stack;
	int			scc;
	bool		crosses;		/* it has a wait across clusters inside its part */
} Vert;

typedef struct RawEdge
{
	int			from;
	bool		local;			/* P: to a backend of the same session */
	int			pid;
	Word		name;			/* E: a node */
} RawEdge;

typedef struct Hold
{
	Word		name;
	int			vert;
} Hold;

typedef struct Edge
{
	int			from;
	int			to;
	Word		via;			/* the node waited for (len 0: a backend of one cluster) */
} Edge;

typedef struct Graph
{
	int			nv;
	Vert		v[MAX_VERTS];
	int			nraw;
	RawEdge		raw[MAX_EDGES];
	int			nholds;
	Hold		holds[MAX_HOLDS];
	int			ne;
	Edge		e[MAX_EDGES];
	int			first[MAX_VERTS + 1];	/* e[] sorted by from: first[v] .. first[v + 1] */
	int			stack[MAX_VERTS];
	int			nstack;
	int			next_index;
	int			nscc;
	/* the search for a cycle, over states (vertex, crossed a session yet): 2 v + crossed */
	int			parent[2 * MAX_VERTS];	/* the edge that reached a state */
	int			from[2 * MAX_VERTS];	/* and the state it left */
	int			queue[2 * MAX_VERTS];
	int			closing;		/* the edge back to the start, and its state */
	int			closing_from;
	bool		unproven;		/* the cycle needs more checks than a claim has */
} Graph;

static Graph g;					/* 300 kB: not on the stack */

static bool
word_eq(Word a, Word b)
{
	return a.len == b.len && memcmp(a.p, b.p, (size_t) a.len) == 0;
}

static int
word_cmp(Word a, Word b)
{
	int			c = memcmp(a.p, b.p, (size_t) (a.len < b.len ? a.len : b.len));

	return c != 0 ? c : (a.len > b.len) - (a.len < b.len);
}

/* The next word of the line at *p (which ends at end); len 0 at the line's end. */
static Word
next_word(const char **p, const char *end)
{
	Word		w;

	while (*p < end && **p == ' ')
		(*p)++;
	w.p = *p;
	while (*p < end && **p != ' ')
		(*p)++;
	w.len = (int) (*p - w.p);
	return w;
}

static int64_t
word_int(Word w, int base)
{
	char		buf[32];

	if (w.len <= 0 || w.len >= (int) sizeof(buf))
		return 0;
	memcpy(buf, w.p, (size_t) w.len);
	buf[w.len] = '\0';
	return (int64_t) strtoull(buf, NULL, base);
}

/* One document into the graph's vertices, raw edges and holds. */
static void
parse_doc(const char *doc)
{
	const char *p = doc;
	int64_t		session = 0;
	Word		cluster = {"-", 1};
	int			cur = -1;

	while (*p)
	{
		const char *end = strchr(p, '\n');
		const char *q = p;
		Word		tag;

		if (end == NULL)
			end = p + strlen(p);
		tag = next_word(&q, end);
		if (tag.len == 1 && tag.p[0] == 'Z')
		{
			session = word_int(next_word(&q, end), 16);
			cluster = next_word(&q, end);
			cur = -1;
		}
		else if (tag.len == 1 && tag.p[0] == 'V' && (session == 0 || g.nv >= MAX_VERTS))
			cur = -1;			/* left out: so are its lines, not given to another */
		else if (tag.len == 1 && tag.p[0] == 'V')
		{
			Vert	   *v = &g.v[g.nv];
			Word		mode;

			memset(v, 0, sizeof(*v));
			v->session = session;
			v->cluster = cluster;
			v->pid = (int) word_int(next_word(&q, end), 10);
			v->age = word_int(next_word(&q, end), 10);
			mode = next_word(&q, end);
			v->mode = mode.len == 1 ? mode.p[0] : '?';
			v->key = next_word(&q, end);
			v->node = next_word(&q, end);
			v->since = word_int(next_word(&q, end), 10);	/* 0 if absent */
			v->index = -1;
			v->scc = -1;
			cur = v->pid != 0 && v->key.len > 0 ? g.nv++ : -1;
		}
		else if (tag.len == 1 && tag.p[0] == 'S' && cur >= 0)
			g.v[cur].need = (int) word_int(next_word(&q, end), 10);
		else if (tag.len == 1 && (tag.p[0] == 'E' || tag.p[0] == 'P') && cur >= 0 &&
				 g.nraw >= MAX_EDGES)
			g.v[cur].unknown++;	/* left out: one that can go, as far as we know */
		else if (tag.len == 1 && (tag.p[0] == 'E' || tag.p[0] == 'P') && cur >= 0)
		{
			RawEdge    *r = &g.raw[g.nraw++];

			r->from = cur;
			r->local = tag.p[0] == 'P';
			if (r->local)
				r->pid = (int) word_int(next_word(&q, end), 10);
			else
				r->name = next_word(&q, end);
		}
		else if (tag.len == 1 && tag.p[0] == 'H' && cur >= 0 && g.nholds < MAX_HOLDS)
		{
			g.holds[g.nholds].name = next_word(&q, end);
			g.holds[g.nholds++].vert = cur;
		}
		p = *end ? end + 1 : end;
	}
}

static int
hold_cmp(const void *a, const void *b)
{
	return word_cmp(((const Hold *) a)->name, ((const Hold *) b)->name);
}

static int
edge_cmp(const void *a, const void *b)
{
	return ((const Edge *) a)->from - ((const Edge *) b)->from;
}

static void
add_edge(int from, int to, Word via)
{
	if (from == to)
		return;
	if (g.ne >= MAX_EDGES)
	{
		g.v[from].unknown++;	/* left out: one that can go, as far as we know */
		return;
	}
	g.e[g.ne].from = from;
	g.e[g.ne].to = to;
	g.e[g.ne++].via = via;
}

/* Raw edges to vertices: a node leads to every backend that holds it. */
static void
link(void)
{
	int			i;
	int			j;

	qsort(g.holds, g.nholds, sizeof(Hold), hold_cmp);
	g.ne = 0;
	for (i = 0; i < g.nraw; i++)
	{
		const RawEdge *r = &g.raw[i];

		if (r->local)
		{
			Word		none = {"", 0};

			for (j = 0; j < g.nv; j++)
				if (g.v[j].session == g.v[r->from].session && g.v[j].pid == r->pid)
					add_edge(r->from, j, none);
		}
		else
		{
			int			lo = 0;
			int			hi = g.nholds;

			while (lo < hi)		/* the first hold not below the name */
			{
				int			mid = (lo + hi) / 2;

				if (word_cmp(g.holds[mid].name, r->name) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (j = lo; j < g.nholds && word_eq(g.holds[j].name, r->name); j++)
				add_edge(r->from, g.holds[j].vert, r->name);
			if (j == lo)
				g.v[r->from].unknown++;	/* nobody published it: it goes in time */
		}
	}
	qsort(g.e, g.ne, sizeof(Edge), edge_cmp);
	for (i = 0, j = 0; i <= g.nv; i++)
	{
		while (j < g.ne && g.e[j].from < i)
			j++;
		g.first[i] = j;
	}
}

/*
 * Which backends can go on, as far as the documents tell: one whose every
 * wait ends once its blockers go on (or, for a semaphore, enough of them;
 * a node nobody published goes in time) goes on too.  The rest wait for
 * ever (least fixed point, from nobody).
 */
static void
settle(void)
{
	bool		changed = true;
	int			i;
	int			k;

	for (i = 0; i < g.nv; i++)
		g.v[i].goes = false;
	while (changed)
	{
		changed = false;
		for (i = 0; i < g.nv; i++)
		{
			Vert	   *v = &g.v[i];
			int			going = v->unknown;
			int			stuck = 0;

			if (v->goes)
				continue;
			for (k = g.first[i]; k < g.first[i + 1]; k++)
			{
				if (g.v[g.e[k].to].goes)
					going++;
				else
					stuck++;
			}
			if (v->need > 0 ? going >= v->need : stuck == 0)
			{
				v->goes = true;
				changed = true;
			}
		}
	}
}

/* Tarjan's strongly connected parts of those that cannot go on (depth at most MAX_VERTS). */
static void
strong(int v)
{
	int			k;

	g.v[v].index = g.v[v].low = g.next_index++;
	g.stack[g.nstack++] = v;
	g.v[v].on_stack = true;
	for (k = g.first[v]; k < g.first[v + 1]; k++)
	{
		int			w = g.e[k].to;

		if (g.v[w].goes)
			continue;			/* it goes on: no deadlock through it */
		if (g.v[w].index < 0)
		{
			strong(w);
			if (g.v[w].low < g.v[v].low)
				g.v[v].low = g.v[w].low;
		}
		else if (g.v[w].on_stack && g.v[w].index < g.v[v].low)
			g.v[v].low = g.v[w].index;
	}
	if (g.v[v].low == g.v[v].index)
	{
		int			w;

		do
		{
			w = g.stack[--g.nstack];
			g.v[w].on_stack = false;
			g.v[w].scc = g.nscc;
		} while (w != v);
		g.nscc++;
	}
}

/*
 * Whether an edge is one deadlock.c cannot see: from one session to
 * another, or from or to a lock manager's wait or a semaphore's.
 */
static bool
crossing(const Vert *a, const Vert *b)
{
	return a->session != b->session || a->mode == HEAVY || b->mode == HEAVY ||
		a->mode == ZKL_MODE_SEMAPHORE || b->mode == ZKL_MODE_SEMAPHORE;
}

/*
 * Whether part s holds a cycle of lock manager waits alone: peel off its
 * lock manager waiters that wait for none of the others left.
 */
static bool
heavy_cycle(int s)
{
	bool		peeled = true;
	int			i;
	int			k;

	for (i = 0; i < g.nv; i++)
		g.v[i].on_stack = g.v[i].scc == s && g.v[i].mode == HEAVY;	/* (scratch: left) */
	while (peeled)
	{
		peeled = false;
		for (i = 0; i < g.nv; i++)
		{
			bool		waits = false;

			if (!g.v[i].on_stack)
				continue;
			for (k = g.first[i]; k < g.first[i + 1] && !waits; k++)
				waits = g.v[g.e[k].to].on_stack;
			if (!waits)
			{
				g.v[i].on_stack = false;
				peeled = true;
			}
		}
	}
	for (i = 0; i < g.nv; i++)
		if (g.v[i].on_stack)
		{
			for (k = 0; k < g.nv; k++)
				g.v[k].on_stack = false;
			return true;
		}
	return false;
}

/* Whether a is younger than b: a later first node, then the greater session and pid. */
static bool
younger(const Vert *a, const Vert *b)
{
	if (a->age != b->age)
		return a->age > b->age;
	if (a->session != b->session)
		return (uint64_t) a->session > (uint64_t) b->session;
	return a->pid > b->pid;
}

/* A node ("<key>/<node>") the claim must find still there; each once. */
static void
add_check(ZgwVictim *v, const char *name)
{
	int			i;

	if (name[0] == '\0')
		return;
	if (v->nchecks >= ZGW_MAX_CHECKS)
	{
		g.unproven = true;		/* more than one claim can check */
		return;
	}
	for (i = 0; i < v->nchecks; i++)
		if (strcmp(v->checks[i], name) == 0)
			return;
	snprintf(v->checks[v->nchecks++], ZGW_NAME_LEN, "%s", name);
}

/* A session whose document the cycle was read from; each once. */
static void
add_session(ZgwVictim *v, int64_t session)
{
	int			i;

	for (i = 0; i < v->nsessions; i++)
		if (v->sessions[i] == session)
			return;
	if (v->nsessions < ZGW_MAX_CHECKS)
		v->sessions[v->nsessions++] = session;
	else
		g.unproven = true;
}

/* A vertex's waiting node as "<key>/<node>" ("": it waits for a hand-over, no node). */
static void
wait_node(const Vert *v, char *out)
{
	out[0] = '\0';
	if (v->node.len > 1 && v->key.len + v->node.len + 1 < ZGW_NAME_LEN)
		snprintf(out, ZGW_NAME_LEN, "%.*s/%.*s", v->key.len, v->key.p, v->node.len, v->node.p);
}

/* How a key reads in a message: its text, number or pair, as the user gave it. */
static void
key_text(Word key, char *out, size_t len)
{
	char		enc[ZKL_KEY_BUFLEN];
	char		kind;

	snprintf(enc, sizeof(enc), "%.*s", key.len, key.p);
	if (zkl_decode_key(enc, &kind, out, len) < 0)
		snprintf(out, len, "%s", enc);
}

static void
describe_step(const Vert *a, const Vert *b, char *out, size_t len, size_t *n)
{
	char		key[ZKL_KEY_BUFLEN];

	if (a->mode == HEAVY)
	{
		(void) put(out, len, n,
				   "%sProcess %d of cluster %.*s (ZooKeeper session 0x%" PRIx64 ") waits for a row or table lock, "
				   "blocked by process %d of cluster %.*s.",
				   *n > 0 ? "\n" : "", a->pid, a->cluster.len, a->cluster.p, (uint64_t) a->session,
				   b->pid, b->cluster.len, b->cluster.p);
		return;
	}
	key_text(a->key, key, sizeof(key));
	(void) put(out, len, n,
			   "%sProcess %d of cluster %.*s (ZooKeeper session 0x%" PRIx64 ") waits for %s zk_lock on key \"%s\", "
			   "blocked by process %d of cluster %.*s (ZooKeeper session 0x%" PRIx64 ").",
			   *n > 0 ? "\n" : "", a->pid, a->cluster.len, a->cluster.p, (uint64_t) a->session,
			   a->mode == ZKL_MODE_EXCLUSIVE ? "an exclusive" :
			   a->mode == ZKL_MODE_SEMAPHORE ? "a semaphore" : "a shared", key,
			   b->pid, b->cluster.len, b->cluster.p, (uint64_t) b->session);
}

/*
 * The shortest way round from y back to y that crosses from one session to
 * another, inside y's strongly connected part (for the checks and the
 * detail): breadth-first over (vertex, crossed yet) from (y, no) back to y
 * having crossed.  Leaves its last edge in g.closing.
 */
static bool
cross_cycle(int y)
{
	int			head = 0;
	int			tail = 0;
	int			i;
	int			k;

	for (i = 0; i < 2 * g.nv; i++)
		g.parent[i] = -2;		/* not reached */
	g.parent[2 * y] = -1;
	g.queue[tail++] = 2 * y;
	while (head < tail)
	{
		int			st = g.queue[head++];
		int			u = st / 2;

		for (k = g.first[u]; k < g.first[u + 1]; k++)
		{
			int			w = g.e[k].to;
			int			next = 2 * w + ((st % 2) || crossing(&g.v[u], &g.v[w]));

			if (g.v[w].scc != g.v[y].scc)
				continue;
			if (w == y && next % 2 == 1)
			{
				g.closing = k;
				g.closing_from = st;
				return true;
			}
			if (w != y && g.parent[next] == -2)
			{
				g.parent[next] = k;
				g.from[next] = st;
				g.queue[tail++] = next;
			}
		}
	}
	return false;
}

/* The cycle cross_cycle(y) found: the checks and the detail. */
static void
describe_cycle(int y, ZgwVictim *out)
{
	int			path[2 * MAX_VERTS];
	int			npath = 0;
	int			st = g.closing_from;
	size_t		n = 0;
	int			i;

	path[npath++] = g.closing;
	while (st != 2 * y && npath < 2 * MAX_VERTS)
	{
		path[npath++] = g.parent[st];
		st = g.from[st];
	}
	out->detail[0] = '\0';
	for (i = npath - 1; i >= 0; i--)
	{
		const Edge *e = &g.e[path[i]];
		char		name[ZGW_NAME_LEN];

		if (e->via.len > 0 && e->via.len < ZGW_NAME_LEN)
		{
			snprintf(name, sizeof(name), "%.*s", e->via.len, e->via.p);
			add_check(out, name);
		}
		wait_node(&g.v[e->from], name);
		add_check(out, name);
		add_session(out, g.v[e->from].session);
		describe_step(&g.v[e->from], &g.v[e->to], out->detail, sizeof(out->detail), &n);
	}

	/*
	 * A semaphore's waiter on the cycle goes on once enough of the nodes
	 * ahead go, any of them: every one that cannot go must still be there,
	 * and every document that says why it cannot go must be unchanged.
	 */
	for (i = npath - 1; i >= 0; i--)
	{
		int			v = g.e[path[i]].from;
		int			k;

		if (g.v[v].need == 0)
			continue;
		for (k = g.first[v]; k < g.first[v + 1]; k++)
		{
			char		name[ZGW_NAME_LEN];

			if (g.v[g.e[k].to].goes || g.e[k].via.len <= 0 || g.e[k].via.len >= ZGW_NAME_LEN)
				continue;
			snprintf(name, sizeof(name), "%.*s", g.e[k].via.len, g.e[k].via.p);
			add_check(out, name);
		}
		for (k = 0; k < g.nv; k++)
			if (!g.v[k].goes)
				add_session(out, g.v[k].session);
	}
}

bool
zgw_decide(const char *const *docs, int ndocs, int64_t self, ZgwVictim *out)
{
	int			i;
	int			s;

	g.nv = g.nraw = g.nholds = 0;
	for (i = 0; i < ndocs; i++)
		parse_doc(docs[i]);
	link();
	settle();
	g.nstack = 0;
	g.next_index = 0;
	g.nscc = 0;
	for (i = 0; i < g.nv; i++)
		if (g.v[i].index < 0 && !g.v[i].goes)
			strong(i);
	for (s = 0; s < g.nscc; s++)
	{
		int			y = -1;

		/*
		 * Every backend of a strongly connected part waits for ever.  The
		 * youngest one with a wait across clusters inside it is the victim
		 * (the others' own circles are deadlock.c's); only its cluster acts.
		 */
		for (i = 0; i < g.nv; i++)
			g.v[i].crosses = false;
		for (i = 0; i < g.ne; i++)
			if (g.v[g.e[i].from].scc == s && g.v[g.e[i].to].scc == s &&
				crossing(&g.v[g.e[i].from], &g.v[g.e[i].to]))
				g.v[g.e[i].from].crosses = g.v[g.e[i].to].crosses = true;
		for (i = 0; i < g.nv; i++)
			if (g.v[i].scc == s && g.v[i].crosses && g.v[i].mode != HEAVY &&
				(y < 0 || younger(&g.v[i], &g.v[y])))
				y = i;
		if (y >= 0 && heavy_cycle(s))
			continue;			/* core's own detector breaks that one first */
		if (y < 0 || g.v[y].session != self)
			continue;
		memset(out, 0, sizeof(*out));
		out->pid = g.v[y].pid;
		wait_node(&g.v[y], out->node);
		if (!cross_cycle(y))
			continue;			/* cannot be: y has an edge across, inside its part */
		g.unproven = false;
		describe_cycle(y, out);
		if (!g.unproven)
			return true;
	}
	return false;
}

/* ---- the edges, for the zk_lock_waits view ---- */

static void
copy_word(Word w, char *out, size_t len)
{
	snprintf(out, len, "%.*s", w.len, w.p);
}

/* The waiting side of a row, from vertex v. */
static void
waiting_side(const Vert *v, ZgwEdgeRow *r)
{
	memset(r, 0, sizeof(*r));
	r->w_session = v->session;
	copy_word(v->cluster, r->w_cluster, sizeof(r->w_cluster));
	r->w_pid = v->pid;
	r->w_mode = v->mode;
	if (v->mode != HEAVY)
		key_text(v->key, r->w_key, sizeof(r->w_key));
	r->w_since = v->since;
}

/* The blocking side from vertex b: who it is (what it holds is the edge's). */
static void
blocking_vertex(const Vert *b, ZgwEdgeRow *r)
{
	r->b_session = b->session;
	copy_word(b->cluster, r->b_cluster, sizeof(r->b_cluster));
	r->b_pid = b->pid;
}

/* The node "<key>/<node>" waited for: its key, mode and name. */
static void
blocking_node(Word name, ZgwEdgeRow *r)
{
	const char *slash = memchr(name.p, '/', (size_t) name.len);
	Word		key;
	const char *node;

	if (slash == NULL)
		return;
	key.p = name.p;
	key.len = (int) (slash - name.p);
	key_text(key, r->b_key, sizeof(r->b_key));
	node = slash + 1;
	r->b_mode = node[0];
	snprintf(r->b_node, sizeof(r->b_node), "%.*s", (int) (name.len - (node - name.p)), node);
}

int
zgw_edges(const char *const *docs, int ndocs, ZgwEdgeFn fn, void *arg)
{
	int			rows = 0;
	int			i;
	int			j;

	g.nv = g.nraw = g.nholds = 0;
	for (i = 0; i < ndocs; i++)
		parse_doc(docs[i]);
	link();						/* sorts the holds */
	for (i = 0; i < g.nraw; i++)
	{
		const RawEdge *e = &g.raw[i];
		ZgwEdgeRow	r;
		bool		found = false;

		waiting_side(&g.v[e->from], &r);
		if (e->local)
		{
			for (j = 0; j < g.nv && !found; j++)
				if (g.v[j].session == r.w_session && g.v[j].pid == e->pid)
				{
					blocking_vertex(&g.v[j], &r);
					found = true;
				}
			if (!found)
			{
				/* a backend of the same cluster that does not wait that long */
				r.b_session = r.w_session;
				snprintf(r.b_cluster, sizeof(r.b_cluster), "%s", r.w_cluster);
				r.b_pid = e->pid;
			}
			fn(arg, &r);
			rows++;
			continue;
		}
		for (j = 0; j < g.nholds; j++)
		{
			if (!word_eq(g.holds[j].name, e->name))
				continue;
			blocking_vertex(&g.v[g.holds[j].vert], &r);
			blocking_node(e->name, &r);
			fn(arg, &r);
			rows++;
			found = true;
		}
		if (!found)
		{
			blocking_node(e->name, &r);
			fn(arg, &r);
			rows++;
		}
	}
	return rows;
}
