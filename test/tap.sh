#!/usr/bin/env bash
# Run some TAP tests against real servers, as `make test` runs them all:
#   bash test/tap.sh t/032_linger.pl t/034_global_deadlock.pl
# (as root: installs what is missing, builds, installs, runs as postgres).
# The scratch tree is kept on failure for its logs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || { echo "usage: bash test/tap.sh t/NNN_name.pl..." >&2; exit 2; }
zkl_prepare
work=$(zkl_workdir tap)
status=0
zkl_as_runner make -s -C "$work" PG_CONFIG="$PG_CONFIG" with_llvm=no installcheck-tap \
	PROVE_TESTS="$*" || status=$?
if [ "$status" = 0 ]; then rm -rf "$work"; else echo "test files kept in $work"; fi
exit "$status"
