#!/usr/bin/env bash
# `make test`: install what is missing, build warning-free, install the
# extension, then run every suite (test/suites.sh) as the postgres OS user in
# a scratch copy, and last the Debian package's (test/package.sh, as root).
# Everything started there is stopped there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

zkl_prepare
work=$(zkl_workdir test)
status=0
zkl_as_runner env PG_CONFIG="$PG_CONFIG" bash "$work/test/suites.sh" "$work" || status=$?
read -r passed failed <"$work/test/tmp/counts" || { passed=0; failed=1; }

# the Debian package, installed and tested against a fresh cluster (as root)
echo "=== package ==="
if timeout --kill-after=30 600 bash "$ZKL_SRC/test/package.sh"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	status=1
	echo "*** suite package FAILED"
fi

if [ "$status" = 0 ]; then
	rm -rf "$work"
else
	[ -f "$work/test/tmp/failures" ] && cat "$work/test/tmp/failures"
	echo "test files kept in $work"
fi
echo "suites: $passed passed, $failed failed"
exit "$status"
