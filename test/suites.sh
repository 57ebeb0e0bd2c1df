#!/usr/bin/env bash
# Run every suite in a scratch tree (see run_all.sh): unit tests of the pure
# modules, the simulation, pg_regress, isolation specs and TAP.  Starts a ZooKeeper server for
# the pg_regress and isolation instances (TAP tests start their own) and stops
# it on any exit.
set -uo pipefail

work=$1
cd "$work"
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
mk=(make -s PG_CONFIG="$PG_CONFIG" with_llvm=no)

mkdir -p test/tmp
trap 'bash test/zk.sh stop "$work/test/tmp/zk"' EXIT
zk_port=$(bash test/zk.sh start "$work/test/tmp/zk") || exit 1

# The temp instances of pg_regress and pg_isolation_regress preload zk_lock.
cat >test/tmp/zk_lock.conf <<CONF
shared_preload_libraries = 'zk_lock'
zk_lock.hosts = '127.0.0.1:$zk_port'
zk_lock.connect_timeout = 5000
max_prepared_transactions = 2
CONF
# pg_regress's outputs list zk_locks as core's list pg_locks: a released
# lock's node gone at once, not lingering (zk_lock.linger has TAP tests)
{ cat test/tmp/zk_lock.conf; echo "zk_lock.linger = 0"; } >test/tmp/zk_lock_regress.conf

passed=0
failed=0
# No suite may hang the run: each gets a generous bound (most take seconds;
# TAP, the longest, about 8 minutes: SUITE_LIMIT raises it).
run_suite() {
	local name=$1
	shift
	local t0=$SECONDS
	local log=test/tmp/suite-$name.log
	echo "=== $name ==="
	# the suite's output is kept too: a failure is told again at the very end
	# of the run, where a reader of only its last lines still sees it
	if timeout --kill-after=30 "${SUITE_LIMIT:-600}" "$@" 2>&1 | tee "$log"; then
		echo "--- $name: $((SECONDS - t0)) s"
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "*** suite $name FAILED"
		{
			echo "*** suite $name FAILED after $((SECONDS - t0)) s; its last lines:"
			grep -v '^ok ' "$log" | tail -n 40
			# a TAP file's failed assertions, with the lines that say where
			grep -h -A2 '^\[[0-9:.]*\]([0-9.]*s) not ok' tmp_check/log/regress_log_* 2>/dev/null | head -n 30
		} >>test/tmp/failures
		for f in regression.diffs output_iso/regression.diffs; do
			[ -f "$f" ] && head -n 200 "$f"
		done
		for f in tmp_check/log/*.log; do
			[ -f "$f" ] && { echo "--- $f (last lines)"; tail -n 40 "$f"; }
		done
	fi
}

# src/core includes no PostgreSQL or ZooKeeper header, and builds on its own
run_suite core-pure bash test/core_pure.sh
run_suite unit bash test/unit/run.sh
# every planted bug of make sim-bites still applies (make sim-bites runs them)
run_suite bites-apply bash test/sim/bites_apply.sh
# the worker's decisions against the model ZooKeeper: a fixed set of seeds (~30 s)
run_suite sim bash test/sim/run.sh --seeds 1-8000 --seconds 35
# the clock-rate rule: its gap passes within the rule and fails just outside it
run_suite sim-clock-rule env SIM_BIN=test/sim/sim-gap bash test/sim/clock_rule.sh 8 30
# the same code under AddressSanitizer and UBSan, on other seeds
run_suite sim-asan env SIM_SANITIZE=1 SIM_BIN=test/sim/sim-asan bash test/sim/run.sh --seeds 100001-100400 --seconds 30
# the model ZooKeeper against this real server: the same scripts, compared (~10 s)
run_suite conform bash test/sim/conform.sh "$zk_port" --scripts 40 --ops 100 --expiries 2
run_suite fuzz bash test/fuzz/run.sh 20
run_suite bench-smoke bash bench/smoke.sh "$zk_port"
run_suite regress "${mk[@]}" installcheck-regress
run_suite isolation "${mk[@]}" installcheck-isolation
SUITE_LIMIT=1000 run_suite tap "${mk[@]}" installcheck-tap

# run_all.sh adds the package suite (it needs root) and prints the total
echo "$passed $failed" >"$work/test/tmp/counts"
[ "$failed" = 0 ]
