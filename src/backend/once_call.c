/*
 * once_call.c — a backend's zk_once call on a job's record: it takes the
 * cluster's once area (shmem.h), asks the worker (worker/once_io.c), waits
 * for the answer within zk_lock.connect_timeout and gives the area back.
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

/*
 * Sleep on the area until deadline; false past it.  At commit the
 * postmaster's death must not exit from inside the committed transaction
 * (its abort would PANIC): as core's wait for a synchronous standby, leave
 * the wait with the backend's exit pending instead.
 */
static bool
sleep_until(TimestampTz deadline, bool may_error)
{
	long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

	if (left <= 0)
		return false;
	if (may_error)
		(void) ConditionVariableTimedSleep(&zkl_once->cv, left, PG_WAIT_EXTENSION);
	else
	{
		/* the area's broadcast sets our latch: we are on its wait list */
		int			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_POSTMASTER_DEATH, left,
								   PG_WAIT_EXTENSION);

		ResetLatch(MyLatch);
		if (rc & WL_POSTMASTER_DEATH)
		{
			ProcDiePending = true;
			return false;
		}
	}
	return GetCurrentTimestamp() < deadline;
}

/* Take the area and ask; false if it stayed another backend's till the deadline. */
static bool
ask(ZklOnceOp op, const char *name, int slot, int32 version, const char *data, int len,
	TimestampTz deadline, bool may_error)
{
	for (;;)
	{
		bool		mine;

		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		mine = zkl_once_take(zkl_once, MyProcPid, op, name, slot, version, data, len);
		LWLockRelease(zkl_shared->lock);
		if (mine)
			return true;
		if (!sleep_until(deadline, may_error))
			return false;
	}
}

/* Wait for the worker's answer and copy it out; false if none came by the deadline. */
static bool
answered(TimestampTz deadline, bool may_error, ZklOnceCall *out)
{
	zkl_wake_worker();
	for (;;)
	{
		bool		done;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		done = zkl_once->state == ZKQ_DONE;
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

TimestampTz
zb_once_deadline(bool at_commit)
{
	/* at commit, no longer than the session lives unheard: by then the claim may be gone */
	int			ms = at_commit ? Min(zkl_connect_timeout, zkl_session_timeout) : zkl_connect_timeout;

	return TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms + WORKER_GRACE_MS);
}

void
zb_once_call(ZklOnceOp op, const char *name, int slot, int32 version, const char *data, int len,
			 bool may_error, TimestampTz deadline, ZklOnceCall *out)
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
