#!/usr/bin/env bash
# flashsale on a real topology, as processes on loopback (issue 9):
#   Temporal as separate services on PostgreSQL (frontend, matching, internal
#   worker, two history hosts sharing 8 shards), the Redis Cluster of
#   scripts/redis-cluster.sh (3 masters + 3 replicas), MariaDB (database
#   flashsale_cluster), two flashsale workers, two APIs, HAProxy in front of
#   the APIs health-checking /readyz, and the Temporal Web UI (ui-server)
#   against the frontend.
#
#   scripts/cluster.sh up         check prerequisites (installing missing Debian
#                                 packages as root), build what is missing (first run: the Temporal
#                                 server, 4-10 min on 2 cores, and the Web UI,
#                                 about 1.5 min), start what is
#                                 not running, print where everything is
#   scripts/cluster.sh down       stop what up started, by pid
#   scripts/cluster.sh ps         node names, pids, up/down
#   scripts/cluster.sh kill NAME  kill -9 one node (e.g. temporal-history-2,
#                                 worker-1, api-2, redis-7003)
#   scripts/cluster.sh start NAME start one node again (up does it for all)
#   scripts/cluster.sh stop NAME  stop one node gracefully (SIGTERM)
#   scripts/cluster.sh build      rebuild worker, api and starter (a rolling
#                                 restart then picks the new build up)
#   scripts/cluster.sh env        export lines for a client (starter, curl)
#   scripts/cluster.sh tools      build what is missing of the Temporal server,
#                                 schema tool, CLI and Web UI server, and print
#                                 the directory they are in (the compose smoke
#                                 puts them in its stand-in images)
#
# What the topology runs with is read from deploy/, the same files
# docker-compose.yml uses: the Temporal server config
# (deploy/temporal/config/flashsale.yaml, a template the server renders from
# each process's environment) and dynamic config, the schema and namespace
# setup scripts with the search attribute list, deploy/redis/node.conf,
# deploy/haproxy.cfg, deploy/flashsale.env and the Web UI's config
# (deploy/temporal-ui/flashsale.yaml, a template the UI server renders from
# its environment).
#
# State, logs, secrets and binaries live under $FLASHSALE_CLUSTER_DIR
# (default /tmp/flashsale-cluster). Secrets are made once (secrets.env,
# mode 600) and never leave that directory.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=${FLASHSALE_CLUSTER_DIR:-/tmp/flashsale-cluster}
BIN=$STATE/bin
LOGS=$STATE/logs
PIDS=$STATE/pids
TEMPORAL_VERSION=v1.29.1
TEMPORAL_CLI_VERSION=v1.5.1 # the CLI that embeds server 1.29.1
# The Web UI server that CLI embeds (its go.mod: ui-server/v2 v2.42.1; go
# 1.24, no replace directive), so the UI is the one the dev server shows.
UI_VERSION=v2.42.1

PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
PG_USER=${PG_USER:-postgres}
TEMPORAL_DB=temporal
VISIBILITY_DB=temporal_visibility
NUM_SHARDS=8
# The namespace every flashsale process uses (deploy/flashsale.env).
NAMESPACE=$(sed -n 's/^TEMPORAL_NAMESPACE=//p' "$ROOT/deploy/flashsale.env")

MYSQL_SERVER_DSN=${MYSQL_SERVER_DSN:-root@tcp(127.0.0.1:3306)/}
MYSQL_DB=flashsale_cluster

# Ports: Temporal in 74xx/64xx (the dev server of the tests holds 7233/8233),
# APIs and HAProxy in 748x, per-process metrics 94xx and pprof 95xx.
FRONTEND_GRPC=7433 FRONTEND_HTTP=7443 FRONTEND_MEMBERSHIP=6433
HISTORY1_GRPC=7434 HISTORY1_MEMBERSHIP=6434
HISTORY2_GRPC=7436 HISTORY2_MEMBERSHIP=6436
MATCHING_GRPC=7435 MATCHING_MEMBERSHIP=6435
TWORKER_GRPC=7439 TWORKER_MEMBERSHIP=6439
HAPROXY_PORT=7480 HAPROXY_STATS=7489
API1_PORT=7481 API2_PORT=7482
UI_PORT=7440

TEMPORAL_NODES=(temporal-frontend temporal-history-1 temporal-history-2 temporal-matching temporal-worker)
APP_NODES=(worker-1 worker-2 api-1 api-2 haproxy)
REDIS_PORTS=(7001 7002 7003 7004 7005 7006)
REDIS_BASE=/tmp/flashsale-redis-cluster

say() { echo "cluster: $*" >&2; }
die() {
	say "error: $*"
	exit 1
}

# ---- processes -----------------------------------------------------------

# pid_of NAME: the pid of a running node, nothing when it is down. A pid file
# only counts while that pid still runs the program it was written for.
pid_of() {
	local name=$1 f pid want
	case $name in
	redis-*)
		f=$REDIS_BASE/${name#redis-}/redis.pid
		want="redis-server.*:${name#redis-}"
		;;
	temporal-ui)
		f=$PIDS/$name.pid
		want="$BIN/temporal-ui-server"
		;;
	temporal-*)
		f=$PIDS/$name.pid
		want="$BIN/server"
		;;
	haproxy)
		f=$PIDS/haproxy.pid
		want=haproxy
		;;
	*)
		f=$PIDS/$name.pid
		want="$BIN/${name%-*}"
		;;
	esac
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$want"; then
		echo "$pid"
	fi
}

running() { [ -n "$(pid_of "$1")" ]; }

# spawn NAME ENV... -- CMD...: start CMD in its own session, log to
# logs/NAME.log, pid to pids/NAME.pid.
spawn() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	mkdir -p "$LOGS" "$PIDS"
	echo "---- $(date -u +%FT%TZ) start" >>"$LOGS/$name.log"
	# 3-9 closed: no lock must outlive its holder in the nodes started here,
	# neither up's (fd 8) nor the caller's (`flock /tmp/flashsale-heavy.lock
	# scripts/cluster.sh up` hands its lock on as fd 3: a node keeping it
	# would block every later heavy run for as long as the node lives).
	env "${envs[@]}" setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	echo $! >"$PIDS/$name.pid"
}

# spawned NAME: the process spawn started for NAME is still alive (while it
# execs from env to setsid to the program, /proc/PID/cmdline can be briefly
# empty, so pid_of is not used here).
spawned() { kill -0 "$(cat "$PIDS/$1.pid" 2>/dev/null || echo 0)" 2>/dev/null; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_port NAME PORT SECONDS: until PORT accepts, failing if NAME died.
wait_port() {
	local name=$1 port=$2 secs=$3 i
	for ((i = 0; i < secs * 4; i++)); do
		port_open "$port" && return 0
		spawned "$name" || die "$name exited while starting; tail of $LOGS/$name.log:
$(tail -n 25 "$LOGS/$name.log")"
		sleep 0.25
	done
	die "$name did not open port $port within ${secs}s; see $LOGS/$name.log"
}

# ---- build ---------------------------------------------------------------

build_temporal() {
	mkdir -p "$BIN" "$LOGS"
	local pkgs=() b
	[ -x "$BIN/server" ] || pkgs+=("go.temporal.io/server/cmd/server@$TEMPORAL_VERSION")
	[ -x "$BIN/sql" ] || pkgs+=("go.temporal.io/server/cmd/tools/sql@$TEMPORAL_VERSION")
	if [ ${#pkgs[@]} -gt 0 ]; then
		say "building the Temporal server $TEMPORAL_VERSION and its schema tool (first run: 4-10 min on 2 cores; log $LOGS/build-temporal.log)"
		(cd /tmp && GOBIN=$BIN go install -v "${pkgs[@]}") >"$LOGS/build-temporal.log" 2>&1 &
		b=$!
		while kill -0 "$b" 2>/dev/null; do
			sleep 15
			kill -0 "$b" 2>/dev/null && say "  still building ($(wc -l <"$LOGS/build-temporal.log") packages so far, last: $(tail -n 1 "$LOGS/build-temporal.log"))"
		done
		wait "$b" || die "go install of the Temporal server failed; see $LOGS/build-temporal.log"
		say "built $BIN/server and $BIN/sql"
	fi
	if [ ! -x "$BIN/temporal" ]; then
		local cli
		cli=$(command -v temporal || true)
		[ -z "$cli" ] && [ -x "$HOME/go/bin/temporal" ] && cli=$HOME/go/bin/temporal
		if [ -n "$cli" ]; then
			ln -sf "$cli" "$BIN/temporal"
		else
			say "building the temporal CLI $TEMPORAL_CLI_VERSION"
			(cd /tmp && GOBIN=$BIN go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION") ||
				die "go install of the temporal CLI failed"
		fi
	fi
}

# build_ui: the Temporal Web UI server (github.com/temporalio/ui-server/v2,
# its assets embedded: a 150 MB binary). go install names it after its
# package directory, "server", as the Temporal server's binary is named, so it
# is installed into a directory of its own and moved beside the others.
build_ui() {
	[ -x "$BIN/temporal-ui-server" ] && return 0
	mkdir -p "$BIN" "$LOGS"
	local tmp=$BIN/.ui-build b t0=$SECONDS
	rm -rf "$tmp"
	say "building the Temporal Web UI server $UI_VERSION (first run: about 1.5 min on 2 cores; log $LOGS/build-ui.log)"
	(cd /tmp && GOBIN=$tmp go install -v "github.com/temporalio/ui-server/v2/cmd/server@$UI_VERSION") >"$LOGS/build-ui.log" 2>&1 &
	b=$!
	while kill -0 "$b" 2>/dev/null; do
		sleep 15
		kill -0 "$b" 2>/dev/null && say "  still building the UI ($(wc -l <"$LOGS/build-ui.log") packages so far, last: $(tail -n 1 "$LOGS/build-ui.log"))"
	done
	wait "$b" || die "go install of the Temporal Web UI server failed; see $LOGS/build-ui.log"
	mv -f "$tmp/server" "$BIN/temporal-ui-server"
	rm -rf "$tmp"
	say "built $BIN/temporal-ui-server in $((SECONDS - t0)) s"
}

# build_app [force]: the worker, api and starter of this checkout, built once.
build_app() {
	local c
	for c in worker api starter; do
		if [ "${1:-}" = force ] || [ ! -x "$BIN/$c" ]; then
			say "building $c"
			(cd "$ROOT" && go build -o "$BIN/$c.new" "./$c") || die "go build ./$c failed"
			mv -f "$BIN/$c.new" "$BIN/$c"
		fi
	done
}

# ---- secrets and environment ---------------------------------------------

secrets() {
	mkdir -p "$STATE"
	if [ ! -f "$STATE/secrets.env" ]; then
		(
			umask 077
			{
				echo "WEBHOOK_SECRET=$(openssl rand -hex 24)"
				echo "ADMIN_TOKEN=$(openssl rand -hex 24)"
				echo "BUYER_JWT_SECRET=$(openssl rand -hex 32)"
				echo "USER_ID_HMAC_KEY=$(openssl rand -hex 24)"
			} >"$STATE/secrets.env"
		)
		say "generated secrets in $STATE/secrets.env"
	fi
	chmod 600 "$STATE/secrets.env"
	# shellcheck disable=SC1091
	. "$STATE/secrets.env"
	# The payment timeout is the workers' and is fixed when the cluster is
	# first brought up (PAYMENT_TIMEOUT=... scripts/cluster.sh up).
	if [ ! -f "$STATE/settings.env" ]; then
		echo "PAYMENT_TIMEOUT=${PAYMENT_TIMEOUT:-20s}" >"$STATE/settings.env"
	fi
	# shellcheck disable=SC1091
	. "$STATE/settings.env"
}

redis_addr() { "$ROOT/scripts/redis-cluster.sh" addr; }

app_env() {
	# The settings compose gives its processes too, then this topology's own.
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$ROOT/deploy/flashsale.env"
	echo "TEMPORAL_ADDRESS=127.0.0.1:$FRONTEND_GRPC"
	echo "REDIS_ADDR=$(redis_addr)"
	echo "MYSQL_DSN=${MYSQL_SERVER_DSN}${MYSQL_DB}?parseTime=true"
	echo "PAYMENT_TIMEOUT=$PAYMENT_TIMEOUT"
	echo "WEBHOOK_SECRET=$WEBHOOK_SECRET"
	echo "ADMIN_TOKEN=$ADMIN_TOKEN"
	echo "BUYER_JWT_SECRET=$BUYER_JWT_SECRET"
	# A cluster whose secrets predate the key runs on the dev key, warned.
	echo "USER_ID_HMAC_KEY=${USER_ID_HMAC_KEY:-}"
}

cmd_env() {
	secrets
	# Single-quoted: the DSN holds parentheses. No value holds a quote.
	echo "export API_URL='http://127.0.0.1:$HAPROXY_PORT'"
	# Not read by flashsale's processes: where a person (or the smoke) finds
	# the Web UI and its HTTP API.
	echo "export TEMPORAL_UI_URL='http://127.0.0.1:$UI_PORT'"
	app_env | sed "s/^\([A-Z_]*\)=\(.*\)$/export \1='\2'/"
}

# ---- PostgreSQL schemas --------------------------------------------------

psql_() { psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -v ON_ERROR_STOP=1 -Atq "$@"; }

# schemas: deploy/temporal/setup-schema.sh (compose's temporal-schema job
# runs the same script) with the schema tool built here.
schemas() {
	psql_ -d postgres -c 'select 1' >/dev/null || die "PostgreSQL is not answering on $PG_HOST:$PG_PORT as $PG_USER"
	SQL_TOOL=$BIN/sql TEMPORAL_SQL_HOST=$PG_HOST TEMPORAL_SQL_PORT=$PG_PORT TEMPORAL_SQL_USER=$PG_USER \
		TEMPORAL_DB=$TEMPORAL_DB TEMPORAL_VISIBILITY_DB=$VISIBILITY_DB \
		"$ROOT/deploy/temporal/setup-schema.sh" >>"$LOGS/schema.log" 2>&1 ||
		die "deploy/temporal/setup-schema.sh failed; tail of $LOGS/schema.log:
$(tail -n 20 "$LOGS/schema.log")"
	say "PostgreSQL: $TEMPORAL_DB $(psql_ -d $TEMPORAL_DB -c 'select curr_version from schema_version'), $VISIBILITY_DB $(psql_ -d $VISIBILITY_DB -c 'select curr_version from schema_version')"
}

# ---- Temporal ------------------------------------------------------------

# node_ports NAME: "service grpc membership metrics pprof" of a Temporal node.
node_ports() {
	case $1 in
	temporal-frontend) echo "frontend $FRONTEND_GRPC $FRONTEND_MEMBERSHIP 9431 9531" ;;
	temporal-history-1) echo "history $HISTORY1_GRPC $HISTORY1_MEMBERSHIP 9432 9532" ;;
	temporal-history-2) echo "history $HISTORY2_GRPC $HISTORY2_MEMBERSHIP 9433 9533" ;;
	temporal-matching) echo "matching $MATCHING_GRPC $MATCHING_MEMBERSHIP 9434 9534" ;;
	temporal-worker) echo "worker $TWORKER_GRPC $TWORKER_MEMBERSHIP 9435 9535" ;;
	*) die "no Temporal node $1" ;;
	esac
}

# temporal_env NAME: the environment deploy/temporal/config/flashsale.yaml
# is rendered from for that node: every service's ports (a process reads
# them all, serves its own), this node's history ports when it is a history
# host, and its own metrics and pprof ports.
temporal_env() {
	local service grpc member metrics pprof
	read -r service grpc member metrics pprof <<<"$(node_ports "$1")"
	local hgrpc=$HISTORY1_GRPC hmember=$HISTORY1_MEMBERSHIP
	if [ "$service" = history ]; then hgrpc=$grpc hmember=$member; fi
	cat <<EOF
TEMPORAL_BIND_IP=127.0.0.1
TEMPORAL_NUM_HISTORY_SHARDS=$NUM_SHARDS
TEMPORAL_SQL_HOST=$PG_HOST
TEMPORAL_SQL_PORT=$PG_PORT
TEMPORAL_SQL_USER=$PG_USER
TEMPORAL_DB=$TEMPORAL_DB
TEMPORAL_VISIBILITY_DB=$VISIBILITY_DB
TEMPORAL_FRONTEND_ADDRESS=127.0.0.1:$FRONTEND_GRPC
TEMPORAL_FRONTEND_GRPC_PORT=$FRONTEND_GRPC
TEMPORAL_FRONTEND_MEMBERSHIP_PORT=$FRONTEND_MEMBERSHIP
TEMPORAL_FRONTEND_HTTP_PORT=$FRONTEND_HTTP
TEMPORAL_HISTORY_GRPC_PORT=$hgrpc
TEMPORAL_HISTORY_MEMBERSHIP_PORT=$hmember
TEMPORAL_MATCHING_GRPC_PORT=$MATCHING_GRPC
TEMPORAL_MATCHING_MEMBERSHIP_PORT=$MATCHING_MEMBERSHIP
TEMPORAL_WORKER_GRPC_PORT=$TWORKER_GRPC
TEMPORAL_WORKER_MEMBERSHIP_PORT=$TWORKER_MEMBERSHIP
TEMPORAL_METRICS_ADDR=127.0.0.1:$metrics
TEMPORAL_PPROF_PORT=$pprof
TEMPORAL_DYNAMIC_CONFIG=$ROOT/deploy/temporal/dynamicconfig.yaml
EOF
}

start_temporal_node() {
	local name=$1 service grpc member
	running "$name" && return 0
	read -r service grpc member _ <<<"$(node_ports "$name")"
	port_open "$grpc" && die "port $grpc (for $name) is taken by a process this script did not start"
	local envs=()
	mapfile -t envs < <(temporal_env "$name")
	say "starting $name ($service, gRPC 127.0.0.1:$grpc)"
	# The config is the template compose runs too; the server renders it
	# from envs (its "enable-template" loader).
	spawn "$name" "${envs[@]}" -- "$BIN/server" --root / --config "$ROOT/deploy/temporal/config" --env flashsale --allow-no-auth start --service "$service"
	# The internal worker serves no gRPC; its membership port says it joined.
	if [ "$service" = worker ]; then wait_port "$name" "$member" 90; else wait_port "$name" "$grpc" 90; fi
}

# namespace: deploy/temporal/setup-namespace.sh (compose's temporal-setup
# job runs the same script): waits for the frontend, registers the
# namespace and the search attributes of deploy/temporal/search-attributes,
# waits until they are listed, and fails loudly.
namespace() {
	TEMPORAL_CLI=$BIN/temporal TEMPORAL_ADDRESS=127.0.0.1:$FRONTEND_GRPC TEMPORAL_NAMESPACE=$NAMESPACE \
		SEARCH_ATTRIBUTES=$ROOT/deploy/temporal/search-attributes SETUP_WAIT_SECONDS=90 \
		"$ROOT/deploy/temporal/setup-namespace.sh" >&2 ||
		die "deploy/temporal/setup-namespace.sh failed (Temporal logs: $LOGS/temporal-*.log)"
}

# ---- the Web UI ------------------------------------------------------------

# start_ui: the UI server against the frontend, on loopback. Its config is
# deploy/temporal-ui/flashsale.yaml, the file compose's UI can mount; the
# variables below are the ones the temporalio/ui image reads too.
start_ui() {
	running temporal-ui && return 0
	build_ui
	port_open "$UI_PORT" && die "port $UI_PORT (for temporal-ui) is taken by a process this script did not start"
	say "starting temporal-ui (http://127.0.0.1:$UI_PORT)"
	spawn temporal-ui "TEMPORAL_ADDRESS=127.0.0.1:$FRONTEND_GRPC" "TEMPORAL_UI_HOST=127.0.0.1" \
		"TEMPORAL_UI_PORT=$UI_PORT" "TEMPORAL_UI_ORIGIN=http://127.0.0.1:$UI_PORT" \
		"TEMPORAL_DEFAULT_NAMESPACE=$NAMESPACE" -- \
		"$BIN/temporal-ui-server" --root / --config "$ROOT/deploy/temporal-ui" --env flashsale start
	local i
	# /healthz answers once it serves; the UI dials the frontend lazily,
	# so this is not yet proof it reaches Temporal (the smoke checks that).
	for ((i = 0; i < 120; i++)); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$UI_PORT/healthz")" = 200 ] && return 0
		spawned temporal-ui || die "temporal-ui exited while starting; tail of $LOGS/temporal-ui.log:
$(tail -n 25 "$LOGS/temporal-ui.log")"
		sleep 0.25
	done
	die "temporal-ui not serving /healthz within 30 s; see $LOGS/temporal-ui.log"
}

# ---- flashsale and HAProxy -----------------------------------------------

start_app_node() {
	local name=$1 envs=()
	running "$name" && return 0
	mapfile -t envs < <(app_env)
	case $name in
	worker-*)
		say "starting $name"
		local from=0 i
		[ -f "$LOGS/$name.log" ] && from=$(wc -c <"$LOGS/$name.log")
		spawn "$name" "${envs[@]}" -- "$BIN/worker"
		# The worker checks search attributes and migrates MySQL before it
		# polls; it logs "worker started" when it does.
		for ((i = 0; i < 240; i++)); do
			tail -c +$((from + 1)) "$LOGS/$name.log" | grep -q "worker started" && return 0
			spawned "$name" || die "$name exited while starting; tail of $LOGS/$name.log:
$(tail -n 25 "$LOGS/$name.log")"
			sleep 0.25
		done
		die "$name did not log 'worker started' within 60 s; see $LOGS/$name.log"
		;;
	api-*)
		local port=$API1_PORT
		[ "$name" = api-2 ] && port=$API2_PORT
		port_open "$port" && die "port $port (for $name) is taken by a process this script did not start"
		say "starting $name (http://127.0.0.1:$port)"
		spawn "$name" "${envs[@]}" "HTTP_ADDR=127.0.0.1:$port" -- "$BIN/api"
		local i
		for ((i = 0; i < 240; i++)); do
			[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ] && return 0
			spawned "$name" || die "$name exited while starting; tail of $LOGS/$name.log:
$(tail -n 25 "$LOGS/$name.log")"
			sleep 0.25
		done
		die "$name not ready (/readyz) within 60 s; see $LOGS/$name.log"
		;;
	haproxy)
		command -v haproxy >/dev/null || die "haproxy is not installed (apt-get install haproxy)"
		port_open "$HAPROXY_PORT" && die "port $HAPROXY_PORT (for haproxy) is taken by a process this script did not start"
		# deploy/haproxy.cfg, as compose runs it; HAProxy reads the
		# addresses from its environment.
		local henv=("HAPROXY_BIND=127.0.0.1:$HAPROXY_PORT" "HAPROXY_STATS_BIND=127.0.0.1:$HAPROXY_STATS"
			"API_1=127.0.0.1:$API1_PORT" "API_2=127.0.0.1:$API2_PORT")
		env "${henv[@]}" haproxy -c -q -f "$ROOT/deploy/haproxy.cfg" || die "haproxy rejects deploy/haproxy.cfg"
		say "starting haproxy (http://127.0.0.1:$HAPROXY_PORT)"
		# -db: stay in the foreground, so the pid is the one we spawned.
		spawn haproxy "${henv[@]}" -- haproxy -db -f "$ROOT/deploy/haproxy.cfg"
		wait_port haproxy "$HAPROXY_PORT" 10
		;;
	esac
}

start_node() {
	case $1 in
	temporal-ui) start_ui ;;
	temporal-*) start_temporal_node "$1" ;;
	redis-*) "$ROOT/scripts/redis-cluster.sh" up 8>&- ;;
	*) start_app_node "$1" ;;
	esac
}

# ---- prerequisites ---------------------------------------------------------

# prerequisites: everything up needs, checked before anything is built (a
# fresh machine once built for 7 minutes, started Temporal, and only then
# found no haproxy). Missing Debian packages are installed when running as
# root with apt-get (as scripts/test.sh does), unless
# FLASHSALE_CLUSTER_NO_INSTALL=1; otherwise up stops at once naming them.
# Then the services it does not start itself (PostgreSQL, MySQL) must
# answer, and the ports of the nodes it will start must be free.
prerequisites() {
	local -A pkg=([haproxy]=haproxy [redis-server]=redis-server [redis-cli]=redis-tools
		[psql]=postgresql-client [openssl]=openssl [curl]=curl [flock]=util-linux [setsid]=util-linux)
	local missing=() need=() c
	command -v go >/dev/null || missing+=("go (https://go.dev/dl/, the version of go.mod)")
	for c in "${!pkg[@]}"; do
		command -v "$c" >/dev/null && continue
		missing+=("$c (Debian package ${pkg[$c]})")
		[[ " ${need[*]} " == *" ${pkg[$c]} "* ]] || need+=("${pkg[$c]}")
	done
	if [ ${#need[@]} -gt 0 ] && [ "${FLASHSALE_CLUSTER_NO_INSTALL:-}" != 1 ] && [ "$(id -u)" = 0 ] &&
		command -v apt-get >/dev/null && ! [[ " ${missing[*]} " == *"go (https"* ]]; then
		say "installing ${need[*]} (apt-get; log /tmp/flashsale-cluster-apt.log)"
		if { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >/tmp/flashsale-cluster-apt.log 2>&1; then
			missing=()
			for c in "${!pkg[@]}"; do command -v "$c" >/dev/null || missing+=("$c (Debian package ${pkg[$c]})"); done
		else
			say "apt-get install ${need[*]} failed; see /tmp/flashsale-cluster-apt.log"
		fi
	fi
	if [ ${#missing[@]} -gt 0 ]; then
		die "missing before anything is built: ${missing[*]}${need[*]:+
  install with: apt-get install ${need[*]}}"
	fi
	psql_ -d postgres -c 'select 1' >/dev/null 2>&1 ||
		die "PostgreSQL is not answering on $PG_HOST:$PG_PORT as $PG_USER (Temporal's database; e.g. pg_ctlcluster --skip-systemctl-redirect \$(ls /etc/postgresql) main start, or set PG_HOST/PG_PORT/PG_USER)"
	local mysql_addr=${MYSQL_SERVER_DSN#*tcp(}
	mysql_addr=${mysql_addr%%)*}
	(exec 3<>"/dev/tcp/${mysql_addr%:*}/${mysql_addr##*:}") 2>/dev/null ||
		die "MySQL is not answering on $mysql_addr (MYSQL_SERVER_DSN; scripts/services.sh starts one)"
	local n grpc busy=()
	for n in "${TEMPORAL_NODES[@]}"; do
		running "$n" && continue
		read -r _ grpc _ <<<"$(node_ports "$n")"
		port_open "$grpc" && busy+=("$grpc ($n)")
	done
	running temporal-ui || ! port_open "$UI_PORT" || busy+=("$UI_PORT (temporal-ui)")
	running api-1 || ! port_open "$API1_PORT" || busy+=("$API1_PORT (api-1)")
	running api-2 || ! port_open "$API2_PORT" || busy+=("$API2_PORT (api-2)")
	running haproxy || ! port_open "$HAPROXY_PORT" || busy+=("$HAPROXY_PORT (haproxy)")
	[ ${#busy[@]} -eq 0 ] || die "ports taken by processes this script did not start: ${busy[*]}"
}

cmd_up() {
	prerequisites
	mkdir -p "$STATE" "$LOGS" "$PIDS"
	exec 8>"$STATE/.lock"
	flock 8
	secrets
	build_temporal
	build_ui
	build_app
	schemas

	# One service first: every process writes the cluster metadata on its
	# first start, and several at once race on its version.
	local n
	for n in "${TEMPORAL_NODES[@]}"; do start_temporal_node "$n"; done
	namespace
	start_ui

	if ! "$ROOT/scripts/redis-cluster.sh" up 2>"$LOGS/redis-cluster.log" 8>&-; then
		cat "$LOGS/redis-cluster.log" >&2
		die "the Redis Cluster did not come up"
	fi
	# Only a cluster this up created is ours to stop: restarting one dead
	# node of the shared cluster (the tests kill masters too) is not.
	if grep -q "creating the cluster" "$LOGS/redis-cluster.log"; then touch "$STATE/redis-started-here"; fi

	for n in "${APP_NODES[@]}"; do start_app_node "$n"; done
	cmd_ps
	cat >&2 <<EOF

flashsale cluster is up:
  API (HAProxy)      http://127.0.0.1:$HAPROXY_PORT   (stats http://127.0.0.1:$HAPROXY_STATS/)
  APIs               http://127.0.0.1:$API1_PORT  http://127.0.0.1:$API2_PORT
  Temporal frontend  127.0.0.1:$FRONTEND_GRPC  (namespace $NAMESPACE, $NUM_SHARDS shards, PostgreSQL $PG_HOST:$PG_PORT)
  Temporal Web UI    http://127.0.0.1:$UI_PORT/namespaces/$NAMESPACE/workflows
  Redis Cluster      $(redis_addr)
  MySQL              ${MYSQL_SERVER_DSN}${MYSQL_DB}
  payment timeout    $PAYMENT_TIMEOUT
  logs               $LOGS/
  client env         eval "\$(scripts/cluster.sh env)"
EOF
}

# stop NAME: SIGTERM, then SIGKILL after 10 s; a worker gets 135 s, past
# its own stop timeout (workflows.StopTimeout, 125 s) for the tasks it holds.
stop_node() {
	local name=$1 pid i ticks=40
	pid=$(pid_of "$name")
	[ -n "$pid" ] || return 0
	case $name in worker-*) ticks=540 ;; esac
	say "stopping $name (pid $pid)"
	kill "$pid" 2>/dev/null || true
	for ((i = 0; i < ticks; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
	rm -f "$PIDS/$name.pid"
}

cmd_down() {
	local n i
	for n in haproxy api-1 api-2 worker-1 worker-2 temporal-ui; do stop_node "$n"; done
	for ((i = ${#TEMPORAL_NODES[@]} - 1; i >= 0; i--)); do stop_node "${TEMPORAL_NODES[$i]}"; done
	if [ -f "$STATE/redis-started-here" ]; then
		"$ROOT/scripts/redis-cluster.sh" down
		rm -f "$STATE/redis-started-here"
	else
		say "leaving the Redis Cluster running: up found it already running (scripts/redis-cluster.sh down stops it)"
	fi
	say "down (databases, secrets and logs kept under $STATE)"
}

all_nodes() {
	local p
	printf '%s\n' "${TEMPORAL_NODES[@]}" temporal-ui
	for p in "${REDIS_PORTS[@]}"; do echo "redis-$p"; done
	printf '%s\n' "${APP_NODES[@]}"
}

cmd_ps() {
	local n pid extra
	printf '%-20s %-8s %-5s %s\n' NODE PID STATE WHERE
	while read -r n; do
		pid=$(pid_of "$n")
		case $n in
		temporal-ui) extra="http://127.0.0.1:$UI_PORT" ;;
		temporal-*) extra="127.0.0.1:$(node_ports "$n" | cut -d' ' -f2)" ;;
		redis-*)
			extra="127.0.0.1:${n#redis-}"
			[ -n "$pid" ] && extra+=" $(timeout 2 redis-cli -p "${n#redis-}" info replication 2>/dev/null | tr -d '\r' | sed -n 's/^role://p')"
			;;
		api-1) extra="http://127.0.0.1:$API1_PORT" ;;
		api-2) extra="http://127.0.0.1:$API2_PORT" ;;
		haproxy) extra="http://127.0.0.1:$HAPROXY_PORT" ;;
		*) extra="" ;;
		esac
		printf '%-20s %-8s %-5s %s\n' "$n" "${pid:--}" "$([ -n "$pid" ] && echo up || echo down)" "$extra"
	done < <(all_nodes)
}

cmd_kill() {
	local name=${1:?usage: $0 kill NAME}
	all_nodes | grep -qx "$name" || die "no node $name (see $0 ps)"
	local pid
	pid=$(pid_of "$name")
	[ -n "$pid" ] || die "$name is not running"
	kill -9 "$pid"
	say "killed $name (pid $pid)"
}

cmd_stop() {
	local name=${1:?usage: $0 stop NAME}
	all_nodes | grep -qx "$name" || die "no node $name (see $0 ps)"
	case $name in redis-*) die "redis nodes are stopped by scripts/redis-cluster.sh" ;; esac
	running "$name" || die "$name is not running"
	stop_node "$name"
}

cmd_start() {
	local name=${1:?usage: $0 start NAME}
	all_nodes | grep -qx "$name" || die "no node $name (see $0 ps)"
	mkdir -p "$STATE" "$LOGS" "$PIDS"
	exec 8>"$STATE/.lock"
	flock 8
	secrets
	start_node "$name"
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
ps) cmd_ps ;;
kill) cmd_kill "${2:-}" ;;
stop) cmd_stop "${2:-}" ;;
start) cmd_start "${2:-}" ;;
env) cmd_env ;;
build) build_app force ;;
tools)
	build_temporal >&2
	build_ui >&2
	echo "$BIN"
	;;
*)
	echo "usage: $0 up|down|ps|kill NAME|start NAME|stop NAME|env|build|tools" >&2
	exit 2
	;;
esac
