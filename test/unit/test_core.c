/*
 * Unit tests of the worker's decisions (core.c) and a transaction's rules
 * (holds.c), one written-down interleaving each.  The simulator (test/sim)
 * explores interleavings at random; these pin the ones that once went wrong.
 * Prints "N passed, M failed".
 */
#include "unit_core.h"

int			passed;
int			failed;

int
main(void)
{
	test_invariants();
	test_session_lost_past_commit_check();
	test_upgrade_held_turn_deadlock();
	test_upgrade_passes_only_waiters();
	test_stale_watch();
	test_barrier_after_grant();
	test_fallen_upgrade();
	test_lost_with_other_lock();
	test_local_handover();
	test_reader_behind_writer_reads();
	test_lock_delay();
	test_session_lost();
	test_proof();
	test_resume();
	test_restart_verify();
	test_restart_lookup();
	test_unlisted_hold_lost();
	test_holds();
	test_book();
	test_session_names();
	test_lock_delay_rules();
	test_presence();
	test_presence_incarnations();
	test_owner_asks();
	test_looks();
	test_names();
	test_semaphore();
	test_semaphore_reader_gone();
	test_semaphore_delay_one_read();
	test_group_split();
	test_group_never_alone();
	test_proof_step();
	test_cutoff();
	test_term_action();
	test_stop_step();
	test_group_member_failed();
	test_cohort();
	test_cohort_session_lost();
	test_barrier_out_at_handover();
	test_kept_node_not_held();
	test_try_after_release();
	test_linger();
	test_take_here();
	test_pass_here();
	test_join_here();
	test_pass_here_older();
	test_cohort_root_reload();
	test_linger_and_foreign_try();
	test_linger_and_foreign_multi_try();
	test_try_not_parked_behind_handover();
	test_local_deadlock();
	test_gwait();
	test_recheck_looks_at_own_node();
	test_listing_behind();
	test_refusals();
	test_linger_goes_to_first_asker();
	test_kept_to_linger();
	test_riders();
	test_riders_lost();
	test_rider_upgrade_edges();
	test_riders_turned_off();
	test_riders_upgrade_past_writer();
	test_riders_bound_per_key();
	test_riders_count_outlives_node();
	test_riders_count_resets();
	test_readers_here();
	test_readers_kept();
	test_readers_together();
	test_readers_beside();
	test_readers_parked();
	test_readers_parked_order();
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
