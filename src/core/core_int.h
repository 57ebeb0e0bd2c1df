/*
 * core_int.h — what the files of the worker's decisions share (core.c,
 * core_reply.c, core_grant.c, core_plan.c, core_batch.c), and nothing
 * else includes.  Every function here runs under the slot-table lock.
 */
#ifndef ZK_LOCK_CORE_INT_H
#define ZK_LOCK_CORE_INT_H

#include "core.h"
#include "slot_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zk_result.h"		/* ZooKeeper's result codes, not its library */

#include "deadlock.h"

#include "table.h"

#define MAX_PARENT_RETRIES	5

/*
 * Write requests (creates, deletes, multis) in flight at once.  Under load,
 * what arrives meanwhile waits for a reply and then goes out as one multi:
 * the server's cost is per transaction, so batches grow with the load.  Two
 * let a lone backend's next create go out while its last delete is still
 * under way.
 */
#define WRITE_WINDOW 2

#define CORE_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CORE_MIN(a, b) ((a) < (b) ? (a) : (b))
#define lengthof_array(a) (sizeof(a) / sizeof((a)[0]))

#define ERR_EXTERNAL	ZKL_SQLSTATE('3','8','0','0','0')
#define ERR_PRIVILEGE	ZKL_SQLSTATE('4','2','5','0','1')
#define ERR_DEADLOCK	ZKL_SQLSTATE('4','0','P','0','1')
#define ERR_AUTH_SPEC	ZKL_SQLSTATE('2','8','0','0','0')
#define ERR_NO_CONNECT	ZKL_SQLSTATE('0','8','0','0','1')
#define ERR_BAD_PARAM	ZKL_SQLSTATE('2','2','0','2','3')
#define ERR_SERIALIZATION	ZKL_SQLSTATE('4','0','0','0','1')

/* a refused lookup of our node is sent again after this long */
#define LOOK_AGAIN_US	1000000

/*
 * How long another cluster's try-lock waits for a lingering node to go:
 * that cluster deletes it on the child event of the try's create, so the
 * wait is two or three round trips; bounded by a multiple of the try's own
 * round trip, and a floor for the two workers' wake-ups.  The floor is for
 * a loaded server: its worker may wake tens of ms after the event, and a
 * 25 ms floor refused keys that only lingered (TAP, three files at once).
 * The cost: a try behind a node held there but still marked (its cluster
 * has not yet seen the try) answers false only when the mark comes off,
 * within that floor if that cluster is slow to wake.
 */
#define LINGER_WAIT_RTTS	4
#define LINGER_WAIT_MIN_MS	250
#define LINGER_WAIT_MAX_MS	500	/* a round trip measured across a reconnect is no round trip */
/* Node data with the mark ends so (JSON: the object's last member). */
#define LINGER_MARK			"\"linger\":true}"

extern ZklCohort * zc_core_cohort_of(ZklCore *c);
extern void zc_core_copy_name(char *dst, size_t size, const char *src);
extern bool zc_core_data_markable(const char *data);
extern void zc_core_decide(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n);
extern void zc_core_look_up_unlisted(ZklCore *c, const ZklSlot *s, const ZkrChild *kids, int n);
extern void zc_core_delete_result(ZklCore *c, ZklSlot *s, int rc);
extern void zc_core_deny_slot(ZklCore *c, ZklSlot *s);
extern void zc_core_fail_place(ZklCore *c, ZklSlot *s);
extern void zc_core_fail_slot(ZklCore *c, ZklSlot *s, int sqlstate, ZklZkState zstate,
							const char *fmt,...) __attribute__((format(printf, 5, 6)));
extern void zc_core_forget_place(ZklSlot *s);
extern void zc_core_free_slot(ZklCore *c, ZklSlot *s);
extern void zc_core_grant(ZklCore *c, ZklSlot *s);
extern bool zc_core_leader_answered(int rc);
extern void zc_core_lose_slot(ZklCore *c, ZklSlot *s);
extern void zc_core_lost_place(ZklCore *c, ZklSlot *s);
extern int64_t zc_core_mono(const ZklCore *c);
extern long zc_core_ms_until(int64_t now, int64_t then);
extern void zc_core_node_not_seen(ZklSlot *s);
extern void zc_core_note_proof(ZklCore *c, int64_t sent_at);
extern void zc_core_note_write_reply(ZklCore *c, const ZklSlot *s, int rc);
extern void zc_core_read_again_later(ZklCore *c, ZklSlot *s);
extern void zc_core_read_refused(ZklCore *c, ZklSlot *s, int rc);
extern long zc_core_recheck_ms(const ZklCore *c);
extern void zc_core_refuse_try(ZklCore *c, ZklSlot *s);
extern ZklSlot * zc_core_reply_slot(const ZklCore *c, uint64_t tag);
extern void zc_core_requeue(ZklCore *c, ZklSlot *s);
extern bool zc_core_same_key_owner(const ZklSlot *o, const ZklSlot *s);
extern void zc_core_lose_and_delete(ZklCore *c, ZklSlot *s);
/* Whether node `name` was made by a request of this cluster that still has its slot. */
extern bool zc_core_local_node(const ZklCore *c, const char *name);
extern void zc_core_sem_checked(ZklCore *c, const ZklSlot *s, int64_t now);
extern void zc_core_sem_delay_over(ZklCore *c, ZklSlot *s);
extern bool zc_core_sem_event(ZklCore *c, const char *path);
extern void zc_core_sem_listing(ZklCore *c, ZklSlot *s, const ZkrChild *kids, int n);
extern bool zc_core_sem_reader(ZklCore *c, const ZklSlot *s);
extern bool zc_core_session_error(int rc);
extern void zc_core_start_over(ZklCore *c, ZklSlot *s);
extern ZklSlot * zc_core_successor(const ZklCore *c, const ZklSlot *d);
extern bool zc_core_tell_successor(ZklCore *c, const ZklSlot *d);
extern void zc_core_wake(ZklCore *c, ZklSlot *s);
extern int64_t zc_core_wall(const ZklCore *c);
extern void zc_core_write_answered(ZklCore *c);

#endif
