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
zc_resume_confirmed(int rc)
{
	switch (rc)
	{
		case ZOK:
			return ZKL_CONFIRM_OURS;
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
			/* ZNONODE, or a refusal that does not show the node there: not ours */
			return ZKL_CONFIRM_ENDED;
	}
}
