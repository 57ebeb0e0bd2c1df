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
		case ZNONODE:
			/* gone with the session that made it */
			return ZKL_CONFIRM_ENDED;
		default:
			/*
			 * No answer (a lost connection, a timeout), or none to trust (a
			 * throttled or failed request, a sync turned away): ask again;
			 * nothing is granted or proven meanwhile.
			 */
			return ZKL_CONFIRM_AGAIN;
	}
}
