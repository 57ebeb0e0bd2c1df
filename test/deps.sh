#!/usr/bin/env bash
# Install the Debian packages zk_lock needs to build and test, if missing,
# and any given as arguments.
set -euo pipefail

pkgs="make gcc postgresql-15 postgresql-server-dev-15 postgresql-client-15
      libzookeeper-st-dev zookeeper libipc-run-perl clang libclang-rt-14-dev"
command -v java >/dev/null 2>&1 || pkgs="$pkgs default-jre-headless"
pkgs="$pkgs $*"	# extra packages a caller needs (make bench)

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
# shellcheck disable=SC2086
apt-get install -y -qq $missing >/dev/null
