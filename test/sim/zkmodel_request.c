/*
 * zkmodel_request.c — the model ZooKeeper's requests: a client sends them,
 * its server answers reads from its own tree and forwards writes, the
 * leader checks and orders them (ACLs, versions, multis); and the steps of
 * a follower applying the log and of the leader reaping an empty container.
 */
#define _POSIX_C_SOURCE 200809L

#include "zkmodel_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>	/* result codes, event and state types */

static bool acl_refuses(Zkm *m, const char *path);

void
zkm_send(Zkm *m, int client, const ZkmReq *req)
{
	Client	   *c = &m->clients[client];
	ReqNode    *r;
	ReqNode   **tail;
	int			i;

	if (c->state != CS_CONNECTED)
	{
		/* the library fails it at once: no connection */
		zki_push(c, zki_loss_reply(req->tag, req->kind));
		return;
	}
	r = zki_xalloc(sizeof(ReqNode));
	r->req = *req;
	/* the caller's data is the model's now */
	r->req.data = zki_keep_data(m, req->data);
	for (i = 0; i < req->nsub && req->kind == ZKM_MULTI_OP; i++)
		r->req.sub[i].data = zki_keep_data(m, req->sub[i].data);
	r->client = client;
	r->sess = c->sess;
	r->gen = c->gen;
	r->server = c->server;
	if (c->garble_next)
	{
		r->garble = 1 + (int) (zki_rnd(m) % 2);
		c->garble_next = false;
	}
	for (tail = &c->out; *tail; tail = &(*tail)->next)
		;
	*tail = r;
	zki_pending_add(c, req->tag, req->kind);
}

static bool
is_write(ZkmReqKind k)
{
	/* a sync goes through the leader like a write: its reply comes once the server has caught up */
	return k == ZKM_CREATE || k == ZKM_DELETE || k == ZKM_MULTI_OP || k == ZKM_SYNC ||
		k == ZKM_SETDATA;
}

char **
zki_list_children(const Tree *t, const char *path, int *n)
{
	char	  **names = zki_xalloc((zki_count_children(t, path) + 1) * sizeof(char *));
	size_t		len = strcmp(path, "/") == 0 ? 0 : strlen(path);
	int			i;

	*n = 0;
	for (i = 0; i < t->n; i++)
		if (t->nodes[i].used && zki_is_child(t->nodes[i].path, path))
			names[(*n)++] = strdup(t->nodes[i].path + len + 1);
	return names;
}

void
zki_add_watch(Zkm *m, int s, int client, bool child, const char *path, uint64_t wtag)
{
	Watch	   *w;

	/* the server keeps one per session and path, the library one per watcher and context */
	for (w = m->servers[s].watches; w; w = w->next)
		if (w->client == client && w->gen == m->clients[client].gen && w->child == child &&
			w->wtag == wtag && strcmp(w->path, path) == 0)
			return;
	w = zki_xalloc(sizeof(Watch));

	w->client = client;
	w->sess = m->clients[client].sess;
	w->gen = m->clients[client].gen;
	w->child = child;
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->wtag = wtag;
	w->next = m->servers[s].watches;
	m->servers[s].watches = w;
}

/*
 * The server failed while it made the reply, after the request took effect
 * (FinalRequestProcessor answers any unexpected exception so): the client
 * learns nothing but the error.  A watch the read left stays.
 */
static void
garble_reply(ZkmMsg *msg)
{
	int			i;

	msg->rc = ZMARSHALLINGERROR;
	msg->path[0] = '\0';
	msg->czxid = 0;
	msg->owner = 0;
	msg->data = "";
	if (msg->children)
	{
		for (i = 0; i < msg->nchildren; i++)
			free(msg->children[i]);
		free(msg->children);
		msg->children = NULL;
	}
	msg->nchildren = 0;
	for (i = 0; i < msg->nsub; i++)
	{
		msg->errs[i] = ZMARSHALLINGERROR;
		msg->names[i][0] = '\0';
	}
}

/* A read, answered by the client's server from its own tree. */
static ZkmMsg *
read_reply(Zkm *m, int s, const ReqNode *r)
{
	const Tree *t = &m->servers[s].tree;
	const Node *n = zki_find(t, r->req.path);
	ZkmMsg	   *msg = zki_new_msg(ZKM_REPLY);

	msg->req = r->req.kind;
	msg->tag = r->req.tag;
	msg->cversion = 0;
	if (n == NULL)
	{
		msg->rc = ZNONODE;
		return msg;
	}
	/* exists() reads no ACL; the others need READ, checked before a watch is left */
	if (r->req.kind != ZKM_EXISTS && acl_refuses(m, r->req.path))
	{
		msg->rc = ZNOAUTH;
		return msg;
	}
	if (r->garble == 1)
	{
		m->garbled++;
		msg->rc = ZMARSHALLINGERROR;
		return msg;
	}
	msg->rc = ZOK;
	msg->owner = n->owner;
	msg->czxid = n->czxid;
	msg->version = n->version;
	if (r->req.kind == ZKM_GETDATA)
		msg->data = n->data;
	if (r->req.kind == ZKM_CHILDREN)
	{
		msg->children = zki_list_children(t, r->req.path, &msg->nchildren);
		msg->cversion = n->cversion;
	}
	if (r->req.watch)
	{
		zki_add_watch(m, s, r->client, r->req.kind == ZKM_CHILDREN, r->req.path, r->req.wtag);
		msg->watch_set = true;
		msg->wtag = r->req.wtag;
		snprintf(msg->path, sizeof(msg->path), "%s", r->req.path);
	}
	if (r->garble == 2)
	{
		m->garbled++;
		garble_reply(msg);
	}
	return msg;
}

int64_t
zki_server_zxid(const Zkm *m, int s)
{
	return m->servers[s].applied > 0 ? m->log[m->servers[s].applied - 1].zxid : 0;
}

bool
zkm_step_server(Zkm *m, int client)
{
	Client	   *c = &m->clients[client];
	ReqNode    *r = c->out;
	int			s = c->server;

	if (c->state != CS_CONNECTED || r == NULL || c->silent_since != 0 || m->electing_until != 0)
		return false;
	/*
	 * A session's requests are answered in order: writes go to the leader
	 * one after another, several in flight, and a read waits until the
	 * session's earlier writes are applied here (the server's commit
	 * processor).
	 */
	if (!is_write(r->req.kind) && c->writes_out > 0)
		return false;
	c->out = r->next;
	if (is_write(r->req.kind))
	{
		ReqNode   **tail;

		r->next = NULL;
		for (tail = &m->fwd; *tail; tail = &(*tail)->next)
			;
		*tail = r;
		c->writes_out++;
		return true;
	}
	{
		ZkmMsg	   *msg;

		if (s == 0 && !m->sessions[r->sess].alive)
		{
			/* the leader checks the session first: one it is closing gets this at once */
			msg = zki_new_msg(ZKM_REPLY);
			msg->req = r->req.kind;
			msg->tag = r->req.tag;
			msg->rc = ZSESSIONEXPIRED;
		}
		else
			msg = read_reply(m, s, r);
		msg->zxid = zki_server_zxid(m, s);
		zki_push(c, msg);
	}
	free(r);
	return true;
}

static bool
ends_with(const char *s, const char *end)
{
	size_t		n = strlen(s);
	size_t		k = strlen(end);

	return n >= k && strcmp(s + n - k, end) == 0;
}

/*
 * Whether an operator's ACL on path refuses our clients now.  One ACL for
 * every server at once: the real one is a transaction, seen by a lagging
 * follower's reads later, which only shortens the refusal there.
 */
static bool
acl_refuses(Zkm *m, const char *path)
{
	int			i;

	for (i = 0; i < ZKM_REFUSALS; i++)
		if (m->refusals[i].until > m->now && strcmp(m->refusals[i].path, path) == 0)
		{
			m->noauth++;
			return true;
		}
	return false;
}

void
zkm_counts(const Zkm *m, int64_t *noauth, int64_t *garbled)
{
	*noauth = m->noauth;
	*garbled = m->garbled;
}

/*
 * Check one create or delete against the leader's tree (with earlier ops of
 * a multi applied), in the server's order: the parent, its ACL (create and
 * delete need the parent's permission), then the node.
 */
static int
check_sub(Zkm *m, Tree *t, const ZkmSub *sub, int64_t owner, Prim *out)
{
	char		parent[ZKM_PATH];
	Node	   *par;
	const Node *n;
	const char *data;

	zki_parent_of(sub->path, parent);
	memset(out, 0, sizeof(*out));
	n = zki_find(t, sub->path);
	data = sub->data;
	/* a version that does not match: after the node's own checks, as the server does */
	if (sub->kind == ZKM_EXISTS)
		return n == NULL ? ZNONODE : sub->versioned && sub->version != n->version ? ZBADVERSION : ZOK;
	if (sub->kind == ZKM_SETDATA)
	{
		if (n == NULL)
			return ZNONODE;
		if (acl_refuses(m, sub->path))
			return ZNOAUTH;
		if (sub->versioned && sub->version != n->version)
			return ZBADVERSION;
		out->setdata = true;
		snprintf(out->path, sizeof(out->path), "%s", sub->path);
		out->data = data;
		return ZOK;
	}
	if (sub->kind == ZKM_DELETE)
	{
		if (zki_find(t, parent) != NULL && acl_refuses(m, parent))
			return ZNOAUTH;
		if (n == NULL)
			return ZNONODE;
		if (sub->versioned && sub->version != n->version)
			return ZBADVERSION;
		if (zki_count_children(t, sub->path) > 0)
			return ZNOTEMPTY;
		out->create = false;
		snprintf(out->path, sizeof(out->path), "%s", sub->path);
		return ZOK;
	}
	par = zki_find(t, parent);
	if (par == NULL)
		return ZNONODE;
	if (acl_refuses(m, parent))
		return ZNOAUTH;
	if (par->owner != 0)
		return ZNOCHILDRENFOREPHEMERALS;
	out->create = true;
	out->data = data;
	out->container = (sub->flags & ZKM_F_CONTAINER) != 0;
	out->owner = (sub->flags & ZKM_F_EPHEMERAL) ? owner : 0;
	if (sub->flags & ZKM_F_SEQUENTIAL)
	{
		char		seq[16];
		char		neg[18];
		int			i;

		snprintf(out->path, sizeof(out->path), "%s%010d", sub->path, par->seq);
		/* the model's own check: ZooKeeper never gives one sequence twice under a parent */
		snprintf(seq, sizeof(seq), "-%010d", par->seq);
		snprintf(neg, sizeof(neg), "-%s", seq);
		for (i = 0; i < t->n; i++)
			if (t->nodes[i].used && zki_is_child(t->nodes[i].path, parent) &&
				ends_with(t->nodes[i].path, seq) &&
				(seq[1] == '-' || !ends_with(t->nodes[i].path, neg)))
			{
				fprintf(stderr, "model: sequence of %s given twice\n", out->path);
				abort();
			}
	}
	else
		snprintf(out->path, sizeof(out->path), "%s", sub->path);
	if (zki_find(t, out->path))
		return ZNODEEXISTS;
	return ZOK;
}

bool
zkm_step_leader(Zkm *m)
{
	ReqNode   **pr;
	ReqNode    *r;
	Client	   *c;
	Session    *se;
	ZkmMsg	   *msg;
	Prim	   *prim;
	ZkmSub		single;
	const ZkmSub *subs;
	int			nsub;
	int			nprim = 0;
	int			rc = ZOK;
	int			i;
	LogTxn		   *t;
	Tree	   *lt = &m->ptree;

	if (m->electing_until != 0)
		return false;
	/* the first write that reached the leader: not from a server cut off from it */
	for (pr = &m->fwd; *pr && (*pr)->server != 0 && m->servers[(*pr)->server].cut; pr = &(*pr)->next)
		;
	if (*pr == NULL)
		return false;
	r = *pr;
	*pr = r->next;
	c = &m->clients[r->client];
	se = &m->sessions[r->sess];

	msg = zki_new_msg(ZKM_REPLY);
	msg->req = r->req.kind;
	msg->tag = r->req.tag;
	if (r->req.kind == ZKM_MULTI_OP || r->req.kind == ZKM_SYNC)
	{
		subs = r->req.sub;
		nsub = r->req.kind == ZKM_SYNC ? 0 : r->req.nsub;
	}
	else
	{
		single.kind = r->req.kind;
		single.flags = r->req.flags;
		single.versioned = r->req.versioned;
		single.version = r->req.version;
		single.data = r->req.data;
		memcpy(single.path, r->req.path, sizeof(single.path));
		subs = &single;
		nsub = 1;
	}
	prim = zki_xalloc((nsub + 1) * sizeof(Prim));
	if (!se->alive)
		rc = ZSESSIONEXPIRED;
	else if (r->garble == 1)
	{
		/* the leader failed before it applied anything (PrepRequestProcessor's error txn) */
		se->last_heard = m->now;
		m->garbled++;
		rc = ZMARSHALLINGERROR;
		for (i = 0; i < nsub; i++)
			msg->errs[i] = rc;
	}
	else
	{
		/* all or nothing: try the ops on a copy of the tree */
		Tree		scratch;

		se->last_heard = m->now;
		scratch.n = scratch.cap = lt->n;
		scratch.nodes = zki_xalloc((lt->n + 1) * sizeof(Node));
		memcpy(scratch.nodes, lt->nodes, lt->n * sizeof(Node));
		for (i = 0; i < nsub && rc == ZOK; i++)
		{
			Prim		p;
			int			err = check_sub(m, &scratch, &subs[i], se->id, &p);

			msg->errs[i] = err;
			if (err != ZOK)
			{
				int			j;

				for (j = i + 1; j < nsub; j++)
					msg->errs[j] = ZRUNTIMEINCONSISTENCY;
				/* the ops before it answer ZOK, with no name made (as the server does) */
				for (j = 0; j < i; j++)
				{
					msg->errs[j] = ZOK;
					msg->names[j][0] = '\0';
				}
				rc = err;
				nprim = 0;
				break;
			}
			if (subs[i].kind != ZKM_EXISTS)
			{
				prim[nprim] = p;
				zki_apply_prim(m, &scratch, &p, m->zxid + 1);
				if (p.create)
					snprintf(msg->names[i], ZKM_PATH, "%s", p.path);
				nprim++;
			}
		}
		free(scratch.nodes);
		for (i = 0; i < nprim; i++)
			zki_apply_prim(m, lt, &prim[i], m->zxid + 1);
	}
	msg->rc = rc;
	msg->nsub = nsub;
	if (r->req.kind == ZKM_CREATE && rc == ZOK)
	{
		snprintf(msg->path, sizeof(msg->path), "%s", prim[0].path);
		msg->czxid = m->zxid + 1;
		msg->version = 0;
	}
	if (r->req.kind == ZKM_SETDATA && rc == ZOK)
	{
		/* its reply carries the node's Stat */
		const Node *n = zki_find(lt, r->req.path);

		msg->czxid = n->czxid;
		msg->owner = n->owner;
		msg->version = n->version;
	}
	if (r->garble == 2 && rc == ZOK)
	{
		m->garbled++;
		garble_reply(msg);
	}
	if (m->logf)
	{
		char		line[ZKM_PATH + 80];

		for (i = 0; i < nprim; i++)
		{
			snprintf(line, sizeof(line), "leader: session %" PRIx64 " %s %s", se->id,
					 prim[i].create ? "creates" : prim[i].setdata ? "sets the data of" : "deletes",
					 prim[i].path);
			m->logf(line);
		}
		if (rc != ZOK)
		{
			snprintf(line, sizeof(line), "leader: session %" PRIx64 " write refused: %d", se->id, rc);
			m->logf(line);
		}
	}
	/* every write, failed or not, takes its turn in the log */
	t = zki_append_txn(m, prim, nprim);
	if (c->state == CS_CONNECTED && c->sess == r->sess && c->gen == r->gen)
	{
		t->route.client = r->client;
		t->route.gen = r->gen;
		t->route.msg = msg;
	}
	else
		zkm_msg_free(msg);
	free(r);
	zki_commit_alone(m);
	return true;
}

bool
zkm_step_follower(Zkm *m, int s)
{
	Server	   *sv = &m->servers[s];

	if (s == 0 || sv->cut || sv->applied >= m->nlog || m->electing_until != 0)
		return false;
	/* its ack makes a quorum (with the leader): committed, the leader applies it first */
	if (sv->applied + 1 > m->committed)
	{
		m->committed = sv->applied + 1;
		while (m->servers[0].applied < m->committed)
			zki_apply_next(m, 0);
	}
	zki_apply_next(m, s);
	return true;
}

bool
zkm_step_reap(Zkm *m)
{
	Tree	   *lt = &m->ptree;
	int			i;

	for (i = 0; i < lt->n; i++)
	{
		Node	   *n = &lt->nodes[i];

		if (n->used && n->container && n->had_child && zki_count_children(lt, n->path) == 0)
		{
			Prim	   *p = zki_xalloc(sizeof(Prim));

			p->create = false;
			snprintf(p->path, sizeof(p->path), "%s", n->path);
			zki_apply_prim(m, lt, p, m->zxid + 1);
			zki_append_txn(m, p, 1);
			zki_commit_alone(m);
			return true;
		}
	}
	return false;
}
