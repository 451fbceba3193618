#!/usr/bin/env bash
# A real Redis Cluster on loopback from the machine's own redis-server:
# 3 masters and 3 replicas on ports 7001-7006. The tests that prove the
# inventory, the waitlist and the edge on a cluster (internal/clustertest)
# start it through this script, and REDIS_ADDR="$(scripts/redis-cluster.sh addr)"
# points any process at it.
#
#   scripts/redis-cluster.sh up     start what is missing and create the
#                                   cluster once; does nothing when it is
#                                   up and healthy
#   scripts/redis-cluster.sh down   stop the nodes this script started (by
#                                   their pid files) and remove their dirs
#   scripts/redis-cluster.sh addr   print the comma-separated addresses
#
# A node that died (kill -9 in the failover test) is restarted by `up` with
# its nodes.conf, so it rejoins the cluster as a replica of whoever took its
# slots. Data is not persisted (--save "" --appendonly no): a restarted node
# gets it from its master.
set -euo pipefail

PORTS=(7001 7002 7003 7004 7005 7006)
BASE=/tmp/flashsale-redis-cluster
# Every node's settings (cluster mode, the 2 s cluster-node-timeout, no
# persistence) are in this file, the one docker-compose.yml's nodes use too.
NODE_CONF=$(cd "$(dirname "$0")/.." && pwd)/deploy/redis/node.conf

say() { echo "redis-cluster: $*" >&2; }
die() {
	say "$*"
	exit 1
}

addrs() {
	local out="" p
	for p in "${PORTS[@]}"; do out+="${out:+,}127.0.0.1:$p"; done
	echo "$out"
}

cli() { # port args...
	local p=$1
	shift
	timeout 5 redis-cli -h 127.0.0.1 -p "$p" "$@" 2>/dev/null
}

alive() { [ "$(cli "$1" ping)" = PONG ]; }

# info_field port section field: one value of CLUSTER INFO ("cluster") or
# INFO replication ("replication").
info_field() {
	local cmd=(cluster info)
	[ "$2" = replication ] && cmd=(info replication)
	cli "$1" "${cmd[@]}" | tr -d '\r' | sed -n "s/^$3://p"
}

# pid_of port: the pid in the node's pid file if that process is a
# redis-server still running; nothing otherwise.
pid_of() {
	local f="$BASE/$1/redis.pid" pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "redis-server.*:$1"; then
		echo "$pid"
	fi
}

start_node() {
	local p=$1 dir="$BASE/$1"
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		die "port $p is taken by something that is not a node of this cluster (no pid file of ours); free it or run down"
	fi
	mkdir -p "$dir"
	say "starting node $p"
	# 3-9 closed (below): a daemon must not keep a caller's lock (flock(1)
	# hands its lock on as fd 3) for as long as it lives.
	redis-server "$NODE_CONF" --daemonize yes --bind 127.0.0.1 --port "$p" \
		--dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
	for _ in $(seq 1 50); do
		alive "$p" && return 0
		sleep 0.1
	done
	die "node $p did not answer PING; see $dir/redis.log"
}

# healthy: every node answers, all agree the cluster is ok with every slot
# served, three masters and three replicas are known and not failing, and
# every replica's link to its master is up (a replica still syncing could
# not take over in a failover).
healthy() {
	local p nodes
	for p in "${PORTS[@]}"; do
		alive "$p" || return 1
		[ "$(info_field "$p" cluster cluster_state)" = ok ] || return 1
		[ "$(info_field "$p" cluster cluster_slots_ok)" = 16384 ] || return 1
		[ "$(info_field "$p" cluster cluster_known_nodes)" = ${#PORTS[@]} ] || return 1
		if [ "$(info_field "$p" replication role)" = slave ]; then
			[ "$(info_field "$p" replication master_link_status)" = up ] || return 1
		fi
	done
	nodes=$(cli "${PORTS[0]}" cluster nodes)
	[ "$(grep -v fail <<<"$nodes" | grep -c master)" = 3 ] || return 1
	[ "$(grep -v fail <<<"$nodes" | grep -c slave)" = 3 ] || return 1
}

wait_healthy() {
	for _ in $(seq 1 ${1:-60}); do
		healthy && return 0
		sleep 0.5
	done
	return 1
}

up() {
	command -v redis-server >/dev/null || die "redis-server not installed"
	command -v redis-cli >/dev/null || die "redis-cli not installed"
	[ -r "$NODE_CONF" ] || die "cannot read $NODE_CONF"
	mkdir -p "$BASE"
	# Tests of several packages may call up at the same moment.
	exec 9>"$BASE/.lock"
	flock 9

	if healthy; then
		say "up and healthy: $(addrs)"
		return 0
	fi
	local p
	for p in "${PORTS[@]}"; do
		if ! alive "$p"; then start_node "$p"; fi
	done

	# A fresh set of nodes knows only itself and serves no slot: create the
	# cluster. Nodes restarted from their nodes.conf find each other again.
	local fresh=0
	for p in "${PORTS[@]}"; do
		if [ "$(info_field "$p" cluster cluster_known_nodes)" = 1 ] &&
			[ "$(info_field "$p" cluster cluster_slots_assigned)" = 0 ]; then
			fresh=$((fresh + 1))
		fi
	done
	if [ "$fresh" = ${#PORTS[@]} ]; then
		say "creating the cluster (3 masters, 3 replicas)"
		local hosts=()
		for p in "${PORTS[@]}"; do hosts+=("127.0.0.1:$p"); done
		# The script docker-compose.yml's redis-cluster job runs too.
		"$(dirname "$NODE_CONF")/create-cluster.sh" "${hosts[@]}" >"$BASE/create.log" 2>&1 ||
			die "deploy/redis/create-cluster.sh failed; see $BASE/create.log"
	elif [ "$fresh" != 0 ]; then
		die "$fresh node(s) are fresh while others belong to a cluster; run: $0 down && $0 up"
	fi

	say "waiting for cluster_state:ok on every node"
	wait_healthy 120 || die "cluster not healthy after 60 s; node logs under $BASE/<port>/redis.log"
	say "up: $(addrs)"
}

down() {
	local p pid stopped=0
	for p in "${PORTS[@]}"; do
		pid=$(pid_of "$p")
		if [ -n "$pid" ]; then
			say "stopping node $p (pid $pid)"
			kill "$pid"
			for _ in $(seq 1 50); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
			kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
			stopped=$((stopped + 1))
		fi
		rm -rf "${BASE:?}/$p"
	done
	rm -f "$BASE/create.log"
	say "stopped $stopped node(s)"
}

case "${1:-}" in
up) up ;;
down) down ;;
addr) addrs ;;
*)
	echo "usage: $0 up|down|addr" >&2
	exit 2
	;;
esac
