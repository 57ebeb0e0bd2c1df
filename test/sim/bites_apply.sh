#!/usr/bin/env bash
# Every planted bug of make sim-bites still applies to src/ (a patch that no
# longer applies plants nothing, and the bites would miss it only when run).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
bad=0
for p in "$here"/bugs/*.patch; do
	if ! patch --dry-run -s -d "$root" -p1 <"$p" >/dev/null 2>&1; then
		echo "$(basename "$p" .patch): does not apply to src/"
		bad=$((bad + 1))
	fi
done
echo "bites: $(ls "$here"/bugs/*.patch | wc -l) patches, $bad not applying"
[ "$bad" = 0 ]
