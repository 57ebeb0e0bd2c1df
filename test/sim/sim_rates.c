/*
 * sim_rates.c — the clusters' clock rates: how far each cluster's clock runs
 * off true time, drawn per seed within failure-semantics.md's bound (or just
 * outside it, SIM_RATES=outside), and the margin that leaves.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

#include <stdlib.h>
#include <string.h>

/* A duration a cluster's clock measures as ms, in true ms. */
double
true_ms(const Cluster *c, int ms)
{
	return ms / (1.0 + c->drift_ppm / 1e6);
}

/*
 * The margin the clocks leave, in true ms: failure-semantics.md's bound,
 * for a session closed while its holders live (an expiry adds the session
 * timeout): a holder h's last commit check comes at most proof_bound on h's
 * clock after its proof, another cluster g grants at least its lock-delay
 * on g's clock after the close.
 */
int
rate_margin(const Sim *sim)
{
	double		m = 1e9;
	int			h;
	int			g;

	for (h = 0; h < sim->ncl; h++)
		for (g = 0; g < sim->ncl; g++)
		{
			const Cluster *ch = &sim->c[h];
			const Cluster *cg = &sim->c[g];
			double		d = true_ms(cg, zc_table_lock_delay_ms(cg->lock_delay, cg->proof_bound)) -
				true_ms(ch, ch->proof_bound);

			m = d < m ? d : m;
		}
	return (int) m;
}

/*
 * The clusters' clock rates.  In half the seeds they stay crystals'; in the
 * other half they spread by up to 40 %, then close in until the bound holds
 * with some margin left (a seed at its edge now and then).  SIM_RATES=outside
 * instead slows the first cluster's clock just past the bound, to show that
 * the bound is what keeps the lock safe: the checks must fail.  Returns the
 * margin left, in true ms, for pauses between a commit's check and its record.
 */
int
draw_rates(Sim *sim)
{
	const char *mode = getenv("SIM_RATES");
	int			spread = chance(50) ? 0 : 100000 + rnd_int(300001);
	int			floor_ms = 5 + rnd_int(50);
	int			i;

	for (i = 0; spread > 0 && i < sim->ncl; i++)
		sim->c[i].drift_ppm = rnd_int(2 * spread + 1) - spread;
	while (rate_margin(sim) < floor_ms)
		for (i = 0; i < sim->ncl; i++)
			sim->c[i].drift_ppm /= 2;
	if (mode != NULL && strcmp(mode, "outside") == 0 && sim->ncl > 1)
	{
		Cluster    *h = &sim->c[0];
		double		grant = 1e9;

		for (i = 1; i < sim->ncl; i++)
		{
			double		g = true_ms(&sim->c[i], zc_table_lock_delay_ms(sim->c[i].lock_delay,
																			sim->c[i].proof_bound));

			grant = g < grant ? g : grant;
		}
		/* h's proof bound lasts 1.5 times the shortest lock-delay elsewhere */
		h->drift_ppm = (int64_t) ((h->proof_bound / (1.5 * grant) - 1.0) * 1e6);
	}
	for (i = 0; i < sim->ncl; i++)
		trace("world: c%d's clock runs %+.1f %% off true time's rate", i, sim->c[i].drift_ppm / 1e4);
	return rate_margin(sim) > 0 ? rate_margin(sim) : 0;
}
