/*
 * holds.h — a transaction's locks as pure rules: when a released lock's
 * node may go, and what the commit must prove.  xact.c keeps the locks in
 * backend memory and applies these; the simulator applies the same.
 */
#ifndef ZK_LOCK_HOLDS_H
#define ZK_LOCK_HOLDS_H

#include <stdbool.h>
#include <stdint.h>

/* One granted lock of a backend: one slot, one node. */
typedef struct ZklHold
{
	int			slot;
	char		mode;
	const char *key;			/* encoded */
	int			nxact;			/* stacked transaction-level acquisitions left */
	int			nsession;		/* stacked session-level acquisitions left */
} ZklHold;

/* Acquisitions left at both levels: 0, and the lock is given up (unless zc_holds_keeps_node). */
extern int	zc_holds_holds(const ZklHold *h);

/*
 * A lost session-level lock stays lost: the backend keeps counting it held,
 * and every commit and every zk_* call of the session fails, until the
 * application acknowledges the loss (zk_session_unlock of its key and mode,
 * zk_session_unlock_all, DISCARD ALL).  A retry that a 40001 invites must
 * not commit under a lock that another cluster may hold meanwhile.
 * lost: whether ZooKeeper took h's lock away.
 */
extern bool zc_holds_loss_unacknowledged(const ZklHold *h, bool lost);

/*
 * The acknowledgement of a lost h: its session-level holds are dropped
 * (the caller then gives the lock up as any other, zc_holds_released: a loss).
 * Returns whether h was such a loss.  The acknowledging transaction ran
 * under the lost lock (zc_holds_granted), so it never commits, even if it goes
 * on after the call's error (a savepoint); DISCARD ALL, alone in its
 * transaction, ran nothing under it.
 */
extern bool zc_holds_acknowledge(ZklHold *h, bool lost);

/*
 * Whether holds[i], whose holds are all gone, must keep its node: another
 * mode of its key is held through a node that is not known to be older.
 * A later node of ours on the key may have been granted past waiters (of
 * any cluster, or of ours with their own node) queued behind this one
 * (recipe.c), and they must not be granted while we hold any mode.  A held
 * node older than this one was granted without it, and every node this one
 * was granted past conflicts with a held node ahead of it that stays (the
 * older one, or one kept by this same rule: a backend has one node per key
 * and mode), so this one may go: a downgrade (exclusive released, shared
 * held through an older node) lets other readers in at once, as core's
 * does.  Order is node creation, not acquisition: a lock taken again stacks
 * on its node, kept or not.
 * before(arg, a, b): whether slot a's node was created before slot b's
 * (sequence numbers of one key node compared: zc_recipe_seq_cmp, which assumes
 * two live nodes of a key are less than 2^31 creates apart).
 */
typedef bool (*ZkhNodeBefore) (void *arg, int a, int b);
extern bool zc_holds_keeps_node(const ZklHold *holds, int n, int i, ZkhNodeBefore before, void *arg);

/*
 * What the commit must prove, for every lock the transaction held at any
 * point (released early or not): the session that granted them, and
 * whether one was lost or came from another session.
 */
typedef struct ZklXactProof
{
	int64_t		session;		/* 0: no lock granted in this transaction */
	bool		sessions_differ;
	const char *lost_key;		/* a lost lock given up before commit (caller keeps the string) */
} ZklXactProof;

extern void zc_holds_granted(ZklXactProof *p, int64_t session);
/* A lock given up before commit: a loss stays a loss. */
extern void zc_holds_released(ZklXactProof *p, const char *key, bool lost);

typedef enum ZklCommitVerdict
{
	ZKH_COMMIT,
	ZKH_SESSION_LOST,			/* a lost session-level lock is not acknowledged */
	ZKH_WAIT,					/* the proof is too old: ask the worker, wait */
	ZKH_LOST,					/* a lock was lost */
	ZKH_TWO_SESSIONS,			/* granted by two sessions: the first one ended */
	ZKH_ENDED					/* the granting session ended */
} ZklCommitVerdict;

/*
 * The worker heard the leader answer a request of `session` sent at
 * sent_at (mono): the proof it makes, against the one kept (proof_at of
 * proof_session).  A proof of another session replaces the kept one, which
 * no longer counts; of the same session, only a later send time does.  The
 * send time, not the time the answer is read: an answer read after the
 * session died still proves only that it lived when the request left.
 */
typedef enum ZklProofStep
{
	ZKH_PROOF_KEEP,				/* nothing newer */
	ZKH_PROOF_ADVANCE,			/* the same session, proven later */
	ZKH_PROOF_NEW_SESSION		/* another session: forget the old proof first */
} ZklProofStep;

extern ZklProofStep zc_holds_proof_step(int64_t proof_at, int64_t proof_session,
								   int64_t sent_at, int64_t session);

/*
 * The commit rule: no commit while a session-level loss is unacknowledged
 * (session_lost), whatever the transaction did.  Then a transaction whose
 * locks session p->session granted may commit only while that session is
 * current, none of its locks was lost (held_lost: one still held;
 * p->lost_key: one given up), and the leader
 * answered a request of that session sent less than bound_ms ago (proof_at,
 * mono).  A holder whose session died commits no later than that; other
 * clusters wait out a lock-delay longer than the bound before they grant its
 * locks.
 */
extern ZklCommitVerdict zc_holds_commit_verdict(const ZklXactProof *p, bool session_lost, bool held_lost,
										   int64_t proof_at, int64_t proof_session,
										   int64_t current_session, int64_t mono,
										   int bound_ms);

#endif
