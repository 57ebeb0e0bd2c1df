# Shared by `make test` and `make demo`: install what is missing, build and
# install the extension, and run things as an OS user that may run initdb.
# shellcheck shell=bash

ZKL_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# zkl_workdir copies this tree: never let a wrong guess copy something else
[ -f "$ZKL_SRC/zk_lock.control" ] || { echo "test/lib.sh: source tree not found (run it with bash)" >&2; exit 1; }
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
	tar -C "$ZKL_SRC" --exclude=.git --exclude=./build --exclude='*.o' --exclude='*.so' -cf - . | tar -C "$work" -xf -
	chown -R "$(zkl_runner)" "$work"
	chmod 755 "$work"
	echo "$work"
}

# A free TCP port on 127.0.0.1 (test/free_port.pl says why not port 0's).
zkl_free_port() {
	perl "$ZKL_SRC/test/free_port.pl"
}

# zkl_start_cluster WORK NAME PORT ZK_PORT [EXTRA_CONF]: a cluster in
# WORK/pg_NAME, listening on a socket in WORK only, with zk_lock created.
zkl_start_cluster() {
	local bin d
	bin=$("$PG_CONFIG" --bindir)
	d="$1/pg_$2"
	"$bin/initdb" -D "$d" -A trust --no-sync >/dev/null
	cat >>"$d/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$1'
port = $3
cluster_name = '$2'
shared_preload_libraries = 'zk_lock'
zk_lock.hosts = '127.0.0.1:$4'
${5:-}
CONF
	"$bin/pg_ctl" -D "$d" -l "$d/log" -w start >/dev/null
	"$bin/psql" -X -q -h "$1" -p "$3" -d postgres -c 'CREATE EXTENSION zk_lock'
}

# zkl_stop_clusters WORK: stop every cluster started in WORK (by its pid file).
zkl_stop_clusters() {
	local bin d
	bin=$("$PG_CONFIG" --bindir)
	for d in "$1"/pg_*; do
		[ -f "$d/postmaster.pid" ] && "$bin/pg_ctl" -D "$d" -m fast -w stop >/dev/null 2>&1
	done
	return 0
}
