/*
 * sim_aims.h — the state of the aims (sim_aims.c): faults and nudges that
 * make rare moments of the recipe frequent, each with its own clock.
 */
#ifndef SIM_AIMS_H
#define SIM_AIMS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct SimAims
{
	/* a new session's first listing, aimed (first_listing_tend) */
	bool		aim_first;
	int			fl_phase;
	int			fl_b;			/* the cluster whose new session lists late */
	int64_t		fl_session;		/* its session that ended */
	int64_t		fl_at;			/* model time: the next move */
	int			fl_count;
	/* a session of a reused id killed beside its id's old tombstone (reused_tend) */
	bool		aim_reused;
	bool		aim_left_end;	/* a crash's left-over session ends just before its reattach */
	int64_t		reused_at;		/* model time: the next look */
	int64_t		reused_killed[3];	/* the sessions so ended */
	/* a session killed as a session-level lock is given up (own_id_unlock_tend) */
	bool		aim_own_id;
	int			own_id_count;
	int64_t		leaned_at;		/* model time: the next leaned_on_tend */
	int64_t		barrier_at;		/* and barrier_tend */
	int64_t		ridden_at;		/* and ridden_upgrade_tend */
	int64_t		sole_at;		/* and sole_reader_tend */
	/* zk_lock.test_orphan turned on a while in one cluster (orphans_tend), in one seed of seven */
	bool		aim_orphans;
	int			orph_cl;
	int64_t		orph_at;		/* model time: the next window */
	int64_t		orph_until;		/* model time: the window's end */
} SimAims;

#endif
