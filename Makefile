# zk_lock — PGXS build.  `make test` and `make demo` need no prior setup:
# they install what they need (Debian packages) and start their own servers.

MODULE_big = zk_lock
OBJS = src/zk_lock.o src/shmem.o src/worker.o src/zk_client.o src/recipe.o \
       src/keys.o src/lockfuncs.o src/xact.o
EXTENSION = zk_lock
DATA = zk_lock--1.0.sql
PGFILEDESC = "zk_lock - advisory locks shared by PostgreSQL clusters through ZooKeeper"

# Single-threaded client only: the _mt library runs callbacks on its own threads.
SHLIB_LINK = -lzookeeper_st

PG_CONFIG ?= $(firstword $(wildcard /usr/lib/postgresql/15/bin/pg_config) pg_config)
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)

.PHONY: test demo unit

ifneq ($(PGXS),)
include $(PGXS)
else
all:
	@echo "PostgreSQL server development files not found: run 'make test' (it installs them)" >&2; exit 1
endif

test:
	bash test/run_all.sh

demo:
	bash test/demo.sh

unit:
	bash test/unit/run.sh
