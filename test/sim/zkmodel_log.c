/*
 * zkmodel_log.c — the model ZooKeeper's log: transactions the leader
 * appends and commits, elections when it loses its quorum, and each server
 * applying the log in order, firing its watches and sending the replies
 * that waited for it.
 */
#define _POSIX_C_SOURCE 200809L

#include "zkmodel_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append a transaction at the leader and apply it there. */
LogTxn *
zki_append_txn(Zkm *m, Prim *prim, int nprim)
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

/* A leader with no follower commits alone; server 0 then serves it at once. */
void
zki_commit_alone(Zkm *m)
{
	if (m->nservers > 1)
		return;
	m->committed = m->nlog;
	while (m->servers[0].applied < m->committed)
		zki_apply_next(m, 0);
}

/*
 * The leader gave up (no quorum for follower_drop): every server stops
 * serving and drops its clients; writes not yet ordered, and proposals no
 * follower had, are lost (a session's end among them: that session lives
 * on); the new leader starts from the committed log, in a new epoch, and
 * gives every session a fresh timeout when it serves again.
 */
void
zki_begin_election(Zkm *m)
{
	int			i;
	int			j;

	m->electing_until = m->now + 200000 + (int64_t) (zki_rnd(m) % 1800) * 1000;
	m->elections++;
	for (i = 0; i < ZKM_CLIENTS; i++)
		if (m->clients[i].state == CS_CONNECTED)
			zki_drop_connection(m, i, false);
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
	zki_tree_init(&m->ptree);
	for (i = 0; i < m->nlog; i++)
		for (j = 0; j < m->log[i].nprim; j++)
			zki_apply_prim(m, &m->ptree, &m->log[i].prim[j], m->log[i].zxid);
	m->zxid = ((m->zxid >> 32) + 1) << 32;
	for (i = 1; i < m->nservers; i++)
		m->servers[i].cut = false;
	m->isolated = false;
	m->quorum_lost_since = 0;
	if (m->logf)
		m->logf("model: the leader lost its quorum: an election, uncommitted proposals lost");
}

void
zki_end_election(Zkm *m)
{
	int			i;

	m->electing_until = 0;
	while (m->servers[0].applied < m->committed)
		zki_apply_next(m, 0);
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
				ZkmMsg	   *msg = zki_new_msg(ZKM_EVENT);

				msg->tag = w->wtag;
				msg->type = type;
				msg->child = child;
				msg->zxid = zxid;	/* the change that fired it */
				snprintf(msg->path, sizeof(msg->path), "%s", path);
				zki_push(c, msg);
			}
			*pw = w->next;
			free(w);
		}
		else
			pw = &w->next;
	}
}

/* Server s forgets every watch of session si. */
void
zki_drop_watches(Zkm *m, int s, int si)
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
void
zki_apply_next(Zkm *m, int s)
{
	Server	   *sv = &m->servers[s];
	LogTxn		   *t = &m->log[sv->applied++];
	int			i;

	for (i = 0; i < t->nprim; i++)
	{
		const Prim *p = &t->prim[i];
		char		parent[ZKM_PATH];

		zki_apply_prim(m, &sv->tree, p, t->zxid);
		zki_parent_of(p->path, parent);
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
				zki_drop_connection(m, i, true);
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
			c->behind_next = zki_rnd(m) % 2 == 0;
			zkm_msg_free(t->route.msg);
			t->route.msg = NULL;
			zkm_reset(m, t->route.client);
		}
		else if (c->server == s)
		{
			t->route.msg->zxid = t->zxid;
			zki_push(c, t->route.msg);
			c->writes_out--;
			t->route.msg = NULL;
		}
	}
}
