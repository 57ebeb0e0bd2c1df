/*
 * once_call.h — a backend's zk_once call on a job's record, through the
 * worker (once_call.c; shmem.h's once area), and the transaction's seals
 * (once.c).
 */
#ifndef ZK_LOCK_ONCE_CALL_H
#define ZK_LOCK_ONCE_CALL_H

#include "shmem.h"

typedef struct ZklOnceCall
{
	ZklOnceResult result;
	bool		claim_gone;
	int32		version;
	int			len;			/* -1: a record too long to be ours */
	char		data[ZKL_ONCE_DATA_LEN];
	int			sqlstate;
	char		errmsg[ZKL_ERRMSG_LEN];
} ZklOnceCall;

/*
 * One call (op on the record `name` beside the claim of slot `slot`, under
 * its root; SEAL: the version read; MAKE, SEAL: the text to write), by
 * `deadline`.  may_error false: never raises an error (at commit), reports
 * a call that did not finish in time as FAILED, and on the postmaster's
 * death leaves at once with the backend's exit pending; true: that is an
 * error (08006).
 */
extern void zb_once_call(ZklOnceOp op, const char *name, int slot, int32 version, const char *data,
						 int len, bool may_error, int64 deadline, ZklOnceCall *out);

/*
 * How long a call may take, on zkl_mono_now's clock: past it, the
 * connection is not coming back soon.
 */
extern int64 zb_once_deadline(bool at_commit);

#endif
