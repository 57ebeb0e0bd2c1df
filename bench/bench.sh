#!/usr/bin/env bash
# `make bench`: zk_lock against the ZooKeeper floor, Apache Curator and core
# advisory locks, all measured in this one run on this machine, with a
# standalone ZooKeeper that syncs to disk as in production.  Prints one table
# of ratios and draws bench/throughput.png.  See README, "Performance".
set -euo pipefail
. "$(dirname "$0")/../test/lib.sh"

if [ "${1:-}" != --inside ]; then
	extra="libcurator-recipes-java gnuplot-nox gdb"
	command -v javac >/dev/null 2>&1 || extra="$extra default-jdk-headless"
	# shellcheck disable=SC2086
	bash "$ZKL_SRC/test/deps.sh" $extra >/dev/null
	zkl_prepare >/dev/null
	work=$(zkl_workdir bench)
	status=0
	zkl_as_runner bash "$work/bench/bench.sh" --inside "$work" || status=$?
	[ -f "$work/bench/throughput.png" ] && cp "$work/bench/throughput.png" "$ZKL_SRC/bench/throughput.png"
	rm -rf "$work"
	exit "$status"
fi

work=$2
cd "$work"
bin=$("$PG_CONFIG" --bindir)
SECONDS_EACH=${BENCH_SECONDS:-10}
S6_CYCLES=${BENCH_S6_CYCLES:-1000000}
cleanup() {
	zkl_stop_clusters "$work"
	bash test/zk.sh stop "$work/zk"
}
trap cleanup EXIT

zk_port=$(bash test/zk.sh start "$work/zk")
zk_hosts="127.0.0.1:$zk_port"
port_a=$(zkl_free_port)
port_b=$((port_a + 1))
conf="max_connections = 80"
zkl_start_cluster "$work" A "$port_a" "$zk_port" "$conf"
zkl_start_cluster "$work" B "$port_b" "$zk_port" "$conf"

cc -std=c99 -D_DEFAULT_SOURCE -O2 -Wall -Werror -o "$work/floor" bench/floor.c -lzookeeper_st
jars=""
for j in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava \
	slf4j-api slf4j-nop netty-handler netty-transport netty-common netty-buffer \
	netty-resolver netty-codec netty-transport-native-epoll netty-transport-native-unix-common; do
	jars="$jars:/usr/share/java/$j.jar"
done
mkdir -p "$work/classes"
javac -d "$work/classes" -cp "${jars#:}" bench/CuratorBench.java

psql_a() { "$bin/psql" -X -q -At -h "$work" -p "$port_a" -d postgres -v ON_ERROR_STOP=1 "$@"; }
field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p"; }	# field NAME < "… NAME value …"
mntr() {	# mntr KEY: one counter of the server
	perl -MIO::Socket::INET -e '
		alarm 5;
		my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0], Timeout => 2) or die;
		print $s "mntr"; local $/; my $r = <$s>;
		print $1 if $r =~ /^\Q$ARGV[1]\E\t(\d+)/m;' "$zk_port" "$1"
}

# pgbench_run PORT CLIENTS SQL: "cycles N rate R" over SECONDS_EACH
pgbench_run() {
	local f="$work/script_$RANDOM.sql"
	printf '%s\n' "$3" >"$f"
	"$bin/pgbench" -n -M prepared -c "$2" -j "$(($2 < 4 ? $2 : 4))" -T "$SECONDS_EACH" -f "$f" \
		-h "$work" -p "$1" postgres 2>/dev/null |
		sed -n -e 's/^number of transactions actually processed: \([0-9]*\).*/cycles \1/p' \
			-e 's/^tps = \([0-9]*\)\.[0-9]* (without initial connection time)/rate \1/p' | paste -sd ' '
}
pgbench_tps() { pgbench_run "$@" | field rate; }
floor_rate() { "$work/floor" "$zk_hosts" "$1" "$2" ${3:-} | field cycles_per_s; }

# Where the CPU goes: ZooKeeper, cluster A's worker, A's backends (the
# postmaster's reaped children), the client (pgbench or floor), all in clock
# ticks, and the machine's idle share.
clk=$(getconf CLK_TCK)
zk_pid=$(cat "$work/zk/zk.pid")
pm_a=$(head -1 "$work/pg_A/postmaster.pid")
worker_a=$(psql_a -c 'SELECT worker_pid FROM zk_lock_status()')
ticks() { awk -v a="$2" -v b="$3" '{ print $a + $b }' "/proc/$1/stat"; }
snap() {
	echo "$(ticks "$zk_pid" 14 15) $(ticks "$worker_a" 14 15) $(ticks "$pm_a" 16 17)" \
		"$(awk '/^cpu / { print $5, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)"
}
# cpu_run CMD...: CMD prints "cycles N" and a rate; prints "rate R" and the
# microseconds of CPU per cycle: zk worker backends client total, then idle %
kids() { wc -w <"/proc/$pm_a/task/$pm_a/children"; }
cpu_run() {
	local s0 s1 out k0 i
	k0=$(kids)
	s0=$(snap)
	out=$( ("$@"; me=$BASHPID; echo "client $(ticks "$me" 16 17)") | paste -sd ' ')
	# backends count once the postmaster has reaped them
	for ((i = 0; i < 50 && $(kids) > k0; i++)); do sleep 0.1; done
	s1=$(snap)
	awk -v s0="$s0" -v s1="$s1" -v out="$out" -v clk="$clk" 'BEGIN {
		split(s0, a, " "); split(s1, b, " "); n = split(out, o, " ")
		for (i = 1; i < n; i++) v[o[i]] = o[i + 1]
		rate = ("rate" in v) ? v["rate"] : v["cycles_per_s"]
		us = 1e6 / clk / v["cycles"]
		zk = (b[1] - a[1]) * us; w = (b[2] - a[2]) * us; be = (b[3] - a[3]) * us; cl = v["client"] * us
		printf "rate %d zk %.0f worker %.0f backends %.0f client %.0f total %.0f idle %.0f\n",
			rate, zk, w, be, cl, zk + w + be + cl, 100 * (b[4] - a[4]) / (b[5] - a[5])
	}'
}
curator_rate() {	# curator_rate THREADS KIND [ARG CLIENTS]
	java -cp "$work/classes:${jars#:}" CuratorBench "$zk_hosts" "$1" "$2" "$SECONDS_EACH" ${3:-} ${4:-} |
		field cycles_per_s
}
# both_rate CLIENTS_EACH SQL: the same load on cluster A and B at once, rates summed
both_rate() {
	local a
	a=$(mktemp)
	pgbench_tps "$port_a" "$1" "$2" >"$a" &
	local pid=$!
	local b
	b=$(pgbench_tps "$port_b" "$1" "$2")
	wait "$pid"
	echo $(($(cat "$a") + b))
	rm -f "$a"
}
zk_cycle() { printf 'BEGIN;\nSELECT zk_lock(%s);\nCOMMIT;' "$1"; }
# set_both NAME VALUE: a reloadable zk_lock setting on both clusters (DEFAULT: back to it)
set_both() {
	local p v
	v=$([ "$2" = DEFAULT ] && echo DEFAULT || echo "'$2'")
	for p in "$port_a" "$port_b"; do
		"$bin/psql" -X -q -At -h "$work" -p "$p" -d postgres -v ON_ERROR_STOP=1 \
			-c "ALTER SYSTEM SET zk_lock.$1 = $v" -c 'SELECT pg_reload_conf()' >/dev/null
	done
	sleep 1	# the workers read it on their next turn
}
core_cycle='BEGIN;
SELECT pg_advisory_xact_lock(:client_id);
COMMIT;'
# core on one key, as S3 (exclusive) and S3r (shared) use one
core_one='BEGIN;
SELECT pg_advisory_xact_lock(42);
COMMIT;'
core_one_shared='BEGIN;
SELECT pg_advisory_xact_lock_shared(42);
COMMIT;'
# zk_lock's cycle with a latch sleep of S seconds where it waits for
# ZooKeeper: what the SQL and one wait cost a backend and pgbench, with no
# lock at all.  Per cycle they cost more the slower the cycles come (fewer
# wake-ups find work waiting), so S is chosen to run at S2's rate.
sleep_cycle() { printf 'BEGIN;\nSELECT pg_sleep(%s);\nCOMMIT;' "$1"; }
worker_pid() { psql_a -c 'SELECT worker_pid FROM zk_lock_status()'; }
# the worker's own memory (kB): private pages (RSS also counts the shared
# memory it touches).  These grow once while the allocator's heap reaches
# its high-water mark, and with every code page the worker runs first.
worker_private() {
	awk '/^Private_(Clean|Dirty):/ { kb += $2 } END { print kb }' "/proc/$(worker_pid)/smaps_rollup"
}
# the bytes the worker has allocated (PostgreSQL's contexts and the client
# library alike), which a leak grows: glibc's malloc_stats(), called through
# gdb while the worker is idle between load periods, prints them to the
# worker's stderr, the server log.  "n/a" where gdb may not attach.
worker_in_use() {
	local log="$work/pg_A/log" n
	n=$(wc -l <"$log")
	timeout 60 gdb -p "$(worker_pid)" -batch -ex 'call (void) malloc_stats()' >/dev/null 2>&1 || true
	tail -n +"$((n + 1))" "$log" | awk '/^Total \(incl\. mmap\):/ { t = 1 }
		t && /^in use bytes/ { print $NF; found = 1; exit } END { if (!found) print "n/a" }'
}

echo "measuring (about $((SECONDS_EACH * 65 / 60 + 1)) minutes) ..."
# rows measure zk_lock.linger off unless they say so (comparable across defaults)
set_both linger 0

# the references
floor_8=$(floor_rate 8000 8)
floor_32=$(floor_rate 12000 32)
# (core with 1 client, and 8 on one key, come with the rows they are held
# against: the machine's speed drifts from minute to minute)
core_8=$(pgbench_tps "$port_a" 8 "$core_cycle")
cpu_core=$(cpu_run pgbench_run "$port_a" 32 "$core_cycle")
core_32=$(echo "$cpu_core" | field rate)
curator_8d=$(curator_rate 8 distinct)
curator_8same=$(curator_rate 8 same)

# S5 from the server's own packet counter, with nothing else talking to it
s5_measure() {
	local pkts0 grants0 pkts1 grants1
	pkts0=$(mntr zk_packets_received)
	grants0=$(psql_a -c 'SELECT grants FROM zk_lock_status()')
	SECONDS_EACH=$((SECONDS_EACH / 2)) pgbench_tps "$port_a" 1 "$(zk_cycle "'$1'")" >/dev/null
	pkts1=$(mntr zk_packets_received)
	grants1=$(psql_a -c 'SELECT grants FROM zk_lock_status()')
	awk -v p=$((pkts1 - pkts0)) -v g=$((grants1 - grants0)) 'BEGIN { printf "%.2f", p / g }'
}
s5=$(s5_measure s5)

# What zk_lock.linger costs and saves (the default is 100ms): S5 with it, and S10,
# another cluster's first grant on a key A has just released (a fresh key each
# time, B's BEGIN to its grant, a client round trip included), while A's node
# lingers and with linger off.  (Its cost in ZooKeeper's nodes needs no run: one
# node per key the cluster used within the last linger period.)
s10_measure() {	# prints: p50 p99 (ms) of B's grant after A's release, 200 fresh keys
	local i
	for i in $(seq 1 200); do
		psql_a -c "BEGIN; SELECT zk_lock('s10-$1-$i'); COMMIT" >/dev/null
		"$bin/psql" -X -q -At -h "$work" -p "$port_b" -d postgres -v ON_ERROR_STOP=1 \
			-c "BEGIN" -c "SELECT round(1000 * extract(epoch FROM clock_timestamp() - now())::numeric, 3)
			    FROM (SELECT zk_lock('s10-$1-$i') OFFSET 0) l" -c "COMMIT"
	done | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f %.2f\n", v[int(NR / 2) + 1], v[int(NR * 0.99)] }'
}
read -r s10_off_p50 s10_off_p99 < <(s10_measure off)
set_both linger 100ms
s5_linger=$(s5_measure s5l)
read -r s10_p50 s10_p99 < <(s10_measure on)
set_both linger 0

# S1 and its references are bound by ZooKeeper's fsync latency, which drifts
# from minute to minute: interleave three short rounds and take medians.
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
s1_r=() curator_r=() floor_r=()
for _ in 1 2 3; do
	s1_r+=("$(SECONDS_EACH=$((SECONDS_EACH / 2)) pgbench_tps "$port_a" 1 "$(zk_cycle "'s1'")")")
	curator_r+=("$(SECONDS_EACH=$((SECONDS_EACH / 2)) curator_rate 1 same)")
	f=$("$work/floor" "$zk_hosts" 800 1)
	floor_r+=("$(echo "$f" | field cycles_per_s)")
done
s1=$(median "${s1_r[@]}")
curator_1=$(median "${curator_r[@]}")
floor_serial=$(median "${floor_r[@]}")
# S1 again with zk_lock.linger: the released node stays for the next cycle.
# It and S3, S3r with linger are held against core's lock in the same load:
# each pair in five interleaved rounds, which goes first taking turns,
# medians (the CPU accounting of one client is the last round's).
half() { SECONDS_EACH=$((SECONDS_EACH / 2)) "$@"; }
warm() { SECONDS_EACH=2 pgbench_tps "$@" >/dev/null; }	# a first round after a reload is slow
set_both linger 100ms
warm "$port_a" 1 "$(zk_cycle "'s1l'")"
s1l_r=() core1_r=()
for r in 1 2 3 4 5; do
	if [ "$r" = 5 ]; then
		cpu_s1l=$(half cpu_run pgbench_run "$port_a" 1 "$(zk_cycle "'s1l'")")
		cpu_core1=$(half cpu_run pgbench_run "$port_a" 1 "$core_cycle")
		s1l_r+=("$(echo "$cpu_s1l" | field rate)")
		core1_r+=("$(echo "$cpu_core1" | field rate)")
	elif [ $((r % 2)) = 1 ]; then
		s1l_r+=("$(half pgbench_tps "$port_a" 1 "$(zk_cycle "'s1l'")")")
		core1_r+=("$(half pgbench_tps "$port_a" 1 "$core_cycle")")
	else
		core1_r+=("$(half pgbench_tps "$port_a" 1 "$core_cycle")")
		s1l_r+=("$(half pgbench_tps "$port_a" 1 "$(zk_cycle "'s1l'")")")
	fi
done
s1_linger=$(median "${s1l_r[@]}")
core_1=$(median "${core1_r[@]}")
set_both linger 0
s2_8=$(pgbench_tps "$port_a" 8 "$(zk_cycle ':client_id::bigint')")
# S2 and its references, likewise in three interleaved rounds (the CPU
# accounting is the last round's)
s2_r=() floor_batched_r=() curator_32_r=()
for _ in 1 2 3; do
	cpu_floor=$(cpu_run "$work/floor" "$zk_hosts" 24000 32 8)
	floor_batched_r+=("$(echo "$cpu_floor" | field rate)")
	cpu_s2=$(cpu_run pgbench_run "$port_a" 32 "$(zk_cycle ':client_id::bigint')")
	s2_r+=("$(echo "$cpu_s2" | field rate)")
	curator_32_r+=("$(curator_rate 32 distinct)")
done
s2=$(median "${s2_r[@]}")
# 32 clients sleeping S each, plus their SQL, come at about S2's rate when
# S is 0.85 of a client's S2 cycle
sleep_s=$(awk -v r="$s2" 'BEGIN { printf "%.4f", 0.85 * 32 / r }')
cpu_sleep=$(cpu_run pgbench_run "$port_a" 32 "$(sleep_cycle "$sleep_s")")
floor_batched=$(median "${floor_batched_r[@]}")
curator_32=$(median "${curator_32_r[@]}")
# pair_rounds A B SQL_A SQL_B: 8 clients, five interleaved rounds of each, which
# goes first taking turns (this machine's speed drifts by a third within a
# minute), rates into arrays A and B
pair_rounds() {
	local -n ra=$1 rb=$2
	local r
	for r in 1 2 3 4 5; do
		if [ $((r % 2)) = 1 ]; then
			ra+=("$(half pgbench_tps "$port_a" 8 "$3")")
			rb+=("$(half pgbench_tps "$port_a" 8 "$4")")
		else
			rb+=("$(half pgbench_tps "$port_a" 8 "$4")")
			ra+=("$(half pgbench_tps "$port_a" 8 "$3")")
		fi
	done
}
s3_r=() core8one_r=()
pair_rounds s3_r core8one_r "$(zk_cycle "'s3'")" "$core_one"
s3=$(median "${s3_r[@]}")
core_8one=$(median "${core8one_r[@]}")
# S3r: the same with readers, who join one local reader's node (hand-over on)
# or each make and delete a node of their own (off)
read_cycle() { printf 'BEGIN;\nSELECT zk_lock_shared(%s);\nCOMMIT;' "$1"; }
s3r=$(pgbench_tps "$port_a" 8 "$(read_cycle "'s3r'")")
# and with zk_lock.linger: the last reader's node stays for the next one
set_both linger 100ms
warm "$port_a" 8 "$(read_cycle "'s3rl'")"
s3rl_r=() core8shared_r=()
pair_rounds s3rl_r core8shared_r "$(read_cycle "'s3rl'")" "$core_one_shared"
s3r_linger=$(median "${s3rl_r[@]}")
core_8shared=$(median "${core8shared_r[@]}")
set_both linger 0
set_both local_handover off
s3r_off=$(pgbench_tps "$port_a" 8 "$(read_cycle "'s3r'")")
set_both local_handover DEFAULT

# S4: two clusters hand one key back and forth; each grant and release is
# logged with the clock both clusters share, and a hand-over is the time
# from one cluster's release to the other's grant.  The grant is logged by
# the statement that took the lock, the release by a trigger inside COMMIT,
# so that no client round trip is counted.  The log is unlogged so that the
# COMMIT waits for no WAL flush: that is the commit's own cost, paid
# before the release, not the hand-over's.  The reference, two write round
# trips (one serial floor cycle) and one read, is measured right before
# and right after, as ZooKeeper's latency drifts.
s4_reference() {
	local w r
	w=$("$work/floor" "$zk_hosts" 400 1 | field mean_latency_ms)
	r=$("$work/floor" "$zk_hosts" 1000 read | field mean_latency_ms)
	echo "$w $r"
}
for p in "$port_a" "$port_b"; do
	"$bin/psql" -X -q -h "$work" -p "$p" -d postgres -v ON_ERROR_STOP=1 <<'SQL'
CREATE UNLOGGED TABLE ho (cluster text, kind text, at timestamptz);
CREATE FUNCTION ho_release() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ho VALUES (NEW.cluster, 'release', clock_timestamp());
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER ho_release AFTER INSERT ON ho DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW WHEN (NEW.kind = 'grant') EXECUTE FUNCTION ho_release();
SQL
done
s4_measure() {	# prints: hand-overs p50 p99
	local p
	for p in "$port_a" "$port_b"; do
		"$bin/psql" -X -q -h "$work" -p "$p" -d postgres -c 'TRUNCATE ho'
	done
	pgbench_tps "$port_a" 1 "$ho_script" >/dev/null &
	local ho_pid=$!
	pgbench_tps "$port_b" 1 "$ho_script" >/dev/null
	wait "$ho_pid"
	rm -f "$work/ho_b"
	"$bin/psql" -X -q -h "$work" -p "$port_b" -d postgres -c "\\copy ho TO '$work/ho_b'"
	psql_a -c "\\copy ho FROM '$work/ho_b'" >/dev/null
	psql_a -F ' ' -c "
	WITH ev AS (SELECT *, lag(kind) OVER w AS pk, lag(cluster) OVER w AS pc, lag(at) OVER w AS pat
	            FROM ho WINDOW w AS (ORDER BY at)),
	     h AS (SELECT 1000 * extract(epoch FROM at - pat) AS ms FROM ev
	           WHERE kind = 'grant' AND pk = 'release' AND pc <> cluster)
	SELECT count(*), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2),
	       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2) FROM h"
}
read -r write_ms0 read_ms0 < <(s4_reference)
ho_script='BEGIN;
INSERT INTO ho SELECT current_setting('"'"'cluster_name'"'"'), '"'"'grant'"'"', clock_timestamp()
	FROM (SELECT zk_lock('"'"'s4'"'"') OFFSET 0) AS l;
COMMIT;'
read -r s4_n s4_p50 s4_p99 < <(s4_measure)
set_both local_handover off
read -r s4_off_n s4_off_p50 s4_off_p99 < <(s4_measure)
set_both local_handover DEFAULT
read -r write_ms1 read_ms1 < <(s4_reference)
read -r write_ms read_ms < <(awk -v w0="$write_ms0" -v w1="$write_ms1" -v r0="$read_ms0" -v r1="$read_ms1" \
	'BEGIN { printf "%.3f %.3f\n", (w0 + w1) / 2, (r0 + r1) / 2 }')

# S7: 8 clients of A and 1 of B on one key, local hand-over on and off: A's
# rate, and B's cycles (its wait, mostly) from pgbench's per-transaction log
s7_measure() {	# prints: A's rate, B's p99 ms, B's cycles
	local prefix="$work/s7_$1" a rate f="$work/s7_b.sql"
	a=$(mktemp)
	pgbench_tps "$port_a" 8 "$(zk_cycle "'s7'")" >"$a" &
	local pid=$!
	printf '%s\n' "$(zk_cycle "'s7'")" >"$f"
	"$bin/pgbench" -n -M prepared -c 1 -T "$SECONDS_EACH" -f "$f" -l --log-prefix="$prefix" \
		-h "$work" -p "$port_b" postgres >/dev/null 2>&1
	wait "$pid"
	rate=$(cat "$a")
	rm -f "$a"
	# pgbench -l: client, transaction, latency (us), ...
	cat "$prefix".* | awk '{ print $3 / 1000 }' | sort -n |
		awk -v rate="$rate" '{ v[NR] = $1 } END { i = int(NR * 0.99 + 0.999); if (i < 1) i = 1
			printf "%s %.2f %d\n", rate, v[i], NR }'
}
read -r s7_a s7_b99 s7_bn < <(s7_measure on)
set_both local_handover off
read -r s7_off_a s7_off_b99 s7_off_bn < <(s7_measure off)
set_both local_handover DEFAULT

# S8: a counting semaphore of 3 on one key, 8 clients over two clusters (4
# each), against Curator's InterProcessSemaphoreV2 with 3 leases, 8 threads
# over two clients (sessions).
s8=$(both_rate 4 'BEGIN;
SELECT zk_semaphore('"'"'s8'"'"', 3);
COMMIT;')
curator_sem=$(curator_rate 8 semaphore 3 2)
# S9: multi-key locks, two random keys of 8 each cycle, 8 clients over two
# clusters, keys listed in random order (one multi: no deadlock), against
# Curator's InterProcessMultiLock of the same two paths, listed sorted (it
# takes them one by one, so any other order could deadlock).
s9_cycle='\set k1 random(1, 8)
\set k2 (:k1 + random(0, 6)) % 8 + 1
BEGIN;
SELECT zk_lock(array[:k1, :k2]::bigint[]);
COMMIT;'
s9=$(both_rate 4 "$s9_cycle")
curator_multi=$(curator_rate 8 multi 8 2)

# S6: the worker's memory across a long run: periods of the S2 load until
# the worker has granted a million locks since the server started (at most
# 40 periods), once warmed up by the above.  A leak grows in every period;
# the allocator reaching its high-water mark grows once.
# gdb's first attach dirties a few pages of its own in the worker: before
# the baseline, so that the series shows the worker's growth only.
grants() { psql_a -c 'SELECT grants FROM zk_lock_status()'; }
worker_in_use >/dev/null
mem_series=("$(worker_private)") alloc_series=("$(worker_in_use)")
cycles_before=$(grants)
for ((p = 0; p < 40 && $(grants) < S6_CYCLES; p++)); do
	pgbench_tps "$port_a" 32 "$(zk_cycle ':client_id::bigint')" >/dev/null
	mem_series+=("$(worker_private)")
	alloc_series+=("$(worker_in_use)")
done
mid=$((${#mem_series[@]} / 2))
mem_before=${mem_series[0]} mem_after=${mem_series[-1]} mem_mid=${mem_series[$mid]}
alloc_before=${alloc_series[0]} alloc_after=${alloc_series[-1]} alloc_mid=${alloc_series[$mid]}
cycles_total=$(grants)
cycles=$((cycles_total - cycles_before))
slot_bytes=$(psql_a -c "SELECT round(size / current_setting('zk_lock.max_locks')::numeric)
	FROM pg_shmem_allocations WHERE name = 'zk_lock'")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
meets() { awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t) ? "yes" : "NO" }'; }
row() { printf '%-44s %10s  %-30s %7s  %-8s %s\n' "$@"; }

echo
row "scenario (cycles/s unless stated)" "zk_lock" "reference (same run)" "ratio" "target" "met"
row "S1 1 client, 1 key (median of 3)" "$s1" "floor serial $floor_serial" "$(ratio "$s1" "$floor_serial")" ">= 1.0" "$(meets "$(ratio "$s1" "$floor_serial")" 1.0)"
row "" "" "Curator 1 thread $curator_1" "$(ratio "$s1" "$curator_1")" ">= 1.8" "$(meets "$(ratio "$s1" "$curator_1")" 1.8)"
row "S2 32 clients, distinct keys (median of 3)" "$s2" "batched floor $floor_batched" "$(ratio "$s2" "$floor_batched")" ">= 0.7" "$(meets "$(ratio "$s2" "$floor_batched")" 0.7)"
row "" "" "Curator 32 threads $curator_32" "$(ratio "$s2" "$curator_32")" ">= 2" "$(meets "$(ratio "$s2" "$curator_32")" 2)"
row "S1 with zk_lock.linger = 100ms" "$s1_linger" "Curator 1 thread $curator_1" "$(ratio "$s1_linger" "$curator_1")" ">= 3" "$(meets "$(ratio "$s1_linger" "$curator_1")" 3)"
row "" "" "core 1 client $core_1" "$(ratio "$s1_linger" "$core_1")" ">= 1.0" "$(meets "$(ratio "$s1_linger" "$core_1")" 1.0)"
row "S3 8 clients, 1 key" "$s3" "Curator 8 on 1 key $curator_8same" "$(ratio "$s3" "$curator_8same")" ">= 5" "$(meets "$(ratio "$s3" "$curator_8same")" 5)"
row "" "" "core 8 clients, 1 key $core_8one" "$(ratio "$s3" "$core_8one")" ">= 1.0" "$(meets "$(ratio "$s3" "$core_8one")" 1.0)"
row "S3r 8 readers, 1 key (shared)" "$s3r" "local hand-over off $s3r_off" "$(ratio "$s3r" "$s3r_off")" "" ""
row "" "" "core 8 readers, 1 key $core_8shared" "$(ratio "$s3r" "$core_8shared")" "" ""
row "   the same with zk_lock.linger = 100ms" "$s3r_linger" "core 8 readers, 1 key $core_8shared" "$(ratio "$s3r_linger" "$core_8shared")" ">= 1.0" "$(meets "$(ratio "$s3r_linger" "$core_8shared")" 1.0)"
row "" "" "local hand-over off $s3r_off" "$(ratio "$s3r_linger" "$s3r_off")" ">= 3" "$(meets "$(ratio "$s3r_linger" "$s3r_off")" 3)"
s4_ref=$(awk -v f="$write_ms" -v r="$read_ms" 'BEGIN { printf "%.2f", f + r }')
row "S4 hand-over A->B p50 / p99 (ms, n=$s4_n)" "$s4_p50 / $s4_p99" "2 writes + 1 read $s4_ref ms" "$(ratio "$s4_p50" "$s4_ref")" "<= 1.0" "$(awk -v r="$(ratio "$s4_p50" "$s4_ref")" 'BEGIN { print (r <= 1.0) ? "yes" : "NO" }')"
row "" "" "local hand-over off $s4_off_p50 / $s4_off_p99" "$(ratio "$s4_p50" "$s4_off_p50")" "<= 1.2" "$(awk -v r="$(ratio "$s4_p50" "$s4_off_p50")" 'BEGIN { print (r <= 1.2) ? "yes" : "NO" }')"
row "S7 A: 8 clients + B: 1, 1 key: A's rate" "$s7_a" "local hand-over off $s7_off_a" "$(ratio "$s7_a" "$s7_off_a")" ">= 3" "$(meets "$(ratio "$s7_a" "$s7_off_a")" 3)"
row "   B's p99 cycle (ms, n=$s7_bn / $s7_off_bn)" "$s7_b99" "local hand-over off $s7_off_b99" "$(ratio "$s7_b99" "$s7_off_b99")" "<= 2" "$(awk -v r="$(ratio "$s7_b99" "$s7_off_b99")" 'BEGIN { print (r <= 2) ? "yes" : "NO" }')"
row "S5 ZooKeeper requests per cycle (S1)" "$s5" "" "" "<= 3" "$(awk -v r="$s5" 'BEGIN { print (r <= 3) ? "yes" : "NO" }')"
row "   the same with zk_lock.linger = 100ms" "$s5_linger" "" "" "" ""
row "S10 B's grant, A's node lingering (p50/p99 ms)" "$s10_p50 / $s10_p99" "A's linger off $s10_off_p50 / $s10_off_p99" "$(ratio "$s10_p50" "$s10_off_p50")" "" ""
row "S8 semaphore of 3, 8 clients, 2 clusters" "$s8" "Curator SemaphoreV2 $curator_sem" "$(ratio "$s8" "$curator_sem")" "" ""
row "S9 2 of 8 keys at once, 8 clients, 2 clusters" "$s9" "Curator MultiLock $curator_multi" "$(ratio "$s9" "$curator_multi")" "" ""
growth() { awk -v a="$1" -v b="$2" -v u="$3" 'BEGIN {
	if (a !~ /^[0-9]+$/ || b !~ /^[0-9]+$/) print "n/a"; else if (b <= a) print "yes"; else print "+" b - a " " u }'; }
row "S6 worker allocated B, $cycles_total cycles in all" "$alloc_before -> $alloc_after" "shared memory/slot $slot_bytes B" "" "no growth" "$(growth "$alloc_before" "$alloc_after" B)"
row "   the same, second half of the run" "$alloc_mid -> $alloc_after" "" "" "no growth" "$(growth "$alloc_mid" "$alloc_after" B)"
row "S6 worker private kB (RSS less shared)" "$mem_before -> $mem_after" "" "" "" "$(growth "$mem_before" "$mem_after" kB)"
row "   the same, second half of the run" "$mem_mid -> $mem_after" "" "" "" "$(growth "$mem_mid" "$mem_after" kB)"
row "core pg_advisory_xact_lock 1 / 32 clients" "" "$core_1 / $core_32" "" "" ""
echo
cpu_row() { printf '%-44s %9s %7s %9s %7s %6s %5s\n' "$@"; }
cpu_line() {
	local l=$2
	cpu_row "$1" "$(echo "$l" | field zk)" "$(echo "$l" | field worker)" "$(echo "$l" | field backends)" \
		"$(echo "$l" | field client)" "$(echo "$l" | field total)" "$(echo "$l" | field idle)%"
}
echo "CPU per lock cycle, 32 in flight unless said (microseconds; $(nproc) cores):"
cpu_row "" "ZooKeeper" "worker" "backends" "client" "total" "idle"
cpu_line "batched floor (client: floor)" "$cpu_floor"
cpu_line "zk_lock S2 (client: pgbench)" "$cpu_s2"
cpu_line "core advisory locks (client: pgbench)" "$cpu_core"
cpu_line "zk_lock S1 with linger, 1 client (pgbench)" "$cpu_s1l"
cpu_line "core advisory locks, 1 client (pgbench)" "$cpu_core1"
cpu_line "SQL + latch sleep, no lock, $(echo "$cpu_sleep" | field rate)/s (pgbench)" "$cpu_sleep"
# S2's ceiling on this machine: the cores, as busy as S2 keeps them, over the
# least a cycle can cost here: ZooKeeper's and the client library's share at
# the lower of zk_lock's and the floor's, plus the same SQL cycle with a latch
# sleep in place of the lock (a backend must wait for ZooKeeper's answer)
read -r s2_ceiling s2_ceiling_us < <(awk -v cores="$(nproc)" \
	-v zk="$(echo "$cpu_s2" | field zk)" -v fzk="$(echo "$cpu_floor" | field zk)" \
	-v w="$(echo "$cpu_s2" | field worker)" -v fc="$(echo "$cpu_floor" | field client)" \
	-v slp="$(echo "$cpu_sleep" | field total)" \
	-v idle="$(echo "$cpu_s2" | field idle)" 'BEGIN {
		us = (zk < fzk ? zk : fzk) + (w < fc ? w : fc) + slp
		printf "%.0f %.0f\n", cores * 1e6 * (1 - idle / 100) / us, us }')
echo "S2 ceiling here: $(nproc) cores at S2's load / $s2_ceiling_us us (ZooKeeper + client library at the"
echo "lower of zk_lock's and the floor's, the SQL cycle with a latch sleep at S2's rate) = $s2_ceiling/s," \
	"$(ratio "$s2_ceiling" "$floor_batched") x the batched floor; zk_lock reached $(ratio "$s2" "$s2_ceiling") of it"
echo "zk_lock's own CPU per S2 cycle: worker $(echo "$cpu_s2" | field worker) us; above that SQL cycle," \
	"backends $(awk -v a="$(echo "$cpu_s2" | field backends)" -v b="$(echo "$cpu_sleep" | field backends)" 'BEGIN { printf "%+d", a - b }') us," \
	"pgbench $(awk -v a="$(echo "$cpu_s2" | field client)" -v b="$(echo "$cpu_sleep" | field client)" 'BEGIN { printf "%+d", a - b }') us"
# S1 cannot pass the serial floor without holding a release back to share
# a write with the next lock: what the Curator target asks of the floor
echo "S1 at the serial floor would be $(ratio "$floor_serial" "$curator_1") x Curator 1 thread"
echo "S1 rounds (zk_lock / Curator / floor): ${s1_r[*]} / ${curator_r[*]} / ${floor_r[*]}"
echo "S1 with linger rounds (zk_lock / core 1 client): ${s1l_r[*]} / ${core1_r[*]}"
echo "S3 rounds (zk_lock / core 8 clients, 1 key): ${s3_r[*]} / ${core8one_r[*]}"
echo "S3r with linger rounds (zk_lock / core 8 readers): ${s3rl_r[*]} / ${core8shared_r[*]}"
echo "S2 rounds (zk_lock / batched floor / Curator 32): ${s2_r[*]} / ${floor_batched_r[*]} / ${curator_32_r[*]}"
echo "S6 after each period, worker allocated B: ${alloc_series[*]}"
echo "   and private kB: ${mem_series[*]}"
echo "S4's reference: one serial floor cycle (create + getChildren pipelined, then delete:"
echo "two write round trips, $write_ms ms) plus one read round trip ($read_ms ms, serial getChildren),"
echo "means of the measurements right before and right after S4."

cat >"$work/throughput.dat" <<DAT
# clients zk_lock floor curator core floor-batched zk_lock-one-key curator-one-key
1 $s1 $floor_serial $curator_1 $core_1 ? $s1_linger $curator_1
8 $s2_8 $floor_8 $curator_8d $core_8 ? $s3 $curator_8same
32 $s2 $floor_32 $curator_32 $core_32 $floor_batched ? ?
DAT
gnuplot <<PLOT
set terminal pngcairo size 800,500
set output '$work/bench/throughput.png'
set title 'Lock cycles per second against concurrency (one cluster, one ZooKeeper)'
set xlabel 'clients (threads, cycles in flight)'
set ylabel 'cycles/s'
set logscale xy
set datafile missing '?'
set xtics (1, 8, 32)
set key right bottom
set grid
plot '$work/throughput.dat' using 1:2 with linespoints lw 2 title 'zk\\_lock, distinct keys', \
     '' using 1:3 with linespoints title 'ZooKeeper floor (one session)', \
     '' using 1:4 with linespoints title 'Curator InterProcessMutex, distinct keys (one client)', \
     '' using 1:5 with linespoints title 'pg\\_advisory\\_xact\\_lock (core, distinct keys)', \
     '' using 1:6 with points pt 7 title 'ZooKeeper floor, creates and deletes in multis of 8', \
     '' using 1:7 with linespoints lw 2 dt 2 title 'zk\\_lock, one key: local hand-over (1 client: linger)', \
     '' using 1:8 with linespoints dt 2 title 'Curator InterProcessMutex, one key'
PLOT
echo "chart: bench/throughput.png"
