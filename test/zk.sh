#!/usr/bin/env bash
# Start or stop ZooKeeper servers from Debian's zookeeper package, listening
# on 127.0.0.1 only, with all their files under one directory.
#
#   test/zk.sh start DIR [PORT]   standalone server; prints its client port once it serves
#   test/zk.sh ensemble DIR N     N-member ensemble in DIR/1..N; prints the client
#                                 ports, comma-separated, once every member serves
#   test/zk.sh prepare DIR N      configure such an ensemble without starting it;
#                                 prints "member client quorum election" per member,
#                                 so a test can route a member's view of the others
#                                 through proxies (edit DIR/I/zoo.cfg) before
#   test/zk.sh start-all DIR      starting every member configured under DIR
#                                 (prints the client ports, as ensemble does)
# ZK_SYNC_LIMIT (ticks of 500 ms, default 5) sets how long a follower cut off
# from the leader goes on serving its clients.
#   test/zk.sh restart DIR        start a stopped server (or member) again
#   test/zk.sh launch DIR         the same without waiting for it to serve
#   test/zk.sh stop DIR           stop the server in DIR, or every member under it (by PID)
#   test/zk.sh port DIR           print the client port of the server in DIR
#   test/zk.sh mode DIR           print standalone, leader or follower ("" if not serving)
set -euo pipefail

cmd=${1:?usage: zk.sh start|ensemble|prepare|start-all|restart|launch|stop|port|mode DIR ...}
dir=${2:?usage: zk.sh start|ensemble|prepare|start-all|restart|launch|stop|port|mode DIR ...}

free_port() {
	perl "$(dirname "${BASH_SOURCE[0]}")/free_port.pl"
}

four_letter() {  # four_letter PORT WORD -> server's answer
	# bounded: a server still starting may accept and never answer
	perl -MIO::Socket::INET -e '
		$SIG{ALRM} = sub { exit 1 }; alarm 3;
		my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0], Timeout => 2) or exit 1;
		print $s $ARGV[1]; local $/; my $r = <$s>; print $r // "";' "$1" "$2" 2>/dev/null || true
}

mode() {  # mode DIR -> what `srvr` says the server is; empty while it does not serve
	four_letter "$(cat "$1/port")" srvr | sed -n 's/^Mode: //p'
}

write_cfg() {  # write_cfg DIR PORT [server.N lines]
	mkdir -p "$1/data"
	cat >"$1/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=${ZK_SYNC_LIMIT:-5}
dataDir=$1/data
clientPort=$2
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
minSessionTimeout=1000
maxSessionTimeout=60000
${3:-}
CFG
	echo "$2" >"$1/port"
}

launch() {  # launch DIR: start the server configured in DIR, in the background
	# Container nodes left empty vanish within a second rather than a minute.
	nohup java -Xmx256m -Dznode.container.checkIntervalMs=1000 \
		-Dzookeeper.admin.enableServer=false \
		-cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$1/zoo.cfg" \
		>>"$1/zookeeper.log" 2>&1 </dev/null &
	echo $! >"$1/zk.pid"
}

wait_serving() {  # wait_serving DIR...: until each serves clients (bounded: 60 s)
	local d
	for _ in $(seq 1 300); do
		local all=1
		for d in "$@"; do
			if ! kill -0 "$(cat "$d/zk.pid")" 2>/dev/null; then
				echo "zookeeper in $d exited; log follows" >&2
				tail -n 30 "$d/zookeeper.log" >&2
				return 1
			fi
			[ -n "$(mode "$d")" ] || all=0
		done
		[ "$all" = 1 ] && return 0
		sleep 0.2
	done
	echo "zookeeper did not start serving within 60 s" >&2
	return 1
}

stop_one() {  # stop_one DIR
	[ -f "$1/zk.pid" ] || return 0
	local pid
	pid=$(cat "$1/zk.pid")
	if kill "$pid" 2>/dev/null; then
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$1/zk.pid"
}

prepare() {  # prepare DIR N: members' configs; prints "i client quorum election" each
	local base=$1 n=$2 servers="" i
	local -a q=() e=()
	for i in $(seq 1 "$n"); do
		q[i]=$(free_port)
		e[i]=$(free_port)
		servers+="server.$i=127.0.0.1:${q[i]}:${e[i]}"$'\n'
	done
	for i in $(seq 1 "$n"); do
		write_cfg "$base/$i" "$(free_port)" "$servers"
		echo "$i" >"$base/$i/data/myid"
		echo "$i $(cat "$base/$i/port") ${q[i]} ${e[i]}"
	done
}

start_all() {  # start_all DIR: launch every member under DIR; prints client ports
	local -a members=() ports=()
	local m
	for m in "$1"/*/; do
		[ -f "$m/zoo.cfg" ] || continue
		members+=("${m%/}")
		ports+=("$(cat "$m/port")")
	done
	for m in "${members[@]}"; do launch "$m"; done
	if ! wait_serving "${members[@]}"; then
		for m in "${members[@]}"; do stop_one "$m"; done
		return 1
	fi
	(IFS=,; echo "${ports[*]}")
}

case "$cmd" in
start)
	write_cfg "$dir" "${3:-$(free_port)}"
	launch "$dir"
	wait_serving "$dir" || { stop_one "$dir"; exit 1; }
	cat "$dir/port"
	;;
ensemble)
	n=${3:?usage: zk.sh ensemble DIR N}
	prepare "$dir" "$n" >/dev/null
	start_all "$dir"
	;;
prepare)
	prepare "$dir" "${3:?usage: zk.sh prepare DIR N}"
	;;
start-all)
	start_all "$dir"
	;;
restart)
	launch "$dir"
	wait_serving "$dir"
	;;
launch)
	launch "$dir"
	;;
stop)
	stop_one "$dir"
	for m in "$dir"/*/; do
		[ -f "$m/zoo.cfg" ] && stop_one "${m%/}"
	done
	exit 0
	;;
port)
	cat "$dir/port"
	;;
mode)
	mode "$dir"
	;;
*)
	echo "usage: zk.sh start|ensemble|prepare|start-all|restart|launch|stop|port|mode DIR ..." >&2
	exit 2
	;;
esac
