/*
 * slot_state.c — a slot's state machine (slot_state.h).
 */
#include "slot_state.h"

#include <stdio.h>
#include <stdlib.h>

#define NSTATES (ZKS_LINGER + 1)

static const char *const names[NSTATES] = {
	"free", "new", "creating", "recover", "recovering", "queued", "held", "deleting",
	"gone", "cohort", "linger"
};

#define B(st) (1u << (st))
/* a slot whose owner gave it up is freed from any state once nothing of it is under way */
#define OUT (B(ZKS_GONE) | B(ZKS_FREE))

/*
 * to-states allowed from each state.  GONE is reachable from every state
 * in use (a failure, a lost session); FREE from every one (an abandoned
 * slot), never from FREE itself (that would free it twice).
 */
static const unsigned legal[NSTATES] = {
	[ZKS_FREE] = B(ZKS_NEW),	/* claimed (table.c) */
	[ZKS_NEW] = B(ZKS_CREATING) | B(ZKS_COHORT) | B(ZKS_QUEUED) | OUT,
	[ZKS_CREATING] = B(ZKS_QUEUED) | B(ZKS_RECOVER) | B(ZKS_NEW) | OUT,
	[ZKS_RECOVER] = B(ZKS_RECOVERING) | B(ZKS_RECOVER) | B(ZKS_NEW) | OUT,
	[ZKS_RECOVERING] = B(ZKS_QUEUED) | B(ZKS_RECOVER) | B(ZKS_NEW) | OUT,
	[ZKS_QUEUED] = B(ZKS_HELD) | B(ZKS_DELETING) | B(ZKS_RECOVER) | B(ZKS_NEW) | OUT,
	[ZKS_HELD] = B(ZKS_DELETING) | B(ZKS_LINGER) | OUT,
	[ZKS_DELETING] = OUT,
	[ZKS_GONE] = B(ZKS_NEW) | B(ZKS_DELETING) | OUT,	/* requeued; a refused verify's delete */
	[ZKS_COHORT] = B(ZKS_COHORT) | B(ZKS_QUEUED) | B(ZKS_NEW) | OUT,
	[ZKS_LINGER] = B(ZKS_DELETING) | OUT,
};

void		(*zc_slot_illegal) (const ZklSlot *s, ZklZkState to) = NULL;

#ifdef ZKS_OBSERVE
long		zc_slot_seen[NSTATES][NSTATES];
#endif

bool
zc_slot_legal(ZklZkState from, ZklZkState to)
{
	return (unsigned) from < NSTATES && (unsigned) to < NSTATES && (legal[from] & B(to)) != 0;
}

const char *
zc_slot_name(ZklZkState state)
{
	return (unsigned) state < NSTATES ? names[state] : "?";
}

void
zc_slot_move(ZklSlot *s, ZklZkState to)
{
#ifdef ZKS_OBSERVE
	zc_slot_seen[s->zstate][to]++;
#endif
	if (!zc_slot_legal(s->zstate, to))
	{
		if (zc_slot_illegal)
			zc_slot_illegal(s, to);
		else
		{
			fprintf(stderr, "zk_lock: illegal slot transition %s -> %s\n", zc_slot_name(s->zstate),
					zc_slot_name(to));
			abort();
		}
	}
	s->zstate = to;
}
