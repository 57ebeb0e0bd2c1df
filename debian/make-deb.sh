#!/usr/bin/env bash
# `make deb`: build postgresql-15-zk-lock_<version>_<arch>.deb with Debian's
# own tools (debhelper, pg_buildext) from a copy of the tree in build/deb, so
# the checkout stays clean; prints the package's path last.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bash "$src/test/deps.sh" --build debhelper fakeroot dpkg-dev >&2

out="$src/build/deb"
rm -rf "$out"
mkdir -p "$out/zk-lock"
if [ -d "$src/.git" ] && command -v git >/dev/null; then
	# what the checkout holds, committed or not, but nothing it ignores
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		tar -C "$src" --null --ignore-failed-read -T - -cf - | tar -C "$out/zk-lock" -xf -
else
	tar -C "$src" --exclude=./build --exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . |
		tar -C "$out/zk-lock" -xf -
fi

(cd "$out/zk-lock" && dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1 || {
	tail -n 60 "$out/build.log" >&2
	echo "make deb: the package build failed; the whole log is in $out/build.log" >&2
	exit 1
}
deb=$(ls "$out"/postgresql-15-zk-lock_*.deb)
echo "$deb"
