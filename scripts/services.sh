#!/usr/bin/env bash
# Starts whatever the tests need that is not already running: Redis, MariaDB
# and a Temporal dev server. Each is checked by a real connection first.
set -euo pipefail
cd "$(dirname "$0")/.."

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # name port
	for _ in $(seq 1 60); do
		if port_open "$2"; then return 0; fi
		sleep 0.5
	done
	echo "services: $1 did not come up on :$2" >&2
	return 1
}

if ! port_open 6379; then
	echo "services: starting redis" >&2
	command -v redis-server >/dev/null || { echo "services: redis-server not installed" >&2; exit 1; }
	redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --maxmemory-policy noeviction \
		--dir /tmp --logfile /tmp/flashsale-redis.log 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
	wait_port redis 6379
fi
# Every flashsale process refuses a Redis that may evict (backend.CheckEviction);
# one started before with another policy gets noeviction here.
if command -v redis-cli >/dev/null && [ "$(redis-cli -p 6379 config get maxmemory-policy | sed -n 2p)" != noeviction ]; then
	echo "services: setting redis maxmemory-policy noeviction" >&2
	redis-cli -p 6379 config set maxmemory-policy noeviction >/dev/null
fi

if ! port_open 3306; then
	echo "services: starting mariadb" >&2
	command -v mariadbd >/dev/null || { echo "services: mariadbd not installed" >&2; exit 1; }
	# 3-9 closed: a daemon must not keep a caller's flock (fd 3) for its life.
	start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
	wait_port mariadb 3306
fi

scripts/temporal-dev.sh
