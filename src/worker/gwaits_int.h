/*
 * gwaits_int.h — what the files of deadlock detection across clusters in
 * the worker share (gwaits_doc.c, gwaits_claim.c, gwaits.c), and nothing
 * else includes: the state they share and their calls, lower file first.
 */
#ifndef ZK_LOCK_GWAITS_INT_H
#define ZK_LOCK_GWAITS_INT_H

#include "postgres.h"

#include "common/pg_prng.h"

#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "core.h"
#include "gwaits.h"
#include "shmem.h"
#include "zk_client.h"

#define CLAIM_NODE	".deadlock"
#define MAX_DOCS	255			/* other clusters read in one round (a read's tag: gen, index) */
#define REWRITE_MS	100			/* a changed document is rewritten at most this often */
#define FIRST_READ_MS	250		/* the first reading of a spell of long waits, after its first write */
#define RETRY_MS	100
#define MAX_HEAVY	64			/* lock manager waits looked at in one document */
#define CONFIRM_POLL_MS	50		/* the victim's cluster reads the confirmations this often */
#define CLAIM_LOOK_MS	250		/* a cluster that publishes looks for a claim this often */

typedef enum Phase
{
	PH_IDLE,					/* next round at next_round */
	PH_SEMS,					/* listings of semaphores waited for are on their way */
	PH_READING,					/* the listing and the documents are on their way */
	PH_CLAIMING,				/* the claim's multi is on its way */
	PH_CONFIRMING				/* ours: the others' confirmations are awaited */
} Phase;

#define MAX_SEMS	16			/* semaphore waits listed for one document */

#define CLAIM_OPS	(2 * ZGW_MAX_CHECKS + 1)

/* The state of deadlock detection in one worker process: shared, then each file's own. */
struct ZklGwState
{
	uint64		gen;				/* tags calls: a new handle, session or root makes replies stale */
	int64		for_session;
	char		for_root[ZKL_MAX_ROOT_LEN + 1];
	Phase		phase;
	char		*doc;				/* formatted now, ZGW_DOC_LEN */
	char		*docs[MAX_DOCS];	/* the others', this round */
	int64		doc_session[MAX_DOCS];
	int			doc_version[MAX_DOCS];
	int			ndocs;
	int			reads_due;			/* documents still on their way */
	bool		claimed;			/* the claim is ours */
	bool		claim_check;		/* one of ours may be left (a restart, a lost reply): look */
	int64		claim_until;		/* zkl_mono_now: delete the claim then */
	ZgwVictim	victim;				/* of the last decision */
	ZgwVictim	claimed_victim;		/* of our claim */
	bool		victim_failed;		/* our claim's victim was failed */
	uint64		claim_nonce;		/* ours while confirming */
	bool		confirm_broken;		/* not all in time */
	int64		next_poll;			/* zkl_mono_now */
	uint64		confirms;			/* another's claim that named us (0: none) */
	bool		confirm_due;		/* write our document for it */
	ZklCore		*the_core;
	int			nheavy_sent;		/* of them, in the document as published last */
	bool		heavy_changed;		/* they changed since: write the document again */
	int			nsems;
	bool		sems_listed;		/* for the round due now */

	/* gwaits.c's own: publishing and the rounds */
	int64		next_round;			/* zkl_mono_now: the next reading, at the earliest */
	int64		next_write;			/* zkl_mono_now: the next rewrite, at the earliest */
	bool		published;			/* our document exists, as sent_doc */
	bool		doc_may_exist;		/* an older one may (a restart, a lost reply) */
	bool		dir_made;			/* <root>/.waits was asked for under this session and root */
	int			own_version;		/* of our document, from the last write's reply */
	uint64		sent_print;			/* zc_gwait_fingerprint when it was formatted */
	char	   *sent_doc;			/* what we published last */
	int64		next_look;			/* zkl_mono_now: look for a claim then */

	/* gwaits_doc.c's own: the lock manager's waits, the semaphores' queues */
	MemoryContext gw_cxt;			/* the lock manager's answers, reset each time */
	ZgwHeavy	heavy[MAX_HEAVY];
	ZgwSemWait	sems[MAX_SEMS];		/* as last listed */
	int			sem_slots[MAX_SEMS];	/* being listed */
	int			sems_due;			/* listings still on their way */

	/* gwaits_claim.c's own: the claim's confirmations, ours to collect or another's to give */
	char		claim_data[ZGW_CLAIM_LEN];
	int64		confirm_session[ZGW_MAX_CONFIRMS];	/* those the decision was made on */
	bool		confirmed[ZGW_MAX_CONFIRMS];
	int			nconfirm;
	/* the claim's multi: checks, then the create (kept until its reply) */
	zoo_op_t	claim_ops[CLAIM_OPS];
	zoo_op_result_t claim_results[CLAIM_OPS];
	char		claim_paths[CLAIM_OPS][ZKL_PATH_LEN];
};

extern const void * zw_gw_tag(void);
extern const void * zw_gw_read_tag(int i);
extern void zw_gw_waits_path(char *out);
extern void zw_gw_doc_path(int64 session, char *out);
extern void zw_gw_claim_path(char *out);
extern void zw_gw_forget_docs(void);
extern void zw_gw_round_over(void);
extern int zw_gw_gather_heavy(TimestampTz now);
extern int zw_gw_keep_heavy(int nh);
extern int zw_gw_format_doc(ZklCore *core, TimestampTz now, int nheavy);
extern bool zw_gw_list_sems(TimestampTz now);
extern void zw_gw_drop_claim(void);
extern void zw_gw_claim_looked(int rc, const struct Stat *stat, const void *ctx);
extern void zw_gw_claim(void);
extern void zw_gw_confirmations_over(void);
extern void zw_gw_poll_confirmations(void);
extern void zw_gw_look_for_claim(void);

#endif
