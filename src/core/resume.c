/*
 * resume.c — is a resumed session still ours (resume.h).
 */
#include "resume.h"

#include "zk_result.h"

ZklConnected
zc_resume_connected(bool fresh, int64_t ours, int64_t id, bool *old_lost)
{
	*old_lost = ours != 0 && (fresh || ours != id);
	return fresh || ours != id ? ZKL_CONN_NEW : ZKL_CONN_CONFIRM;
}

ZklConfirm
zc_resume_confirmed(int rc, int64_t owner, int64_t session)
{
	switch (rc)
	{
		case ZOK:
			/* another owner: a node named like ours that no session of the id made */
			return owner == session ? ZKL_CONFIRM_OURS : ZKL_CONFIRM_ENDED;
		case ZSESSIONEXPIRED:
		case ZCLOSING:
		case ZINVALIDSTATE:
			return ZKL_CONFIRM_WAIT;
		case ZCONNECTIONLOSS:
		case ZOPERATIONTIMEOUT:
		case ZRUNTIMEINCONSISTENCY:
		case ZMARSHALLINGERROR:
			return ZKL_CONFIRM_AGAIN;	/* it may not have been asked: no answer */
		default:
			/* ZNONODE (gone with the session that made it), or no view of it */
			return ZKL_CONFIRM_ENDED;
	}
}
