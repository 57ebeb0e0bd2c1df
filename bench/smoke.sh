#!/usr/bin/env bash
# A quick check, inside `make test`, that the benchmark's floor program
# builds and does what it claims against a real server: bench/smoke.sh ZK_PORT
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -std=c99 -D_DEFAULT_SOURCE -O2 -Wall -Werror -o "$out/floor" "$here/floor.c" -lzookeeper_st
for args in "100 1" "200 8" "200 8 8"; do
	# shellcheck disable=SC2086
	line=$("$out/floor" "127.0.0.1:$1" $args)
	echo "floor $args: $line"
	case $line in
		"cycles ${args%% *} "*) ;;
		*) echo "floor did not complete ${args%% *} cycles" >&2; exit 1 ;;
	esac
done
