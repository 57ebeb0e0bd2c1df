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
#include "storage/lwlock.h"
#include "utils/memutils.h"

#include "shmem.h"
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

void
simpg_enter(void *shared)
{
	zkl_shared = shared;
}

uint64_t *
simpg_session_nonce(void *shared)
{
	return &((ZklShared *) shared)->session_nonce;
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

/* ---- memory ---- */

void *
MemoryContextAlloc(MemoryContext context, Size size)
{
	void	   *p = malloc(size);

	if (p == NULL)
		abort();
	return p;
}

void *
MemoryContextAllocZero(MemoryContext context, Size size)
{
	void	   *p = calloc(1, size);

	if (p == NULL)
		abort();
	return p;
}

char *
MemoryContextStrdup(MemoryContext context, const char *string)
{
	char	   *p = strdup(string);

	if (p == NULL)
		abort();
	return p;
}

void *
repalloc(void *pointer, Size size)
{
	void	   *p = realloc(pointer, size);

	if (p == NULL)
		abort();
	return p;
}

void
pfree(void *pointer)
{
	free(pointer);
}

/* ---- strings (libpgport's, which the simulator does not link) ---- */

#undef vsnprintf

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
