/*
 * gwaits_claim.c — deadlocks across clusters in the worker (see gwaits.c):
 * our claim of a victim (one multi of checks and the claim's create), the
 * confirmations of the other clusters of the cycle, the decision again and
 * the 40P01; another cluster's claim that names us, confirmed.  Part of the
 * worker: runs in its process only.
 */
#include "gwaits_int.h"
#include "core_plan.h"
#include "gwait_doc.h"

/* the claim's confirmations: ours to collect, or another's to give */
/* the claim's multi: checks, then the create (kept until its reply) */

/* ---- the claim ---- */

static void
claim_deleted(int rc, const void *ctx)
{
	if (ctx == zw_gw_tag() && rc != ZOK && rc != ZNONODE)
		zw_gw->claim_check = true;		/* still there, maybe: look again */
}

static void
delete_claim_node(void)
{
	char		path[ZKL_PATH_LEN];

	zw_gw_claim_path(path);
	(void) zw_client_delete(path, -1, claim_deleted, zw_gw_tag());
}

/* Give our claim up; never another cluster's (a delete cannot tell them apart). */
void
zw_gw_drop_claim(void)
{
	if (!zw_gw->claimed)
		return;
	zw_gw->claimed = false;
	delete_claim_node();
}

/* Is the claim there ours, left from before?  Then it goes. */
void
zw_gw_claim_looked(int rc, const struct Stat *stat, const void *ctx)
{
	if (ctx != zw_gw_tag())
		return;
	if (rc == ZOK && stat != NULL && stat->ephemeralOwner == zw_gw->for_session && !zw_gw->claimed)
		delete_claim_node();
	else if (rc != ZOK && rc != ZNONODE)
		zw_gw->claim_check = true;
}

/*
 * Fail the victim, once the cycle still stands: our waits formatted now,
 * with the others' documents written since the claim (their
 * confirmations), still give this victim.
 */
static bool
break_cycle(void)
{
	const char *all[MAX_DOCS + 1];
	ZgwVictim	again;
	bool		failed = false;
	int			n = 0;
	int			i;

	TimestampTz now = GetCurrentTimestamp();
	int			nheavy = zw_gw->nheavy_sent = zw_gw_gather_heavy(now);

	zw_gw->heavy_changed = true;		/* what was just read goes into the document next turn */

	for (i = 0; i < zw_gw->ndocs; i++)
		if (zw_gw->docs[i] != NULL)
			all[n++] = zw_gw->docs[i];
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (zw_gw_format_doc(zw_gw->the_core, now, nheavy) > 0)
	{
		all[n++] = zw_gw->doc;
		if (zc_gwait_decide(all, n, zw_gw->for_session, &again) && again.pid == zw_gw->victim.pid &&
			strcmp(again.node, zw_gw->victim.node) == 0)
			failed = zc_core_fail_deadlock(zw_gw->the_core, zw_gw->victim.pid, zw_gw->victim.node,
										 "deadlock detected across clusters", again.detail);
	}
	if (failed)
	{
		zw_gw->victim = again;			/* the cycle as it stands now, for the error and the log */
		zw_gw->victim_failed = true;
	}
	LWLockRelease(zkl_shared->lock);
	zkl_flush_wakes();
	if (failed)
		ereport(LOG,
				(errmsg("zk_lock: deadlock across clusters: process %d gives way (40P01)", zw_gw->victim.pid),
				 errdetail_internal("%s", zw_gw->victim.detail)));
	return failed;
}


static void
claim_done(int rc, const void *ctx)
{
	if (ctx != zw_gw_tag())
		return;
	if (rc == ZOK)
	{
		zw_gw->claimed = true;
		zw_gw->victim_failed = false;
		zw_gw->claimed_victim = zw_gw->victim;
		zw_gw->claim_until = zkl_mono_now() + (int64) 2 * DeadlockTimeout * 1000;
		zw_gw->nconfirm = zc_gwait_claim_sessions(zw_gw->claim_data, strlen(zw_gw->claim_data), zw_gw->confirm_session,
									  ZGW_MAX_CONFIRMS);
		memset(zw_gw->confirmed, 0, sizeof(zw_gw->confirmed));
		zw_gw->confirm_broken = false;
		zw_gw->phase = PH_CONFIRMING;
		zw_gw->next_poll = zkl_mono_now() + CONFIRM_POLL_MS * 1000;
		if (zw_gw->nconfirm == 0)
			zw_gw_confirmations_over();	/* a cycle of ours alone: nobody to ask */
		return;					/* else the documents stay for the confirmations */
	}
	else if (zw_gw->claim_results[zw_gw->victim.nchecks + zw_gw->victim.nsessions].err == ZNODEEXISTS ||
			 zc_core_outcome_unknown(rc))
		zw_gw->claim_check = true;		/* maybe ours: from a reply lost now, or before */
	/* else a node or document of the cycle changed: the next round sees how */
	zw_gw_round_over();
}

void
zw_gw_claim(void)
{
	int64		read_from[MAX_DOCS];
	int			nread = 0;
	int			n = 0;
	int			i;
	int			d;

	for (i = 0; i < zw_gw->victim.nchecks; i++)
	{
		snprintf(zw_gw->claim_paths[n], ZKL_PATH_LEN, "%s/%s", zw_gw->for_root, zw_gw->victim.checks[i]);
		zw_client_op_check(&zw_gw->claim_ops[n], zw_gw->claim_paths[n], -1);
		n++;
	}
	for (i = 0; i < zw_gw->victim.nsessions; i++)
	{
		int			version = -1;	/* ours: checked again under the lock (break_cycle) */

		for (d = 0; d < zw_gw->ndocs; d++)
			if (zw_gw->doc_session[d] == zw_gw->victim.sessions[i])
				version = zw_gw->doc_version[d];
		zw_gw_doc_path(zw_gw->victim.sessions[i], zw_gw->claim_paths[n]);
		zw_client_op_check(&zw_gw->claim_ops[n], zw_gw->claim_paths[n], version);
		n++;
	}
	zw_gw_claim_path(zw_gw->claim_paths[n]);
	do
		zw_gw->claim_nonce = pg_prng_uint64(&pg_global_prng_state);
	while (zw_gw->claim_nonce == 0);
	for (d = 0; d < zw_gw->ndocs; d++)
		if (zw_gw->docs[d] != NULL)
			read_from[nread++] = zw_gw->doc_session[d];
	zw_client_op_create(&zw_gw->claim_ops[n], zw_gw->claim_paths[n], zw_gw->claim_data,
						zc_gwait_claim_format(zw_gw->claim_nonce, read_from, nread, zw_gw->for_session,
											  zw_gw->claim_data, sizeof(zw_gw->claim_data)),
						ZOO_EPHEMERAL, NULL, 0);
	n++;
	zw_gw->phase = PH_CLAIMING;
	memset(zw_gw->claim_results, 0, sizeof(zw_gw->claim_results));
	if (zw_client_multi(n, zw_gw->claim_ops, zw_gw->claim_results, claim_done, zw_gw_tag()) != ZOK)
		zw_gw_round_over();
}

/* ---- the confirmations ---- */

/* Confirmations are in, or cannot come: decide again, or give the claim up. */
void
zw_gw_confirmations_over(void)
{
	int			i;
	int			k;

	if (!zw_gw->confirm_broken)
	{
		/* decide on the confirmed documents alone: the others were read before */
		for (i = 0; i < zw_gw->ndocs; i++)
		{
			bool		fresh = false;

			for (k = 0; k < zw_gw->nconfirm; k++)
				fresh |= zw_gw->doc_session[i] == zw_gw->confirm_session[k];
			if (!fresh && zw_gw->docs[i] != NULL)
			{
				pfree(zw_gw->docs[i]);
				zw_gw->docs[i] = NULL;
			}
		}
	}
	if (zw_gw->confirm_broken || !break_cycle())
		zw_gw_drop_claim();			/* nobody failed: others need not wait for it */
	zw_gw->claim_nonce = 0;
	zw_gw_round_over();
}

static void
confirm_read(int rc, const char *value, int value_len, const struct Stat *stat, const void *ctx)
{
	uintptr_t	i = (uintptr_t) ctx & 0xFF;
	int			d;

	if (zw_gw->phase != PH_CONFIRMING || ctx != zw_gw_read_tag((int) i) || i >= (uintptr_t) zw_gw->nconfirm)
		return;
	if (rc == ZNONODE)
	{
		/* no long wait there any more: news as fresh as a confirmation */
		zw_gw->confirmed[i] = true;
		for (d = 0; d < zw_gw->ndocs; d++)
			if (zw_gw->doc_session[d] == zw_gw->confirm_session[i] && zw_gw->docs[d] != NULL)
			{
				pfree(zw_gw->docs[d]);
				zw_gw->docs[d] = NULL;
			}
	}
	else if (rc == ZOK && value != NULL && value_len > 0)
	{
		char	   *copy = MemoryContextAlloc(TopMemoryContext, value_len + 1);

		memcpy(copy, value, value_len);
		copy[value_len] = '\0';
		if (!zc_gwait_confirms(copy, zw_gw->claim_nonce))
			pfree(copy);		/* not yet */
		else
		{
			zw_gw->confirmed[i] = true;
			for (d = 0; d < zw_gw->ndocs && zw_gw->doc_session[d] != zw_gw->confirm_session[i]; d++)
				;
			if (d == zw_gw->ndocs && zw_gw->ndocs < MAX_DOCS)
			{
				zw_gw->docs[zw_gw->ndocs] = NULL;
				zw_gw->doc_session[zw_gw->ndocs++] = zw_gw->confirm_session[i];
			}
			if (d < zw_gw->ndocs)
			{
				if (zw_gw->docs[d] != NULL)
					pfree(zw_gw->docs[d]);
				zw_gw->docs[d] = copy;
			}
			else
				pfree(copy);
		}
	}
	if (--zw_gw->reads_due > 0)
		return;
	for (d = 0; d < zw_gw->nconfirm && zw_gw->confirmed[d]; d++)
		;
	if (d == zw_gw->nconfirm)
		zw_gw_confirmations_over();
	else
		zw_gw->next_poll = zkl_mono_now() + CONFIRM_POLL_MS * 1000;
}

/* Read the documents of the claim's sessions. */
void
zw_gw_poll_confirmations(void)
{
	char		path[ZKL_PATH_LEN];
	int			i;

	/* all of them each time: the moment of choice is one poll's */
	memset(zw_gw->confirmed, 0, sizeof(zw_gw->confirmed));
	zw_gw->reads_due = 0;
	for (i = 0; i < zw_gw->nconfirm; i++)
	{
		zw_gw_doc_path(zw_gw->confirm_session[i], path);
		if (zw_client_get(path, confirm_read, zw_gw_read_tag(i)) == ZOK)
			zw_gw->reads_due++;
	}
	if (zw_gw->reads_due == 0)
		zw_gw->next_poll = zkl_mono_now() + CONFIRM_POLL_MS * 1000;
}

/* Another cluster's claim, read: does it ask us to confirm? */
static void
claim_read(int rc, const char *value, int value_len, const struct Stat *stat, const void *ctx)
{
	uint64		asked;

	if (ctx != zw_gw_tag())
		return;
	if (rc == ZNONODE)
		zw_gw->confirms = 0;
	else if (rc == ZOK && value != NULL)
	{
		asked = zc_gwait_claim_asks(value, value_len, zw_gw->for_session);
		zw_gw->confirm_due |= asked != 0 && asked != zw_gw->confirms;
		zw_gw->confirms = asked;
	}
}

static void
claim_seen(int rc, const struct Stat *stat, const void *ctx)
{
	char		path[ZKL_PATH_LEN];

	if (ctx != zw_gw_tag())
		return;
	if (rc == ZOK)
	{
		zw_gw_claim_path(path);
		(void) zw_client_get(path, claim_read, zw_gw_tag());
	}
	else if (rc == ZNONODE)
		zw_gw->confirms = 0;
}

/*
 * While we publish, every CLAIM_LOOK_MS: does a claim name us?  (A watch
 * would stay set for the session's life once our waits end.)  The
 * victim's cluster waits up to 2 × deadlock_timeout for us.
 */
void
zw_gw_look_for_claim(void)
{
	char		path[ZKL_PATH_LEN];

	zw_gw_claim_path(path);
	(void) zw_client_exists(path, claim_seen, zw_gw_tag());
}
