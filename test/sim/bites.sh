#!/usr/bin/env bash
# Show that the checks bite: for each patch in bugs/ (each puts back one
# decision bug that was fixed, in a scratch copy of src/), run the
# simulator's seeds from 1 until the first failure, for at most SECONDS,
# and the unit tests.  Prints what caught each bug (seed and step for the
# simulator); exits non-zero if one got past both.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
limit=${1:-30}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
missed=0
for patch in "$here"/bugs/*.patch; do
	name=$(basename "$patch" .patch)
	rm -rf "$tmp/src" "$tmp/test"
	mkdir -p "$tmp/test"
	cp -r "$here/../../src" "$tmp/src"
	cp -r "$here/../unit" "$tmp/test/unit"
	if ! patch -s -d "$tmp" -p1 <"$patch"; then
		echo "$name: patch does not apply"
		missed=$((missed + 1))
		continue
	fi
	t0=$(date +%s.%N)
	out=$(SIM_SRC="$tmp/src" SIM_BIN="$tmp/sim" bash "$here/run.sh" \
		--seeds 1-1000000 --seconds "$limit" --first-failure 2>&1)
	took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
	if ! grep -q 'FAILED at step\| passed, ' <<<"$out"; then
		echo "$name: does not build"
		missed=$((missed + 1))
		continue
	fi
	caught=$(grep -m1 'FAILED at step' <<<"$out")
	[ -n "$caught" ] && caught="after $(printf '%.1f' "$took") s, $caught"
	unit=$(bash "$tmp/test/unit/run.sh" 2>&1 | tail -1)
	if [ -n "$caught" ]; then
		echo "$name: simulator: $caught"
	else
		echo "$name: simulator: not caught within $limit s ($(tail -1 <<<"$out"))"
	fi
	echo "$name: unit tests: $unit"
	if [ -z "$caught" ] && [[ "$unit" == *" 0 failed" ]]; then
		missed=$((missed + 1))
	fi
done
echo "bugs put back: $(ls "$here"/bugs/*.patch | wc -l), missed: $missed"
[ "$missed" = 0 ]
