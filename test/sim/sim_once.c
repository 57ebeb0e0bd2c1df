/*
 * sim_once.c — zk_once in the simulator: one job, called by some of the
 * transactions, as backend/once.c and once_seal.c call it, through each
 * cluster's once area and its worker's once_io.c (as shipped), against the
 * model's record; and the record's rule checked from the ground truth:
 *   - one commit per period: a transaction that commits a period, when it
 *     becomes visible, finds no other commit of it that was recorded or
 *     is being recorded (only one whose record did not land: the corner
 *     docs/failure-semantics.md names), and the leader's record not past it;
 *   - a seal its backend counts as landed is in the leader's record, naming
 *     that commit;
 *   - none lost: at the end, every period from the record's first to its
 *     last done was committed by someone or counted as skipped; a refused
 *     commit (its claim lost) never moves the record.
 * The decisions are src/core/once.c's (decide, baseline, sealed, format,
 * parse); the order of calls is the backend's, restated here as the
 * simulator restates the lock functions' (sim_backend.c).  How a backend
 * sleeps on the area and which waiting backend takes it next are
 * once_call.c's, not run here: the simulator's backends look at the area
 * every step (t/041 runs eight clients of one cluster at once instead).
 */
#define _POSIX_C_SOURCE 200809L

#include "sim_world.h"

#define JOB			"tk4"		/* the job's text key: its claim is key_name(ONCE_KEY) */
#define RECORD		ROOT "/" ZKO_DIR "/" JOB
#define UNIX_TO_PG_US	INT64_C(946684800000000)
#define GRACE_MS	2000		/* WORKER_GRACE_MS: the worker's turn beyond the timeout */

typedef enum OncePhase
{
	ONCE_IDLE,
	ONCE_READ,
	ONCE_MAKE,
	ONCE_REREAD,				/* after MAKE found one: this call's own, sent again */
	ONCE_SEAL,
	ONCE_CHECK					/* the seal refused or unanswered: does the record name us */
} OncePhase;

typedef enum OnceOutcome
{
	OUT_SEALING,
	OUT_RECORDED,
	OUT_UNRECORDED				/* committed, not recorded: may be done again */
} OnceOutcome;

/* due, not due, claims refused, recorded, not recorded, done again, left owed */
int64_t once_counts[7];

/* The job in a third of the seeds, by the seed's number (other seeds draw as before). */
void
once_draw(uint64_t seed)
{
	uint64_t	h = seed * UINT64_C(0x9E3779B97F4A7C15);

	S->once_pct = (h >> 32) % 3 == 0 ? 4 + (int) (h >> 40) % 16 : 0;
	S->once_period = (300 + (int64_t) (h >> 20) % 2700) * INT64_C(1000);
	S->ndoers = 0;
}

/* A transaction that calls zk_once: its claim (a try), the call, and maybe a pause. */
bool
plan_once(Backend *b)
{
	Act		   *a;

	if (S->once_pct == 0 || b->sess_key >= 0 || !chance(S->once_pct))
		return false;
	add_act(b, false, ONCE_KEY, ZKL_MODE_EXCLUSIVE, 2);
	b->acts[0].once_claim = true;
	add_act(b, false, ONCE_KEY, ZKL_MODE_EXCLUSIVE, 2);
	a = &b->acts[1];
	a->once = true;
	a->latest = chance(20);
	if (chance(40))
		add_pause(b);
	return true;
}

static int64_t
unix_now(const Cluster *c)
{
	return c_wall(c) + UNIX_TO_PG_US;
}

static int
claim_slot(Backend *b)
{
	int			h = find_hold(b, ONCE_KEY, ZKL_MODE_EXCLUSIVE);

	return h >= 0 ? b->book.h[h].slot : -1;
}

/* The leader's record, parsed; false if there is none. */
static bool
leader_record(ZkoRecord *r)
{
	const char *data = zkm_leader_data(S->m, RECORD);

	if (data[0] == '\0')
		return false;
	if (zc_once_parse(data, strlen(data), r) != ZKO_PARSE_OK)
		fail("the leader's record of the job is not one: \"%s\"", data);
	return true;
}

/* Begin a call on the record (once_call.c's zb_once_call). */
static void
call(Cluster *c, Backend *b, OncePhase phase, int64_t timeout_ms)
{
	b->once.phase = phase;
	b->once.asked = false;
	b->once.deadline = zkm_now(S->m) + (timeout_ms + GRACE_MS) * 1000;
}

static void
abort_xact(Cluster *c, Backend *b, const char *why)
{
	b->txns_left--;
	trace("c%d b%d zk_once: %s", c->id, b->pid, why);
	end_xact(c, b, "aborts");
}

static void
decide(Cluster *c, Backend *b, const ZkoRecord *rec)
{
	int64_t		start;
	int64_t		skipped;
	Act			unlock = {.unlock = true, .key = ONCE_KEY, .mode = ZKL_MODE_EXCLUSIVE};

	switch (zc_once_decide(rec, S->once_period, 0, b->once.now, b->once.latest, &start, &skipped))
	{
		case ZKO_DUE:
			break;
		case ZKO_NOT_DUE:
			once_counts[1]++;
			b->once.phase = ONCE_IDLE;
			do_unlock(c, b, &unlock);	/* zb_local_unlock of the claim */
			return;
		default:
			fail("c%d b%d zk_once: the record of the job is another's", c->id, b->pid);
			return;
	}
	once_counts[0]++;
	b->once.phase = ONCE_IDLE;
	b->once.pending = true;
	b->once.start = start;
	b->once.skipped = skipped;
	if (rec != &b->once.rec)
		b->once.rec = *rec;
	trace("c%d b%d zk_once: period %.3f is owed", c->id, b->pid, start / 1e6);
	next_act(c, b);
}

/* zk_once reads the clock before it asks for the claim (once.c). */
void
once_clock(Cluster *c, Backend *b)
{
	b->once.now = unix_now(c);
}

/* zk_once's act: its claim was taken by the act before, or refused. */
void
once_act(Cluster *c, Backend *b, const Act *a)
{
	if (claim_slot(b) < 0)
	{
		once_counts[2]++;
		next_act(c, b);			/* refused: another call does a period now (NULL) */
		return;
	}
	b->once.latest = a->latest;
	b->st = B_ONCE;
	call(c, b, ONCE_READ, CONNECT_TIMEOUT);
}

static void
finish_seal(Cluster *c, Backend *b, bool recorded)
{
	struct OnceDoer *d = &S->doers[b->once.doer];
	ZkoRecord	r;

	b->once.phase = ONCE_IDLE;
	b->once.pending = false;
	d->outcome = recorded ? OUT_RECORDED : OUT_UNRECORDED;
	once_counts[recorded ? 3 : 4]++;
	if (recorded && d->contested)
		fail("c%d b%d's period %.3f is recorded, and another transaction committed it while it sealed",
			 c->id, b->pid, d->start / 1e6);
	/* (the record may have moved on since: a paused worker reads a landed seal's answer late) */
	if (recorded && !(leader_record(&r) && r.has_done && r.has_by &&
					  (r.done > d->start || (r.done == d->start && r.by.sysid == b->once.by.sysid &&
											 r.by.pid == b->once.by.pid && r.by.at == b->once.by.at))))
		fail("c%d b%d counts period %.3f as recorded, but the leader's record does not name it",
			 c->id, b->pid, d->start / 1e6);
	trace("c%d b%d zk_once: period %.3f %s", c->id, b->pid, d->start / 1e6,
		  recorded ? "recorded" : "done but not recorded");
	end_xact(c, b, "commits");
}

static void
answered(Cluster *c, Backend *b, const SimOnceAnswer *ans, bool in_time)
{
	SimOnceResult res = in_time ? ans->result : SIMO_FAILED;
	ZkoRecord	r;

	switch ((OncePhase) b->once.phase)
	{
		case ONCE_READ:
		case ONCE_REREAD:
			if (res == SIMO_OK)
			{
				if (ans->len < 0 || zc_once_parse(ans->data, ans->len, &b->once.rec) != ZKO_PARSE_OK)
					fail("c%d b%d zk_once: the record read is not one", c->id, b->pid);
				b->once.version = ans->version;
				decide(c, b, &b->once.rec);
			}
			else if (res == SIMO_NONODE && b->once.phase == ONCE_READ)
			{
				/* a new job: the period begun now is owed from now on */
				int64_t		first = 0;
				int64_t		skipped = 0;

				if (zc_once_decide(NULL, S->once_period, 0, b->once.now, false, &first, &skipped) != ZKO_DUE)
					fail("c%d b%d zk_once: a new job owes nothing", c->id, b->pid);
				zc_once_baseline(&b->once.rec, S->once_period, 0, first);
				b->once.version = 0;
				call(c, b, ONCE_MAKE, CONNECT_TIMEOUT);
			}
			else
				abort_xact(c, b, res == SIMO_NONODE ? "the record came and went" : "no record read");
			break;
		case ONCE_MAKE:
			if (res == SIMO_OK)
				decide(c, b, &b->once.rec);
			else if (res == SIMO_EXISTS)
				call(c, b, ONCE_REREAD, CONNECT_TIMEOUT);
			else
				abort_xact(c, b, "no record made");
			break;
		case ONCE_SEAL:
			if (res == SIMO_OK)
				finish_seal(c, b, true);
			else
			{
				/* the seal may have landed with its answer lost: read, on the same deadline */
				int64_t		deadline = b->once.deadline;

				call(c, b, ONCE_CHECK, 0);
				b->once.deadline = deadline;
				if (zkm_now(S->m) >= deadline)
					finish_seal(c, b, false);
			}
			break;
		case ONCE_CHECK:
			finish_seal(c, b, res == SIMO_OK && ans->len > 0 &&
						zc_once_parse(ans->data, ans->len, &r) == ZKO_PARSE_OK && r.has_done &&
						r.done == b->once.start && r.has_by && r.by.sysid == b->once.by.sysid &&
						r.by.pid == b->once.by.pid && r.by.at == b->once.by.at);
			break;
		case ONCE_IDLE:
			fail("c%d b%d zk_once: an answer with no call", c->id, b->pid);
			break;
	}
}

/* A backend in a call (B_ONCE before its commit, B_SEAL after). */
void
once_step(Cluster *c, Backend *b)
{
	static const SimOnceOp ops[] = {SIMO_READ, SIMO_READ, SIMO_MAKE, SIMO_READ, SIMO_SEAL, SIMO_READ};
	SimOnceAnswer ans;
	char		text[ZKO_RECORD_LEN];
	int			len = 0;
	ZkoRecord	done;

	/* a lost lock cancels the statement (before the commit only: then interrupts are held) */
	if (b->st == B_ONCE && any_lost(c, b))
	{
		if (b->once.asked)
			simpg_once_release(c->shared, b->pid);
		abort_xact(c, b, "a lock was lost during the call");
		return;
	}
	if (!b->once.asked)
	{
		if (b->once.phase == ONCE_MAKE)
			len = zc_once_format(&b->once.rec, text, sizeof(text));
		else if (b->once.phase == ONCE_SEAL)
		{
			if (!zc_once_sealed(&b->once.rec, b->once.start, b->once.skipped, &b->once.by, &done))
				fail("c%d b%d zk_once: the seal would not move the record on", c->id, b->pid);
			len = zc_once_format(&done, text, sizeof(text));
		}
		if (len < 0)
			fail("c%d b%d zk_once: the record does not fit", c->id, b->pid);
		if (zkm_now(S->m) < b->once.deadline &&
			simpg_once_ask(c->shared, b->pid, ops[b->once.phase], JOB,
						   b->once.phase == ONCE_SEAL ? claim_slot(b) : -1, b->once.version, text, len))
		{
			b->once.asked = true;
			worker_turn(c);		/* zkl_wake_worker */
		}
		else if (zkm_now(S->m) >= b->once.deadline)
			answered(c, b, &ans, false);
		return;
	}
	if (simpg_once_answered(c->shared, &ans))
	{
		simpg_once_release(c->shared, b->pid);
		b->once.asked = false;
		answered(c, b, &ans, true);
	}
	else if (zkm_now(S->m) >= b->once.deadline)
	{
		simpg_once_release(c->shared, b->pid);
		b->once.asked = false;
		answered(c, b, &ans, false);
	}
}

/*
 * A transaction's commit is visible now: if it did a period, check the
 * rule and begin its seal (true: the backend seals, then ends it).
 */
bool
once_committed(Cluster *c, Backend *b)
{
	int64_t		p = b->once.start;
	struct OnceDoer *d;
	ZkoRecord	r;
	int			i;

	if (!b->once.pending)
		return false;
	if (claim_slot(b) >= 0 && slot_tainted(&c->t->slots[claim_slot(b)]))
	{
		/*
		 * its claim's node was deleted from outside (a waiter's granted on a
		 * listing read before, or a holder's): zk_lock promised it nothing
		 */
		b->once.pending = false;
		once_counts[4]++;
		return false;
	}
	/*
	 * Another commit of p whose seal is still on its way is judged when it
	 * ends (finish_seal): its claim is gone, so its record must not land.
	 */
	for (i = 0; i < S->ndoers; i++)
		if (S->doers[i].start == p && S->doers[i].outcome == OUT_RECORDED)
			fail("period %.3f committed twice: by c%d b%d, and by c%d b%d whose record landed",
				 p / 1e6, c->id, b->pid, S->doers[i].cluster, S->doers[i].pid);
		else if (S->doers[i].start == p)
		{
			S->doers[i].contested = true;
			once_counts[5]++;
		}
	if (leader_record(&r) && r.has_done && r.done >= p)
		fail("c%d b%d commits period %.3f, but the leader's record has it done (%.3f)", c->id, b->pid,
			 p / 1e6, r.done / 1e6);
	if (S->ndoers == (int) (sizeof(S->doers) / sizeof(S->doers[0])))
	{
		b->once.pending = false;	/* (a long run: the rest unchecked) */
		return false;
	}
	b->once.doer = S->ndoers++;
	d = &S->doers[b->once.doer];
	d->start = p;
	d->cluster = c->id;
	d->pid = b->pid;
	d->outcome = OUT_SEALING;
	d->contested = false;
	/*
	 * Killed now, or exiting: the backend records nothing (the corner); nor
	 * without its claim's slot (once_seal.c asks nothing then).
	 */
	if (c->crashing || c->stopping || b->exits || claim_slot(b) < 0)
	{
		d->outcome = OUT_UNRECORDED;
		once_counts[4]++;
		b->once.pending = false;
		return false;
	}
	memset(&b->once.by, 0, sizeof(b->once.by));
	b->once.by.sysid = (uint64_t) c->id + 1;	/* simh_sysid's */
	b->once.by.pid = b->pid;
	snprintf(b->once.by.cluster, sizeof(b->once.by.cluster), "c%d", c->id);
	b->once.by.at = unix_now(c);
	b->st = B_SEAL;
	call(c, b, ONCE_SEAL, c->session_timeout < CONNECT_TIMEOUT ? c->session_timeout : CONNECT_TIMEOUT);
	once_step(c, b);
	return true;
}

/* The transaction ends (committed and sealed, or not): nothing of zk_once stays. */
void
once_end(Cluster *c, Backend *b)
{
	if (b->once.asked)
		simpg_once_release(c->shared, b->pid);
	if (b->once.pending && b->st == B_SEAL)
	{
		/* cut short by its cluster's stop: committed, not recorded */
		S->doers[b->once.doer].outcome = OUT_UNRECORDED;
		once_counts[4]++;
	}
	else if (b->once.pending)
		once_counts[6]++;		/* rolled back, or its commit refused: the period stays owed */
	b->once.asked = false;
	b->once.pending = false;
	b->once.phase = ONCE_IDLE;
}

/*
 * At the end: none lost.  Every period from the record's first to its last
 * done was committed by a transaction, or skipped by a `latest` call.
 */
void
once_final(void)
{
	ZkoRecord	r;
	int64_t		p;
	int64_t		missing = 0;
	int			i;

	if (!leader_record(&r) || !r.has_done)
		return;
	for (p = r.first; p <= r.done; p += r.period)
	{
		for (i = 0; i < S->ndoers && S->doers[i].start != p; i++)
			;
		missing += i == S->ndoers;
	}
	/* the record names a commit of its last period */
	for (i = 0; i < S->ndoers && !(S->doers[i].start == r.done && S->doers[i].pid == r.by.pid &&
								   (uint64_t) S->doers[i].cluster + 1 == r.by.sysid); i++)
		;
	if (i == S->ndoers && S->ndoers < (int) (sizeof(S->doers) / sizeof(S->doers[0])))
		fail("the job's record says c%d b%d did period %.3f, which it did not commit",
			 (int) r.by.sysid - 1, r.by.pid, r.done / 1e6);
	if (missing > r.skipped)
		fail("the job's record has %" PRId64 " periods up to %.3f done that nobody committed (%" PRId64
			 " skipped)", missing, r.done / 1e6, r.skipped);
	for (i = 0; i < S->ndoers; i++)
		if (S->doers[i].outcome == OUT_RECORDED && S->doers[i].start > r.done)
			fail("period %.3f was recorded by c%d b%d, but the record says %.3f",
				 S->doers[i].start / 1e6, S->doers[i].cluster, S->doers[i].pid, r.done / 1e6);
}
