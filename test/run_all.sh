#!/usr/bin/env bash
# `make test`: install what is missing, build warning-free, install the
# extension, then run every suite as the postgres OS user (initdb refuses
# root) against a ZooKeeper server started here, and stop all of it.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"

bash test/deps.sh
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
make -s PG_CONFIG="$PG_CONFIG" with_llvm=no COPT=-Werror clean all
make -s PG_CONFIG="$PG_CONFIG" with_llvm=no install

runner=$(id -un)
if [ "$(id -u)" = 0 ]; then
	runner=postgres
fi

# Run in a scratch copy the test user owns: the checkout may not be readable by it.
work=$(mktemp -d "${TMPDIR:-/tmp}/zk_lock-test.XXXXXX")
tar -C "$src" --exclude=.git --exclude='*.o' --exclude='*.so' -cf - . | tar -C "$work" -xf -
chown -R "$runner" "$work"
chmod 755 "$work"

as_runner() {
	if [ "$(id -un)" = "$runner" ]; then
		"$@"
	else
		runuser -u "$runner" -- "$@"
	fi
}

status=0
as_runner env PG_CONFIG="$PG_CONFIG" bash "$work/test/suites.sh" "$work" || status=$?

if [ "$status" = 0 ]; then
	rm -rf "$work"
else
	echo "test files kept in $work"
fi
exit "$status"
