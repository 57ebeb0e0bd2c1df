/*
 * sim_env.c — the simulator's side of a cluster's worker: its requests in flight,
 * what core.c asks of its host (clocks, wake-ups, the proof), and the bridge
 * to the shipped worker files (sim_host.h): which cluster they run for,
 * their calls sent to the model, and their watchers kept as the client
 * library keeps them.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

/* ---- outstanding requests ---- */

Out *
out_new(Cluster *c, Purpose p, uint64_t tag)
{
	Out		   *o;

	if (c->nouts == c->capouts)
	{
		c->capouts = c->capouts ? 2 * c->capouts : 64;
		c->outs = realloc(c->outs, c->capouts * sizeof(Out));
	}
	o = &c->outs[c->nouts++];
	memset(o, 0, sizeof(*o));
	o->id = ++c->next_out;
	o->purpose = p;
	o->tag = tag;
	return o;
}

bool
out_take(Cluster *c, uint64_t id, Out *into)
{
	int			i;

	for (i = 0; i < c->nouts; i++)
		if (c->outs[i].id == id)
		{
			*into = c->outs[i];
			c->outs[i] = c->outs[--c->nouts];
			return true;
		}
	return false;
}

void
send_req(Cluster *c, ZkmReq *r)
{
	zkm_send(S->m, c->client, r);
}

/* ---- what core.c asks of its host ---- */

/* Cluster c's monotonic clock: its rate drifts (drift_ppm) from true time. */
int64_t
c_mono(const Cluster *c)
{
	int64_t		t = zkm_now(S->m);

	return t + t * c->drift_ppm / 1000000 + c->mono_off;
}

int64_t
c_wall(const Cluster *c)
{
	return WALL_2026_US + c->wall_off + (c_mono(c) - c->mono_off) + c->wall_jump;
}

int64_t
env_mono(void *arg)
{
	return c_mono((const Cluster *) arg);
}

int64_t
env_now(void *arg)
{
	return c_wall((const Cluster *) arg);
}

void
env_new_uuid(void *arg, char out[ZKL_UUID_LEN + 1])
{
	uint64_t	r[2];

	r[0] = rnd();
	r[1] = rnd();
	zc_recipe_format_uuid((const unsigned char *) r, out);
}

void
env_wake(void *arg, ZklSlot *s)
{
}

/* A lost lock cancels its owner's statement: never a commit past its check. */
void
env_interrupt(void *arg, ZklSlot *s)
{
	Cluster    *c = arg;
	int			i = backend_of_pid(c, s->req.owner_pid);

	if (i >= 0 && c->b[i].st == B_PUBLISH)
		fail("c%d b%d: a loss of %s cancels a commit past its check (the rest of it cut in half)",
			 c->id, c->b[i].pid, s->key);
}

void
env_denied(void *arg, const ZklSlot *s)
{
	trace("c%d denied under %s", ((Cluster *) arg)->id, ROOT);
}

bool
env_grants_paused(void *arg, int64_t now, int64_t *until)
{
	Cluster    *c = arg;

	enter(c);
	return zw_grants_paused(now, until);
}

/*
 * The shipped worker files (orphans.c) run for cluster c: its shared
 * memory and its worker process's memory.  Every call into them comes
 * through here first.
 */

Cluster *
enter(Cluster *c)
{
	cur_cl = c;
	simpg_enter(c->shared, c->proc, c->session_timeout, c->fs, c->pm_pid, c->pm_start, c->hosts,
				c->reload_due);
	zw_orphans = c->orphans;
	zw_presence = c->presence;
	zw_requests = c->requests;
	zw_session = c->session;
	zw_left = c->left;
	zw_gw = c->gw;
	zw_once_io = c->once_io;
	zw_turn_core = &c->core;
	simpg_cluster(c->core.deadlock_timeout, c->id);
	zkl_test_orphan = S->aim.aim_orphans && c->id == S->aim.orph_cl && zkm_now(S->m) < S->aim.orph_until;
	return c;
}

int64_t
simh_mono(void)
{
	return c_mono(cur_cl) + cur_cl->block_us;
}

uint64_t
simh_nonce(void)
{
	return next_nonce();
}

/* ---- the client library's handles, for session.c and left_session.c ---- */

/* each handle's watcher, the one it was opened with (by the model's client) */
void		(*client_watchers[ZKM_CLIENTS]) (void);

/*
 * The worker reads its settings again: zk_lock.hosts as the file has it.
 * Whether its session lived then (connected, an id): a new list of the same
 * ensemble keeps it and every lock (session.c): its handle is not closed in
 * this turn (simh_close).
 */
void
simh_reloaded(void)
{
	Cluster    *c = cur_cl;

	c->reload_due = false;
	snprintf(c->hosts, sizeof(c->hosts), "%s", c->hosts_file);
	c->reload_client = c->t->conn_state == ZKC_CONNECTED && c->t->session_id != 0 ? c->client : -1;
}

/*
 * The library takes a new list of the same ensemble: now and then it moves
 * to another member of it (the connection drops; the session goes on), or
 * refuses a list it cannot parse.  Drawn off the seed's stream.
 */
int
simh_set_servers(const char *hosts)
{
	Cluster    *c = cur_cl;

	if (aside_chance(10))
		return ZBADARGUMENTS;
	if (c->client >= 0 && aside_chance(30))
	{
		trace("c%d: the new list moves it to another member", c->id);
		zkm_reset(S->m, c->client);
	}
	return ZOK;
}

int
simh_open(int timeout_ms, int64_t resume, void (*watcher) (void))
{
	int			client;

	if (resume != 0)
	{
		/*
		 * A crash's left-over session (an id not the cluster's own) may end
		 * between the list that showed it and this reattach to close it:
		 * the id may then be another's (left_session.c must look first).
		 */
		if (resume != cur_cl->t->session_id && S->aim.aim_left_end && chance(50) &&
			zkm_end_session(S->m, resume, true))
			trace("fault (aimed): left-over session %" PRIx64 " ends at the leader, and a stranger's "
				  "takes its id, just before c%d reattaches to close it", resume, cur_cl->id);
		client = zkm_resume(S->m, resume);
		trace("c%d resumes session %" PRIx64 "%s", cur_cl->id, resume, client < 0 ? ": none" : "");
	}
	else
	{
		client = zkm_open_owned(S->m, timeout_ms, cur_cl->id + 1);
		trace("c%d opens a session", cur_cl->id);
	}
	if (client >= 0)
	{
		client_watchers[client] = watcher;
		zkm_set_owner(S->m, client, cur_cl->id + 1);
	}
	return client;
}

/* zookeeper_close: the session closes, what was in flight is answered ZCLOSING */
void
simh_close(int client)
{
	Cluster    *c = cur_cl;
	int64_t		foreign = zkm_foreign_closes(S->m);
	int64_t		id = zkm_session(S->m, client);

	/* a new list of the same ensemble keeps a live session and every lock (session.c's reload) */
	if (client == c->reload_client)
		fail("c%d: a reload of zk_lock.hosts (\"%s\") closed its live session %" PRIx64, c->id, c->hosts, id);
	zkm_close(S->m, client);
	/* a session whose id another was given is that one's: closing it ends another's locks */
	if (zkm_foreign_closes(S->m) > foreign)
		fail("c%d closed a session it did not open (%" PRIx64 "): another's, given the id again",
			 c->id, id);
	if (client == c->client)
	{
		c->client = -1;
		drop_outs(c, false);
	}
}

/* zk_drop_handle: the connection ends, the session goes on for whoever has it */
void
simh_abandon(int client)
{
	Cluster    *c = cur_cl;

	zkm_abandon(S->m, client);
	if (client == c->client)
	{
		c->client = -1;
		drop_outs(c, false);
	}
}

/*
 * zw_client_wait on a handle of the worker's own besides its session's
 * (left_session.c's, to close a session left from before a crash): one
 * round trip tells it connected, or expired; with no server to answer, the
 * wait lasts what it asked.  The worker is busy meanwhile (left_tend), and
 * its clocks have moved on by that much inside this turn.
 */
int
simh_wait(int client, long max_wait_ms)
{
	Cluster    *c = cur_cl;
	bool		up = zkm_step_reconnect(S->m, client);
	int			state = zkm_connected(S->m, client) ? ZOO_CONNECTED_STATE :
		up ? ZOO_EXPIRED_SESSION_STATE : 0;

	c->block_us += state != 0 ? 2000 : (int64_t) max_wait_ms * 1000;
	if (state != 0 && client_watchers[client] != NULL)
		((watcher_fn) client_watchers[client]) ((zhandle_t *) (uintptr_t) (client + 1),
												ZOO_SESSION_EVENT, state, "", NULL);
	return 0;
}

void
simh_set_client(int client)
{
	cur_cl->client = client;
}

int
simh_client(void)
{
	return cur_cl->client;
}

int64_t
simh_session_of(int client)
{
	return zkm_session(S->m, client);
}

int
simh_timeout_of(int client)
{
	return zkm_timeout(S->m, client);
}

int64_t
simh_proof_read(int64_t *session)
{
	*session = cur_cl->proof_session;
	return cur_cl->proof_at;
}

void
simh_proof_forget(void)
{
	proof_forget(cur_cl);
}

/* zkl_new_uuid: requests.c asks one only for zk_lock.test_orphan's node, marked so (ORPHAN_UUID) */
void
simh_new_uuid(char *out)
{
	env_new_uuid(cur_cl, out);
	memcpy(out, ORPHAN_UUID, strlen(ORPHAN_UUID));
}

int
simh_lock_delay_ms(void)
{
	return zc_table_lock_delay_ms(cur_cl->lock_delay, cur_cl->proof_bound);
}

bool
simh_has_handle(void)
{
	return cur_cl->client >= 0;
}

int64_t
simh_wall(void)
{
	return c_wall(cur_cl) + cur_cl->block_us;
}

uint64_t
simh_sysid(void)
{
	return (uint64_t) cur_cl->id + 1;
}

void
simh_log(bool error, const char *line)
{
	if (strstr(line, "it is not listed as ours") != NULL)
		left_alone++;			/* left_session.c: a crash's left session whose id is another's now */
	if (strstr(line, "is not ours any more") != NULL)
		resumes_refused++;		/* session.c: a resumed session's presence node was gone */
	if (strstr(line, "cut off from ZooKeeper past the session timeout") != NULL)
		check_cutoff_early(cur_cl);
	if (error)
		fail("c%d worker: ERROR %s", cur_cl->id, line);
	else
		trace("c%d worker: %s", cur_cl->id, line);
}

bool
simh_connected(void)
{
	return cur_cl->client >= 0 && zkm_connected(S->m, cur_cl->client);
}

/* The lock key a path is under (its bit in Out.keys), or 0. */
uint32_t
path_keys(const char *path)
{
	int			k;

	for (k = 0; k < NALL; k++)
	{
		size_t		n = strlen(ROOT "/") + strlen(key_name(k));

		if (strncmp(path, ROOT "/", strlen(ROOT "/")) == 0 &&
			strncmp(path + strlen(ROOT "/"), key_name(k), strlen(key_name(k))) == 0 &&
			(path[n] == '\0' || path[n] == '/'))
			return UINT32_C(1) << k;
	}
	return 0;
}

uint64_t
watch_tag(const SimCall *call)
{
	uint64_t	ctx = (uint64_t) (uintptr_t) call->wctx;
	int			f;

	for (f = 0; f < nwatch_fns && watch_fns[f] != call->watcher; f++)
		;
	if (f == nwatch_fns)
	{
		if (nwatch_fns == 16)
			abort();
		watch_fns[nwatch_fns++] = call->watcher;
	}
	if (ctx >> WATCH_CTX_BITS)
		fail("c%d: a watcher's context too wide for a watch tag", cur_cl->id);
	return (UINT64_C(1) << 63) | ((uint64_t) f << WATCH_CTX_BITS) | ctx;
}

/* A read with a watch answered ZOK: the library keeps its watcher (once per path, kind and tag). */
void
watch_keep(Cluster *c, const Out *o)
{
	int			i;

	for (i = 0; i < c->nwatches; i++)
		if (c->watches[i].wtag == o->wtag && strcmp(c->watches[i].path, o->path) == 0 &&
			c->watches[i].child == (o->kind == ZKM_CHILDREN))
			return;
	c->watches = realloc(c->watches, (c->nwatches + 1) * sizeof(c->watches[0]));
	c->watches[c->nwatches].wtag = o->wtag;
	c->watches[c->nwatches].child = o->kind == ZKM_CHILDREN;
	snprintf(c->watches[c->nwatches].path, ZKM_PATH, "%s", o->path);
	c->nwatches++;
}

/* A watch event: whether the library has a watcher for it (then taken: one-shot). */
bool
watch_take(Cluster *c, const ZkmMsg *msg)
{
	int			i;

	for (i = 0; i < c->nwatches; i++)
		if (c->watches[i].wtag == msg->tag && c->watches[i].child == msg->child &&
			strcmp(c->watches[i].path, msg->path) == 0)
		{
			c->watches[i] = c->watches[--c->nwatches];
			return true;
		}
	return false;
}

void
watcher_call(Cluster *c, uint64_t wtag, int type, int state, const char *path)
{
	int			f = (int) ((wtag >> WATCH_CTX_BITS) & 0x7f);

	enter(c);
	((watcher_fn) watch_fns[f]) (NULL, type, state, path,
								 (void *) (uintptr_t) (wtag & ((UINT64_C(1) << WATCH_CTX_BITS) - 1)));
}

/* A change of the connection's state: the library tells every watcher it keeps. */
void
watchers_session_event(Cluster *c, int state)
{
	int			i;

	for (i = 0; i < c->nwatches; i++)
		watcher_call(c, c->watches[i].wtag, ZOO_SESSION_EVENT, state, "");
}

bool
simh_send(const ZkmReq *req, const SimCall *call)
{
	Out		   *o;
	ZkmReq		r = *req;
	int			i;

	if (cur_cl->client < 0)
		return false;
	o = out_new(cur_cl, P_CALL, (uint64_t) (uintptr_t) call->ctx);
	o->call = *call;
	o->kind = r.kind;
	calls_sent[r.kind]++;
	snprintf(o->path, sizeof(o->path), "%s", r.path);
	o->keys = path_keys(r.path);
	for (i = 0; i < r.nsub; i++)
		o->keys |= path_keys(r.sub[i].path);
	r.tag = o->id;
	if (call->watcher != NULL)
	{
		r.watch = true;
		r.wtag = o->wtag = watch_tag(call);
		o->watched = true;
	}
	/* on the worker's clock as it reads it (a wait on a handle of its own included) */
	if (r.kind == ZKM_CREATE || r.kind == ZKM_DELETE || r.kind == ZKM_MULTI_OP || r.kind == ZKM_SETDATA)
		cur_cl->write_sent_at = simh_mono();
	send_req(cur_cl, &r);
	gw_observe(cur_cl, &r);
	check_tombstone_asked(cur_cl, &r);
	check_group_whole(cur_cl, &r);
	if (r.kind == ZKM_EXISTS)
		note_gone_lookup(cur_cl, r.path, NULL);
	/*
	 * The worker sends its plan's calls without the table lock
	 * (ZklTableCohort.sending): a backend may claim meanwhile, and then
	 * takes nothing by itself (take_here.c) and waits for the next plan.
	 */
	if (cur_cl->t->cohort.sending && S->linger_ms > 0 && (send_pair_aim(cur_cl) || chance(15)) &&
		backend_begins_now(cur_cl))
	{
		began_sending++;
		cur_cl->began_in_send = true;
	}
	if (S->verbose && (r.kind == ZKM_CREATE || r.kind == ZKM_DELETE || r.kind == ZKM_MULTI_OP))
		trace("c%d sends %d %s%s", cur_cl->id, r.kind, r.kind == ZKM_MULTI_OP ? r.sub[0].path : r.path,
			  r.nsub > 1 ? " ..." : "");
	return true;
}

/*
 * The client library answers what is in flight when its handle closes with
 * ZCLOSING; a process that dies answers nothing (died).  Either way the
 * replies to the old handle are gone.
 */
void
drop_outs(Cluster *c, bool died)
{
	Out		   *outs = c->outs;
	int			n = c->nouts,
				i;

	c->outs = NULL;
	c->nouts = c->capouts = 0;
	c->nwatches = 0;			/* the library's watchers go with its handle */
	for (i = 0; i < n && !died; i++)
		if (outs[i].purpose == P_CALL)
		{
			enter(c);
			simzk_answer(&outs[i].call, NULL, ZCLOSING);
		}
	free(outs);
}

void
env_suspect(void *arg, const ZklSlot *s, const char *name)
{
	enter(arg);
	zw_suspect_blocker(s, name);
}

bool
env_may_be_orphan(void *arg, const char *name)
{
	enter(arg);
	return zw_may_be_orphan(name);
}

/* A new worker process: the shipped files' process memory, fresh. */
void
worker_memory(Cluster *c)
{
	/* the old process's connections close with it: no close request sent */
	if (c->left != NULL)
	{
		enter(c);
		zw_left_end();
	}
	if (c->proc != NULL)
		simpg_proc_end(c->proc);
	c->proc = simpg_proc_new();
	/* it reads the settings as the file has them */
	snprintf(c->hosts, sizeof(c->hosts), "%s", c->hosts_file);
	c->reload_due = false;
	enter(c);
	c->orphans = zw_orphans_new();
	c->presence = zw_presence_new();
	c->requests = zw_requests_new();
	c->session = zw_session_new();
	c->left = zw_left_new();
	c->gw = zw_gwaits_new();
	c->once_io = zw_once_io_new();
	zw_requests = c->requests;
	zw_presence = c->presence;
	zw_requests_init(&c->core, c->t->nslots);	/* as worker.c's main */
	zw_presence_start();
}

void
env_ghost(void *arg, const ZklSlot *s)
{
	enter(arg);
	check_lookup_missed(arg, s);
	zw_remember_ghost(s);
}

void
env_proof_note(void *arg, int64_t sent_at, int64_t session)
{
	Cluster    *c = arg;

	/* a proof dates from when its write went out, never from when its answer came */
	if (sent_at > c->write_sent_at)
		fail("c%d takes a proof at %.3f s, after the last write it sent (%.3f s)", c->id, sent_at / 1e6,
			 c->write_sent_at / 1e6);
	/* the rule shmem.c's zkl_proof_note applies */
	switch (zc_holds_proof_step(c->proof_at, c->proof_session, sent_at, session))
	{
		case ZKH_PROOF_KEEP:
			break;
		case ZKH_PROOF_NEW_SESSION:
			c->proof_session = session;
			/* fall through */
		case ZKH_PROOF_ADVANCE:
			c->proof_at = sent_at;
			break;
	}
	c->t->proof_wanted = false;
}

const char *
env_rc_text(int rc)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "rc %d", rc);
	return buf;
}

int
env_rc_sqlstate(int rc)
{
	return ZKL_SQLSTATE('3', '8', '0', '0', '0');
}

void
env_warn(void *arg, const char *msg)
{
	trace("c%d warning: %s", ((Cluster *) arg)->id, msg);
}
