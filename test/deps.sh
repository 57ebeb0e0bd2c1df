#!/usr/bin/env bash
# Install the Debian packages zk_lock needs to build and test (with --build:
# to build), if missing, and any given as arguments.
set -euo pipefail

# --build: only what building needs (make deb), not the servers and test tools
pkgs="make gcc postgresql-server-dev-15 libzookeeper-st-dev"
if [ "${1:-}" = --build ]; then
	shift
else
	pkgs="$pkgs postgresql-15 postgresql-client-15 zookeeper libipc-run-perl libdbd-pg-perl faketime clang libclang-rt-14-dev pgbouncer"
	command -v java >/dev/null 2>&1 || pkgs="$pkgs default-jre-headless"
fi
pkgs="$pkgs $*"	# extra packages a caller needs (make bench, make deb)

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "missing Debian packages:$missing (run as root to install them)" >&2
	exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Packages with a service (pgbouncer) must not start one: the tests start
# their own servers and stop them by PID.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	trap 'rm -f "$policy"' EXIT
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
fi
# shellcheck disable=SC2086
apt-get install -y -qq $missing >/dev/null
