/*
 * gwait.c — deadlocks across clusters (gwait.h): the decision from every
 * cluster's document (gwait_doc.c writes ours): the documents parsed into
 * one graph, its strongly connected parts, a cycle across clusters, its
 * victim, the checks and sessions a claim needs, and its description.
 */
#include "gwait_int.h"

Graph		zc_gwait_graph;

/* Append to out at *n, as far as it goes; false once it does not fit. */
bool
zc_gwait_put(char *out, size_t len, size_t *n, const char *fmt, ...)
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

bool
zc_gwait_word_eq(Word a, Word b)
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
void
zc_gwait_parse_doc(const char *doc)
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
		else if (tag.len == 1 && tag.p[0] == 'V' && (session == 0 || zc_gwait_graph.nv >= MAX_VERTS))
			cur = -1;			/* left out: so are its lines, not given to another */
		else if (tag.len == 1 && tag.p[0] == 'V')
		{
			Vert	   *v = &zc_gwait_graph.v[zc_gwait_graph.nv];
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
			cur = v->pid != 0 && v->key.len > 0 ? zc_gwait_graph.nv++ : -1;
		}
		else if (tag.len == 1 && tag.p[0] == 'S' && cur >= 0)
			zc_gwait_graph.v[cur].need = (int) word_int(next_word(&q, end), 10);
		else if (tag.len == 1 && (tag.p[0] == 'E' || tag.p[0] == 'P') && cur >= 0 &&
				 zc_gwait_graph.nraw >= MAX_EDGES)
			zc_gwait_graph.v[cur].unknown++;	/* left out: one that can go, as far as we know */
		else if (tag.len == 1 && (tag.p[0] == 'E' || tag.p[0] == 'P') && cur >= 0)
		{
			RawEdge    *r = &zc_gwait_graph.raw[zc_gwait_graph.nraw++];

			r->from = cur;
			r->local = tag.p[0] == 'P';
			if (r->local)
				r->pid = (int) word_int(next_word(&q, end), 10);
			else
				r->name = next_word(&q, end);
		}
		else if (tag.len == 1 && tag.p[0] == 'H' && cur >= 0 && zc_gwait_graph.nholds < MAX_HOLDS)
		{
			zc_gwait_graph.holds[zc_gwait_graph.nholds].name = next_word(&q, end);
			zc_gwait_graph.holds[zc_gwait_graph.nholds++].vert = cur;
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
	if (zc_gwait_graph.ne >= MAX_EDGES)
	{
		zc_gwait_graph.v[from].unknown++;	/* left out: one that can go, as far as we know */
		return;
	}
	zc_gwait_graph.e[zc_gwait_graph.ne].from = from;
	zc_gwait_graph.e[zc_gwait_graph.ne].to = to;
	zc_gwait_graph.e[zc_gwait_graph.ne++].via = via;
}

/* Raw edges to vertices: a node leads to every backend that holds it. */
void
zc_gwait_link(void)
{
	Graph	   *g = &zc_gwait_graph;
	int			i;
	int			j;

	qsort(g->holds, g->nholds, sizeof(Hold), hold_cmp);
	g->ne = 0;
	for (i = 0; i < g->nraw; i++)
	{
		const RawEdge *r = &g->raw[i];

		if (r->local)
		{
			Word		none = {"", 0};

			for (j = 0; j < g->nv; j++)
				if (g->v[j].session == g->v[r->from].session && g->v[j].pid == r->pid)
					add_edge(r->from, j, none);
		}
		else
		{
			int			lo = 0;
			int			hi = g->nholds;

			while (lo < hi)		/* the first hold not below the name */
			{
				int			mid = (lo + hi) / 2;

				if (word_cmp(g->holds[mid].name, r->name) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (j = lo; j < g->nholds && zc_gwait_word_eq(g->holds[j].name, r->name); j++)
				add_edge(r->from, g->holds[j].vert, r->name);
			if (j == lo)
				g->v[r->from].unknown++;	/* nobody published it: it goes in time */
		}
	}
	qsort(g->e, g->ne, sizeof(Edge), edge_cmp);
	for (i = 0, j = 0; i <= g->nv; i++)
	{
		while (j < g->ne && g->e[j].from < i)
			j++;
		g->first[i] = j;
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

	for (i = 0; i < zc_gwait_graph.nv; i++)
		zc_gwait_graph.v[i].goes = false;
	while (changed)
	{
		changed = false;
		for (i = 0; i < zc_gwait_graph.nv; i++)
		{
			Vert	   *v = &zc_gwait_graph.v[i];
			int			going = v->unknown;
			int			stuck = 0;

			if (v->goes)
				continue;
			for (k = zc_gwait_graph.first[i]; k < zc_gwait_graph.first[i + 1]; k++)
			{
				if (zc_gwait_graph.v[zc_gwait_graph.e[k].to].goes)
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

	zc_gwait_graph.v[v].index = zc_gwait_graph.v[v].low = zc_gwait_graph.next_index++;
	zc_gwait_graph.stack[zc_gwait_graph.nstack++] = v;
	zc_gwait_graph.v[v].on_stack = true;
	for (k = zc_gwait_graph.first[v]; k < zc_gwait_graph.first[v + 1]; k++)
	{
		int			w = zc_gwait_graph.e[k].to;

		if (zc_gwait_graph.v[w].goes)
			continue;			/* it goes on: no deadlock through it */
		if (zc_gwait_graph.v[w].index < 0)
		{
			strong(w);
			if (zc_gwait_graph.v[w].low < zc_gwait_graph.v[v].low)
				zc_gwait_graph.v[v].low = zc_gwait_graph.v[w].low;
		}
		else if (zc_gwait_graph.v[w].on_stack && zc_gwait_graph.v[w].index < zc_gwait_graph.v[v].low)
			zc_gwait_graph.v[v].low = zc_gwait_graph.v[w].index;
	}
	if (zc_gwait_graph.v[v].low == zc_gwait_graph.v[v].index)
	{
		int			w;

		do
		{
			w = zc_gwait_graph.stack[--zc_gwait_graph.nstack];
			zc_gwait_graph.v[w].on_stack = false;
			zc_gwait_graph.v[w].scc = zc_gwait_graph.nscc;
		} while (w != v);
		zc_gwait_graph.nscc++;
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
		zc_kind_counted(a->mode) || zc_kind_counted(b->mode);
}

/*
 * Whether part s holds a cycle of lock manager waits alone: peel off its
 * lock manager waiters that wait for none of the others left.
 */
static bool
heavy_cycle(int s)
{
	Graph	   *g = &zc_gwait_graph;
	bool		peeled = true;
	int			i;
	int			k;

	for (i = 0; i < g->nv; i++)
		g->v[i].on_stack = g->v[i].scc == s && g->v[i].mode == HEAVY;	/* (scratch: left) */
	while (peeled)
	{
		peeled = false;
		for (i = 0; i < g->nv; i++)
		{
			bool		waits = false;

			if (!g->v[i].on_stack)
				continue;
			for (k = g->first[i]; k < g->first[i + 1] && !waits; k++)
				waits = g->v[g->e[k].to].on_stack;
			if (!waits)
			{
				g->v[i].on_stack = false;
				peeled = true;
			}
		}
	}
	for (i = 0; i < g->nv; i++)
		if (g->v[i].on_stack)
		{
			for (k = 0; k < g->nv; k++)
				g->v[k].on_stack = false;
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
		zc_gwait_graph.unproven = true;		/* more than one claim can check */
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
		zc_gwait_graph.unproven = true;
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
void
zc_gwait_key_text(Word key, char *out, size_t len)
{
	char		enc[ZKL_KEY_BUFLEN];
	char		kind;

	snprintf(enc, sizeof(enc), "%.*s", key.len, key.p);
	if (zc_keys_decode_key(enc, &kind, out, len) < 0)
		snprintf(out, len, "%s", enc);
}

/*
 * One step of a circle of waits, a line of a 40P01's DETAIL (after a newline
 * unless it is the first): who waits for which key in which mode, blocked
 * by whom.  The key is encoded (a key node's name) and reads as the user
 * gave it: its text, number or pair.  `where` and `b_where` place the two
 * backends: "" inside one cluster (deadlock.c), a cluster and a session
 * across clusters.
 */
void
zc_gwait_put_step(char *out, size_t len, size_t *n, int pid, const char *where, char mode,
				  const char *key, int blocker, const char *b_where)
{
	char		shown[ZKL_KEY_BUFLEN];
	Word		w = {key, (int) strlen(key)};

	zc_gwait_key_text(w, shown, sizeof(shown));
	(void) zc_gwait_put(out, len, n, "%sProcess %d%s waits for %s zk_lock on key \"%s\", "
						"blocked by process %d%s.", *n > 0 ? "\n" : "", pid, where,
						zc_kind_a_name(mode) != NULL ? zc_kind_a_name(mode) : "a", shown, blocker, b_where);
}

/* Where a vertex's backend runs, for a step: " of cluster c (ZooKeeper session 0x…)". */
static void
place(const Vert *v, char *out, size_t len)
{
	snprintf(out, len, " of cluster %.*s (ZooKeeper session 0x%" PRIx64 ")", v->cluster.len, v->cluster.p,
			 (uint64_t) v->session);
}

static void
describe_step(const Vert *a, const Vert *b, char *out, size_t len, size_t *n)
{
	char		key[ZKL_KEY_BUFLEN];
	char		a_where[ZGW_CLUSTER_LEN + 64];
	char		b_where[ZGW_CLUSTER_LEN + 64];

	place(a, a_where, sizeof(a_where));
	if (a->mode == HEAVY)
	{
		(void) zc_gwait_put(out, len, n, "%sProcess %d%s waits for a row or table lock, "
						   "blocked by process %d of cluster %.*s.",
						   *n > 0 ? "\n" : "", a->pid, a_where, b->pid, b->cluster.len, b->cluster.p);
		return;
	}
	place(b, b_where, sizeof(b_where));
	snprintf(key, sizeof(key), "%.*s", a->key.len, a->key.p);
	zc_gwait_put_step(out, len, n, a->pid, a_where, a->mode, key, b->pid, b_where);
}

/*
 * The shortest way round from y back to y that crosses from one session to
 * another, inside y's strongly connected part (for the checks and the
 * detail): breadth-first over (vertex, crossed yet) from (y, no) back to y
 * having crossed.  Leaves its last edge in zc_gwait_graph.closing.
 */
static bool
cross_cycle(int y)
{
	int			head = 0;
	int			tail = 0;
	int			i;
	int			k;

	for (i = 0; i < 2 * zc_gwait_graph.nv; i++)
		zc_gwait_graph.parent[i] = -2;		/* not reached */
	zc_gwait_graph.parent[2 * y] = -1;
	zc_gwait_graph.queue[tail++] = 2 * y;
	while (head < tail)
	{
		int			st = zc_gwait_graph.queue[head++];
		int			u = st / 2;

		for (k = zc_gwait_graph.first[u]; k < zc_gwait_graph.first[u + 1]; k++)
		{
			int			w = zc_gwait_graph.e[k].to;
			int			next = 2 * w + ((st % 2) || crossing(&zc_gwait_graph.v[u], &zc_gwait_graph.v[w]));

			if (zc_gwait_graph.v[w].scc != zc_gwait_graph.v[y].scc)
				continue;
			if (w == y && next % 2 == 1)
			{
				zc_gwait_graph.closing = k;
				zc_gwait_graph.closing_from = st;
				return true;
			}
			if (w != y && zc_gwait_graph.parent[next] == -2)
			{
				zc_gwait_graph.parent[next] = k;
				zc_gwait_graph.from[next] = st;
				zc_gwait_graph.queue[tail++] = next;
			}
		}
	}
	return false;
}

/* The cycle cross_cycle(y) found: the checks and the detail. */
static void
describe_cycle(int y, ZgwVictim *out)
{
	Graph	   *g = &zc_gwait_graph;
	int			path[2 * MAX_VERTS];
	int			npath = 0;
	int			st = g->closing_from;
	size_t		n = 0;
	int			i;

	path[npath++] = g->closing;
	while (st != 2 * y && npath < 2 * MAX_VERTS)
	{
		path[npath++] = g->parent[st];
		st = g->from[st];
	}
	out->detail[0] = '\0';
	for (i = npath - 1; i >= 0; i--)
	{
		const Edge *e = &g->e[path[i]];
		char		name[ZGW_NAME_LEN];

		if (e->via.len > 0 && e->via.len < ZGW_NAME_LEN)
		{
			snprintf(name, sizeof(name), "%.*s", e->via.len, e->via.p);
			add_check(out, name);
		}
		wait_node(&g->v[e->from], name);
		add_check(out, name);
		add_session(out, g->v[e->from].session);
		describe_step(&g->v[e->from], &g->v[e->to], out->detail, sizeof(out->detail), &n);
	}

	/*
	 * A semaphore's waiter on the cycle goes on once enough of the nodes
	 * ahead go, any of them: every one that cannot go must still be there,
	 * and every document that says why it cannot go must be unchanged.
	 */
	for (i = npath - 1; i >= 0; i--)
	{
		int			v = g->e[path[i]].from;
		int			k;

		if (g->v[v].need == 0)
			continue;
		for (k = g->first[v]; k < g->first[v + 1]; k++)
		{
			char		name[ZGW_NAME_LEN];

			if (g->v[g->e[k].to].goes || g->e[k].via.len <= 0 || g->e[k].via.len >= ZGW_NAME_LEN)
				continue;
			snprintf(name, sizeof(name), "%.*s", g->e[k].via.len, g->e[k].via.p);
			add_check(out, name);
		}
		for (k = 0; k < g->nv; k++)
			if (!g->v[k].goes)
				add_session(out, g->v[k].session);
	}
}

bool
zc_gwait_decide(const char *const *docs, int ndocs, int64_t self, ZgwVictim *out)
{
	Graph	   *g = &zc_gwait_graph;
	int			i;
	int			s;

	g->nv = g->nraw = g->nholds = 0;
	for (i = 0; i < ndocs; i++)
		zc_gwait_parse_doc(docs[i]);
	zc_gwait_link();
	settle();
	g->nstack = 0;
	g->next_index = 0;
	g->nscc = 0;
	for (i = 0; i < g->nv; i++)
		if (g->v[i].index < 0 && !g->v[i].goes)
			strong(i);
	for (s = 0; s < g->nscc; s++)
	{
		int			y = -1;

		/*
		 * Every backend of a strongly connected part waits for ever.  The
		 * youngest one with a wait across clusters inside it is the victim
		 * (the others' own circles are deadlock.c's); only its cluster acts.
		 */
		for (i = 0; i < g->nv; i++)
			g->v[i].crosses = false;
		for (i = 0; i < g->ne; i++)
			if (g->v[g->e[i].from].scc == s && g->v[g->e[i].to].scc == s &&
				crossing(&g->v[g->e[i].from], &g->v[g->e[i].to]))
				g->v[g->e[i].from].crosses = g->v[g->e[i].to].crosses = true;
		for (i = 0; i < g->nv; i++)
			if (g->v[i].scc == s && g->v[i].crosses && g->v[i].mode != HEAVY &&
				(y < 0 || younger(&g->v[i], &g->v[y])))
				y = i;
		if (y >= 0 && heavy_cycle(s))
			continue;			/* core's own detector breaks that one first */
		if (y < 0 || g->v[y].session != self)
			continue;
		memset(out, 0, sizeof(*out));
		out->pid = g->v[y].pid;
		wait_node(&g->v[y], out->node);
		if (!cross_cycle(y))
			continue;			/* cannot be: y has an edge across, inside its part */
		g->unproven = false;
		describe_cycle(y, out);
		if (!g->unproven)
			return true;
	}
	return false;
}

