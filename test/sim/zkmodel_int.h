/*
 * zkmodel_int.h — the model ZooKeeper's own types and the functions its
 * files share (zkmodel.c and zkmodel_*.c); its users see zkmodel.h only.
 * A shared function's name starts with zki_: the simulator's other files
 * are linked into the same program.
 */
#ifndef ZKMODEL_INT_H
#define ZKMODEL_INT_H

#include "zkmodel.h"

#include <stddef.h>

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
	const char *data;			/* kept by the model (zki_keep_data): nodes copy freely */
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
	const char *data;			/* zki_keep_data's */
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
	int			owner;			/* the simulator's tag of who opened it (0: none given; -1: a stranger) */
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
	bool		told;			/* it knows its session's id (resumed, or connected once) */
	int			owner;			/* the simulator's tag of the handle's owner */
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
	int			own_pct;		/* of those, that take their owner's last one (if ended) */
	int64_t		reused;			/* sessions that did */
	int			reissue_pct;	/* of reconnects to an expired session that find its id reissued */
	int64_t		reissued;		/* reconnects that came back to another session of the id */
	int64_t		late_answers;	/* new sessions whose answer was read after they ended */
	int64_t		foreign_closes; /* close requests of a handle for a session another opened */
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

/* zkmodel.c: setup, trees and messages */
extern const char *zki_keep_data(Zkm *m, const char *data);
extern void *zki_xalloc(size_t n);
extern uint64_t zki_rnd(Zkm *m);
extern Node *zki_find(const Tree *t, const char *path);
extern void zki_parent_of(const char *path, char *out);
extern bool zki_is_child(const char *path, const char *parent);
extern int	zki_count_children(const Tree *t, const char *path);
extern void zki_apply_prim(Zkm *m, Tree *t, const Prim *p, int64_t zxid);
extern void zki_tree_init(Tree *t);
extern ZkmMsg *zki_new_msg(ZkmMsgKind kind);
extern void zki_push(Client *c, ZkmMsg *msg);
extern void zki_pending_add(Client *c, uint64_t tag, ZkmReqKind kind);
extern ZkmMsg *zki_loss_reply(uint64_t tag, ZkmReqKind kind);
extern void zki_free_client(Client *c);

/* zkmodel_log.c: the log, elections, servers applying transactions */
extern LogTxn *zki_append_txn(Zkm *m, Prim *prim, int nprim);
extern void zki_commit_alone(Zkm *m);
extern void zki_begin_election(Zkm *m);
extern void zki_end_election(Zkm *m);
extern void zki_drop_watches(Zkm *m, int s, int si);
extern void zki_apply_next(Zkm *m, int s);

/* zkmodel_session.c: sessions */
extern int64_t zki_new_session_id(Zkm *m, int owner);
extern int	zki_add_session(Zkm *m, int64_t id, int timeout_ms);
extern int	zki_resume_by_id(Zkm *m, int si);

/* zkmodel_request.c: requests */
extern char **zki_list_children(const Tree *t, const char *path, int *n);
extern void zki_add_watch(Zkm *m, int s, int client, bool child, const char *path, uint64_t wtag);
extern int64_t zki_server_zxid(const Zkm *m, int s);

/* zkmodel_conn.c: connections */
extern void zki_drop_connection(Zkm *m, int client, bool keep_sent);

#endif
