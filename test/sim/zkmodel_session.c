/*
 * zkmodel_session.c — the model ZooKeeper's sessions: their ids (an ended
 * one's taken again on request), opening, resuming, closing and expiring
 * them; the faults the simulator asks for (a kill, a silent link, a lost
 * reply, an operator's delete or ACL, a failure inside a server); and
 * virtual time passing: pings, expiries, a quorum lost.
 */
#define _POSIX_C_SOURCE 200809L

#include "zkmodel_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
expire(Zkm *m, int si)
{
	Session    *se = &m->sessions[si];
	Tree	   *lt = &m->ptree;
	Prim	   *prim = zki_xalloc((lt->n + 1) * sizeof(Prim));
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
		int			j = (int) (zki_rnd(m) % (uint64_t) (i + 1));
		Prim		t = prim[i];

		prim[i] = prim[j];
		prim[j] = t;
	}
	for (i = 0; i < n; i++)
		zki_apply_prim(m, lt, &prim[i], m->zxid + 1);
	/* and forgets the session's watches */
	for (i = 0; i < m->nservers; i++)
		zki_drop_watches(m, i, si);
	/* each server closes the session's connections when it applies this */
	zki_append_txn(m, prim, n)->closes = si;
	zki_commit_alone(m);
}

void
zkm_set_id_reuse(Zkm *m, int percent)
{
	m->reuse_pct = percent;
}

void
zkm_set_own_id_reuse(Zkm *m, int percent)
{
	m->own_pct = percent;
}

/*
 * A new session's id: now and then (reuse_pct) one of an ended session, as
 * ZooKeeper hands out again after a member's host restarts (an id is the
 * member's id, its monotonic clock at start and a counter); never one a
 * live session has.  One that a client closed comes first (a clean stop's,
 * or a crash's left over: tombstones name them); but now and then
 * (own_pct), the id of the owner's own last session, if it ended: after such a restart the
 * ids come again in the same order, and the clients reconnecting first are
 * those that were first before (owner 0: none known).
 */
int64_t
zki_new_session_id(Zkm *m, int owner)
{
	int64_t		id = 0x1000 + m->nsessions;
	bool		closed = false;
	int			n = 0;
	int			i;

	if (m->reuse_pct == 0 || (int) (zki_rnd(m) % 100) >= m->reuse_pct)
		return id;
	if (owner > 0 && m->own_pct > 0 && (int) (zki_rnd(m) % 100) < m->own_pct)
	{
		for (i = m->nsessions - 1; i >= 0 && m->sessions[i].owner != owner; i--)
			;
		if (i >= 0 && m->sessions[i].gone && !zkm_session_alive(m, m->sessions[i].id))
		{
			m->reused++;
			return m->sessions[i].id;
		}
	}
	for (i = 0; i < m->nsessions; i++)
	{
		Session    *se = &m->sessions[i];

		if (!se->gone || zkm_session_alive(m, se->id) || (closed && !se->closed))
			continue;
		if (se->closed && !closed)
			n = 0;				/* the closed ones only, from here */
		closed |= se->closed;
		if (zki_rnd(m) % (uint64_t) ++n == 0)
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
int
zki_add_session(Zkm *m, int64_t id, int timeout_ms)
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
int
zki_resume_by_id(Zkm *m, int si)
{
	int64_t		id = m->sessions[si].id;
	int			i;

	for (i = 0; i < m->nsessions; i++)
		if (m->sessions[i].id == id && m->sessions[i].alive && !m->sessions[i].gone)
		{
			m->reissued++;
			return i;
		}
	if (!m->sessions[si].gone || m->reissue_pct == 0 || (int) (zki_rnd(m) % 100) >= m->reissue_pct)
		return -1;
	m->reissued++;
	if (m->logf)
		m->logf("model: an expired session's id was handed out again; the client reconnecting to it gets the new session");
	i = zki_add_session(m, id, m->sessions[si].timeout);
	m->sessions[i].owner = -1;	/* a stranger's */
	return i;
}

int
zkm_open(Zkm *m, int timeout_ms)
{
	return zkm_open_owned(m, timeout_ms, 0);
}

int
zkm_open_owned(Zkm *m, int timeout_ms, int owner)
{
	int			i;
	int64_t		id;

	for (i = 0; i < ZKM_CLIENTS; i++)
		if (m->clients[i].state == CS_UNUSED)
			break;
	if (i == ZKM_CLIENTS)
		return -1;
	id = zki_new_session_id(m, owner);
	memset(&m->clients[i], 0, sizeof(Client));
	m->clients[i].state = CS_CONNECTING;
	m->clients[i].gen = ++m->gens;
	m->clients[i].sess = zki_add_session(m, id, timeout_ms);
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
	m->clients[i].told = true;
	return i;
}

void
zkm_set_owner(Zkm *m, int client, int owner)
{
	m->clients[client].owner = owner;
	if (m->sessions[m->clients[client].sess].owner == 0)
		m->sessions[m->clients[client].sess].owner = owner;
}

int64_t
zkm_foreign_closes(const Zkm *m)
{
	return m->foreign_closes;
}

int64_t
zkm_late_answers(const Zkm *m)
{
	return m->late_answers;
}

void
zkm_abandon(Zkm *m, int client)
{
	/* the process is gone: its connection closes, its session lives on until it expires */
	zki_drop_connection(m, client, false);
	zki_free_client(&m->clients[client]);
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
		if (m->sessions[c->sess].owner != c->owner)
			m->foreign_closes++;
		expire(m, c->sess);
		m->sessions[c->sess].closed = true;
	}
	zki_free_client(c);
}

void
zkm_admin_delete(Zkm *m, const char *path)
{
	Tree	   *lt = &m->ptree;
	Prim	   *p;

	if (zki_find(lt, path) == NULL || zki_count_children(lt, path) > 0)
		return;
	p = zki_xalloc(sizeof(Prim));
	p->create = false;
	snprintf(p->path, sizeof(p->path), "%s", path);
	zki_apply_prim(m, lt, p, m->zxid + 1);
	zki_append_txn(m, p, 1);
	zki_commit_alone(m);
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

bool
zkm_end_session(Zkm *m, int64_t session, bool give_again)
{
	int			i;

	for (i = 0; i < m->nsessions; i++)
		if (m->sessions[i].id == session && m->sessions[i].alive)
		{
			int			timeout = m->sessions[i].timeout;

			expire(m, i);
			if (give_again)
			{
				/* a stranger's new session of the id (a member's host restarted), idle */
				i = zki_add_session(m, session, timeout);
				m->sessions[i].owner = -1;
				m->sessions[i].created = m->committed > 0 ? m->committed : 1;	/* made a while ago */
				m->reissued++;
			}
			return true;
		}
	return false;
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
			zki_end_election(m);
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
			zki_begin_election(m);
			return;
		}
	}
	for (i = 0; i < m->nsessions; i++)
		if (m->sessions[i].alive &&
			m->now - m->sessions[i].last_heard > (int64_t) m->sessions[i].timeout * 1000)
			expire(m, i);
}
