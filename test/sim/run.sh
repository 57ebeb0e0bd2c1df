#!/usr/bin/env bash
# Build the simulator from the real pure modules (every file of src/core, as
# they are) and run it: `run.sh [sim options]` (see sim.c).
# SIM_SRC points at another source tree (bites.sh builds patched copies).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${SIM_SRC:-$here/../../src}/core
out=${SIM_BIN:-$here/sim}
# SIM_SANITIZE=1: built with AddressSanitizer and UBSan (the simulator's own memory bugs)
san=()
[ "${SIM_SANITIZE:-0}" = 1 ] && san=(-O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined)
cc -std=c99 -O2 -g -DZC_ASSERTS -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation "${san[@]}" \
	-I"$src" -o "$out" "$here/sim.c" "$here/zkmodel.c" \
	"$src"/*.c
exec "$out" "$@"
