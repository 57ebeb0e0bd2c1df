# Shared by `make test` and `make demo`: install what is missing, build and
# install the extension, and run things as an OS user that may run initdb.
# shellcheck shell=bash

ZKL_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
export PG_CONFIG

# Debian packages, then a warning-free build, installed into PostgreSQL.
zkl_prepare() {
	bash "$ZKL_SRC/test/deps.sh"
	make -s -C "$ZKL_SRC" PG_CONFIG="$PG_CONFIG" with_llvm=no COPT=-Werror clean all
	make -s -C "$ZKL_SRC" PG_CONFIG="$PG_CONFIG" with_llvm=no install
}

# initdb refuses root: servers run as postgres (created by postgresql-common).
zkl_runner() {
	if [ "$(id -u)" = 0 ]; then echo postgres; else id -un; fi
}

zkl_as_runner() {
	local runner
	runner=$(zkl_runner)
	if [ "$(id -un)" = "$runner" ]; then
		"$@"
	else
		runuser -u "$runner" -- "$@"
	fi
}

# A scratch copy of the tree owned by the runner (the checkout may be unreadable to it).
zkl_workdir() {
	local work
	work=$(mktemp -d "${TMPDIR:-/tmp}/zk_lock-$1.XXXXXX")
	tar -C "$ZKL_SRC" --exclude=.git --exclude='*.o' --exclude='*.so' -cf - . | tar -C "$work" -xf -
	chown -R "$(zkl_runner)" "$work"
	chmod 755 "$work"
	echo "$work"
}
