#!/usr/bin/env bash
# Build and run the unit tests of the pure modules: key encoding, the
# recipe and zk_once's rules (test_pure), the worker's decisions and a transaction's rules
# (test_core).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../src/core
flags=(-std=c99 -Wall -Wextra -Werror -Wno-unused-parameter -O1 -DZC_ASSERTS -I"$src" -I"$here")
cc "${flags[@]}" -o "$here/test_pure" "$here/test_pure.c" "$here/test_once.c" "$src/keys.c" "$src/recipe.c" \
	"$src/kinds.c" "$src/invariant.c" "$src/once.c"
# test_core: its main (test_core.c), the host core.c runs in (unit_host.c), the tests by theme
core_tests=(test_core unit_host test_requests test_book test_presence test_semaphores test_cohort
	test_here test_deadlock test_riders test_readers)
cc "${flags[@]}" -o "$here/test_core" $(printf "$here/%s.c " "${core_tests[@]}") "$src"/*.c
"$here/test_pure"
"$here/test_core"
