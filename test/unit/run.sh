#!/usr/bin/env bash
# Build and run the unit tests of the pure modules (key encoding, recipe).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cc -std=c99 -Wall -Wextra -Werror -O1 -I"$here/../../src" -o "$here/test_pure" \
	"$here/test_pure.c" "$here/../../src/keys.c" "$here/../../src/recipe.c"
"$here/test_pure"
