/*
 * unit_core.h — what the files of test_core share: the host core.c runs
 * in (unit_host.c), the steps the tests share, and every test.
 */
#ifndef ZK_LOCK_UNIT_CORE_H
#define ZK_LOCK_UNIT_CORE_H

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>	/* result codes */

#include "cohort.h"
#include "core.h"
#include "cutoff.h"
#include "resume.h"
#include "sigterm.h"
#include "clean_stop.h"
#include "gwait.h"
#include "book.h"
#include "holds.h"
#include "lock_delay.h"
#include "looks.h"
#include "table.h"
#include "check.h"
#include "core_batch.h"
#include "core_grant.h"
#include "core_plan.h"
#include "core_reply.h"
#include "gwait_doc.h"
#include "invariant.h"

#define NSLOTS 8

/* A writer of another cluster, queued behind this cluster's nodes. */
#define WRITER_B "x-00000000-0000-4000-8000-0000000000ff-9-9-0000000002"

/* unit_host.c: the host's state, which the tests set and read */
extern int64_t now_us;
extern int	claim_holders;
extern uint64_t claim_group;
extern int	interrupts;
extern bool paused;
extern int64_t paused_until;
extern int64_t noted_at;
extern int64_t noted_session;
extern int	ghosts;
extern int	warnings;
extern ZklTable table;
extern ZklSlot slots[NSLOTS];
extern ZklCore core;
extern ZklOp ops[2 * NSLOTS];
extern bool held[NSLOTS];
extern char made[4][ZKL_NODE_BUFLEN];
extern const char *queue[4];

/* unit_host.c: steps the tests share */
void setup(void);
void setup_handover(int linger_ms);
int claim(char mode, int pid);
uint64_t planned(int idx, ZklOpKind kind);
const char *node_of(int idx, int seq, char *buf);
void create_and_list(int idx, int seq, const char *const *names, int n);
void holder_and_waiter(int *d, int *w);
void listing_without(int w);
void lookup_finds_nothing(int idx);
/* the tests, file by file (with the helpers another file uses) */
void test_listing_behind(void);
void test_recheck_looks_at_own_node(void);
void test_refusals(void);
void test_stale_watch(void);
void test_fallen_upgrade(void);
void test_barrier_after_grant(void);
void test_barrier_out_at_handover(void);
void test_lost_with_other_lock(void);
void test_local_handover(void);
void test_reader_behind_writer_reads(void);
void test_lock_delay(void);
void test_session_lost(void);
void test_session_lost_past_commit_check(void);
int lone_holder(void);
void test_unlisted_hold_lost(void);
void test_restart_verify(void);
void test_restart_lookup(void);
void test_proof(void);
void test_resume(void);
void test_holds(void);
void test_book(void);
void test_session_names(void);
void test_lock_delay_rules(void);
void test_looks(void);
void test_owner_asks(void);
void test_presence(void);
void test_presence_incarnations(void);
void test_names(void);
int queue_semaphore(int pid, int seq);
void test_semaphore(void);
void test_semaphore_delay_one_read(void);
void test_semaphore_reader_gone(void);
void test_group_split(void);
int claim_member(uint64_t group, const char *key);
void test_group_never_alone(void);
void test_group_member_failed(void);
void test_proof_step(void);
void test_term_action(void);
void test_stop_step(void);
void test_cutoff(void);
int ask(int pid, bool nowait);
void peek_alone(int h);
void test_cohort(void);
void test_cohort_session_lost(void);
void test_kept_node_not_held(void);
void test_try_after_release(void);
void test_linger_goes_to_first_asker(void);
void test_kept_to_linger(void);
void test_linger(void);
void test_take_here(void);
void test_pass_here(void);
void test_join_here(void);
void test_pass_here_older(void);
void test_cohort_root_reload(void);
/* test_cohort.c's, for test_here.c */
void holder_and_local_waiter(int *h, int *w);
int lingering(int gaps);
void listed(uint64_t tag, const char *const *names, int n, bool watched);
void test_linger_and_foreign_try(void);
void test_linger_and_foreign_multi_try(void);
int claim_key(int pid, const char *key);
void test_local_deadlock(void);
void test_gwait(void);
void test_try_not_parked_behind_handover(void);
void test_riders(void);
void test_rider_upgrade_edges(void);
void test_readers_here(void);
void test_readers_kept(void);
void test_readers_together(void);
void test_readers_beside(void);
void test_readers_parked(void);
void test_readers_parked_order(void);
void test_riders_lost(void);
void test_riders_turned_off(void);
void test_riders_upgrade_past_writer(void);
void test_riders_bound_per_key(void);
void test_riders_count_outlives_node(void);
void test_riders_count_resets(void);
void test_invariants(void);
void test_upgrade_held_turn_deadlock(void);
void test_upgrade_passes_only_waiters(void);

#endif
