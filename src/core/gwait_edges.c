/*
 * gwait_edges.c — the joined graph's edges for the zk_lock_waits view
 * (gwait.h).
 */
#include "gwait_int.h"
#include "gwait_edges.h"

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
		zc_gwait_key_text(v->key, r->w_key, sizeof(r->w_key));
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
	zc_gwait_key_text(key, r->b_key, sizeof(r->b_key));
	node = slash + 1;
	r->b_mode = node[0];
	snprintf(r->b_node, sizeof(r->b_node), "%.*s", (int) (name.len - (node - name.p)), node);
}

int
zc_gwait_edges(const char *const *docs, int ndocs, ZgwEdgeFn fn, void *arg)
{
	int			rows = 0;
	int			i;
	int			j;

	zc_gwait_graph.nv = zc_gwait_graph.nraw = zc_gwait_graph.nholds = 0;
	for (i = 0; i < ndocs; i++)
		zc_gwait_parse_doc(docs[i]);
	zc_gwait_link();						/* sorts the holds */
	for (i = 0; i < zc_gwait_graph.nraw; i++)
	{
		const RawEdge *e = &zc_gwait_graph.raw[i];
		ZgwEdgeRow	r;
		bool		found = false;

		waiting_side(&zc_gwait_graph.v[e->from], &r);
		if (e->local)
		{
			for (j = 0; j < zc_gwait_graph.nv && !found; j++)
				if (zc_gwait_graph.v[j].session == r.w_session && zc_gwait_graph.v[j].pid == e->pid)
				{
					blocking_vertex(&zc_gwait_graph.v[j], &r);
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
		for (j = 0; j < zc_gwait_graph.nholds; j++)
		{
			if (!zc_gwait_word_eq(zc_gwait_graph.holds[j].name, e->name))
				continue;
			blocking_vertex(&zc_gwait_graph.v[zc_gwait_graph.holds[j].vert], &r);
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

