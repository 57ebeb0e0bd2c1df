#!/usr/bin/env bash
# Branch coverage (gcov) of src/core and of the worker files the simulator
# runs (build.sh --list) over a simulator run: which decisions the seeds
# reach, and which they never do.  `coverage.sh [first-last seeds]`
# (default 1-3000, as many as make test's run gets through); prints one line
# per file and writes every branch never taken, with its line, to
# $COV_OUT/untaken.txt (default test/sim/coverage-out, kept out of git).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../src/core
out=${COV_OUT:-$here/coverage-out}
seeds=${1:-1-3000}
rm -rf "$out"
mkdir -p "$out"
cd "$out"
# -O0: each branch gcov reports is one the source shows
SIM_OBJ="$out" bash "$here/build.sh" "$out/sim" -O0 -g --coverage
./sim --seeds "$seeds" --seconds 900 | tail -1
printf '%-16s %8s %9s %11s %9s\n' file lines branches 'taken once' 'of'
: >untaken.txt
files=("$src"/*.c)
for w in $(bash "$here/build.sh" --list); do files+=("$src/../worker/$w.c"); done
for c in "${files[@]}"; do
	f=$(basename "$c" .c)
	notes="sim-$f.gcno"
	[ -f "$notes" ] || notes="w-$f.gcno"
	gcov -b -c -o "$notes" "$c" >"$f.summary" 2>/dev/null || continue
	awk -v f="$f.c" '
		function pct(s) { sub(/^[^:]*:/, "", s); sub(/ of.*/, "", s); return s }
		function total(s) { sub(/.* of /, "", s); return s }
		/^File / { on = index($0, "/" f "'"'"'") > 0 }
		on && /^Lines executed/ { l = pct($0) }
		on && /^Branches executed/ { b = pct($0); n = total($0) }
		on && /^Taken at least once/ { t = pct($0) }
		END { printf "%-16s %8s %9s %11s %9s\n", f, l, b, t, n }' "$f.summary"
	# a branch never taken, under the source line it belongs to (assertions apart)
	awk -v f="$f.c" '
		/^ *[-#0-9=*]+: *[0-9]+:/ { split($0, a, ":"); line = a[2] + 0; text = $0; sub(/^[^:]*:[^:]*:/, "", text) }
		/^branch .*(never executed|taken 0%)/ && text !~ /ZC_ASSERT/ { n[line]++; src[line] = text }
		END { for (l in n) printf "%s:%d: %d untaken: %s\n", f, l, n[l], src[l] }' "$f.c.gcov" |
		sort -t: -k2,2n >>untaken.txt
done
echo "untaken branches by line: $out/untaken.txt ($(wc -l <untaken.txt) lines)"
