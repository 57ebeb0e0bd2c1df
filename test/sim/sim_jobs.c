/*
 * sim_jobs.c — a run's seeds shared by several processes, one core each:
 * process j of n takes seeds first + j, first + j + n, ...  Each writes
 * what its seeds met to a file of its own, printed in order at the end,
 * then one line of totals.  With --first-failure, the first process that
 * fails stops the others.
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

#include <signal.h>
#include <sys/wait.h>

/* Process j: its seeds, its report into out, its totals through fd. */
static void
run_job(const SimRange *range, int j, int jobs, FILE *out, int fd)
{
	SimRange	r = *range;
	SimTotals	tot;

	if (dup2(fileno(out), STDOUT_FILENO) < 0)
		exit(2);
	r.first += (uint64_t) j;
	r.stride = jobs;
	if (r.first <= r.last)
		sim_run_range(&r, &tot);
	else
		memset(&tot, 0, sizeof(tot));
	printf("job %d of %d (every %d%s seed from %" PRIu64 "): %d passed, %d failed, %" PRId64 " steps\n",
		   j + 1, jobs, jobs, jobs == 2 ? "nd" : "th", r.first, tot.passed, tot.failed, tot.steps);
	sim_print_stats();
	fflush(stdout);
	if (write(fd, &tot, sizeof(tot)) != (ssize_t) sizeof(tot))
		exit(2);
	exit(tot.failed ? 1 : 0);	/* exit, not _exit: coverage counters are written at exit */
}

int
sim_jobs(const SimRange *range, int jobs)
{
	pid_t		pid[SIM_MAX_JOBS];
	FILE	   *out[SIM_MAX_JOBS];
	int			fd[SIM_MAX_JOBS];
	SimTotals	sum = {0};
	int			left = 0;
	int			j;
	char		buf[4096];

	fflush(stdout);
	for (j = 0; j < jobs; j++)
	{
		int			p[2];

		out[j] = tmpfile();
		if (out[j] == NULL || pipe(p) != 0)
		{
			perror("sim: jobs");
			return 2;
		}
		pid[j] = fork();
		if (pid[j] < 0)
		{
			perror("sim: fork");
			return 2;
		}
		if (pid[j] == 0)
		{
			close(p[0]);
			run_job(range, j, jobs, out[j], p[1]);
		}
		close(p[1]);
		fd[j] = p[0];
		left++;
	}
	while (left > 0)
	{
		int			status;
		pid_t		done = waitpid(-1, &status, 0);
		SimTotals	tot;

		if (done < 0)
			break;
		for (j = 0; j < jobs && pid[j] != done; j++)
			;
		if (j == jobs)
			continue;
		left--;
		pid[j] = 0;
		if (read(fd[j], &tot, sizeof(tot)) == (ssize_t) sizeof(tot))
		{
			sum.passed += tot.passed;
			sum.failed += tot.failed;
			sum.steps += tot.steps;
		}
		else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)
			continue;			/* stopped below */
		else
			tot.failed = ++sum.failed;	/* it died (an invariant aborts): a failure */
		if (tot.failed > 0 && range->first_failure)
		{
			int			k;

			for (k = 0; k < jobs; k++)
				if (pid[k] > 0)
					kill(pid[k], SIGTERM);
		}
	}
	for (j = 0; j < jobs; j++)
	{
		size_t		n;

		close(fd[j]);
		rewind(out[j]);
		while ((n = fread(buf, 1, sizeof(buf), out[j])) > 0)
			fwrite(buf, 1, n, stdout);
		fclose(out[j]);
	}
	printf("%.0f steps/s over %" PRId64 " steps in %.1f s, %d processes\n",
		   sum.steps / (wall_seconds() - range->t0 + 1e-9), sum.steps, wall_seconds() - range->t0, jobs);
	printf("%d passed, %d failed\n", sum.passed, sum.failed);
	return sum.failed ? 1 : 0;
}

/* What the run met, summed over its seeds. */
void
sim_print_stats(void)
{
	printf("%" PRId64 " local hand-overs (%" PRId64 " of them readers joining a reader's node; %" PRId64
		   " nodes a backend took itself: %" PRId64 " rides, %" PRId64 " readers' lingering nodes); %" PRId64
		   " requests waited behind a local holder from their claim, or were refused there; %" PRId64
		   " transactions began while their worker sent its plan's calls\n",
		   handovers_seen, rides_seen, taken_here, rides_here, reader_takes_here, joined_here, began_sending);
	printf("%" PRId64 " upgrades granted ahead of local waiters they held up, %" PRId64
		   " past other clusters' requests behind the writers they held up; %" PRId64
		   " turns held for a local holder past which an upgrade went\n", upgrades_ahead, upgrades_across,
		   held_for_local);
	printf("%" PRId64 " local deadlocks broken (40P01)\n", deadlocks_broken);
	printf("%" PRId64 " deadlocks across clusters broken (40P01) in %" PRId64 " rounds, %" PRId64
		   " claims; the longest wait for ever lasted %" PRId64 " ms; documents up to %d bytes\n",
		   gw_victims, gw_rounds, gw_claims, gw_max_stuck_ms, gw_longest_doc);
	printf("%" PRId64 " of those victims of a cycle a wait of which was given up since the claim, "
		   "%" PRId64 " through a request whose node was deleted from outside\n",
		   gw_gaveup_victims, gw_tainted_victims);
	printf("%" PRId64 " try-locks waited for a node that may linger: %" PRId64 " granted, %" PRId64 " refused\n",
		   linger_waits[0] + linger_waits[1], linger_waits[1], linger_waits[0]);
	printf("%" PRId64 " answers ZNOAUTH (an ACL), %" PRId64 " ZMARSHALLINGERROR (a server's failure inside)\n",
		   noauth_answers, garbled_answers);
	printf("%" PRId64 " elections, %" PRId64 " writes ordered by a leader and lost with it\n",
		   elections_held, proposals_lost);
	printf("%" PRId64 " sessions took an ended session's id; %" PRId64
		   " crash-restarts left such an id alone\n", ids_reused, left_alone);
	printf("%" PRId64 " locks of an earlier version's client held and released beside them\n", legacy_spans);
	printf("%" PRId64 " reconnects came back to another session of their id; %" PRId64
		   " resumed sessions found without their presence node, taken as expired; %" PRId64
		   " new sessions' answers read after they ended\n",
		   ids_reissued, resumes_refused, late_answers);
	printf("%" PRId64 " held or lingering nodes deleted from outside; %" PRId64 " of them listed "
		   "without them by a request of their cluster's, none then held past the bound\n",
		   held_deleted[0] + held_deleted[1], held_deleted[1]);
	printf("%" PRId64 " sessions given up as cut off, none too soon; %" PRId64 " lookups of a lost create "
		   "found nothing, none missing a node the leader had before\n", cutoffs_declared, lookups_empty);
	printf("calls of the shipped worker files: %" PRId64 " creates, %" PRId64 " deletes, %" PRId64
		   " multis, %" PRId64 " listings, %" PRId64 " reads, %" PRId64 " exists, %" PRId64
		   " setData, %" PRId64 " syncs\n",
		   calls_sent[ZKM_CREATE], calls_sent[ZKM_DELETE], calls_sent[ZKM_MULTI_OP],
		   calls_sent[ZKM_CHILDREN], calls_sent[ZKM_GETDATA], calls_sent[ZKM_EXISTS],
		   calls_sent[ZKM_SETDATA], calls_sent[ZKM_SYNC]);
	printf("zk_once: %" PRId64 " periods owed to a call, %" PRId64 " calls owed none, %" PRId64
		   " claims refused; of the periods committed, %" PRId64 " recorded, %" PRId64
		   " not (%" PRId64 " done again); %" PRId64 " left owed by an abort or a refused commit\n",
		   once_counts[0], once_counts[1], once_counts[2], once_counts[3], once_counts[4], once_counts[5],
		   once_counts[6]);
}
