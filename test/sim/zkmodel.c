/*
 * zkmodel.c — the model ZooKeeper ensemble of the simulator (see zkmodel.h).
 * Small and slow on purpose: trees are arrays searched by path.  This file
 * holds its setup, its trees and its messages; zkmodel_int.h its types, and
 * zkmodel_log.c, zkmodel_session.c, zkmodel_request.c and zkmodel_conn.c
 * the rest.
 */
#define _POSIX_C_SOURCE 200809L

#include "zkmodel_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>	/* result codes, event and state types */

/* Data as the model keeps it: immutable until zkm_free, so trees copy nodes as they are. */
const char *
zki_keep_data(Zkm *m, const char *data)
{
	size_t		len = data == NULL ? 0 : strlen(data);

	if (len == 0)
		return "";
	if (m->ndatas > 0 && strncmp(m->datas[m->ndatas - 1], data, len) == 0 &&
		m->datas[m->ndatas - 1][len] == '\0')
		return m->datas[m->ndatas - 1];
	if (m->ndatas == m->capdatas)
	{
		m->capdatas = m->capdatas ? 2 * m->capdatas : 64;
		m->datas = realloc(m->datas, m->capdatas * sizeof(char *));
		if (m->datas == NULL)
			abort();
	}
	m->datas[m->ndatas] = zki_xalloc(len + 1);
	memcpy(m->datas[m->ndatas], data, len);
	return m->datas[m->ndatas++];
}

void
zkm_set_log(Zkm *m, void (*log) (const char *line))
{
	m->logf = log;
}

void *
zki_xalloc(size_t n)
{
	void	   *p = calloc(1, n);

	if (p == NULL)
	{
		fprintf(stderr, "zkmodel: out of memory\n");
		exit(2);
	}
	return p;
}

uint64_t
zki_rnd(Zkm *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

/* ---- trees ---- */

Node *
zki_find(const Tree *t, const char *path)
{
	int			i;

	for (i = 0; i < t->n; i++)
		if (t->nodes[i].used && strcmp(t->nodes[i].path, path) == 0)
			return &t->nodes[i];
	return NULL;
}

void
zki_parent_of(const char *path, char *out)
{
	const char *slash = strrchr(path, '/');
	size_t		len = slash && slash != path ? (size_t) (slash - path) : 1;

	memcpy(out, path, len);
	out[len] = '\0';
}

bool
zki_is_child(const char *path, const char *parent)
{
	size_t		len = strlen(parent);

	if (strcmp(parent, "/") == 0)
		return path[0] == '/' && path[1] != '\0' && strchr(path + 1, '/') == NULL;
	return strncmp(path, parent, len) == 0 && path[len] == '/' &&
		strchr(path + len + 1, '/') == NULL;
}

int
zki_count_children(const Tree *t, const char *path)
{
	int			i;
	int			n = 0;

	for (i = 0; i < t->n; i++)
		n += t->nodes[i].used && zki_is_child(t->nodes[i].path, path);
	return n;
}

static Node *
add_node(Tree *t)
{
	int			i;

	for (i = 0; i < t->n; i++)
		if (!t->nodes[i].used)
			return &t->nodes[i];
	if (t->n == t->cap)
	{
		t->cap = t->cap ? 2 * t->cap : 64;
		t->nodes = realloc(t->nodes, t->cap * sizeof(Node));
		if (t->nodes == NULL)
			exit(2);
	}
	memset(&t->nodes[t->n], 0, sizeof(Node));
	return &t->nodes[t->n++];
}


/* Apply one primitive (already checked at the leader). */
void
zki_apply_prim(Zkm *m, Tree *t, const Prim *p, int64_t zxid)
{
	char		parent[ZKM_PATH];
	Node	   *par;

	zki_parent_of(p->path, parent);
	if (p->setdata)
	{
		Node	   *n = zki_find(t, p->path);

		if (n)
		{
			n->data = p->data ? p->data : "";
			n->version++;
			n->mzxid = zxid;
		}
		return;					/* no child change */
	}
	if (p->create)
	{
		Node	   *n = add_node(t);

		n->used = true;
		snprintf(n->path, sizeof(n->path), "%s", p->path);
		n->owner = p->owner;
		n->container = p->container;
		n->czxid = zxid;
		n->mzxid = zxid;
		n->pzxid = zxid;
		n->data = p->data ? p->data : "";
		n->version = 0;
		n->cversion = p->container ? m->cversion_start : 0;
		n->seq = n->cversion;
	}
	else
	{
		Node	   *n = zki_find(t, p->path);

		if (n)
			n->used = false;
	}
	/* looked up after add_node, which may move the nodes */
	par = zki_find(t, parent);
	if (par)
	{
		/*
		 * Signed 32-bit counters: they wrap.  Every child change bumps the
		 * stat's cversion; a sequential name counts creates only (as the
		 * server does: checked against it by conform.c).
		 */
		par->cversion = (int32_t) ((uint32_t) par->cversion + 1);
		if (p->create)
			par->seq = (int32_t) ((uint32_t) par->seq + 1);
		par->pzxid = zxid;
		par->had_child = true;
	}
}

void
zki_tree_init(Tree *t)
{
	Node	   *root = add_node(t);

	root->used = true;
	strcpy(root->path, "/");
}

/* ---- messages ---- */

ZkmMsg *
zki_new_msg(ZkmMsgKind kind)
{
	ZkmMsg	   *msg = zki_xalloc(sizeof(ZkmMsg));

	msg->kind = kind;
	msg->data = "";
	return msg;
}

void
zkm_msg_free(ZkmMsg *msg)
{
	int			i;

	for (i = 0; i < msg->nchildren; i++)
		free(msg->children[i]);
	free(msg->children);
	free(msg);
}

void
zki_push(Client *c, ZkmMsg *msg)
{
	msg->next = NULL;
	if (c->inbox_tail)
		c->inbox_tail->next = msg;
	else
		c->inbox = msg;
	c->inbox_tail = msg;
}

void
zki_pending_add(Client *c, uint64_t tag, ZkmReqKind kind)
{
	if (c->npending == c->pending_cap)
	{
		c->pending_cap = c->pending_cap ? 2 * c->pending_cap : 64;
		c->pending_tag = realloc(c->pending_tag, c->pending_cap * sizeof(uint64_t));
		c->pending_kind = realloc(c->pending_kind, c->pending_cap * sizeof(ZkmReqKind));
	}
	c->pending_tag[c->npending] = tag;
	c->pending_kind[c->npending++] = kind;
}

ZkmMsg *
zki_loss_reply(uint64_t tag, ZkmReqKind kind)
{
	ZkmMsg	   *msg = zki_new_msg(ZKM_REPLY);

	msg->req = kind;
	msg->tag = tag;
	msg->rc = ZCONNECTIONLOSS;
	msg->local = true;
	return msg;
}

/* ---- setup ---- */

Zkm *
zkm_new(uint64_t seed, int nservers, int32_t cversion_start)
{
	Zkm		   *m = zki_xalloc(sizeof(Zkm));
	int			i;

	m->rng = seed * 2654435761u + 88172645463325252ull;
	m->nservers = nservers;
	m->cversion_start = cversion_start;
	m->now = 1000000;
	m->follower_drop = 2000000;
	for (i = 0; i < nservers; i++)
		zki_tree_init(&m->servers[i].tree);
	zki_tree_init(&m->ptree);
	return m;
}

static void
free_watches(Watch *w)
{
	while (w)
	{
		Watch	   *next = w->next;

		free(w);
		w = next;
	}
}

void
zki_free_client(Client *c)
{
	while (c->inbox)
	{
		ZkmMsg	   *next = c->inbox->next;

		zkm_msg_free(c->inbox);
		c->inbox = next;
	}
	c->inbox_tail = NULL;
	while (c->out)
	{
		ReqNode    *next = c->out->next;

		free(c->out);
		c->out = next;
	}
	while (c->watches)
	{
		CWatch	   *next = c->watches->next;

		free(c->watches);
		c->watches = next;
	}
	free(c->pending_tag);
	free(c->pending_kind);
	memset(c, 0, sizeof(*c));
}

void
zkm_free(Zkm *m)
{
	int			i;

	for (i = 0; i < m->nservers; i++)
	{
		free(m->servers[i].tree.nodes);
		free_watches(m->servers[i].watches);
	}
	free(m->ptree.nodes);
	for (i = 0; i < m->nlog; i++)
	{
		free(m->log[i].prim);
		if (m->log[i].route.msg)
			zkm_msg_free(m->log[i].route.msg);
	}
	free(m->log);
	for (i = 0; i < m->ndatas; i++)
		free(m->datas[i]);
	free(m->datas);
	while (m->fwd)
	{
		ReqNode    *next = m->fwd->next;

		free(m->fwd);
		m->fwd = next;
	}
	for (i = 0; i < ZKM_CLIENTS; i++)
		zki_free_client(&m->clients[i]);
	free(m->sessions);
	free(m);
}

int64_t
zkm_now(const Zkm *m)
{
	return m->now;
}

int
zkm_nservers(const Zkm *m)
{
	return m->nservers;
}
