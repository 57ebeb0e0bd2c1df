#!/usr/bin/env bash
# src/core is pure: it includes only its own headers and the C library's
# (no PostgreSQL, no ZooKeeper), and each file compiles with no include
# path but src/core.  The unit tests and the simulator build it as is.
set -euo pipefail
core=$(cd "$(dirname "$0")/../src/core" && pwd)
bad=$(grep -Hn '^#include' "$core"/*.[ch] |
	grep -Ev '#include "[a-z_]+\.h"|#include <(stdarg|stdbool|stddef|stdint|stdio|stdlib|string|inttypes|limits)\.h>' || true)
if [ -n "$bad" ]; then
	echo "src/core includes what is not its own or the C library's:" >&2
	echo "$bad" >&2
	exit 1
fi
for f in "$core"/*.c; do
	cc -std=c99 -Wall -Wextra -Werror -Wno-unused-parameter -fsyntax-only -I"$core" "$f"
done
# a local header named like a library's would pass the grep: none may be missing here
for h in $(grep -ho '#include "[a-z_]*\.h"' "$core"/*.[ch] | sort -u | sed 's/.*"\(.*\)"/\1/'); do
	[ -f "$core/$h" ] || { echo "src/core includes $h, which is not in src/core" >&2; exit 1; }
done
# the worker's ZooKeeper client is the only caller of the library (zk_client.c, and
# zk_drop.c and zk_resolve.c, its pieces without PostgreSQL that the conformance
# test runs too),
# and no backend file includes it
src=$(dirname "$core")
# (any use of a library function, called or taken as a pointer; its types may be named)
calls=$(grep -HnoE '\b(zoo_[a-z0-9_]+|zookeeper_[a-z0-9_]+|zerror)\b' "$src"/*.c "$src"/*/*.c |
	grep -vE "^$src/worker/zk_(client|drop|resolve)\.c:" | grep -vE ':(zoo_op_t|zoo_op_result_t)$' || true)
if [ -n "$calls" ]; then
	echo "libzookeeper is called outside src/worker/zk_client.c, zk_drop.c and zk_resolve.c:" >&2
	echo "$calls" >&2
	exit 1
fi
if grep -Hn 'zookeeper\.h\|worker/' "$src"/backend/*.[ch] | grep '#include'; then
	echo "src/backend includes the ZooKeeper library or the worker's headers" >&2
	exit 1
fi
echo "src/core: pure ($(ls "$core"/*.c | wc -l) files); libzookeeper called by src/worker/zk_client.c, zk_drop.c and zk_resolve.c only"
