#!/usr/bin/env bash
# Build the conformance test (conform*.c: the model ZooKeeper, zkmodel*.c,
# and the worker's zk_drop.c and zk_resolve.c, against a real server) and run it against the
# ZooKeeper at 127.0.0.1:PORT: `conform.sh PORT [conform options]`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=${1:?usage: conform.sh PORT [options]}
shift
out=${CONFORM_BIN:-$here/conform}
cc -std=c99 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation \
	-I"$here" -I"$here/../../src/worker" -o "$out" "$here"/conform*.c "$here"/zkmodel*.c \
	"$here/../../src/worker/zk_drop.c" "$here/../../src/worker/zk_resolve.c" -ldl -lzookeeper_st
exec "$out" "127.0.0.1:$port" "$@"
