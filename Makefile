# zk_lock — PGXS build.  `make test` and `make demo` need no prior setup:
# they install what they need (Debian packages) and start their own servers.

MODULE_big = zk_lock
# The folders are the layers (docs/architecture.md): core/ is pure (no
# PostgreSQL or ZooKeeper header: make core-pure), worker/ is the background
# worker and the only caller of libzookeeper, backend/ runs in backends;
# src/ itself holds the module's start-up (zk_lock.c, on top), its shared
# memory (shmem.c) and its settings (settings.c).
CORE_OBJS = src/core/core.o src/core/core_reply.o src/core/core_grant.o src/core/core_plan.o \
            src/core/core_batch.o src/core/cohort.o src/core/cohort_ride.o src/core/cohort_plan.o src/core/table.o src/core/take_here.o src/core/book.o src/core/holds.o \
            src/core/lock_delay.o src/core/recipe.o src/core/kinds.o src/core/keys.o src/core/cutoff.o src/core/sigterm.o src/core/clean_stop.o \
            src/core/resume.o src/core/deadlock.o src/core/gwait.o src/core/gwait_doc.o src/core/gwait_edges.o src/core/slot_state.o src/core/looks.o src/core/once.o \
            src/core/invariant.o
WORKER_OBJS = src/worker/worker.o src/worker/session.o src/worker/left_session.o \
              src/worker/presence.o src/worker/orphans.o src/worker/auth.o src/worker/zk_client.o \
              src/worker/queue_read.o src/worker/gwaits.o src/worker/gwaits_doc.o src/worker/gwaits_claim.o src/worker/requests.o \
              src/worker/turn.o src/worker/once_io.o src/worker/zk_drop.o src/worker/zk_resolve.o
BACKEND_OBJS = src/backend/lockfuncs.o src/backend/request.o src/backend/xact.o src/backend/held.o src/backend/commit.o src/backend/stmt.o src/backend/views.o \
               src/backend/key_text.o src/backend/once.o src/backend/once_call.o src/backend/once_seal.o
OBJS = src/zk_lock.o src/settings.o src/shmem.o $(CORE_OBJS) $(WORKER_OBJS) $(BACKEND_OBJS)
PG_CPPFLAGS = -I$(srcdir)/src -I$(srcdir)/src/core -I$(srcdir)/src/worker -I$(srcdir)/src/backend
EXTENSION = zk_lock
DATA = zk_lock--1.0.sql zk_lock--1.0--1.1.sql zk_lock--1.1--1.2.sql zk_lock--1.2--1.3.sql
PGFILEDESC = "zk_lock - advisory locks shared by PostgreSQL clusters through ZooKeeper"

# Single-threaded client only: the _mt library runs callbacks on its own threads.
SHLIB_LINK = -lzookeeper_st

# Suites; `make test` runs them all (see test/run_all.sh).  The temp instances
# load a config written at run time with the port of the ZooKeeper it started.
# With EXISTING=1 they run against a running server instead (PGHOST, PGPORT,
# PGUSER as for psql), which must preload zk_lock, reach a ZooKeeper and allow
# prepared transactions.
REGRESS = zk_lock_api zk_lock_xact zk_lock_pairs zk_lock_session zk_lock_semaphore zk_lock_multi
ISOLATION = trylock timeouts shared kinds
ifndef EXISTING
REGRESS_OPTS = --temp-instance=tmp_regress --temp-config=test/tmp/zk_lock_regress.conf
ISOLATION_OPTS = --temp-instance=tmp_isolation --temp-config=test/tmp/zk_lock.conf
endif
TAP_TESTS = 1
ENCODING = UTF8
NO_LOCALE = 1
EXTRA_CLEAN = tmp_regress tmp_isolation output_iso test/unit/test_pure test/unit/test_core test/sim/sim \
              test/sim/sim-asan test/sim/conform

PG_CONFIG ?= $(firstword $(wildcard /usr/lib/postgresql/15/bin/pg_config) pg_config)
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
# the pure core's invariants (src/core/invariant.h) are checked where the server's
# own are (an --enable-cassert or -Dcassert=true build): its pg_config.h says so
ifneq ($(shell grep -s '^\#define USE_ASSERT_CHECKING 1' "$$($(PG_CONFIG) --includedir-server 2>/dev/null)/pg_config.h"),)
PG_CPPFLAGS += -DZC_ASSERTS
endif

.PHONY: test test-long demo bench soak deb unit fuzz sim sim-bites sim-coverage core-pure installcheck-regress installcheck-isolation installcheck-tap

ifneq ($(PGXS),)
include $(PGXS)
else
all:
	@echo "PostgreSQL server development files not found: run 'make test' (it installs them)" >&2; exit 1
endif

# PGXS does not track headers; every object depends on the shared layouts.
$(OBJS): $(wildcard src/*.h src/*/*.h)

test:
	bash test/run_all.sh

demo:
	bash test/demo.sh

bench:
	bash bench/bench.sh

unit:
	bash test/unit/run.sh

# src/core is pure: it includes only its own headers and the C library's, and
# compiles with no include path but its own.
core-pure:
	@bash test/core_pure.sh

# The Debian package, built with debhelper and pg_buildext: build/deb/*.deb
deb:
	@bash debian/make-deb.sh

# The deterministic simulation (test/sim): random seeds for SIM_SECONDS, each
# reported; SIM_SEED=N replays one seed step by step.  make test runs a
# fixed set of seeds.
SIM_SECONDS ?= 60
sim:
	@bash test/deps.sh
ifdef SIM_SEED
	bash test/sim/run.sh --seed $(SIM_SEED) --verbose
else
	bash test/sim/run.sh --seconds $(SIM_SECONDS)
endif

# Put back each fixed decision bug (test/sim/bugs) and show the simulation catches it.
SIM_BITE_SECONDS ?= 60
sim-bites:
	@bash test/deps.sh
	bash test/sim/bites.sh $(SIM_BITE_SECONDS)

# Branch coverage of src/core over the simulator's seeds 1-3000 (gcov).
sim-coverage:
	@bash test/deps.sh
	bash test/sim/coverage.sh

# The real system under random faults for SOAK_S seconds, judged by the data
# the locks protect (test/soak); SOAK_SEED replays a run's faults.
soak:
	bash test/soak.sh

# Tests too long for `make test` (test/long): zk_once with real pg_cron, ten minutes.
test-long:
	bash test/long.sh

# A long libFuzzer run of the key encoding (make test runs a short one).
FUZZ_SECONDS ?= 600
fuzz:
	bash test/fuzz/run.sh $(FUZZ_SECONDS)

installcheck-regress:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)

installcheck-isolation:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)

# TAP test files share nothing (each starts its own servers in its own
# directory), so they run TAP_JOBS at a time, the longest first.  Most of a
# file's time is waiting (for a session to expire, a lock-delay, a timeout):
# three at a time keep two cores about half busy.
TAP_JOBS ?= 3
TAP_LONGEST = t/039_soak.pl t/018_partition.pl t/029_clean_stop.pl t/034_global_deadlock.pl t/042_once_faults.pl \
              t/033_differential.pl t/016_stale_view.pl
PROVE_TESTS ?= $(TAP_LONGEST) $(filter-out $(TAP_LONGEST),$(sort $(wildcard t/*.pl)))
installcheck-tap: PROVE_FLAGS += -j$(TAP_JOBS) --timer
installcheck-tap:
	$(prove_installcheck)
