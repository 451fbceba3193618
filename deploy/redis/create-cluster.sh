#!/bin/sh
# Makes one Redis Cluster of six nodes (3 masters, 3 replicas) started with
# deploy/redis/node.conf, for both deployments: scripts/redis-cluster.sh
# (127.0.0.1:7001 ... :7006) and docker-compose.yml's redis-cluster job
# (redis-1:6379 ... redis-6:6379). Idempotent: nodes that already serve every
# slot are left alone. Waits for every node first and until the cluster is
# ok after, and fails loudly otherwise.
#   deploy/redis/create-cluster.sh HOST:PORT...
set -eu

[ $# -ge 6 ] || {
	echo "usage: $0 HOST:PORT x6 (3 masters + 3 replicas)" >&2
	exit 2
}
say() { echo "create-cluster: $*"; }
cli() { # host:port args...
	a=$1
	shift
	redis-cli -h "${a%:*}" -p "${a##*:}" "$@"
}
field() { cli "$1" cluster info | tr -d '\r' | sed -n "s/^$2://p"; }

for a in "$@"; do
	i=0
	until [ "$(cli "$a" ping 2>/dev/null)" = PONG ]; do
		i=$((i + 1))
		[ "$i" -ge 60 ] && {
			say "node $a does not answer PING after 60 s" >&2
			exit 1
		}
		sleep 1
	done
done

if [ "$(field "$1" cluster_slots_assigned)" = 16384 ]; then
	say "already a cluster: $(field "$1" cluster_known_nodes) nodes, state $(field "$1" cluster_state)"
else
	# redis-cli --cluster create wants addresses, not names.
	addrs=""
	for a in "$@"; do
		h=${a%:*}
		ip=$(getent hosts "$h" | awk '{print $1; exit}')
		addrs="$addrs ${ip:-$h}:${a##*:}"
	done
	say "creating the cluster:$addrs"
	# shellcheck disable=SC2086 # one word per address
	redis-cli --cluster create $addrs --cluster-replicas 1 --cluster-yes
fi

i=0
for a in "$@"; do
	until [ "$(field "$a" cluster_state)" = ok ]; do
		i=$((i + 1))
		[ "$i" -ge 120 ] && {
			say "cluster not ok on $a after 60 s" >&2
			exit 1
		}
		sleep 0.5
	done
done
say "ok: $*"
