#!/usr/bin/env bash
# `make soak`: the real system under random, overlapping faults (see
# test/soak/Soak.pm).  SOAK_S seconds (default 600), SOAK_SEED replays a
# schedule of faults.  The histories, the JSON summary and the picture of the
# run are copied to soak-out/ in this tree.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bash "$ZKL_SRC/test/deps.sh" gnuplot-nox >/dev/null
zkl_prepare >/dev/null
work=$(zkl_workdir soak)
out="$work/soak-out"
zkl_as_runner mkdir -p "$out"
status=0
zkl_as_runner env SOAK_S="${SOAK_S:-600}" SOAK_SEED="${SOAK_SEED:-}" SOAK_OUT="$out" \
	make -s -C "$work" PG_CONFIG="$PG_CONFIG" with_llvm=no installcheck-tap \
	PROVE_TESTS=test/soak/soak.pl PROVE_FLAGS=-v || status=$?
mkdir -p "$ZKL_SRC/soak-out"
cp -r "$out"/. "$ZKL_SRC/soak-out/"
if [ "$status" = 0 ]; then rm -rf "$work"; else echo "test files kept in $work"; fi
echo "results in soak-out/"
exit "$status"
