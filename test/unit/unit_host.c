/*
 * unit_host.c — the host the tests run core.c in: a clock, what it was asked
 * to do, the table, and steps the tests share.
 */
#include "unit_core.h"

/* ---- a host for core.c: a clock, and what it was asked to do ---- */

int64_t now_us = 1000000;
int	claim_holders = 2;	/* holders of the next semaphore claim */
uint64_t claim_group = 0;	/* group of the next claims (a multi-key request) */
static unsigned int uuid_counter;
int	interrupts;
bool paused;
int64_t paused_until;
int64_t noted_at;
int64_t noted_session;

static int64_t
env_now(void *arg)
{
	return now_us;
}

static void
env_uuid(void *arg, char out[ZKL_UUID_LEN + 1])
{
	snprintf(out, ZKL_UUID_LEN + 1, "%08x-0000-4000-8000-000000000000", ++uuid_counter);
}

static void
env_wake(void *arg, ZklSlot *s)
{
}

static void
env_interrupt(void *arg, ZklSlot *s)
{
	interrupts++;
}

static void
env_denied(void *arg, const ZklSlot *s)
{
}

static bool
env_paused(void *arg, int64_t now, int64_t *until)
{
	*until = paused_until;
	return paused;
}

static void
env_suspect(void *arg, const ZklSlot *s, const char *name)
{
}

static bool
env_orphan(void *arg, const char *name)
{
	return false;
}

int	ghosts;

static void
env_ghost(void *arg, const ZklSlot *s)
{
	ghosts++;
}

static void
env_proof(void *arg, int64_t sent_at, int64_t session)
{
	noted_at = sent_at;
	noted_session = session;
}

static const char *
env_text(int rc)
{
	return "error";
}

static int
env_sqlstate(int rc)
{
	return 1;
}

int	warnings;

static void
env_warn(void *arg, const char *msg)
{
	warnings++;
}

static const ZklCoreEnv env = {
	NULL, env_now, env_now, env_uuid, env_wake, env_interrupt, env_denied, env_paused,
	env_suspect, env_orphan, env_ghost, env_proof, env_text, env_sqlstate, env_warn
};

ZklTable table;
ZklSlot slots[NSLOTS];
ZklCore core;
ZklOp ops[2 * NSLOTS];
static const char *mine[NSLOTS];
bool held[NSLOTS];

void
setup(void)
{
	memset(&table, 0, sizeof(table));
	memset(slots, 0, sizeof(slots));
	memset(&core, 0, sizeof(core));
	table.slots = slots;
	table.nslots = NSLOTS;
	table.conn_state = ZKC_CONNECTED;
	table.session_id = 0x100;
	table.session_tag = zc_table_session_tag(table.session_id, 0x5eed);
	table.negotiated_timeout = 4000;
	strcpy(table.roots[0], "/r");
	core.t = &table;
	core.env = &env;
	core.connect_timeout = 5000;
	core.proof_bound = 1000;
	core.ops = ops;
	core.mine = mine;
	core.held = held;
	paused = false;
	interrupts = 0;
	ghosts = 0;
	warnings = 0;
}

/* setup() with local hand-over on, and this linger (ms). */
void
setup_handover(int linger_ms)
{
	setup();
	core.cohort.handover = true;
	core.cohort.linger_ms = linger_ms;
}

int
claim(char mode, int pid)
{
	ZklRequest	r;
	char		uuid[ZKL_UUID_LEN + 1];
	int			idx = zc_table_find_free(&table);

	env_uuid(NULL, uuid);
	r.key = "tk";
	r.mode = mode;
	r.holders = mode == ZKL_MODE_SEMAPHORE ? claim_holders : 0;
	r.group = claim_group;
	r.nowait = false;
	r.scope = ZKL_SCOPE_XACT;
	r.data = "{}";
	r.procno = pid;
	r.pid = pid;
	r.now = now_us;
	r.uuid = uuid;
	zc_table_claim(&table, idx, &r);
	return idx;
}

/* Plan, and return the tag of slot idx's op of this kind (0: none planned). */
uint64_t
planned(int idx, ZklOpKind kind)
{
	int			i;

	for (i = 0; i < core.nops; i++)
		if (ops[i].idx == idx && ops[i].kind == kind)
			return zc_core_tag(idx, ops[i].attempt);
	return 0;
}

/* The node name ZooKeeper gives slot idx's create, with this sequence. */
const char *
node_of(int idx, int seq, char *buf)
{
	char		prefix[ZKL_NODE_BUFLEN];

	zc_table_node_prefix(&table, &slots[idx], slots[idx].uuid, 7, prefix, sizeof(prefix));
	sprintf(buf, "%s%010d", prefix, seq);
	return buf;
}

/* Create slot idx's node with this sequence and answer its listing with names[]. */
void
create_and_list(int idx, int seq, const char *const *names, int n)
{
	char		name[ZKL_NODE_BUFLEN];
	uint64_t	tag;
	ZkrChild	kids[8];

	(void) zc_core_plan(&core, true, now_us);
	tag = planned(idx, OP_CREATE);
	CHECK(tag != 0, "a create is planned");
	(void) zc_core_create_reply(&core, tag, ZOK, node_of(idx, seq, name), true, 10 + seq);
	zc_core_children_reply(&core, tag, ZOK, kids, zc_recipe_collect(names, n, kids), false);
}

/* Names of the nodes made so far, in queue order. */
char made[4][ZKL_NODE_BUFLEN];
const char *queue[4];

/* An exclusive holder (pid 1) and an exclusive waiter behind it (pid 2): their slots. */
void
holder_and_waiter(int *d, int *w)
{
	*d = claim(ZKL_MODE_EXCLUSIVE, 1);
	queue[0] = node_of(*d, 0, made[0]);
	create_and_list(*d, 0, queue, 1);
	*w = claim(ZKL_MODE_EXCLUSIVE, 2);
	queue[1] = node_of(*w, 1, made[1]);
	create_and_list(*w, 1, queue, 2);
}

/* W re-reads its queue, and the listing shows only the first node (not W's). */
void
listing_without(int w)
{
	ZkrChild	kids[4];

	(void) zc_core_plan(&core, true, now_us);
	slots[w].zk.todo |= ZKT_CHILDREN;
	(void) zc_core_plan(&core, true, now_us);
	zc_core_children_reply(&core, planned(w, OP_CHILDREN), ZOK, kids, zc_recipe_collect(queue, 1, kids),
						 false);
}

/* Slot idx's node was not seen; the lookup after a sync does not find it either. */
void
lookup_finds_nothing(int idx)
{
	CHECK(slots[idx].zstate == ZKS_RECOVER, "a node not seen is looked up after a sync first");
	(void) zc_core_plan(&core, true, now_us);
	zc_core_recover_reply(&core, planned(idx, OP_RECOVER), ZOK, NULL, 0);
}
