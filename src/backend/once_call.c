/*
 * once_call.c — a backend's zk_once call on a job's record: it takes the
 * cluster's once area (shmem.h), asks the worker (worker/once_io.c), waits
 * for the answer within zk_lock.connect_timeout and gives the area back.
 * Deadlines are on zkl_mono_now's clock: a step of the wall clock must not
 * stretch a wait at commit.
 * Used by once.c, also at commit, where it must not raise an error.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "once.h"
#include "once_call.h"
#include "settings.h"
#include "shmem.h"

StaticAssertDecl(ZKL_ONCE_DATA_LEN == ZKO_RECORD_LEN, "a record fits the once area");

/* A committing backend's longest sleep between two looks at the area (ms). */
#define COMMIT_POLL_MS	10

/* Give the area back (also on ERROR or FATAL while we hold it). */
static void
release_area(int code, Datum arg)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (zkl_once->asker_pid == MyProcPid)
	{
		/* an answer still due carries the old attempt and is ignored */
		zkl_once->state = ZKQ_IDLE;
		zkl_once->asker_pid = 0;
	}
	LWLockRelease(zkl_shared->lock);
	ConditionVariableBroadcast(&zkl_once->cv);
}

/* Milliseconds left until deadline (zkl_mono_now's clock), 0 past it. */
static long
ms_left(int64 deadline)
{
	int64		left = deadline - zkl_mono_now();

	return left <= 0 ? 0 : (long) Min((left + 999) / 1000, (int64) INT_MAX);
}

/*
 * Sleep on the area until it changes or deadline passes; false past it.
 *
 * A broadcast takes each sleeper off the area's list as it wakes it, and
 * ConditionVariableTimedSleep puts it back.  At commit, where the
 * postmaster's death must not exit from inside the committed transaction
 * (its abort would PANIC), the backend waits on its latch instead, as
 * core's wait for a synchronous standby does: the first broadcast wakes it,
 * and after that it looks every COMMIT_POLL_MS, so that no later one (the
 * worker's answer, another backend giving the area back) is waited for in
 * vain.  (Preparing to sleep again would pass each wake it had on to
 * another sleeper: two committing backends would wake each other in turn.)
 */
static bool
sleep_until(int64 deadline, bool may_error)
{
	long		left = ms_left(deadline);

	if (left <= 0)
		return false;
	if (may_error)
		(void) ConditionVariableTimedSleep(&zkl_once->cv, left, PG_WAIT_EXTENSION);
	else
	{
		int			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_POSTMASTER_DEATH,
								   Min(left, COMMIT_POLL_MS), PG_WAIT_EXTENSION);

		ResetLatch(MyLatch);
		if (rc & WL_POSTMASTER_DEATH)
		{
			ProcDiePending = true;
			return false;
		}
	}
	return ms_left(deadline) > 0;
}

/*
 * Take the area and ask; false if it stayed another backend's till the
 * deadline.  A commit's call (may_error false) goes first: while one waits
 * for the area, calls that may fail (a transaction's reads and makes) leave
 * it to it, so that a committed period is recorded before its deadline
 * rather than done again.
 */
static bool
ask(ZklOnceOp op, const char *name, int slot, int32 version, const char *data, int len,
	int64 deadline, bool may_error)
{
	bool		waiting = false;

	for (;;)
	{
		bool		mine;
		bool		gone = false;

		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		mine = (!may_error || zkl_once->commits_waiting == 0 ||
				zkl_mono_now() >= zkl_once->commits_until) &&
			zkl_once_take(zkl_once, MyProcPid, op, name, slot, version, data, len);
		if (!may_error && !mine && !waiting)
		{
			waiting = true;
			zkl_once->commits_waiting++;
		}
		if (!may_error && waiting)
			zkl_once->commits_until = Max(zkl_once->commits_until, deadline);
		LWLockRelease(zkl_shared->lock);
		if (!mine && !sleep_until(deadline, may_error))
			gone = true;
		if ((mine || gone) && waiting)
		{
			LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
			zkl_once->commits_waiting--;
			LWLockRelease(zkl_shared->lock);
		}
		if (mine)
			return true;
		if (gone)
			return false;
	}
}

/* Wait for the worker's answer and copy it out; false if none came by the deadline. */
static bool
answered(int64 deadline, bool may_error, ZklOnceCall *out)
{
	zkl_wake_worker();
	for (;;)
	{
		bool		done;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		done = zkl_once->state == ZKQ_DONE && zkl_once->asker_pid == MyProcPid;
		if (done)
		{
			out->result = zkl_once->result;
			out->claim_gone = zkl_once->claim_gone;
			out->version = zkl_once->version;
			out->len = zkl_once->len;
			if (out->len > 0)
				memcpy(out->data, zkl_once->data, out->len);
			out->sqlstate = zkl_once->sqlstate;
			strlcpy(out->errmsg, zkl_once->errmsg, sizeof(out->errmsg));
		}
		LWLockRelease(zkl_shared->lock);
		if (done)
			return true;
		if (!sleep_until(deadline, may_error))
			return false;
	}
}

int64
zb_once_deadline(bool at_commit)
{
	/* at commit, no longer than the session lives unheard: by then the claim may be gone */
	int			ms = at_commit ? Min(zkl_connect_timeout, zkl_session_timeout) : zkl_connect_timeout;

	return zkl_mono_now() + (int64) (ms + WORKER_GRACE_MS) * 1000;
}

void
zb_once_call(ZklOnceOp op, const char *name, int slot, int32 version, const char *data, int len,
			 bool may_error, int64 deadline, ZklOnceCall *out)
{
	bool		ok;

	memset(out, 0, sizeof(*out));
	ConditionVariablePrepareToSleep(&zkl_once->cv);
	if (may_error)
	{
		PG_ENSURE_ERROR_CLEANUP(release_area, (Datum) 0);
		{
			ok = ask(op, name, slot, version, data, len, deadline, true) && answered(deadline, true, out);
		}
		PG_END_ENSURE_ERROR_CLEANUP(release_area, (Datum) 0);
	}
	else
		ok = ask(op, name, slot, version, data, len, deadline, false) && answered(deadline, false, out);
	ConditionVariableCancelSleep();
	release_area(0, (Datum) 0);
	if (ok)
		return;
	out->result = ZKL_ONCE_FAILED;
	out->sqlstate = ERRCODE_CONNECTION_FAILURE;
	snprintf(out->errmsg, sizeof(out->errmsg), "ZooKeeper did not answer in time");
	if (may_error)
		ereport(ERROR,
				(errcode(out->sqlstate),
				 errmsg("zk_once: ZooKeeper did not answer within zk_lock.connect_timeout (%d ms)",
						zkl_connect_timeout)));
}
