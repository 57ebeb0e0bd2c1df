#!/usr/bin/env bash
# Start or stop a standalone ZooKeeper server from Debian's zookeeper package,
# listening on 127.0.0.1 only, with all its files under one directory.
#
#   test/zk.sh start DIR [PORT]   start; prints the client port; waits until it serves
#   test/zk.sh stop DIR           stop the server started in DIR (by its PID)
#   test/zk.sh port DIR           print the client port of the server in DIR
set -euo pipefail

cmd=${1:?usage: zk.sh start|stop|port DIR [PORT]}
dir=${2:?usage: zk.sh start|stop|port DIR [PORT]}

free_port() {
	perl -MIO::Socket::INET -e \
		'my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Listen => 1) or die; print $s->sockport, "\n";'
}

four_letter() {  # four_letter PORT WORD -> server's answer
	# bounded: a server still starting may accept and never answer
	perl -MIO::Socket::INET -e '
		$SIG{ALRM} = sub { exit 1 }; alarm 3;
		my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0], Timeout => 2) or exit 1;
		print $s $ARGV[1]; local $/; my $r = <$s>; print $r // "";' "$1" "$2" 2>/dev/null || true
}

case "$cmd" in
start)
	port=${3:-$(free_port)}
	mkdir -p "$dir/data"
	cat >"$dir/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
minSessionTimeout=1000
maxSessionTimeout=60000
CFG
	echo "$port" >"$dir/port"
	# Container nodes left empty vanish within a second rather than a minute.
	nohup java -Xmx256m -Dznode.container.checkIntervalMs=1000 \
		-Dzookeeper.admin.enableServer=false \
		-cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
		>"$dir/zookeeper.log" 2>&1 </dev/null &
	echo $! >"$dir/zk.pid"
	for _ in $(seq 1 150); do
		if [ "$(four_letter "$port" ruok)" = imok ]; then
			echo "$port"
			exit 0
		fi
		if ! kill -0 "$(cat "$dir/zk.pid")" 2>/dev/null; then
			echo "zookeeper exited; log follows" >&2
			tail -n 30 "$dir/zookeeper.log" >&2
			exit 1
		fi
		sleep 0.2
	done
	echo "zookeeper did not start within 30 s" >&2
	"$0" stop "$dir" || true
	exit 1
	;;
stop)
	[ -f "$dir/zk.pid" ] || exit 0
	pid=$(cat "$dir/zk.pid")
	if kill "$pid" 2>/dev/null; then
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$dir/zk.pid"
	;;
port)
	cat "$dir/port"
	;;
*)
	echo "usage: zk.sh start|stop|port DIR [PORT]" >&2
	exit 2
	;;
esac
