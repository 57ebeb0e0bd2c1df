/*
 * holds.c — release and commit rules of a transaction's locks (holds.h).
 */
#include "holds.h"

#include <string.h>

int
zc_holds_holds(const ZklHold *h)
{
	return h->nxact + h->nsession;
}

bool
zc_holds_keeps_node(const ZklHold *holds, int n, int i, ZkhNodeBefore before, void *arg)
{
	int			j;

	for (j = 0; j < n; j++)
		if (j != i && zc_holds_holds(&holds[j]) > 0 && strcmp(holds[j].key, holds[i].key) == 0 &&
			!before(arg, holds[j].slot, holds[i].slot))
			return true;
	return false;
}

bool
zc_holds_loss_unacknowledged(const ZklHold *h, bool lost)
{
	return lost && h->nsession > 0;
}

bool
zc_holds_acknowledge(ZklHold *h, bool lost)
{
	if (!zc_holds_loss_unacknowledged(h, lost))
		return false;
	h->nsession = 0;
	return true;
}

void
zc_holds_granted(ZklXactProof *p, int64_t session)
{
	if (p->session == 0)
		p->session = session;
	else if (session != p->session)
		p->sessions_differ = true;
}

void
zc_holds_released(ZklXactProof *p, const char *key, bool lost)
{
	/* unlocking a lost lock does not undo that another cluster may have held it */
	if (lost && p->lost_key == NULL)
		p->lost_key = key;
}

ZklProofStep
zc_holds_proof_step(int64_t proof_at, int64_t proof_session, int64_t sent_at, int64_t session)
{
	if (session != proof_session)
		return ZKH_PROOF_NEW_SESSION;
	return sent_at > proof_at ? ZKH_PROOF_ADVANCE : ZKH_PROOF_KEEP;
}

ZklCommitVerdict
zc_holds_commit_verdict(const ZklXactProof *p, bool session_lost, bool held_lost, int64_t proof_at,
				   int64_t proof_session, int64_t current_session, int64_t mono, int bound_ms)
{
	if (session_lost)
		return ZKH_SESSION_LOST;	/* even a transaction that took no lock */
	if (p->lost_key != NULL || held_lost)
		return ZKH_LOST;		/* a loss fails the commit, whatever else is known */
	if (p->session == 0)
		return ZKH_COMMIT;		/* no lock granted: nothing to prove */
	if (p->sessions_differ)
		return ZKH_TWO_SESSIONS;
	if (current_session != 0 && current_session != p->session)
		return ZKH_ENDED;
	if (proof_session == p->session && proof_at != 0 &&
		mono - proof_at < (int64_t) bound_ms * 1000)
		return ZKH_COMMIT;
	return ZKH_WAIT;
}
