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
