/*
 * core_reply.h — the worker's decisions on each reply and watch event
 * (core_reply.c).
 * Pure; its types are core.h's.
 */
#ifndef ZK_LOCK_CORE_REPLY_H
#define ZK_LOCK_CORE_REPLY_H

#include "core.h"

/* Replies.  Each returns what the host must do outside the lock, if anything. */
/* Returns true if the created node `name` belongs to nobody: delete it. */
extern bool zc_core_create_reply(ZklCore *c, uint64_t tag, int rc, const char *name,
							   bool have_stat, int64_t czxid);
extern void zc_core_key_node_reply(ZklCore *c, uint64_t tag, int rc);
/* watched: the listing set a child watch (zc_core_listing_watches said so when it was sent) */
extern void zc_core_children_reply(ZklCore *c, uint64_t tag, int rc,
								 const ZkrChild *kids, int n, bool watched);
/* data: the watched node's (len bytes; NULL unless rc is ZOK) */
extern void zc_core_watch_set_reply(ZklCore *c, uint64_t tag, int rc, const char *data, int len);
extern void zc_core_unmark_reply(ZklCore *c, uint64_t tag, int rc);
extern void zc_core_watch_event(ZklCore *c, uint64_t tag, bool deleted, const char *path);
extern void zc_core_barrier_reply(ZklCore *c, uint64_t tag, int rc);
extern void zc_core_delete_reply(ZklCore *c, uint64_t tag, int rc);
extern void zc_core_recover_reply(ZklCore *c, uint64_t tag, int rc,
								const char *const *names, int n);
/* Returns true with the stray node's path in `stray` when it must be deleted. */
extern bool zc_core_stat_reply(ZklCore *c, uint64_t tag, int rc, int64_t owner,
							 int64_t czxid, char *stray);
extern void zc_core_verify_reply(ZklCore *c, uint64_t tag, int rc);

/*
 * A multi's reply: op i was tags[i], a delete if del[i]; errs[i] its own
 * result; names[i] the created node's path.  Sets stray[i] for created
 * nodes nobody wants.
 */
extern void zc_core_multi_reply(ZklCore *c, int n, const uint64_t *tags, const bool *del,
							  const char *const *names, int rc, const int *errs,
							  bool *stray);

/* The commit proof's own request; gen is c->proof_gen when it was sent. */
extern void zc_core_proof_sent(ZklCore *c, bool ok);
extern void zc_core_proof_reply(ZklCore *c, uint64_t gen, int rc);

#endif
