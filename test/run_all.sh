#!/usr/bin/env bash
# `make test`: install what is missing, build warning-free, install the
# extension, then run every suite (test/suites.sh) as the postgres OS user in
# a scratch copy.  Everything started there is stopped there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

zkl_prepare
work=$(zkl_workdir test)
status=0
zkl_as_runner env PG_CONFIG="$PG_CONFIG" bash "$work/test/suites.sh" "$work" || status=$?
if [ "$status" = 0 ]; then
	rm -rf "$work"
else
	echo "test files kept in $work"
fi
exit "$status"
