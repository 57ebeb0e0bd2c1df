#!/usr/bin/env bash
# Build the simulator: `build.sh OUT [cc options]`.  It runs src/core as it
# is, and the shipped worker files that sim.c drives (WORKER below), with
# PostgreSQL's server headers and the stand-ins of sim_pg.c; sim.c, the
# model and the core see no PostgreSQL header.  SIM_SRC points at another
# source tree (bites.sh builds patched copies); SIM_OBJ keeps the objects
# there (coverage.sh reads their notes).  `build.sh --list`: the worker files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${SIM_SRC:-$here/../../src}
# the worker files the simulator runs as shipped
WORKER=(orphans presence requests session left_session gwaits gwaits_doc gwaits_claim turn once_io)
if [ "${1:-}" = --list ]; then
	echo "${WORKER[@]}"
	exit 0
fi
out=$1
shift
pgsrv=$(pg_config --includedir-server)
if [ -n "${SIM_OBJ:-}" ]; then
	obj=$SIM_OBJ
else
	obj=$(mktemp -d)
	trap 'rm -rf "$obj"' EXIT
fi
warn=(-Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation)
# the PostgreSQL side, as PGXS compiles it (gnu99, its headers)
for f in "${WORKER[@]}"; do
	# the session file's I/O goes to the cluster's simulated data directory (sim_pg.c)
	io=()
	[ "$f" = left_session ] && io=(-Dread=simpg_read -Dwrite=simpg_write -Dunlink=simpg_unlink)
	# a victim failed: the simulator judges the moment of choice first (sim_gw.c)
	[ "$f" = gwaits_claim ] && io=(-Dzc_core_fail_deadlock=simh_fail_deadlock)
	cc -std=gnu99 "$@" "${warn[@]}" -Wno-missing-field-initializers -Wno-sign-compare "${io[@]}" \
		-I"$src/worker" -I"$src" -I"$src/core" -I"$pgsrv" -c "$src/worker/$f.c" -o "$obj/w-$f.o"
done
for f in "$here"/sim_pg*.c; do
	cc -std=gnu99 "$@" "${warn[@]}" -Wno-missing-field-initializers -Wno-sign-compare \
		-I"$here" -I"$src" -I"$src/core" -I"$src/worker" -I"$pgsrv" -c "$f" -o "$obj/$(basename "$f" .c).o"
done
# the simulator's own files: every sim*.c but sim_pg*.c (the PostgreSQL side, above),
# and the model ZooKeeper (every zkmodel*.c)
sims=()
for f in "$here"/sim*.c; do case "$(basename "$f")" in sim_pg*) ;; *) sims+=("$f") ;; esac; done
cc -std=c99 "$@" -DZC_ASSERTS "${warn[@]}" -I"$src/core" -I"$src/worker" -I"$here" -o "$out" \
	"${sims[@]}" "$here"/zkmodel*.c "$src"/core/*.c "$obj"/*.o
