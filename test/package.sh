#!/usr/bin/env bash
# The package suite of `make test` (as root, after the others): build the
# Debian package with `make deb`, install it, check that the files in place
# are the package's, and run the regression suite in a fresh cluster that
# loads the installed package (make installcheck-regress EXISTING=1).  Then
# remove the package and put back what `make install` had installed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
	echo "package suite skipped: installing a package needs root"
	exit 0
fi

deb=$(bash "$ZKL_SRC/debian/make-deb.sh" | tail -n 1)
echo "built $(basename "$deb")"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq "$deb" >/dev/null
restore() {
	dpkg -r postgresql-15-zk-lock >/dev/null
	make -s -C "$ZKL_SRC" PG_CONFIG="$PG_CONFIG" with_llvm=no install
}
trap restore EXIT

# the library the cluster will load is the package's, byte for byte
lib="$("$PG_CONFIG" --pkglibdir)/zk_lock.so"
owner=$(dpkg -S "$lib" | cut -d: -f1)
[ "$owner" = postgresql-15-zk-lock ] || { echo "$lib belongs to '$owner'"; exit 1; }
changed=$(dpkg -V postgresql-15-zk-lock)
[ -z "$changed" ] || { echo "installed files differ from the package: $changed"; exit 1; }
echo "installed; $lib and the extension files are the package's"

work=$(zkl_workdir package)
zkl_as_runner bash -s "$work" <<'RUN'
set -euo pipefail
work=$1
. "$work/test/lib.sh"
trap 'zkl_stop_clusters "$work"; bash "$work/test/zk.sh" stop "$work/zk"' EXIT
zk_port=$(bash "$work/test/zk.sh" start "$work/zk")
port=$(zkl_free_port)
zkl_start_cluster "$work" deb "$port" "$zk_port" "max_prepared_transactions = 2
zk_lock.linger = 0"	# as suites.sh's regression instance
cd "$work"
PGHOST=$work PGPORT=$port make -s PG_CONFIG="$PG_CONFIG" with_llvm=no installcheck-regress EXISTING=1 || {
	cat regression.diffs 2>/dev/null | head -n 200
	exit 1
}
RUN
rm -rf "$work"
