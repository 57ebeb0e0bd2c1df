/*
 * looks.h — looks at nodes of this cluster's session that no request owns
 * (orphans.c does the I/O; the simulator runs the same): a stray's delete,
 * or a listing of a key for a ghost's uuid, each tried again a little later
 * until an answer says how things stand.  Pure.
 */
#ifndef ZK_LOCK_LOOKS_H
#define ZK_LOCK_LOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"

#define ZLK_DELAY_US	(1000 * INT64_C(1000))	/* a look tried again after */
#define ZLK_MAX			1024	/* looks kept at once: more are dropped (the suspects find them) */

typedef struct ZlkLook
{
	int64_t		due;			/* host's monotonic clock */
	int64_t		session;		/* whose node it is: the look ends with that session */
	bool		stray;			/* delete `path`; else list the key `path` for `uuid` */
	bool		in_flight;		/* sent, not answered yet */
	bool		said;			/* a refusal was logged */
	char		uuid[ZKL_UUID_LEN + 1];
	char		path[ZKL_PATH_LEN];
} ZlkLook;

typedef struct ZlkHost
{
	void	   *arg;
	void	   *(*alloc) (void *arg, size_t size);	/* zeroed; never NULL */
	void		(*release) (void *arg, void *p);
	bool		(*send) (void *arg, ZlkLook *l);	/* false: could not be sent */
} ZlkHost;

typedef struct ZlkLooks
{
	const ZlkHost *host;
	ZlkLook    *l[ZLK_MAX];
	int			n;
} ZlkLooks;

/*
 * A new look at path (for uuid: a ghost's; "": a stray's delete) for
 * session's node, or NULL when the same one is kept already or too many
 * are.  The caller sends a stray's at once (zc_looks_send), a ghost's is due
 * after ZLK_DELAY_US (zc_looks_again).
 */
extern ZlkLook *zc_looks_new(ZlkLooks *ls, const char *path, const char *uuid, int64_t session);
extern ZlkLook *zc_looks_find(const ZlkLooks *ls, const char *path, const char *uuid);
extern void zc_looks_send(ZlkLooks *ls, ZlkLook *l, int64_t now);
extern void zc_looks_again(ZlkLook *l, int64_t now);

/* What an answer to a look means. */
typedef enum ZlkAnswer
{
	ZLK_DONE,					/* settled (done, or gone with its session): the look ends */
	ZLK_AGAIN,					/* lost or refused: again later */
	ZLK_AGAIN_SAY				/* refused, the first time: worth a word */
} ZlkAnswer;

/* The answer rc to look l; a settled look is ended (and freed) here. */
extern ZlkAnswer zc_looks_answered(ZlkLooks *ls, ZlkLook *l, int rc, int64_t now);

/*
 * Each turn, connected under `session`: looks of other sessions end (their
 * nodes went with them), due ones are sent.  Returns the microseconds until
 * the next is due, or -1.
 */
extern int64_t zc_looks_tend(ZlkLooks *ls, int64_t now, int64_t session);

#endif
