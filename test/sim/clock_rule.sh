#!/usr/bin/env bash
# The clock-rate rule of docs/failure-semantics.md, both sides of it, in the
# simulator's gap (SIM_GAP: a cluster stops hearing ZooKeeper as its session
# is ended at the leader, while it holds what another cluster waits for):
#   - clocks within the rule: no two holders may commit (every seed passes);
#   - one cluster's clock slowed until its proof outlives the shortest
#     lock-delay elsewhere by half (SIM_RATES=outside): the checks must fail,
#     or the rule is not what keeps the lock safe.
# `clock_rule.sh [seconds inside] [seconds outside]` (default 10, and 30:
# the gap needs a slow holder's commit inside a window of its proof's age).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-10}
outsecs=${2:-30}
bin=${SIM_BIN:-$(mktemp -d)/sim}
inside=$(SIM_GAP=1 SIM_BIN="$bin" bash "$here/run.sh" --seeds 1-100000 --seconds "$secs" 2>&1)
echo "inside the rule: $(tail -1 <<<"$inside")"
if ! grep -q ' 0 failed$' <<<"$(tail -1 <<<"$inside")"; then
	grep -m1 'FAILED' <<<"$inside"
	exit 1
fi
outside=$(SIM_GAP=1 SIM_RATES=outside "$bin" --seeds 1-100000 --seconds "$outsecs" --first-failure 2>&1)
caught=$(grep -m1 'FAILED at step' <<<"$outside")
if [ -z "$caught" ]; then
	echo "outside the rule: nothing failed within $outsecs s ($(tail -1 <<<"$outside")): the gap is not reached"
	exit 1
fi
echo "outside the rule, as it must: $caught"
