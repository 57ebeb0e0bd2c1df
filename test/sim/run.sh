#!/usr/bin/env bash
# Build the simulator (build.sh: src/core and the worker files it runs, as
# they are) and run it: `run.sh [sim options]` (see sim.c).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${SIM_BIN:-$here/sim}
# SIM_SANITIZE=1: built with AddressSanitizer and UBSan (the simulator's own memory bugs)
san=()
[ "${SIM_SANITIZE:-0}" = 1 ] && san=(-O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined)
# link-time optimisation: the simulator's files call each other (and the core) at every step
lto=(-flto=auto)
[ "${SIM_SANITIZE:-0}" = 1 ] && lto=()
bash "$here/build.sh" "$out" -O2 -g "${lto[@]}" "${san[@]}"
exec "$out" "$@"
