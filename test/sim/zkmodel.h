/*
 * zkmodel.h — a model of a ZooKeeper ensemble for the simulator.
 *
 * What it keeps of the real one:
 *   - a leader that orders every write (one zxid each), checking it against
 *     its proposals, and commits it once a quorum has it (the first
 *     follower's copy); followers apply the same log later, each serving
 *     reads from its own, possibly lagging, tree; a client's requests are
 *     answered in order, a write's reply once it is committed and the
 *     client's own server has applied it;
 *   - a leader cut off from every follower: it orders writes it cannot
 *     commit; after follower_drop an election drops every connection, loses
 *     what was not committed (a session's end among it: the session lives
 *     on; a session's creation: it never was), and serves again in a new
 *     epoch, every session's timeout fresh;
 *   - a new session is a proposal: its client is connected once it is
 *     committed; on request (zkm_set_id_reuse) it may take an ended
 *     session's id, as ZooKeeper does after a member's host restarts; a
 *     reconnect finds a session by its id (the password comes from it), so
 *     a client whose session expired comes back to the one that has its id
 *     now, and on request (zkm_set_reissue) to one given it meanwhile; the leader answers a session it is closing ZSESSIONEXPIRED
 *     at once, reads included, before the close is committed;
 *   - sequential names from the parent's cversion, "%010d" of a signed
 *     32-bit counter that wraps; containers; ephemerals of a session
 *     deleted in one transaction when it expires or closes;
 *   - one-shot data and child watches, fired by the server that applies the
 *     change, ahead of any later reply on that connection; set again by
 *     the client library on reconnect (fired at once if the node changed
 *     since the client's last seen zxid);
 *   - node data, set at create and by setData (a data watch fires), its
 *     version (Stat.version) checked by a multi's check, a delete or a
 *     setData (ZBADVERSION);
 *   - multi all-or-nothing with the real per-op results;
 *   - connection resets that lose replies (a write may still be applied
 *     after the reset, even after a read on the next connection; after a
 *     write's lost reply the next server is often the one furthest behind), session
 *     expiry at the leader from missed pings, a follower cut off from the
 *     leader that keeps answering pings and reads;
 *   - ACLs an operator sets on a node for a while: creates and deletes of
 *     its children, reads and setData of it answer ZNOAUTH (exists never),
 *     checked in the server's order (parent, ACL, node);
 *   - a server that fails inside on a request (ZMARSHALLINGERROR), before
 *     it took effect or after (a write applied, a watch left).
 * Result codes and event types are those of <zookeeper/zookeeper.h>.
 */
#ifndef ZKMODEL_H
#define ZKMODEL_H

#include <stdbool.h>
#include <stdint.h>

#define ZKM_PATH	200
#define ZKM_SERVERS	3
#define ZKM_CLIENTS	8
#define ZKM_MULTI	32
#define ZKM_DATA	8192		/* node data a reader's buffer takes (conform.c) */

typedef enum ZkmReqKind
{
	ZKM_CREATE,
	ZKM_DELETE,
	ZKM_CHILDREN,				/* getChildren2, optionally with a child watch */
	ZKM_GETDATA,				/* getData, optionally with a data watch */
	ZKM_EXISTS,					/* exists, no watch */
	ZKM_MULTI_OP,				/* creates, deletes and checks */
	ZKM_SYNC,					/* the server catches up with the leader first */
	ZKM_SETDATA					/* setData, any version: fires data watches */
} ZkmReqKind;

#define ZKM_F_EPHEMERAL		0x01
#define ZKM_F_SEQUENTIAL	0x02
#define ZKM_F_CONTAINER		0x04

typedef struct ZkmSub
{
	ZkmReqKind	kind;			/* ZKM_CREATE, ZKM_DELETE, or ZKM_EXISTS for a check */
	int			flags;
	bool		versioned;		/* a check, delete or setData of version only (else any) */
	int			version;
	char		path[ZKM_PATH];
	const char *data;			/* create: NUL-terminated (NULL: none); zkm_send copies it */
} ZkmSub;

typedef struct ZkmReq
{
	ZkmReqKind	kind;
	int			flags;			/* create */
	bool		versioned;		/* a delete or setData of version only (else any) */
	int			version;
	bool		watch;
	uint64_t	tag;			/* the caller's, returned with the reply */
	uint64_t	wtag;			/* returned with the watch event */
	int			nsub;			/* multi */
	char		path[ZKM_PATH];
	const char *data;			/* create, setData: as ZkmSub's */
	ZkmSub		sub[ZKM_MULTI];
} ZkmReq;

/* Event and state types (the library's are variables, not constants). */
#define ZKM_EV_CHILD		4
#define ZKM_EV_DELETED		2
#define ZKM_EV_CHANGED		3
#define ZKM_ST_CONNECTING	1
#define ZKM_ST_CONNECTED	3
#define ZKM_ST_EXPIRED		(-112)

typedef enum ZkmMsgKind
{
	ZKM_REPLY,
	ZKM_EVENT,					/* a watch fired */
	ZKM_STATE					/* session state: connected, connecting, expired */
} ZkmMsgKind;

typedef struct ZkmMsg
{
	ZkmMsgKind	kind;
	ZkmReqKind	req;			/* REPLY */
	uint64_t	tag;			/* REPLY: request's tag; EVENT: watch's wtag */
	int			rc;
	int			type;			/* EVENT: ZKM_EV_*; STATE: ZKM_ST_* */
	char		path[ZKM_PATH]; /* created path; event's path */
	int64_t		owner;			/* exists: ephemeralOwner */
	int64_t		czxid;
	const char *data;			/* getData ("" otherwise; the model's, until zkm_free) */
	int32_t		version;		/* the node's data version (Stat.version) */
	int64_t		zxid;			/* the server's, when it answered (clients track the last seen);
								 * EVENT: the change that fired it */
	int32_t		cversion;		/* getChildren: the parent's */
	int			nchildren;
	char	  **children;		/* names, owned by the message */
	bool		child;			/* EVENT: of a child watch */
	bool		local;			/* made by the client library, not sent by a server */
	bool		watch_set;		/* a read that left a watch (the library keeps it) */
	uint64_t	wtag;
	int			nsub;			/* multi */
	int			errs[ZKM_MULTI];
	char		names[ZKM_MULTI][ZKM_PATH];
	struct ZkmMsg *next;
} ZkmMsg;

typedef struct Zkm Zkm;

extern Zkm *zkm_new(uint64_t seed, int nservers, int32_t cversion_start);
extern void zkm_free(Zkm *m);

/* Virtual time, microseconds. */
extern int64_t zkm_now(const Zkm *m);
extern void zkm_advance(Zkm *m, int64_t us);

/* A client handle: a new session (0 resume) or a resumed one. */
extern int	zkm_open(Zkm *m, int timeout_ms);
/* the same for a client of owner's (zkm_set_owner), whose last session's id may come again */
extern int	zkm_open_owned(Zkm *m, int timeout_ms, int owner);
extern void zkm_close(Zkm *m, int client);	/* closes its session, if reachable */
extern int	zkm_resume(Zkm *m, int64_t session);	/* a new handle on a session (-1: none) */
/* percent of new sessions that take an ended session's id (as after a member's restart) */
extern void zkm_set_id_reuse(Zkm *m, int percent);
/* percent of those that take the id of their owner's last session, if it ended */
extern void zkm_set_own_id_reuse(Zkm *m, int percent);
extern int64_t zkm_reused_ids(const Zkm *m);	/* sessions that took an ended one's id */
/*
 * A reconnect to an expired session is answered with the live session that
 * has its id now (the password comes from the id); percent of those with
 * none find the id handed out again meanwhile (a member's host restarted).
 */
extern void zkm_set_reissue(Zkm *m, int percent);
extern int64_t zkm_reissued(const Zkm *m);	/* reconnects that came back to another session */
extern void zkm_abandon(Zkm *m, int client);	/* the handle's process dies: the session lives on */
/* who opened a handle's session (a tag > 0), so that closing someone else's is counted */
extern void zkm_set_owner(Zkm *m, int client, int owner);
extern int64_t zkm_foreign_closes(const Zkm *m);	/* closes of a session another opened */
extern int64_t zkm_late_answers(const Zkm *m);	/* new sessions told their id after they ended */
extern int64_t zkm_session(const Zkm *m, int client);
extern int	zkm_timeout(const Zkm *m, int client);
extern bool zkm_connected(const Zkm *m, int client);
extern bool zkm_answering(const Zkm *m, int client);	/* connected, and its link carries pings */
extern void zkm_send(Zkm *m, int client, const ZkmReq *req);
extern ZkmMsg *zkm_pop(Zkm *m, int client);	/* next message for the client, or NULL */
extern void zkm_msg_free(ZkmMsg *msg);
extern void zkm_set_paused(Zkm *m, int client, bool paused);	/* no pings while paused */
extern void zkm_kill(Zkm *m, int client);	/* the session ends at the leader */
/* the live session of that id ends at the leader (give_again: a stranger's new one takes the id) */
extern bool zkm_end_session(Zkm *m, int64_t session, bool give_again);
extern void zkm_lose_write_reply(Zkm *m, int client);
extern void zkm_silence(Zkm *m, int client);	/* the link drops every packet until the library gives up */	/* the next write is applied, its reply lost */
extern void zkm_admin_delete(Zkm *m, const char *path);	/* someone else deletes a node */
/* An operator's ACL on path refuses our clients for us microseconds (ZNOAUTH). */
extern void zkm_refuse(Zkm *m, const char *path, int64_t us);
/* The client's next request fails inside its server (ZMARSHALLINGERROR), before or after it took effect. */
extern void zkm_garble_next(Zkm *m, int client);
/* Answers given so far: ZNOAUTH (refusals), ZMARSHALLINGERROR (failures inside). */
extern void zkm_counts(const Zkm *m, int64_t *noauth, int64_t *garbled);

/* Scheduler hooks: each returns false when it had nothing to do. */
extern bool zkm_step_server(Zkm *m, int client);	/* a server takes the client's next request */
extern bool zkm_step_leader(Zkm *m);	/* the leader orders a forwarded write */
extern bool zkm_step_follower(Zkm *m, int server);	/* a follower applies one transaction */
extern bool zkm_step_reconnect(Zkm *m, int client);
extern bool zkm_step_reap(Zkm *m);	/* remove an empty container */
extern void zkm_reset(Zkm *m, int client);	/* drop the connection */
extern void zkm_partition(Zkm *m, int server, bool cut);
/* The leader cut off from every follower: after follower_drop, an election. */
extern void zkm_isolate_leader(Zkm *m);
extern bool zkm_quorum(const Zkm *m);	/* the leader can commit: no election, a follower reaches it */
extern void zkm_model_counts(const Zkm *m, int64_t *elections, int64_t *lost_proposals);
extern void zkm_set_follower_drop(Zkm *m, int64_t us);	/* a cut-off follower keeps clients so long */
/* Whether a message the client has not read yet satisfies pred. */
extern bool zkm_inbox_any(const Zkm *m, int client, bool (*pred) (const ZkmMsg *msg, void *arg),
						  void *arg);
extern bool zkm_has_message(const Zkm *m, int client);	/* something to read */
extern bool zkm_has_pending(const Zkm *m, int client);	/* messages or requests under way */
extern int	zkm_backlog(const Zkm *m, int client);	/* requests sent, not answered yet */
extern bool zkm_busy(const Zkm *m);	/* anything in flight anywhere */
extern bool zkm_unattached(const Zkm *m);	/* a live session no handle holds (it will expire) */
extern int	zkm_nservers(const Zkm *m);
extern void zkm_debug(const Zkm *m, int client);
extern void zkm_set_log(Zkm *m, void (*log) (const char *line));

/* The leader's tree, for invariants: children of path (names; caller frees with zkm_names_free). */
extern int	zkm_leader_children(const Zkm *m, const char *path, char ***names);
extern void zkm_names_free(char **names, int n);
/* The server a client is connected to (-1: none), and a server's own view. */
extern int	zkm_client_server(const Zkm *m, int client);
extern int	zkm_server_children(const Zkm *m, int server, const char *path, char ***names);
extern bool zkm_leader_node(const Zkm *m, const char *path, int64_t *owner, int64_t *czxid);
extern const char *zkm_leader_data(const Zkm *m, const char *path);	/* "" when none */
extern bool zkm_session_alive(const Zkm *m, int64_t session);
extern int64_t zkm_leader_zxid(const Zkm *m);	/* the last write the leader applied */

#endif
