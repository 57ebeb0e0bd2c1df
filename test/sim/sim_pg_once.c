/*
 * sim_pg_once.c — a cluster's once area (shmem.h) for the simulator's
 * backends, which do zk_once's calls as backend/once_call.c does: take the
 * area when it is free, ask, read the answer once the worker (once_io.c,
 * as shipped) set it DONE, give the area back.  Compiled with PostgreSQL's
 * headers, like sim_pg.c; the simulator reaches it through sim_host.h.
 */
#include "postgres.h"

#include "storage/condition_variable.h"

#include "shmem.h"
#include "once_io.h"
#include "sim_host.h"

StaticAssertDecl((int) SIMO_READ == (int) ZKL_ONCE_READ && (int) SIMO_SEAL == (int) ZKL_ONCE_SEAL,
				 "the simulator's ops are once_io.c's");
StaticAssertDecl((int) SIMO_OK == (int) ZKL_ONCE_OK && (int) SIMO_FAILED == (int) ZKL_ONCE_FAILED,
				 "and its results");
StaticAssertDecl(SIMO_DATA_LEN == ZKL_ONCE_DATA_LEN, "a record fits");

/* The area beside a cluster's ZklShared (sim_pg.c allocates both). */
extern ZklOnceArea *simpg_once_area(void *shared);

bool
simpg_once_ask(void *shared, int pid, SimOnceOp op, const char *name, int slot, int32_t version,
			   const char *data, int len)
{
	return zkl_once_take(simpg_once_area(shared), pid, (ZklOnceOp) op, name, slot, version, data, len);
}

bool
simpg_once_answered(void *shared, SimOnceAnswer *out)
{
	ZklOnceArea *a = simpg_once_area(shared);

	if (a->state != ZKQ_DONE)
		return false;
	out->result = (SimOnceResult) a->result;
	out->claim_gone = a->claim_gone;
	out->version = a->version;
	out->len = a->len;
	if (a->len > 0)
		memcpy(out->data, a->data, a->len);
	return true;
}

void
simpg_once_release(void *shared, int pid)
{
	ZklOnceArea *a = simpg_once_area(shared);

	/* an answer still due carries the old attempt and is ignored */
	if (a->asker_pid == pid)
	{
		a->state = ZKQ_IDLE;
		a->asker_pid = 0;
	}
}

void
simpg_once_reset(void *shared)
{
	memset(simpg_once_area(shared), 0, sizeof(ZklOnceArea));
}

void
simpg_once_worker_restarted(void)
{
	zw_once_restarted();
}
