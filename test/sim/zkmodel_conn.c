/*
 * zkmodel_conn.c — the model ZooKeeper's connections: dropped, made again
 * (watches set anew), partitions, a client reading its messages, and the
 * read-only queries of the simulator's checks.
 */
#define _POSIX_C_SOURCE 200809L

#include "zkmodel_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>	/* result codes, event and state types */

void
zkm_reset(Zkm *m, int client)
{
	zki_drop_connection(m, client, false);
}

/*
 * The connection ends.  A reset loses what the server sent and the client
 * had not read yet (keep_sent false); a server that closes it keeps it
 * readable, in order, ahead of the loss of what is still unanswered.
 */
void
zki_drop_connection(Zkm *m, int client, bool keep_sent)
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
			zki_push(c, zki_loss_reply(c->pending_tag[i], c->pending_kind[i]));
	}
	c->npending = 0;
	state = zki_new_msg(ZKM_STATE);
	state->type = ZKM_ST_CONNECTING;
	state->local = true;
	zki_push(c, state);
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
	 * may be another's by now.  So does a client whose new session ended
	 * before it read the server's answer (it was paused), when the library's
	 * own receive timeout, checked before it reads, drops that connection
	 * unread (or it reads the answer first: below).
	 */
	if (!m->sessions[c->sess].alive && !c->told && zki_rnd(m) % 2 == 0)
		m->sessions[c->sess].never = true;
	if (m->sessions[c->sess].never)
	{
		c->sess = zki_add_session(m, zki_new_session_id(m, c->owner), m->sessions[c->sess].timeout);
		m->sessions[c->sess].owner = c->owner;
	}
	/* a new session is a proposal of the leader's: the client is connected once it is committed */
	if (m->sessions[c->sess].created == 0 && m->sessions[c->sess].alive)
	{
		zki_append_txn(m, NULL, 0);
		m->sessions[c->sess].created = m->nlog;
		zki_commit_alone(m);
	}
	if (m->sessions[c->sess].created > m->committed && m->sessions[c->sess].alive)
		return false;
	/* a server that has seen all the client has: else it refuses the client */
	for (i = 0; i < m->nservers; i++)
		if (!m->servers[i].cut &&
			zki_server_zxid(m, i) >= c->last_zxid)
			cand[n++] = i;
	if (n == 0)
		return false;
	s = cand[zki_rnd(m) % n];
	if (c->behind_next)
		for (i = 0; i < n; i++)
			if (zki_server_zxid(m, cand[i]) < zki_server_zxid(m, s))
				s = cand[i];
	c->behind_next = false;
	state = zki_new_msg(ZKM_STATE);
	state->local = true;
	if (!m->sessions[c->sess].alive && !c->told)
	{
		ZkmMsg	   *closed = zki_new_msg(ZKM_STATE);

		/*
		 * Or the client reads that answer, its id with it, and then the
		 * connection the server closed at the expiry.  It resumes by that
		 * id next, as ZooKeeper's C library does, and may find the id
		 * another's by then.
		 */
		c->told = true;
		m->late_answers++;
		state->type = ZKM_ST_CONNECTED;
		zki_push(c, state);
		closed->type = ZKM_ST_CONNECTING;
		closed->local = true;
		zki_push(c, closed);
		return true;
	}
	if (!m->sessions[c->sess].alive)
	{
		int			si = zki_resume_by_id(m, c->sess);

		if (si >= 0)
		{
			/* connected to it next (once its creation is committed) */
			c->sess = si;
			zkm_msg_free(state);
			return true;
		}
		state->type = ZKM_ST_EXPIRED;
		c->state = CS_DEAD;
		zki_push(c, state);
		return true;
	}
	c->state = CS_CONNECTED;
	c->told = true;
	c->server = s;
	c->gen = ++m->gens;	/* unique across handles: a reused client slot must not match old routes */
	m->sessions[c->sess].last_heard = m->now;
	state->type = ZKM_ST_CONNECTED;
	zki_push(c, state);
	/* the library sets its watches again; what changed since fires now */
	for (w = c->watches; w; w = w->next)
	{
		const Node *node = zki_find(&m->servers[s].tree, w->path);

		if (node == NULL || (w->child && node->pzxid > c->last_zxid) ||
			(!w->child && node->mzxid > c->last_zxid))
		{
			ZkmMsg	   *ev = zki_new_msg(ZKM_EVENT);

			ev->tag = w->wtag;
			ev->child = w->child;
			ev->type = node == NULL ? ZKM_EV_DELETED : w->child ? ZKM_EV_CHILD : ZKM_EV_CHANGED;
			ev->zxid = zki_server_zxid(m, s);	/* what the server has now fired it */
			snprintf(ev->path, sizeof(ev->path), "%s", w->path);
			zki_push(c, ev);
		}
		else
			zki_add_watch(m, s, client, w->child, w->path, w->wtag);
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
	w = zki_xalloc(sizeof(CWatch));

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

	*names = zki_list_children(&m->servers[0].tree, path, &n);
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

	*names = zki_list_children(&m->servers[server].tree, path, &n);
	return n;
}

int64_t
zkm_leader_zxid(const Zkm *m)
{
	return zki_server_zxid(m, 0);
}

bool
zkm_leader_node(const Zkm *m, const char *path, int64_t *owner, int64_t *czxid)
{
	const Node *n = zki_find(&m->servers[0].tree, path);

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
	const Node *n = zki_find(&m->servers[0].tree, path);

	return n == NULL ? "" : n->data;
}

bool
zkm_answering(const Zkm *m, int client)
{
	return m->clients[client].state == CS_CONNECTED && m->clients[client].silent_since == 0;
}
