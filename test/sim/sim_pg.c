/*
 * sim_pg.c — what the shipped worker files take from PostgreSQL, for the
 * simulator: each simulated cluster's shared memory (a ZklShared, as
 * shmem.c lays it out), its clocks and system identifier, memory, logging
 * and the table lock.  Compiled with PostgreSQL's server headers, like the
 * worker files it serves; the simulator (sim.c) reaches it through
 * sim_host.h only.
 *
 * One process runs every cluster, one at a time: sim.c calls simpg_enter()
 * before it runs a cluster's worker code, and nothing here blocks, so the
 * table lock has nothing to exclude.
 */
#include "postgres.h"

#include <stdarg.h>
#include <stdio.h>

#include "access/xlog.h"
#include "common/pg_prng.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"

#include "settings.h"
#include "shmem.h"
#include "queue_read.h"
#include "auth.h"
#include "left_session.h"
#include "sim_host.h"

ZklShared  *zkl_shared = NULL;
MemoryContext TopMemoryContext = NULL;

void *
simpg_shared_new(void)
{
	ZklShared  *sh = calloc(1, sizeof(ZklShared));

	if (sh == NULL)
		abort();
	return sh;
}

void
simpg_shared_free(void *shared)
{
	free(shared);
}

ZklTable *
simpg_table(void *shared)
{
	return &((ZklShared *) shared)->t;
}


uint64_t *
simpg_session_nonce(void *shared)
{
	return &((ZklShared *) shared)->session_nonce;
}

int64_t *
simpg_last_heard(void *shared)
{
	return &((ZklShared *) shared)->last_heard;
}

/* ---- settings: one ensemble and root for all; each cluster's own session timeout ---- */

char	   *zkl_hosts = "model";
char	   *zkl_root = "/zkl";
int			zkl_session_timeout;
bool		zkl_test_fail_worker = false;
volatile sig_atomic_t ConfigReloadPending = false;	/* a reload is a fault of its own (sim.c) */
int			MyProcPid = 1;

void
ProcessConfigFile(GucContext context)
{
	elog(ERROR, "a reload is not simulated through the configuration file");
}

TimestampTz
GetCurrentTimestamp(void)
{
	return simh_wall();
}

bool
pg_strong_random(void *buf, size_t len)
{
	uint64		r = simh_nonce();

	memset(buf, 0, len);
	memcpy(buf, &r, Min(len, sizeof(r)));
	return true;
}

/* ---- what session.c takes from other worker files the simulator does not run ---- */

/* zk_lock.auth is not simulated: no identity, nodes open to all (as with the setting empty) */
ZklAuthResult
zw_load_credential(char *cred, size_t credlen, char *user, size_t userlen, const char **why)
{
	cred[0] = '\0';
	user[0] = '\0';
	return ZKL_AUTH_NONE;
}

bool
zw_digest_id(const char *cred, char *out, size_t outlen)
{
	return false;
}

/* left_session.c's file: the cluster's data directory keeps it across a crash (sim.c) */
void
zw_left_save(const clientid_t *id, uint64 nonce)
{
	simh_left_save(id->client_id, nonce);
}

void
zw_left_begin(void)
{
	simh_left_begin();
}

void
zw_left_forget(void)
{
	simh_left_forget();
}

/* ---- settings, clocks and identity ---- */

int
zkl_effective_lock_delay(void)
{
	return simh_lock_delay_ms();
}

int64
zkl_mono_now(void)
{
	return simh_mono();
}

uint64
GetSystemIdentifier(void)
{
	return simh_sysid();
}

int64
zkl_proof_read(int64 *session)
{
	return simh_proof_read(session);
}

void
zkl_new_uuid(char out[ZKL_UUID_LEN + 1])
{
	simh_new_uuid(out);
}

/* zk_lock.test_orphan: off, as in production */
bool		zkl_test_orphan = false;

/*
 * The live read of zk_lock_queue and zk_lock_waits (queue_read.c) serves a
 * backend's view: not simulated, and never asked.
 */
void
zw_query_start(void)
{
}

/* ---- the table lock: one process, nothing blocks ---- */

bool
LWLockAcquire(LWLock *lock, LWLockMode mode)
{
	return true;
}

void
LWLockRelease(LWLock *lock)
{
}

/*
 * ---- memory ----
 *
 * A worker's memory goes with its process: every block is kept on its
 * process's list, and simpg_proc_end() frees what is left when a simulated
 * worker dies (replies that never come leave their contexts behind, as in
 * the real one).
 */
typedef struct Block
{
	struct Block *prev;
	struct Block *next;
	void	   *pad[2];			/* keeps what follows as aligned as malloc's */
} Block;

typedef struct SimProc
{
	Block		head;			/* of a circular list */
} SimProc;

static SimProc *cur_proc = NULL;

void *
simpg_proc_new(void)
{
	SimProc    *p = calloc(1, sizeof(SimProc));

	if (p == NULL)
		abort();
	p->head.prev = p->head.next = &p->head;
	return p;
}

void
simpg_proc_end(void *proc)
{
	SimProc    *p = proc;

	while (p->head.next != &p->head)
	{
		Block	   *b = p->head.next;

		b->next->prev = b->prev;
		b->prev->next = b->next;
		free(b);
	}
	if (cur_proc == p)
		cur_proc = NULL;
	free(p);
}

static void *
block_alloc(Size size, bool zero)
{
	Block	   *b = zero ? calloc(1, sizeof(Block) + size) : malloc(sizeof(Block) + size);

	if (b == NULL || cur_proc == NULL)
		abort();
	b->next = cur_proc->head.next;
	b->prev = &cur_proc->head;
	b->next->prev = b;
	cur_proc->head.next = b;
	return b + 1;
}

void *
MemoryContextAlloc(MemoryContext context, Size size)
{
	return block_alloc(size, false);
}

void *
MemoryContextAllocZero(MemoryContext context, Size size)
{
	return block_alloc(size, true);
}

void *
palloc(Size size)
{
	return block_alloc(size, false);
}

char *
MemoryContextStrdup(MemoryContext context, const char *string)
{
	char	   *p = block_alloc(strlen(string) + 1, false);

	strcpy(p, string);
	return p;
}

void *
repalloc(void *pointer, Size size)
{
	Block	   *b = (Block *) pointer - 1;
	Block	   *n = realloc(b, sizeof(Block) + size);

	if (n == NULL)
		abort();
	n->prev->next = n;
	n->next->prev = n;
	return n + 1;
}

void
pfree(void *pointer)
{
	Block	   *b = (Block *) pointer - 1;

	b->next->prev = b->prev;
	b->prev->next = b->next;
	free(b);
}

/* Cluster c's worker code runs now: its shared memory, its worker process's memory. */
void
simpg_enter(void *shared, void *proc, int session_timeout)
{
	zkl_shared = shared;
	cur_proc = proc;
	zkl_session_timeout = session_timeout;
}

/* ---- strings (libpgport's, which the simulator does not link) ---- */

#undef vsnprintf

int
pg_vsnprintf(char *str, size_t count, const char *fmt, va_list args)
{
	return vsnprintf(str, count, fmt, args);
}

int
pg_snprintf(char *str, size_t count, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(str, count, fmt, ap);
	va_end(ap);
	return n;
}

size_t
strlcpy(char *dst, const char *src, size_t siz)
{
	size_t		n = strlen(src);

	if (siz > 0)
	{
		size_t		k = n < siz - 1 ? n : siz - 1;

		memcpy(dst, src, k);
		dst[k] = '\0';
	}
	return n;
}

/* ---- logging: a LOG line goes to the seed's trace, an ERROR fails it ---- */

static int	log_level;
static char log_line[512];

bool
errstart(int elevel, const char *domain)
{
	log_level = elevel;
	log_line[0] = '\0';
	return elevel >= LOG;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

static int
add_text(const char *prefix, const char *fmt, va_list ap)
{
	size_t		n = strlen(log_line);

	if (n < sizeof(log_line))
		n += snprintf(log_line + n, sizeof(log_line) - n, "%s", prefix);
	if (n < sizeof(log_line))
		vsnprintf(log_line + n, sizeof(log_line) - n, fmt, ap);
	return 0;
}

int
errmsg(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	add_text("", fmt, ap);
	va_end(ap);
	return 0;
}

int
errmsg_internal(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	add_text("", fmt, ap);
	va_end(ap);
	return 0;
}

int
errdetail(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	add_text("; ", fmt, ap);
	va_end(ap);
	return 0;
}

int
errcode(int sqlerrcode)
{
	return 0;
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	simh_log(log_level >= ERROR, log_line);
	if (log_level >= ERROR)
		exit(1);				/* the worker process would exit: the seed has failed */
}
