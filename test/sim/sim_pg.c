/*
 * sim_pg.c — what the shipped worker files take from PostgreSQL, for the
 * simulator: each simulated cluster's shared memory (a ZklShared, as
 * shmem.c lays it out), its clocks and system identifier, memory and the
 * table lock (strings and logging: sim_pg_text.c).  Compiled with PostgreSQL's server headers, like the
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
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"

#include "settings.h"
#include "shmem.h"
#include "queue_read.h"
#include "auth.h"
#include "left_session.h"
#include "sim_host.h"

ZklShared  *zkl_shared = NULL;
ZklOnceArea *zkl_once = NULL;
static struct SimFs *cur_fs = NULL;	/* the current cluster's data directory */
pid_t		PostmasterPid;
TimestampTz PgStartTime;
MemoryContext TopMemoryContext = NULL;

/* A cluster's shared memory: the table and the rest (ZklShared) first, its once area beside. */
typedef struct SimShared
{
	ZklShared	sh;
	ZklOnceArea once;
} SimShared;

void *
simpg_shared_new(void)
{
	SimShared  *sh = calloc(1, sizeof(SimShared));

	if (sh == NULL)
		abort();
	return sh;
}

ZklOnceArea *
simpg_once_area(void *shared)
{
	return &((SimShared *) shared)->once;
}

/* nobody sleeps on the area: the simulator's backends look at it each step */
void
ConditionVariableBroadcast(ConditionVariable *cv)
{
}

int
zw_client_sqlstate(int zrc)
{
	return ERRCODE_CONNECTION_FAILURE;
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
simpg_closing_tag(void *shared)
{
	return &((ZklShared *) shared)->closing_tag;
}

int64_t *
simpg_last_heard(void *shared)
{
	return &((ZklShared *) shared)->last_heard;
}

/* ---- settings: one ensemble and root for all; each cluster's own session timeout and list of it ---- */

char	   *zkl_hosts = "model";
char	   *zkl_root = "/zkl";
int			zkl_session_timeout;
bool		zkl_test_fail_worker = false;
volatile sig_atomic_t ConfigReloadPending = false;	/* the cluster's reload signalled (F_RELOAD) */
volatile sig_atomic_t ShutdownRequestPending = false;
volatile sig_atomic_t InterruptPending = false;
int			zkl_connect_timeout = 5000;	/* sim.c's CONNECT_TIMEOUT */

void
ProcessInterrupts(void)
{
}

long
TimestampDifferenceMilliseconds(TimestampTz start_time, TimestampTz stop_time)
{
	TimestampTz diff = stop_time - start_time;

	return diff <= 0 ? 0 : (long) ((diff + 999) / 1000);
}
int			MyProcPid = 1;

/* zk_lock.hosts as the file now has it (sim_faults.c's reload); the other settings stay */
void
ProcessConfigFile(GucContext context)
{
	simh_reloaded();
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
zkl_proof_forget(void)
{
	simh_proof_forget();
}

void
zkl_new_uuid(char out[ZKL_UUID_LEN + 1])
{
	simh_new_uuid(out);
}

/* zk_lock.test_orphan: off, as in production */
bool		zkl_test_orphan = false;

/*
 * The live read of zk_lock_queue and zk_lock_waits (queue_read.c) serves
 * a backend's view that the simulator does not run: never asked.
 */
void
zw_query_start(void)
{
}

void
zw_query_send(void)
{
}

/* ---- the table lock: one process, nothing blocks ---- */

/*
 * Nothing waits, but an LWLock is not reentrant: a worker file that takes
 * the lock it holds would wait for itself for ever in a server.
 */
static bool lock_held = false;

bool
LWLockAcquire(LWLock *lock, LWLockMode mode)
{
	if (lock_held)
		elog(ERROR, "the table lock is taken by the process that holds it: it would wait for itself");
	lock_held = true;
	return true;
}

void
LWLockRelease(LWLock *lock)
{
	if (!lock_held)
		elog(ERROR, "the table lock is released by a process that does not hold it");
	lock_held = false;
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

/*
 * ---- what deadlock detection across clusters (gwaits*.c) takes ----
 *
 * The lock manager's waits are not simulated: no backend waits there
 * (BackendPidGetProc finds none), so pg_blocking_pids and the array and
 * memory calls around it are never reached.
 */
int			DeadlockTimeout = 1000;
char	   *cluster_name = "";
pg_prng_state pg_global_prng_state;
MemoryContext CurrentMemoryContext = NULL;

/* cluster c's deadlock_timeout and name ("c<id>"), as its worker reads them */
void
simpg_cluster(int deadlock_timeout, int id)
{
	static char *const names[] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"};

	DeadlockTimeout = deadlock_timeout;
	cluster_name = names[id % lengthof(names)];
}

uint64
pg_prng_uint64(pg_prng_state *state)
{
	return simh_nonce();
}

PGPROC *
BackendPidGetProc(int pid)
{
	return NULL;
}

static void
not_simulated(const char *what)
{
	elog(ERROR, "%s: the lock manager's waits are not simulated", what);
	abort();
}

Datum
pg_blocking_pids(PG_FUNCTION_ARGS)
{
	not_simulated("pg_blocking_pids");
	return (Datum) 0;
}

Datum
DirectFunctionCall1Coll(PGFunction func, Oid collation, Datum arg1)
{
	not_simulated("DirectFunctionCall1Coll");
	return (Datum) 0;
}

struct varlena *
pg_detoast_datum(struct varlena *datum)
{
	not_simulated("pg_detoast_datum");
	return NULL;
}

int
ArrayGetNItems(int ndim, const int *dims)
{
	not_simulated("ArrayGetNItems");
	return 0;
}

MemoryContext
AllocSetContextCreateInternal(MemoryContext parent, const char *name, Size minContextSize,
							  Size initBlockSize, Size maxBlockSize)
{
	return TopMemoryContext;
}

void
MemoryContextReset(MemoryContext context)
{
}

/* the backends of the simulator look at their slots each step: nobody sleeps on a latch */
void
zkl_flush_wakes(void)
{
}

/* Cluster c's worker code runs now: its shared memory, its worker process's memory. */
void
simpg_enter(void *shared, void *proc, int session_timeout, void *fs, int pm_pid, int64_t pm_start,
			char *hosts, bool reload)
{
	zkl_hosts = hosts;
	ConfigReloadPending = reload;
	zkl_shared = shared;
	zkl_once = simpg_once_area(shared);
	cur_proc = proc;
	zkl_session_timeout = session_timeout;
	cur_fs = fs;
	PostmasterPid = pm_pid;
	PgStartTime = pm_start;
}

/*
 * ---- the cluster's data directory: the files left_session.c keeps ----
 *
 * In memory, per cluster: what survives its crash-restarts.  left_session.c
 * is built with read, write and unlink renamed to the calls below (build.sh).
 */
#define SIM_FILES	4
#define SIM_FDS		4

typedef struct SimFile
{
	bool		used;
	char		name[64];
	int			len;
	unsigned char data[256];
} SimFile;

typedef struct SimFs
{
	SimFile		files[SIM_FILES];
} SimFs;

/* open files, of the process whose code runs: a file and a position */
static struct
{
	SimFile    *f;
	int			pos;
}			fds[SIM_FDS];

void *
simpg_fs_new(void)
{
	SimFs	   *fs = calloc(1, sizeof(SimFs));

	if (fs == NULL)
		abort();
	return fs;
}

void
simpg_fs_free(void *fs)
{
	free(fs);
}

static SimFile *
fs_find(const char *name)
{
	int			i;

	for (i = 0; i < SIM_FILES; i++)
		if (cur_fs->files[i].used && strcmp(cur_fs->files[i].name, name) == 0)
			return &cur_fs->files[i];
	return NULL;
}

int
OpenTransientFilePerm(const char *fileName, int fileFlags, mode_t fileMode)
{
	SimFile    *f = fs_find(fileName);
	int			i;
	int			fd;

	if (f == NULL && (fileFlags & O_CREAT))
	{
		for (i = 0; i < SIM_FILES && cur_fs->files[i].used; i++)
			;
		if (i == SIM_FILES)
			elog(ERROR, "the simulated data directory is full");
		f = &cur_fs->files[i];
		f->used = true;
		strlcpy(f->name, fileName, sizeof(f->name));
		f->len = 0;
	}
	if (f == NULL)
	{
		errno = ENOENT;
		return -1;
	}
	if (fileFlags & O_TRUNC)
		f->len = 0;
	for (fd = 0; fd < SIM_FDS && fds[fd].f != NULL; fd++)
		;
	if (fd == SIM_FDS)
		elog(ERROR, "too many simulated files open");
	fds[fd].f = f;
	fds[fd].pos = 0;
	return fd;
}

int
OpenTransientFile(const char *fileName, int fileFlags)
{
	return OpenTransientFilePerm(fileName, fileFlags, 0600);
}

int
CloseTransientFile(int fd)
{
	fds[fd].f = NULL;
	return 0;
}

ssize_t
simpg_read(int fd, void *buf, size_t n)
{
	SimFile    *f = fds[fd].f;
	int			k = Min((int) n, f->len - fds[fd].pos);

	memcpy(buf, f->data + fds[fd].pos, k);
	fds[fd].pos += k;
	return k;
}

ssize_t
simpg_write(int fd, const void *buf, size_t n)
{
	SimFile    *f = fds[fd].f;

	if (fds[fd].pos + (int) n > (int) sizeof(f->data))
		elog(ERROR, "a simulated file grew too long");
	memcpy(f->data + fds[fd].pos, buf, n);
	fds[fd].pos += n;
	f->len = Max(f->len, fds[fd].pos);
	return n;
}

int
simpg_unlink(const char *name)
{
	SimFile    *f = fs_find(name);

	if (f == NULL)
	{
		errno = ENOENT;
		return -1;
	}
	f->used = false;
	return 0;
}

int
durable_rename(const char *oldfile, const char *newfile, int loglevel)
{
	SimFile    *f = fs_find(oldfile);

	if (f == NULL)
		return -1;
	(void) simpg_unlink(newfile);
	strlcpy(f->name, newfile, sizeof(f->name));
	return 0;
}

int
errcode_for_file_access(void)
{
	return 0;
}
