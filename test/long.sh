#!/usr/bin/env bash
# `make test-long`: tests too long for `make test` (test/long/*.pl): zk_once
# with real pg_cron over ten minutes.  Installs what it needs (pg_cron).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bash "$ZKL_SRC/test/deps.sh" postgresql-15-cron >/dev/null
zkl_prepare >/dev/null
work=$(zkl_workdir long)
status=0
zkl_as_runner make -s -C "$work" PG_CONFIG="$PG_CONFIG" with_llvm=no installcheck-tap \
	PROVE_TESTS="$(cd "$work" && echo test/long/*.pl)" PROVE_FLAGS=-v || status=$?
if [ "$status" = 0 ]; then rm -rf "$work"; else echo "test files kept in $work"; fi
exit "$status"
