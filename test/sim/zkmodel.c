/*
 * zkmodel.c — the model ZooKeeper ensemble of the simulator (see zkmodel.h).
 * Small and slow on purpose: trees are arrays searched by path.
 */
#define _POSIX_C_SOURCE 200809L

#include "zkmodel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>	/* result codes, event and state types */

typedef struct Node
{
	bool		used;
	bool		container;
	bool		had_child;
	char		path[ZKM_PATH];
	int64_t		owner;			/* ephemeral owner, 0: none */
	int64_t		czxid;
	int64_t		mzxid;			/* last data change */
	int64_t		pzxid;			/* last child change */
	const char *data;			/* kept by the model (keep_data): nodes copy freely */
	int32_t		version;		/* data changes */
	int32_t		cversion;
	int32_t		seq;			/* next sequential child's number: counts creates only */
} Node;

typedef struct Tree
{
	Node	   *nodes;
	int			n;
	int			cap;
} Tree;

typedef struct Prim
{
	bool		create;
	bool		setdata;		/* neither: a delete */
	bool		container;
	int64_t		owner;
	char		path[ZKM_PATH];
	const char *data;			/* keep_data's */
} Prim;

/* A reply that waits until the client's server applied a transaction. */
typedef struct Route
{
	int			client;
	int			gen;
	ZkmMsg	   *msg;
} Route;

typedef struct LogTxn
{
	int64_t		zxid;
	int			nprim;
	Prim	   *prim;
	Route		route;			/* client -1: none */
	int			closes;			/* a session's end (index in sessions), -1: none */
} LogTxn;

typedef struct Watch
{
	int			client;
	int			sess;			/* the session it belongs to (a client slot is reused) */
	int			gen;
	bool		child;
	char		path[ZKM_PATH];
	uint64_t	wtag;
	struct Watch *next;
} Watch;

typedef struct Server
{
	Tree		tree;
	int			applied;		/* transactions of the log applied */
	bool		cut;			/* cut off from the leader */
	int64_t		cut_since;
	Watch	   *watches;
} Server;

typedef struct ReqNode
{
	ZkmReq		req;
	int			client;
	int			sess;
	int			gen;
	int			server;
	int			garble;			/* 0; else the server fails inside: 1 before, 2 after applying it */
	struct ReqNode *next;
} ReqNode;

typedef struct CWatch
{
	bool		child;
	char		path[ZKM_PATH];
	uint64_t	wtag;
	struct CWatch *next;
} CWatch;

typedef struct Session
{
	int64_t		id;
	int			timeout;
	int64_t		last_heard;
	bool		alive;			/* at the leader: false from its close's proposal (an election may undo it) */
	bool		gone;			/* its close committed (server 0 applied it): for good */
	bool		closed;			/* a client's close request ended it (not an expiry) */
	int			created;		/* log entries up to its createSession (0: not proposed yet) */
	bool		never;			/* its createSession was lost in an election: no client ever learned its id */
} Session;

typedef enum CState
{
	CS_UNUSED,
	CS_CONNECTING,
	CS_CONNECTED,
	CS_DEAD						/* expired, told so */
} CState;

typedef struct Client
{
	CState		state;
	int			sess;			/* index in sessions */
	int			server;
	int			gen;
	bool		paused;
	int			writes_out;		/* writes forwarded, not answered yet: later reads wait */
	int64_t		silent_since;	/* the link drops every packet, no reset (0: it works) */
	int64_t		last_zxid;
	ReqNode    *out;			/* sent, not yet taken by its server */
	ZkmMsg	   *inbox;
	ZkmMsg	   *inbox_tail;
	int			npending;		/* requests not answered yet, in order */
	uint64_t   *pending_tag;
	ZkmReqKind *pending_kind;
	int			pending_cap;
	CWatch	   *watches;		/* as the client library keeps them */
	bool		lose_write_reply;	/* the next write's reply is lost: the connection drops */
	bool		behind_next;	/* after that: reconnect to the server furthest behind */
	bool		garble_next;	/* the next request sent fails inside its server */
} Client;

/* An ACL an operator set on a node that refuses our clients every permission, for a while. */
typedef struct Refusal
{
	char		path[ZKM_PATH];
	int64_t		until;
} Refusal;

#define ZKM_REFUSALS 4

struct Zkm
{
	uint64_t	rng;
	int64_t		now;
	int64_t		zxid;
	int32_t		cversion_start;
	int			nservers;
	Server		servers[ZKM_SERVERS];
	LogTxn		   *log;
	int			nlog;
	int			caplog;
	ReqNode    *fwd;			/* writes forwarded to the leader, in order */
	int64_t		follower_drop;	/* us a follower cut off from the leader keeps its clients */
	int			gens;			/* connections made so far (Client.gen) */
	Session    *sessions;
	int			nsessions;
	int			reuse_pct;		/* of new sessions that take an ended one's id */
	int64_t		reused;			/* sessions that did */
	int			reissue_pct;	/* of reconnects to an expired session that find its id reissued */
	int64_t		reissued;		/* reconnects that came back to another session of the id */
	Client		clients[ZKM_CLIENTS];
	Refusal		refusals[ZKM_REFUSALS];
	/*
	 * The leader checks writes against its proposals (ptree) and commits
	 * what a quorum has: with followers, the first follower's copy (its
	 * apply, in this model).  Server 0's own tree, its reads, watches and
	 * replies, follow the commits.  A leader that no follower reaches for
	 * follower_drop gives up: an election drops every connection, loses
	 * what was not committed, and serves again with a new epoch.
	 */
	Tree		ptree;
	int			committed;		/* log entries committed */
	int64_t		quorum_lost_since;	/* no follower reaches the leader (0: one does) */
	bool		isolated;		/* the leader is cut off: no partition heals before the election */
	int64_t		electing_until; /* an election under way: nobody serves (0: none) */
	int64_t		elections;
	int64_t		lost_proposals;	/* writes ordered, never committed */
	int64_t		noauth;			/* answers ZNOAUTH given */
	int64_t		garbled;		/* answers ZMARSHALLINGERROR given */
	void		(*logf) (const char *line);
	char	  **datas;			/* every node data written: immutable, freed with the model */
	int			ndatas;
	int			capdatas;
};

static void *xalloc(size_t n);

/* Data as the model keeps it: immutable until zkm_free, so trees copy nodes as they are. */
static const char *
keep_data(Zkm *m, const char *data)
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
	m->datas[m->ndatas] = xalloc(len + 1);
	memcpy(m->datas[m->ndatas], data, len);
	return m->datas[m->ndatas++];
}

void
zkm_set_log(Zkm *m, void (*log) (const char *line))
{
	m->logf = log;
}

static void *
xalloc(size_t n)
{
	void	   *p = calloc(1, n);

	if (p == NULL)
	{
		fprintf(stderr, "zkmodel: out of memory\n");
		exit(2);
	}
	return p;
}

static uint64_t
rnd(Zkm *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

/* ---- trees ---- */

static Node *
find(const Tree *t, const char *path)
{
	int			i;

	for (i = 0; i < t->n; i++)
		if (t->nodes[i].used && strcmp(t->nodes[i].path, path) == 0)
			return &t->nodes[i];
	return NULL;
}

static void
parent_of(const char *path, char *out)
{
	const char *slash = strrchr(path, '/');
	size_t		len = slash && slash != path ? (size_t) (slash - path) : 1;

	memcpy(out, path, len);
	out[len] = '\0';
}

static bool
is_child(const char *path, const char *parent)
{
	size_t		len = strlen(parent);

	if (strcmp(parent, "/") == 0)
		return path[0] == '/' && path[1] != '\0' && strchr(path + 1, '/') == NULL;
	return strncmp(path, parent, len) == 0 && path[len] == '/' &&
		strchr(path + len + 1, '/') == NULL;
}

static int
count_children(const Tree *t, const char *path)
{
	int			i;
	int			n = 0;

	for (i = 0; i < t->n; i++)
		n += t->nodes[i].used && is_child(t->nodes[i].path, path);
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
static void
apply_prim(Zkm *m, Tree *t, const Prim *p, int64_t zxid)
{
	char		parent[ZKM_PATH];
	Node	   *par;

	parent_of(p->path, parent);
	if (p->setdata)
	{
		Node	   *n = find(t, p->path);

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
		Node	   *n = find(t, p->path);

		if (n)
			n->used = false;
	}
	/* looked up after add_node, which may move the nodes */
	par = find(t, parent);
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

static void
tree_init(Tree *t)
{
	Node	   *root = add_node(t);

	root->used = true;
	strcpy(root->path, "/");
}

/* ---- messages ---- */

static ZkmMsg *
new_msg(ZkmMsgKind kind)
{
	ZkmMsg	   *msg = xalloc(sizeof(ZkmMsg));

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

static void
push(Client *c, ZkmMsg *msg)
{
	msg->next = NULL;
	if (c->inbox_tail)
		c->inbox_tail->next = msg;
	else
		c->inbox = msg;
	c->inbox_tail = msg;
}

static void
pending_add(Client *c, uint64_t tag, ZkmReqKind kind)
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

static ZkmMsg *
loss_reply(uint64_t tag, ZkmReqKind kind)
{
	ZkmMsg	   *msg = new_msg(ZKM_REPLY);

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
	Zkm		   *m = xalloc(sizeof(Zkm));
	int			i;

	m->rng = seed * 2654435761u + 88172645463325252ull;
	m->nservers = nservers;
	m->cversion_start = cversion_start;
	m->now = 1000000;
	m->follower_drop = 2000000;
	for (i = 0; i < nservers; i++)
		tree_init(&m->servers[i].tree);
	tree_init(&m->ptree);
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

static void
free_client(Client *c)
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
		free_client(&m->clients[i]);
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

/* ---- the log ---- */

/* Append a transaction at the leader and apply it there. */
static LogTxn *
append_txn(Zkm *m, Prim *prim, int nprim)
{
	LogTxn	   *t;

	if (m->nlog == m->caplog)
	{
		m->caplog = m->caplog ? 2 * m->caplog : 256;
		m->log = realloc(m->log, m->caplog * sizeof(LogTxn));
	}
	t = &m->log[m->nlog++];
	memset(t, 0, sizeof(*t));
	t->zxid = ++m->zxid;
	t->nprim = nprim;
	t->prim = prim;
	t->route.client = -1;
	t->closes = -1;
	return t;
}

static void apply_next(Zkm *m, int s);
static void drop_connection(Zkm *m, int client, bool keep_sent);

/* A leader with no follower commits alone; server 0 then serves it at once. */
static void
commit_alone(Zkm *m)
{
	if (m->nservers > 1)
		return;
	m->committed = m->nlog;
	while (m->servers[0].applied < m->committed)
		apply_next(m, 0);
}

/*
 * The leader gave up (no quorum for follower_drop): every server stops
 * serving and drops its clients; writes not yet ordered, and proposals no
 * follower had, are lost (a session's end among them: that session lives
 * on); the new leader starts from the committed log, in a new epoch, and
 * gives every session a fresh timeout when it serves again.
 */
static void
begin_election(Zkm *m)
{
	int			i;
	int			j;

	m->electing_until = m->now + 200000 + (int64_t) (rnd(m) % 1800) * 1000;
	m->elections++;
	for (i = 0; i < ZKM_CLIENTS; i++)
		if (m->clients[i].state == CS_CONNECTED)
			drop_connection(m, i, false);
	while (m->fwd)
	{
		ReqNode    *next = m->fwd->next;

		free(m->fwd);
		m->fwd = next;
	}
	for (i = 0; i < m->nsessions; i++)
		if (m->sessions[i].created > m->committed)
		{
			/* its createSession was not committed: it never existed */
			m->sessions[i].alive = false;
			m->sessions[i].gone = true;
			m->sessions[i].never = true;
		}
	for (i = m->committed; i < m->nlog; i++)
	{
		LogTxn	   *t = &m->log[i];

		/* a close lost with it: the session lives on, if its creation was not lost too */
		if (t->closes >= 0 && m->sessions[t->closes].created <= m->committed)
			m->sessions[t->closes].alive = true;
		if (t->route.msg)
			zkm_msg_free(t->route.msg);
		free(t->prim);
		m->lost_proposals++;
	}
	m->nlog = m->committed;
	free(m->ptree.nodes);
	memset(&m->ptree, 0, sizeof(m->ptree));
	tree_init(&m->ptree);
	for (i = 0; i < m->nlog; i++)
		for (j = 0; j < m->log[i].nprim; j++)
			apply_prim(m, &m->ptree, &m->log[i].prim[j], m->log[i].zxid);
	m->zxid = ((m->zxid >> 32) + 1) << 32;
	for (i = 1; i < m->nservers; i++)
		m->servers[i].cut = false;
	m->isolated = false;
	m->quorum_lost_since = 0;
	if (m->logf)
		m->logf("model: the leader lost its quorum: an election, uncommitted proposals lost");
}

static void
end_election(Zkm *m)
{
	int			i;

	m->electing_until = 0;
	while (m->servers[0].applied < m->committed)
		apply_next(m, 0);
	for (i = 0; i < m->nsessions; i++)
		if (m->sessions[i].alive)
			m->sessions[i].last_heard = m->now;
}

void
zkm_isolate_leader(Zkm *m)
{
	int			i;

	for (i = 1; i < m->nservers; i++)
		zkm_partition(m, i, true);
	m->isolated = m->nservers > 1;
}

bool
zkm_quorum(const Zkm *m)
{
	int			i;

	if (m->electing_until != 0)
		return false;
	for (i = 1; i < m->nservers; i++)
		if (!m->servers[i].cut)
			return true;
	return m->nservers == 1;
}

void
zkm_model_counts(const Zkm *m, int64_t *elections, int64_t *lost)
{
	*elections = m->elections;
	*lost = m->lost_proposals;
}

static void
fire(Zkm *m, int s, const char *path, bool child, int type, int64_t zxid)
{
	Watch	  **pw = &m->servers[s].watches;

	while (*pw)
	{
		Watch	   *w = *pw;

		if (w->child == child && strcmp(w->path, path) == 0)
		{
			Client	   *c = &m->clients[w->client];

			if (c->state == CS_CONNECTED && c->server == s && c->gen == w->gen && c->sess == w->sess)
			{
				ZkmMsg	   *msg = new_msg(ZKM_EVENT);

				msg->tag = w->wtag;
				msg->type = type;
				msg->child = child;
				msg->zxid = zxid;	/* the change that fired it */
				snprintf(msg->path, sizeof(msg->path), "%s", path);
				push(c, msg);
			}
			*pw = w->next;
			free(w);
		}
		else
			pw = &w->next;
	}
}

static void drop_connection(Zkm *m, int client, bool keep_sent);
static void commit_alone(Zkm *m);
static bool acl_refuses(Zkm *m, const char *path);

/* Server s forgets every watch of session si. */
static void
drop_watches(Zkm *m, int s, int si)
{
	Watch	  **pw = &m->servers[s].watches;

	while (*pw)
	{
		Watch	   *w = *pw;

		if (w->sess == si)
		{
			*pw = w->next;
			free(w);
		}
		else
			pw = &w->next;
	}
}

/* Server s applies its next transaction: watches fire, a waiting reply goes out. */
static void
apply_next(Zkm *m, int s)
{
	Server	   *sv = &m->servers[s];
	LogTxn		   *t = &m->log[sv->applied++];
	int			i;

	for (i = 0; i < t->nprim; i++)
	{
		const Prim *p = &t->prim[i];
		char		parent[ZKM_PATH];

		apply_prim(m, &sv->tree, p, t->zxid);
		parent_of(p->path, parent);
		if (p->setdata)
			fire(m, s, p->path, false, ZKM_EV_CHANGED, t->zxid);
		else if (p->create)
			fire(m, s, parent, true, ZKM_EV_CHILD, t->zxid);
		else
		{
			fire(m, s, p->path, false, ZKM_EV_DELETED, t->zxid);
			fire(m, s, p->path, true, ZKM_EV_DELETED, t->zxid);
			fire(m, s, parent, true, ZKM_EV_CHILD, t->zxid);
		}
	}
	if (t->closes >= 0 && s == 0)
		m->sessions[t->closes].gone = true;
	if (t->closes >= 0)
	{
		/*
		 * The session's end reaches this server in log order: what it sent
		 * before (replies, watch events) is still read by the client; then
		 * the connection closes.  A client behind a silent link hears none
		 * of it: its library finds out by its own read timeout.
		 */
		for (i = 0; i < ZKM_CLIENTS; i++)
			if (m->clients[i].state == CS_CONNECTED && m->clients[i].server == s &&
				m->clients[i].sess == t->closes && m->clients[i].silent_since == 0)
				drop_connection(m, i, true);
	}
	if (t->route.client >= 0 && t->route.msg)
	{
		Client	   *c = &m->clients[t->route.client];

		if (c->state != CS_CONNECTED || c->gen != t->route.gen)
		{
			/* the connection is gone: so is the reply */
			zkm_msg_free(t->route.msg);
			t->route.msg = NULL;
		}
		else if (c->server == s && c->lose_write_reply)
		{
			/* applied, but the connection drops before the reply gets through */
			c->lose_write_reply = false;
			/* the library's next server is drawn: often enough, one that lacks the write */
			c->behind_next = rnd(m) % 2 == 0;
			zkm_msg_free(t->route.msg);
			t->route.msg = NULL;
			zkm_reset(m, t->route.client);
		}
		else if (c->server == s)
		{
			t->route.msg->zxid = t->zxid;
			push(c, t->route.msg);
			c->writes_out--;
			t->route.msg = NULL;
		}
	}
}

/* ---- sessions ---- */

static void
expire(Zkm *m, int si)
{
	Session    *se = &m->sessions[si];
	Tree	   *lt = &m->ptree;
	Prim	   *prim = xalloc((lt->n + 1) * sizeof(Prim));
	int			n = 0;
	int			i;

	se->alive = false;
	for (i = 0; i < lt->n; i++)
		if (lt->nodes[i].used && lt->nodes[i].owner == se->id)
		{
			prim[n].create = false;
			snprintf(prim[n].path, sizeof(prim[n].path), "%s", lt->nodes[i].path);
			n++;
		}
	/* the server deletes them in the order of a hash set: any order */
	for (i = n - 1; i > 0; i--)
	{
		int			j = (int) (rnd(m) % (uint64_t) (i + 1));
		Prim		t = prim[i];

		prim[i] = prim[j];
		prim[j] = t;
	}
	for (i = 0; i < n; i++)
		apply_prim(m, lt, &prim[i], m->zxid + 1);
	/* and forgets the session's watches */
	for (i = 0; i < m->nservers; i++)
		drop_watches(m, i, si);
	/* each server closes the session's connections when it applies this */
	append_txn(m, prim, n)->closes = si;
	commit_alone(m);
}

void
zkm_set_id_reuse(Zkm *m, int percent)
{
	m->reuse_pct = percent;
}

static bool
listed(const int64_t *ids, int n, int64_t id)
{
	int			i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/*
 * A new session's id: now and then (reuse_pct) one of an ended session, as
 * ZooKeeper hands out again after a member's host restarts (an id is the
 * member's id, its monotonic clock at start and a counter); never one a
 * live session has, nor one of `avoid`.  One that a client closed comes
 * first (a clean stop's, or a crash's left over: tombstones name them).
 */
static int64_t
new_session_id(Zkm *m, const int64_t *avoid, int navoid)
{
	int64_t		id = 0x1000 + m->nsessions;
	bool		closed = false;
	int			n = 0;
	int			i;

	if (m->reuse_pct == 0 || (int) (rnd(m) % 100) >= m->reuse_pct)
		return id;
	for (i = 0; i < m->nsessions; i++)
	{
		Session    *se = &m->sessions[i];

		if (!se->gone || zkm_session_alive(m, se->id) || listed(avoid, navoid, se->id) ||
			(closed && !se->closed))
			continue;
		if (se->closed && !closed)
			n = 0;				/* the closed ones only, from here */
		closed |= se->closed;
		if (rnd(m) % (uint64_t) ++n == 0)
			id = se->id;
	}
	m->reused += n > 0;
	return id;
}

int64_t
zkm_reused_ids(const Zkm *m)
{
	return m->reused;
}

void
zkm_set_reissue(Zkm *m, int percent)
{
	m->reissue_pct = percent;
}

int64_t
zkm_reissued(const Zkm *m)
{
	return m->reissued;
}

/* A new live session of that id, not yet proposed: its index. */
static int
add_session(Zkm *m, int64_t id, int timeout_ms)
{
	m->sessions = realloc(m->sessions, (m->nsessions + 1) * sizeof(Session));
	memset(&m->sessions[m->nsessions], 0, sizeof(Session));
	m->sessions[m->nsessions].id = id;
	m->sessions[m->nsessions].timeout = timeout_ms;
	m->sessions[m->nsessions].last_heard = m->now;
	m->sessions[m->nsessions].alive = true;
	return m->nsessions++;
}

/*
 * A client reconnects to session si, which is over: ZooKeeper looks the
 * session up by its id, and the password comes from the id, so a live
 * session of that id takes the client (another client's, given the id
 * again).  With none, now and then (reissue_pct) the id was handed out
 * meanwhile to a client of someone else's (a member's host restarted) that
 * is idle: a new session of the id, which this client then keeps alive.
 * Returns that session, or -1: the client is told it expired.
 */
static int
resume_by_id(Zkm *m, int si)
{
	int64_t		id = m->sessions[si].id;
	int			i;

	for (i = 0; i < m->nsessions; i++)
		if (m->sessions[i].id == id && m->sessions[i].alive && !m->sessions[i].gone)
		{
			m->reissued++;
			return i;
		}
	if (!m->sessions[si].gone || m->reissue_pct == 0 || (int) (rnd(m) % 100) >= m->reissue_pct)
		return -1;
	m->reissued++;
	if (m->logf)
		m->logf("model: an expired session's id was handed out again; the client reconnecting to it gets the new session");
	return add_session(m, id, m->sessions[si].timeout);
}

int
zkm_open(Zkm *m, int timeout_ms)
{
	return zkm_open_avoiding(m, timeout_ms, NULL, 0);
}

int
zkm_open_avoiding(Zkm *m, int timeout_ms, const int64_t *avoid, int navoid)
{
	int			i;
	int64_t		id;

	for (i = 0; i < ZKM_CLIENTS; i++)
		if (m->clients[i].state == CS_UNUSED)
			break;
	if (i == ZKM_CLIENTS)
		return -1;
	id = new_session_id(m, avoid, navoid);
	memset(&m->clients[i], 0, sizeof(Client));
	m->clients[i].state = CS_CONNECTING;
	m->clients[i].gen = ++m->gens;
	m->clients[i].sess = add_session(m, id, timeout_ms);
	return i;
}

int
zkm_resume(Zkm *m, int64_t session)
{
	int			i;
	int			si = -1;

	/* the password comes from the id: the live session of that id, or its last one */
	for (i = 0; i < m->nsessions; i++)
		if (m->sessions[i].id == session && !m->sessions[i].never &&
			(si < 0 || !m->sessions[i].gone))
			si = i;
	if (si < 0)
		return -1;
	for (i = 0; i < ZKM_CLIENTS; i++)
		if (m->clients[i].state == CS_UNUSED)
			break;
	if (i == ZKM_CLIENTS)
		return -1;
	memset(&m->clients[i], 0, sizeof(Client));
	m->clients[i].state = CS_CONNECTING;
	m->clients[i].gen = ++m->gens;
	m->clients[i].sess = si;
	return i;
}

void
zkm_abandon(Zkm *m, int client)
{
	/* the process is gone: its connection closes, its session lives on until it expires */
	drop_connection(m, client, false);
	free_client(&m->clients[client]);
}

int64_t
zkm_session(const Zkm *m, int client)
{
	return m->sessions[m->clients[client].sess].id;
}

int
zkm_timeout(const Zkm *m, int client)
{
	return m->sessions[m->clients[client].sess].timeout;
}

bool
zkm_connected(const Zkm *m, int client)
{
	return m->clients[client].state == CS_CONNECTED;
}

bool
zkm_session_alive(const Zkm *m, int64_t session)
{
	int			i;

	for (i = 0; i < m->nsessions; i++)
		if (m->sessions[i].id == session && !m->sessions[i].gone)
			return true;
	return false;
}

void
zkm_close(Zkm *m, int client)
{
	Client	   *c = &m->clients[client];

	/* the close request reaches the leader only through a connection */
	if (c->state == CS_CONNECTED && !m->servers[c->server].cut &&
		m->sessions[c->sess].alive)
	{
		expire(m, c->sess);
		m->sessions[c->sess].closed = true;
	}
	free_client(c);
}

void
zkm_admin_delete(Zkm *m, const char *path)
{
	Tree	   *lt = &m->ptree;
	Prim	   *p;

	if (find(lt, path) == NULL || count_children(lt, path) > 0)
		return;
	p = xalloc(sizeof(Prim));
	p->create = false;
	snprintf(p->path, sizeof(p->path), "%s", path);
	apply_prim(m, lt, p, m->zxid + 1);
	append_txn(m, p, 1);
	commit_alone(m);
}

void
zkm_silence(Zkm *m, int client)
{
	if (m->clients[client].state == CS_CONNECTED)
		m->clients[client].silent_since = m->now;
}

void
zkm_garble_next(Zkm *m, int client)
{
	m->clients[client].garble_next = true;
}

void
zkm_refuse(Zkm *m, const char *path, int64_t us)
{
	int			i;
	int			k = 0;

	for (i = 1; i < ZKM_REFUSALS; i++)
		if (m->refusals[i].until < m->refusals[k].until)
			k = i;
	snprintf(m->refusals[k].path, sizeof(m->refusals[k].path), "%s", path);
	m->refusals[k].until = m->now + us;
}

void
zkm_lose_write_reply(Zkm *m, int client)
{
	m->clients[client].lose_write_reply = true;
}

void
zkm_kill(Zkm *m, int client)
{
	if (m->sessions[m->clients[client].sess].alive)
		expire(m, m->clients[client].sess);
}

void
zkm_set_paused(Zkm *m, int client, bool paused)
{
	m->clients[client].paused = paused;
}

void
zkm_advance(Zkm *m, int64_t us)
{
	int			i;

	m->now += us;
	for (i = 0; i < ZKM_CLIENTS; i++)
	{
		Client	   *c = &m->clients[i];

		/* pings: answered by any server, heard by the leader unless its server is cut off */
		if (c->state == CS_CONNECTED && !c->paused && !m->servers[c->server].cut &&
			c->silent_since == 0)
			m->sessions[c->sess].last_heard = m->now;
		/* the library hears nothing for 2/3 of the timeout: it drops the connection */
		if (c->state == CS_CONNECTED && c->silent_since != 0 &&
			m->now - c->silent_since > (int64_t) m->sessions[c->sess].timeout * 2000 / 3)
			zkm_reset(m, i);
		/* a follower without its leader drops its clients after a while */
		if (c->state == CS_CONNECTED && m->servers[c->server].cut &&
			m->now - m->servers[c->server].cut_since > m->follower_drop)
			zkm_reset(m, i);
	}
	if (m->electing_until != 0)
	{
		if (m->now >= m->electing_until)
			end_election(m);
		return;
	}
	if (m->nservers > 1)
	{
		bool		reached = false;

		for (i = 1; i < m->nservers; i++)
			reached |= !m->servers[i].cut;
		if (reached)
			m->quorum_lost_since = 0;
		else if (m->quorum_lost_since == 0)
			m->quorum_lost_since = m->now;
		else if (m->now - m->quorum_lost_since > m->follower_drop)
		{
			begin_election(m);
			return;
		}
	}
	for (i = 0; i < m->nsessions; i++)
		if (m->sessions[i].alive &&
			m->now - m->sessions[i].last_heard > (int64_t) m->sessions[i].timeout * 1000)
			expire(m, i);
}

/* ---- requests ---- */

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
		push(c, loss_reply(req->tag, req->kind));
		return;
	}
	r = xalloc(sizeof(ReqNode));
	r->req = *req;
	/* the caller's data is the model's now */
	r->req.data = keep_data(m, req->data);
	for (i = 0; i < req->nsub && req->kind == ZKM_MULTI_OP; i++)
		r->req.sub[i].data = keep_data(m, req->sub[i].data);
	r->client = client;
	r->sess = c->sess;
	r->gen = c->gen;
	r->server = c->server;
	if (c->garble_next)
	{
		r->garble = 1 + (int) (rnd(m) % 2);
		c->garble_next = false;
	}
	for (tail = &c->out; *tail; tail = &(*tail)->next)
		;
	*tail = r;
	pending_add(c, req->tag, req->kind);
}

static bool
is_write(ZkmReqKind k)
{
	/* a sync goes through the leader like a write: its reply comes once the server has caught up */
	return k == ZKM_CREATE || k == ZKM_DELETE || k == ZKM_MULTI_OP || k == ZKM_SYNC ||
		k == ZKM_SETDATA;
}

static char **
list_children(const Tree *t, const char *path, int *n)
{
	char	  **names = xalloc((count_children(t, path) + 1) * sizeof(char *));
	size_t		len = strcmp(path, "/") == 0 ? 0 : strlen(path);
	int			i;

	*n = 0;
	for (i = 0; i < t->n; i++)
		if (t->nodes[i].used && is_child(t->nodes[i].path, path))
			names[(*n)++] = strdup(t->nodes[i].path + len + 1);
	return names;
}

static void
add_watch(Zkm *m, int s, int client, bool child, const char *path, uint64_t wtag)
{
	Watch	   *w;

	/* the server keeps one per session and path, the library one per watcher and context */
	for (w = m->servers[s].watches; w; w = w->next)
		if (w->client == client && w->gen == m->clients[client].gen && w->child == child &&
			w->wtag == wtag && strcmp(w->path, path) == 0)
			return;
	w = xalloc(sizeof(Watch));

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
	const Node *n = find(t, r->req.path);
	ZkmMsg	   *msg = new_msg(ZKM_REPLY);

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
		msg->children = list_children(t, r->req.path, &msg->nchildren);
		msg->cversion = n->cversion;
	}
	if (r->req.watch)
	{
		add_watch(m, s, r->client, r->req.kind == ZKM_CHILDREN, r->req.path, r->req.wtag);
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

static int64_t
server_zxid(const Zkm *m, int s)
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
			msg = new_msg(ZKM_REPLY);
			msg->req = r->req.kind;
			msg->tag = r->req.tag;
			msg->rc = ZSESSIONEXPIRED;
		}
		else
			msg = read_reply(m, s, r);
		msg->zxid = server_zxid(m, s);
		push(c, msg);
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

	parent_of(sub->path, parent);
	memset(out, 0, sizeof(*out));
	n = find(t, sub->path);
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
		if (find(t, parent) != NULL && acl_refuses(m, parent))
			return ZNOAUTH;
		if (n == NULL)
			return ZNONODE;
		if (sub->versioned && sub->version != n->version)
			return ZBADVERSION;
		if (count_children(t, sub->path) > 0)
			return ZNOTEMPTY;
		out->create = false;
		snprintf(out->path, sizeof(out->path), "%s", sub->path);
		return ZOK;
	}
	par = find(t, parent);
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
			if (t->nodes[i].used && is_child(t->nodes[i].path, parent) &&
				ends_with(t->nodes[i].path, seq) &&
				(seq[1] == '-' || !ends_with(t->nodes[i].path, neg)))
			{
				fprintf(stderr, "model: sequence of %s given twice\n", out->path);
				abort();
			}
	}
	else
		snprintf(out->path, sizeof(out->path), "%s", sub->path);
	if (find(t, out->path))
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

	msg = new_msg(ZKM_REPLY);
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
	prim = xalloc((nsub + 1) * sizeof(Prim));
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
		scratch.nodes = xalloc((lt->n + 1) * sizeof(Node));
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
				apply_prim(m, &scratch, &p, m->zxid + 1);
				if (p.create)
					snprintf(msg->names[i], ZKM_PATH, "%s", p.path);
				nprim++;
			}
		}
		free(scratch.nodes);
		for (i = 0; i < nprim; i++)
			apply_prim(m, lt, &prim[i], m->zxid + 1);
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
		const Node *n = find(lt, r->req.path);

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
	t = append_txn(m, prim, nprim);
	if (c->state == CS_CONNECTED && c->sess == r->sess && c->gen == r->gen)
	{
		t->route.client = r->client;
		t->route.gen = r->gen;
		t->route.msg = msg;
	}
	else
		zkm_msg_free(msg);
	free(r);
	commit_alone(m);
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
			apply_next(m, 0);
	}
	apply_next(m, s);
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

		if (n->used && n->container && n->had_child && count_children(lt, n->path) == 0)
		{
			Prim	   *p = xalloc(sizeof(Prim));

			p->create = false;
			snprintf(p->path, sizeof(p->path), "%s", n->path);
			apply_prim(m, lt, p, m->zxid + 1);
			append_txn(m, p, 1);
			commit_alone(m);
			return true;
		}
	}
	return false;
}

/* ---- connections ---- */

void
zkm_reset(Zkm *m, int client)
{
	drop_connection(m, client, false);
}

/*
 * The connection ends.  A reset loses what the server sent and the client
 * had not read yet (keep_sent false); a server that closes it keeps it
 * readable, in order, ahead of the loss of what is still unanswered.
 */
static void
drop_connection(Zkm *m, int client, bool keep_sent)
{
	Client	   *c = &m->clients[client];
	ReqNode   **pr;
	ZkmMsg	   *state;
	int			i;

	if (c->state != CS_CONNECTED)
		return;
	/* on a silent link, what was on its way vanishes with the connection */
	if (c->silent_since != 0)
		keep_sent = false;
	c->silent_since = 0;
	c->state = CS_CONNECTING;
	c->gen = ++m->gens;	/* unique across handles: a reused client slot must not match old routes */
	c->writes_out = 0;
	/* what the server sent and the client had not read is lost; the library's own news is not */
	if (!keep_sent)
	{
		ZkmMsg	   *keep = NULL;
		ZkmMsg	  **tail = &keep;

		while (c->inbox)
		{
			ZkmMsg	   *next = c->inbox->next;

			if (c->inbox->local)
			{
				*tail = c->inbox;
				tail = &c->inbox->next;
				*tail = NULL;
			}
			else
				zkm_msg_free(c->inbox);
			c->inbox = next;
		}
		c->inbox = keep;
		c->inbox_tail = NULL;
		for (tail = &keep; *tail; tail = &(*tail)->next)
			c->inbox_tail = *tail;
	}
	while (c->out)
	{
		ReqNode    *next = c->out->next;

		free(c->out);
		c->out = next;
	}
	/* writes that never got past a server cut off from the leader are gone */
	for (pr = &m->fwd; *pr;)
	{
		ReqNode    *r = *pr;

		if (r->client == client && r->server != 0 && m->servers[r->server].cut)
		{
			*pr = r->next;
			free(r);
		}
		else
			pr = &r->next;
	}
	/* what is still unanswered is lost (replies kept above answer the oldest) */
	{
		int			answered = 0;
		const ZkmMsg *msg;

		for (msg = c->inbox; msg; msg = msg->next)
			answered += msg->kind == ZKM_REPLY && msg->rc != ZCONNECTIONLOSS;
		for (i = answered; i < c->npending; i++)
			push(c, loss_reply(c->pending_tag[i], c->pending_kind[i]));
	}
	c->npending = 0;
	state = new_msg(ZKM_STATE);
	state->type = ZKM_ST_CONNECTING;
	state->local = true;
	push(c, state);
}

bool
zkm_step_reconnect(Zkm *m, int client)
{
	Client	   *c = &m->clients[client];
	ZkmMsg	   *state;
	CWatch	   *w;
	int			cand[ZKM_SERVERS];
	int			n = 0;
	int			s;
	int			i;

	if (c->state != CS_CONNECTING || c->paused || m->electing_until != 0)
		return false;
	/*
	 * A session whose creation an election lost never existed: the server
	 * tells a client its id only once the createSession is committed, so the
	 * client still has none and asks for a new session, never by an id that
	 * may be another's by now.
	 */
	if (m->sessions[c->sess].never)
		c->sess = add_session(m, new_session_id(m, NULL, 0), m->sessions[c->sess].timeout);
	/* a new session is a proposal of the leader's: the client is connected once it is committed */
	if (m->sessions[c->sess].created == 0 && m->sessions[c->sess].alive)
	{
		append_txn(m, NULL, 0);
		m->sessions[c->sess].created = m->nlog;
		commit_alone(m);
	}
	if (m->sessions[c->sess].created > m->committed && m->sessions[c->sess].alive)
		return false;
	/* a server that has seen all the client has: else it refuses the client */
	for (i = 0; i < m->nservers; i++)
		if (!m->servers[i].cut &&
			server_zxid(m, i) >= c->last_zxid)
			cand[n++] = i;
	if (n == 0)
		return false;
	s = cand[rnd(m) % n];
	if (c->behind_next)
		for (i = 0; i < n; i++)
			if (server_zxid(m, cand[i]) < server_zxid(m, s))
				s = cand[i];
	c->behind_next = false;
	state = new_msg(ZKM_STATE);
	state->local = true;
	if (!m->sessions[c->sess].alive)
	{
		int			si = resume_by_id(m, c->sess);

		if (si >= 0)
		{
			/* connected to it next (once its creation is committed) */
			c->sess = si;
			zkm_msg_free(state);
			return true;
		}
		state->type = ZKM_ST_EXPIRED;
		c->state = CS_DEAD;
		push(c, state);
		return true;
	}
	c->state = CS_CONNECTED;
	c->server = s;
	c->gen = ++m->gens;	/* unique across handles: a reused client slot must not match old routes */
	m->sessions[c->sess].last_heard = m->now;
	state->type = ZKM_ST_CONNECTED;
	push(c, state);
	/* the library sets its watches again; what changed since fires now */
	for (w = c->watches; w; w = w->next)
	{
		const Node *node = find(&m->servers[s].tree, w->path);

		if (node == NULL || (w->child && node->pzxid > c->last_zxid) ||
			(!w->child && node->mzxid > c->last_zxid))
		{
			ZkmMsg	   *ev = new_msg(ZKM_EVENT);

			ev->tag = w->wtag;
			ev->child = w->child;
			ev->type = node == NULL ? ZKM_EV_DELETED : w->child ? ZKM_EV_CHILD : ZKM_EV_CHANGED;
			ev->zxid = server_zxid(m, s);	/* what the server has now fired it */
			snprintf(ev->path, sizeof(ev->path), "%s", w->path);
			push(c, ev);
		}
		else
			add_watch(m, s, client, w->child, w->path, w->wtag);
	}
	return true;
}

static void
add_cwatch(Client *c, bool child, const char *path, uint64_t wtag)
{
	CWatch	   *w;

	for (w = c->watches; w; w = w->next)
		if (w->child == child && w->wtag == wtag && strcmp(w->path, path) == 0)
			return;
	w = xalloc(sizeof(CWatch));

	w->child = child;
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->wtag = wtag;
	w->next = c->watches;
	c->watches = w;
}

static void
forget_cwatch(Client *c, bool child, const char *path)
{
	CWatch	  **pw;

	for (pw = &c->watches; *pw; pw = &(*pw)->next)
		if ((*pw)->child == child && strcmp((*pw)->path, path) == 0)
		{
			CWatch	   *w = *pw;

			*pw = w->next;
			free(w);
			return;
		}
}

ZkmMsg *
zkm_pop(Zkm *m, int client)
{
	Client	   *c = &m->clients[client];
	ZkmMsg	   *msg = c->inbox;

	if (msg == NULL || c->paused || (c->silent_since != 0 && c->state == CS_CONNECTED && !msg->local))
		return NULL;
	c->inbox = msg->next;
	if (c->inbox == NULL)
		c->inbox_tail = NULL;
	msg->next = NULL;
	if (msg->kind == ZKM_REPLY && msg->rc != ZCONNECTIONLOSS)
	{
		/* answered in order: the oldest pending request */
		if (c->npending > 0)
		{
			memmove(c->pending_tag, c->pending_tag + 1, (c->npending - 1) * sizeof(uint64_t));
			memmove(c->pending_kind, c->pending_kind + 1, (c->npending - 1) * sizeof(ZkmReqKind));
			c->npending--;
		}
	}
	/* a notification carries no zxid for the client (the server sends -1) */
	if (msg->kind != ZKM_EVENT && msg->zxid > c->last_zxid)
		c->last_zxid = msg->zxid;
	if (msg->kind == ZKM_REPLY && msg->rc == ZOK && msg->req == ZKM_GETDATA && msg->watch_set)
		add_cwatch(c, false, msg->path, msg->wtag);
	if (msg->kind == ZKM_REPLY && msg->rc == ZOK && msg->req == ZKM_CHILDREN && msg->watch_set)
		add_cwatch(c, true, msg->path, msg->wtag);
	if (msg->kind == ZKM_EVENT)
		forget_cwatch(c, msg->child, msg->path);
	return msg;
}

bool
zkm_inbox_any(const Zkm *m, int client, bool (*pred) (const ZkmMsg *msg, void *arg), void *arg)
{
	const ZkmMsg *msg;

	for (msg = m->clients[client].inbox; msg; msg = msg->next)
		if (pred(msg, arg))
			return true;
	return false;
}

bool
zkm_has_message(const Zkm *m, int client)
{
	return m->clients[client].inbox != NULL;
}

bool
zkm_has_pending(const Zkm *m, int client)
{
	const Client *c = &m->clients[client];

	return c->inbox != NULL || c->out != NULL || c->writes_out > 0;
}

int
zkm_backlog(const Zkm *m, int client)
{
	return m->clients[client].npending;
}

bool
zkm_unattached(const Zkm *m)
{
	int			i;
	int			j;

	for (i = 0; i < m->nsessions; i++)
	{
		bool		attached = false;

		for (j = 0; j < ZKM_CLIENTS && !attached; j++)
			attached = m->clients[j].state != CS_UNUSED && m->clients[j].sess == i;
		if (m->sessions[i].alive && !attached)
			return true;
	}
	return false;
}

bool
zkm_busy(const Zkm *m)
{
	int			i;

	if (m->fwd || m->electing_until != 0)
		return true;
	for (i = 0; i < m->nservers; i++)
		if (m->servers[i].applied < m->nlog)
			return true;
	for (i = 0; i < ZKM_CLIENTS; i++)
		if (m->clients[i].state != CS_UNUSED && zkm_has_pending(m, i))
			return true;
	return false;
}

void
zkm_set_follower_drop(Zkm *m, int64_t us)
{
	m->follower_drop = us;
}

void
zkm_partition(Zkm *m, int server, bool cut)
{
	ReqNode   **pr;

	if (server == 0 || (!cut && m->isolated))
		return;
	if (cut && !m->servers[server].cut)
		m->servers[server].cut_since = m->now;
	if (!cut && m->servers[server].cut)
	{
		int			i;

		/* back with the leader, it syncs afresh and drops its clients */
		m->servers[server].cut = false;
		for (i = 0; i < ZKM_CLIENTS; i++)
			if (m->clients[i].state == CS_CONNECTED && m->clients[i].server == server)
				zkm_reset(m, i);
	}
	/* writes it had not forwarded yet never reach the leader */
	for (pr = &m->fwd; cut && *pr;)
	{
		ReqNode    *r = *pr;

		if (r->server == server)
		{
			*pr = r->next;
			free(r);
		}
		else
			pr = &r->next;
	}
	m->servers[server].cut = cut;
}

int
zkm_leader_children(const Zkm *m, const char *path, char ***names)
{
	int			n;

	*names = list_children(&m->servers[0].tree, path, &n);
	return n;
}

void
zkm_names_free(char **names, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int
zkm_client_server(const Zkm *m, int client)
{
	return m->clients[client].state == CS_CONNECTED ? m->clients[client].server : -1;
}

int
zkm_server_children(const Zkm *m, int server, const char *path, char ***names)
{
	int			n;

	*names = list_children(&m->servers[server].tree, path, &n);
	return n;
}

int64_t
zkm_leader_zxid(const Zkm *m)
{
	return server_zxid(m, 0);
}

bool
zkm_leader_node(const Zkm *m, const char *path, int64_t *owner, int64_t *czxid)
{
	const Node *n = find(&m->servers[0].tree, path);

	if (n == NULL)
		return false;
	*owner = n->owner;
	*czxid = n->czxid;
	return true;
}

void
zkm_debug(const Zkm *m, int client)
{
	const Client *c = &m->clients[client];
	const ReqNode *r;
	int			nout = 0;
	int			nfwd = 0;
	int			i;

	for (r = c->out; r; r = r->next)
		nout++;
	for (r = m->fwd; r; r = r->next)
		nfwd += r->client == client;
	printf("  model client %d: state %d server %d gen %d writes out %d out %d fwd %d pending %d paused %d inbox %d\n",
		   client, c->state, c->server, c->gen, c->writes_out, nout, nfwd, c->npending, c->paused,
		   c->inbox != NULL);
	for (i = 0; i < m->nservers; i++)
		printf("  server %d: applied %d/%d cut %d\n", i, m->servers[i].applied, m->nlog, m->servers[i].cut);
}

const char *
zkm_leader_data(const Zkm *m, const char *path)
{
	const Node *n = find(&m->servers[0].tree, path);

	return n == NULL ? "" : n->data;
}

bool
zkm_answering(const Zkm *m, int client)
{
	return m->clients[client].state == CS_CONNECTED && m->clients[client].silent_since == 0;
}
