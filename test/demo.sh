#!/usr/bin/env bash
# `make demo`: a local ZooKeeper and two PostgreSQL clusters sharing one lock.
# Cluster A takes zk_lock('nightly-settlement') and works for 2 s; cluster B
# asks for the same lock meanwhile, waits, and gets it as A commits.  Then a
# semaphore of 2 across both clusters, and a multi-key lock taken in
# opposite key orders by both.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ "${1:-}" != --inside ]; then
	zkl_prepare >/dev/null
	work=$(zkl_workdir demo)
	status=0
	zkl_as_runner bash "$work/test/demo.sh" --inside "$work" || status=$?
	rm -rf "$work"
	exit "$status"
fi

work=$2
cd "$work"
bin=$("$PG_CONFIG" --bindir)
pids=()
cleanup() {
	zkl_stop_clusters "$work"
	bash test/zk.sh stop "$work/zk"
}
trap cleanup EXIT

echo "starting ZooKeeper on 127.0.0.1 ..."
zk_port=$(bash test/zk.sh start "$work/zk")

port_a=$(zkl_free_port)
port_b=$((port_a + 1))
zkl_start_cluster "$work" A "$port_a" "$zk_port"
zkl_start_cluster "$work" B "$port_b" "$zk_port"
echo "clusters A (port $port_a) and B (port $port_b) up, zk_lock.hosts = 127.0.0.1:$zk_port"

psql_on() { "$bin/psql" -X -q -At -h "$work" -p "$1" -d postgres -v ON_ERROR_STOP=1; }
now="to_char(clock_timestamp(), 'HH24:MI:SS.MS')"

echo
echo "--- one lock, two clusters ---"
psql_on "$port_a" <<SQL &
SELECT $now || '  A: BEGIN; SELECT zk_lock(''nightly-settlement'');';
BEGIN;
SELECT zk_lock('nightly-settlement') \g /dev/null
SELECT $now || '  A: granted; settling for 2 s';
SELECT pg_sleep(2) \g /dev/null
SELECT $now || '  A: COMMIT';
COMMIT;
SELECT extract(epoch FROM clock_timestamp()) \g $work/a_committed
SQL
pids+=($!)
sleep 0.5
psql_on "$port_b" <<SQL &
SELECT $now || '  B: BEGIN; SELECT zk_lock(''nightly-settlement'');  -- waits for A';
BEGIN;
SELECT zk_lock('nightly-settlement') \g /dev/null
SELECT extract(epoch FROM clock_timestamp()) \g $work/b_granted
SELECT $now || '  B: granted; now B runs the settlement';
COMMIT;
SQL
pids+=($!)
sleep 0.5
echo "$(date +%T.%3N)  ZooKeeper: queue of /zk_lock/tnightly-settlement (A holds, B waits):"
perl -MIO::Socket::INET -e '
	alarm 5;
	my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0], Timeout => 2) or die;
	print $s "dump"; local $/; my $r = <$s>;
	print map { "              $_\n" } sort { substr($a, -10) cmp substr($b, -10) } grep { m{^/zk_lock/} && !m{/\.sessions/} } map { s/^\s+//r } split /\n/, $r;' "$zk_port"
wait "${pids[@]}"
awk -v a="$(cat "$work/a_committed")" -v b="$(cat "$work/b_granted")" \
	'BEGIN { printf "hand-over: B was granted %.1f ms after A committed\n", (b - a) * 1000 }'

echo
echo "--- a counting semaphore: at most 2 exports at once, in all clusters ---"
for who in "A $port_a" "B $port_b"; do
	set -- $who
	psql_on "$2" <<SQL &
BEGIN;
SELECT zk_semaphore('nightly-export', 2) \g /dev/null
SELECT $now || '  $1: in (zk_semaphore(''nightly-export'', 2)); exporting for 1.5 s';
SELECT pg_sleep(1.5) \g /dev/null
COMMIT;
SQL
	pids+=($!)
done
sleep 0.5
psql_on "$port_a" 2>&1 <<SQL
BEGIN;
SELECT $now || '  A, a third session: zk_try_semaphore = ' || zk_try_semaphore('nightly-export', 2);
COMMIT;
SELECT $now || '  queue: ' || string_agg(cluster || ' ' || CASE WHEN granted THEN 'in' ELSE 'waiting' END, ', ' ORDER BY position)
  FROM zk_lock_queue('nightly-export') WHERE kind = 'semaphore';
SELECT $now || '  A, a third session asks with holders 3 instead:';
\set ON_ERROR_STOP 0
BEGIN;
SELECT zk_semaphore('nightly-export', 3);
ROLLBACK;
\set ON_ERROR_STOP 1
BEGIN;
SELECT zk_semaphore('nightly-export', 2) \g /dev/null
SELECT $now || '  A, a third session: in with holders 2, once A or B committed';
COMMIT;
SQL
wait "${pids[@]}"

echo
echo "--- a multi-key lock: all keys in one ZooKeeper multi, so no deadlock ---"
for who in "A $port_a array['account:17','account:42']" "B $port_b array['account:42','account:17']"; do
	set -- $who
	shown=${3//\'/\'\'}	# inside a SQL string
	{
		for _ in $(seq 100); do printf 'BEGIN;\nSELECT zk_lock(%s) \\g /dev/null\nCOMMIT;\n' "$3"; done
		cat <<SQL
BEGIN;
SELECT zk_lock($3) \g /dev/null
SELECT $now || '  $1: 100 transactions with zk_lock($shown) done;'
  || ' tokens ' || zk_lock_token('account:17') || ' = ' || zk_lock_token('account:42') || ': one multi';
COMMIT;
SQL
	} | psql_on "$2" &
	pids+=($!)
done
wait "${pids[@]}"

echo
echo "--- cost of one uncontended lock cycle (BEGIN; lock; COMMIT), 500 transactions, 1 client ---"
cat >"$work/zk.sql" <<'SQL'
BEGIN;
SELECT zk_lock('latency');
COMMIT;
SQL
cat >"$work/core.sql" <<'SQL'
BEGIN;
SELECT pg_advisory_xact_lock(42);
COMMIT;
SQL
for s in zk core; do
	# a freshly started ZooKeeper (a JVM) is slow for its first few hundred
	# requests: warm both paths up first, so the figure is the steady cost
	"$bin/pgbench" -n -M prepared -t 300 -f "$work/$s.sql" -h "$work" -p "$port_a" postgres >/dev/null 2>&1
	lat=$("$bin/pgbench" -n -M prepared -t 500 -f "$work/$s.sql" -h "$work" -p "$port_a" postgres 2>/dev/null |
		awk '/latency average/ { print $4 }')
	case $s in
		zk) echo "zk_lock (the key's node lingers here: zk_lock.linger, no round trip): $lat ms per cycle" ;;
		core) echo "pg_advisory_xact_lock (one cluster): $lat ms per cycle" ;;
	esac
done
echo
echo "demo done; stopping the clusters and ZooKeeper"
