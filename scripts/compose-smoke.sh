#!/usr/bin/env bash
# docker-compose.yml, unchanged, on a real Docker engine (docs/deploy.md,
# "The compose smoke"):
#
#   scripts/compose-smoke.sh        run the smoke (root; scripts/test.sh runs it)
#   scripts/compose-smoke.sh clean  delete its cache (images, binaries, rootfs)
#   SMOKE_KEEP=1 scripts/compose-smoke.sh   on a failure, leave the engine and
#                                 the stack running to look at (it says how)
#
# 1. Starts a private dockerd (Debian's docker.io): its own socket, data and
#    bridges, no iptables rules, no NAT, IP forwarding left off, so no
#    container traffic leaves the engine's bridges.
# 2. Builds offline, with no registry, a stand-in for every image the compose
#    file and the Dockerfile name, tagged with that name:tag
#    (scripts/compose-smoke/*: Debian's packages via mmdebstrap, and Go
#    binaries from the module proxy: the Temporal server, schema tool, CLI
#    and Web UI that scripts/cluster.sh builds, the Prometheus that
#    scripts/promtool.sh builds, and the Compose v5.6.0 CLI plugin).
# 3. `docker compose up` (the Dockerfile built by compose itself), then a
#    sale of $SMOKE_UNITS units to $SMOKE_BUYERS buyers through HAProxy, every
#    winner paying by the provider's signed callback, `starter check` run in
#    the stack, the Web UI and Prometheus's targets checked; --scale api=4
#    worker=3 with HAProxy balancing over all four; `stop`, `start`, the
#    Redis Cluster whole again and a second sale; then `down -v`.
# 4. Removes every container, volume and network it made, stops the engine
#    and deletes its socket and run directory. What stays is the cache under
#    $FLASHSALE_SMOKE_CACHE (default /var/cache/flashsale/compose-smoke): the
#    engine's data root with the stand-in images and the build cache, the
#    root filesystem tarball and the binaries, so a second run builds nothing
#    that has not changed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${FLASHSALE_SMOKE_CACHE:-/var/cache/flashsale/compose-smoke}
UNITS=${SMOKE_UNITS:-300}
BUYERS=${SMOKE_BUYERS:-450}
PROJECT=flashsale-smoke
COMPOSE_VERSION=v5.6.0
# Host ports, loopback only (docker-compose.yml's PUBLISH_IP and *_PORT).
HTTP_PORT=17080 STATS_PORT=17404 TEMPORAL_PORT=17233 UI_PORT=17234 PROM_PORT=17090 GRAFANA_PORT=17300
# The engine's own bridge and address pool (the stack's network has its
# fixed subnet, docker-compose.yml). Docker's DNS answers the stack's names
# itself and forwards any other name to the engine's --dns: here the
# engine's own bridge address, where nothing answers, so no lookup leaves
# the host; timeout:1 attempts:1 make such a lookup fail in a second. (gRPC
# clients look up a TXT record beside every address they dial: against a DNS
# that never answers, each dial of temporal-frontend:7233 waited 10 s and
# the temporal CLI gave up first.)
BRIDGE_IP=172.31.239.1/24 ADDRESS_POOL=172.31.240.0/20
BASE_PACKAGES=netcat-openbsd,postgresql-15,mariadb-server,redis-server,haproxy,busybox,ca-certificates,procps

T0=$SECONDS
say() { echo "compose-smoke: [$((SECONDS - T0)) s] $*" >&2; }
die() {
	say "FAIL: $*"
	exit 1
}

if [ "${1:-}" = clean ]; then
	[ -d "$CACHE" ] || exit 0
	exec 9>"$CACHE/lock"
	flock -n 9 || die "a smoke is running"
	rm -rf "$CACHE"
	say "removed $CACHE"
	exit 0
fi
[ $# -eq 0 ] || {
	echo "usage: $0 [clean]" >&2
	exit 2
}
[ "$(id -u)" = 0 ] || die "needs root (it runs dockerd)"

mkdir -p "$CACHE/bin" "$CACHE/logs"
exec 9>"$CACHE/lock"
flock -n 9 || die "another compose smoke is running ($CACHE/lock)"

# ---- prerequisites -------------------------------------------------------

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if [ ${#need[@]} -gt 0 ]; then
	say "installing ${need[*]} (apt-get)"
	# Debian's docker.io would start a system dockerd (with iptables rules)
	# from its postinst: a policy-rc.d forbids it for the install.
	made_policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		made_policy=1
	fi
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } \
		>"$CACHE/logs/apt.log" 2>&1 || die "apt-get install ${need[*]} failed; see $CACHE/logs/apt.log"
	[ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
fi
# With forwarding off, packets from the bridges cannot leave the host (no
# NAT either): the stack can only talk to itself.
[ "$(cat /proc/sys/net/ipv4/ip_forward)" = 0 ] ||
	die "net.ipv4.ip_forward is 1: container traffic could leave the host; the smoke runs only with forwarding off"
for p in $HTTP_PORT $STATS_PORT $TEMPORAL_PORT $UI_PORT $PROM_PORT $GRAFANA_PORT; do
	(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && die "port $p is taken; the smoke publishes the stack's ports on 17xxx"
done

# bg LOG WHAT CMD...: CMD (a function too) niced in the background, a
# progress line every 30 s.
bg() {
	local log=$1 what=$2 b t=$SECONDS
	shift 2
	(
		renice -n 10 -p "$BASHPID" >/dev/null
		"$@"
	) >"$log" 2>&1 &
	b=$!
	while kill -0 "$b" 2>/dev/null; do
		sleep 5
		if kill -0 "$b" 2>/dev/null && [ $(((SECONDS - t) % 30)) -lt 5 ]; then
			say "  still $what ($((SECONDS - t)) s; $(wc -l <"$log") log lines, last: $(tail -n 1 "$log" | cut -c1-100))"
		fi
	done
	wait "$b" || die "$what failed; see $log"
	say "  $what: $((SECONDS - t)) s"
}

# build_module_bins MODULE@VERSION OUTDIR PKG...: go build inside the
# module's own source (these modules carry replace/exclude directives, so
# `go install pkg@version` refuses them).
build_module_bins() {
	local mv=$1 out=$2 dir src
	shift 2
	dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$mv" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$dir" ] || die "go mod download $mv failed"
	src=$CACHE/src/${mv%@*}
	rm -rf "$src" "$out.tmp"
	mkdir -p "$(dirname "$src")" "$out.tmp"
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
	(cd "$src" && GOWORK=off GOFLAGS=-trimpath go build -o "$out.tmp/" "$@")
	rm -rf "$out" "$src"
	mv "$out.tmp" "$out"
}

say "building what is missing (first run: about 20 min on 2 shared cores; cached in $CACHE)"
COMPOSE_BIN=$CACHE/bin/compose-$COMPOSE_VERSION
if [ ! -x "$COMPOSE_BIN/cmd" ]; then
	bg "$CACHE/logs/build-compose.log" "building Compose $COMPOSE_VERSION" \
		build_module_bins "github.com/docker/compose/v5@$COMPOSE_VERSION" "$COMPOSE_BIN" ./cmd
fi
say "Prometheus of docker-compose.yml's version: scripts/promtool.sh --dir"
PROM_BIN=$("$ROOT/scripts/promtool.sh" --dir)
say "Temporal server, schema tool, CLI and Web UI server: scripts/cluster.sh tools"
TBIN=$(nice -n 10 "$ROOT/scripts/cluster.sh" tools)
for b in server sql temporal temporal-ui-server; do [ -x "$TBIN/$b" ] || die "$TBIN/$b missing after cluster.sh tools"; done

base_key=$(echo "bookworm minbase $BASE_PACKAGES" | sha256sum | cut -c1-12)
BASE_TAR=$CACHE/base-$base_key.tar
if [ ! -s "$BASE_TAR" ]; then
	rm -rf "$CACHE"/base-*.tar "$BASE_TAR.tmp"
	# The host's own apt sources: the Debian mirror this machine reaches.
	sources=/etc/apt/sources.list.d/debian.sources
	[ -f "$sources" ] || sources=/etc/apt/sources.list
	bg "$CACHE/logs/mmdebstrap.log" "making the Debian root filesystem (mmdebstrap)" \
		mmdebstrap --variant=minbase --include="$BASE_PACKAGES" \
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' --format=tar bookworm "$BASE_TAR.tmp" "$sources"
	mv "$BASE_TAR.tmp" "$BASE_TAR"
fi

# ---- the engine -----------------------------------------------------------

RUN=$(mktemp -d /tmp/flashsale-compose-smoke.XXXXXX)
export DOCKER_HOST=unix://$RUN/docker.sock DOCKER_CONFIG=$RUN/docker-config
# No buildx here: the classic builder, for docker build and for compose.
export DOCKER_BUILDKIT=0 COMPOSE_BAKE=false
mkdir -p "$DOCKER_CONFIG/cli-plugins"
ln -s "$COMPOSE_BIN/cmd" "$DOCKER_CONFIG/cli-plugins/docker-compose"
had_docker0=0
ip link show docker0 >/dev/null 2>&1 && had_docker0=1
dockerd_pid=
compose() { docker compose -p "$PROJECT" --env-file "$RUN/env" -f "$ROOT/docker-compose.yml" "$@"; }

cleanup() {
	local rc=$?
	set +e
	if [ "$rc" != 0 ] && [ -n "$dockerd_pid" ]; then
		compose ps -a >"$CACHE/logs/last-failure.log" 2>&1
		compose logs --no-color --tail 40 >>"$CACHE/logs/last-failure.log" 2>&1
		say "the stack's state and logs: $CACHE/logs/last-failure.log"
	fi
	if [ "$rc" != 0 ] && [ -n "$dockerd_pid" ] && [ "${SMOKE_KEEP:-}" = 1 ]; then
		say "SMOKE_KEEP=1: the engine and the stack stay up; look with"
		say "  DOCKER_HOST=$DOCKER_HOST DOCKER_CONFIG=$DOCKER_CONFIG docker compose -p $PROJECT -f $ROOT/docker-compose.yml --env-file $RUN/env ps"
		say "  and end it with: kill $dockerd_pid (then rm -rf $RUN)"
		exit "$rc"
	fi
	if [ -n "$dockerd_pid" ]; then
		say "removing the stack (containers, volumes, network)"
		compose down -v --remove-orphans --timeout 20 >"$CACHE/logs/down.log" 2>&1
		# Anything else left by a failed step (build containers).
		docker ps -aq | xargs -r docker rm -f >/dev/null 2>&1
		docker image prune -f >/dev/null 2>&1
		kill "$dockerd_pid" 2>/dev/null
		for _ in $(seq 1 60); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
		kill -9 "$dockerd_pid" 2>/dev/null
	fi
	[ "$had_docker0" = 0 ] && ip link del docker0 2>/dev/null
	rm -rf "$RUN"
	[ "$rc" = 0 ] && say "removed everything it made; cache kept in $CACHE"
	exit "$rc"
}
trap cleanup EXIT

say "starting a private dockerd (socket $RUN/docker.sock, data $CACHE/docker)"
nice -n 10 dockerd --data-root "$CACHE/docker" --exec-root "$RUN/exec" --pidfile "$RUN/dockerd.pid" \
	-H "$DOCKER_HOST" --iptables=false --ip6tables=false --ip-masq=false --ip-forward=false \
	--bip "$BRIDGE_IP" --default-address-pool "base=$ADDRESS_POOL,size=24" \
	--dns "${BRIDGE_IP%/*}" --dns-opt timeout:1 --dns-opt attempts:1 \
	>"$CACHE/logs/dockerd.log" 2>&1 &
dockerd_pid=$!
for i in $(seq 1 120); do
	docker info >/dev/null 2>&1 && break
	kill -0 "$dockerd_pid" 2>/dev/null || die "dockerd exited; see $CACHE/logs/dockerd.log"
	[ "$i" = 120 ] && die "dockerd not answering after 60 s; see $CACHE/logs/dockerd.log"
	sleep 0.5
done
say "engine $(docker version -f '{{.Server.Version}}'), Compose $COMPOSE_VERSION (built from its module)"

# ---- stand-in images --------------------------------------------------------

# key FILE...: a short hash of files' contents.
key() { cat "$@" | sha256sum | cut -c1-16; }
# cached TAG KEY: the image TAG exists and was built from KEY.
cached() { [ "$(docker image inspect -f '{{index .Config.Labels "flashsale.smoke.key"}}' "$1" 2>/dev/null)" = "$2" ]; }
# standin TAG DIR [FILE:NAME...]: build scripts/compose-smoke/DIR with the
# given files copied in, tagged TAG, unless built from the same inputs.
standin() {
	local tag=$1 dir=$2 k ctx f
	shift 2
	local files=("$ROOT/scripts/compose-smoke/$dir"/*)
	for f in "$@"; do files+=("${f%%:*}"); done
	k=$(key "${files[@]}")
	if cached "$tag" "$k"; then
		say "  $tag: cached"
		return 0
	fi
	ctx=$RUN/ctx/$dir
	mkdir -p "$ctx"
	cp -r "$ROOT/scripts/compose-smoke/$dir/." "$ctx/"
	for f in "$@"; do cp -L "${f%%:*}" "$ctx/${f#*:}"; done
	bg "$CACHE/logs/image-$dir.log" "building $tag" docker build --label "flashsale.smoke.key=$k" -t "$tag" "$ctx"
	rm -rf "$ctx"
}

say "stand-in images"
base_env="FLASHSALE_SMOKE_BASE=$base_key"
if ! docker image inspect -f '{{join .Config.Env " "}}' flashsale-smoke/base:bookworm 2>/dev/null | grep -q "$base_env"; then
	bg "$CACHE/logs/import.log" "importing the root filesystem" docker import \
		-c "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" -c "ENV $base_env" \
		"$BASE_TAR" flashsale-smoke/base:bookworm
fi

# golang: the host's toolchain and the module cache of go.mod, with every
# dependency compiled as the Dockerfile compiles it (CGO off, -trimpath).
GO_IMAGE=$(sed -n 's/^FROM \(golang:[^ ]*\).*/\1/p' "$ROOT/Dockerfile")
DISTROLESS_IMAGE=$(sed -n 's/^FROM \(gcr.io\/distroless[^ ]*\).*/\1/p' "$ROOT/Dockerfile")
want_toolchain=$(sed -n 's/.*GOTOOLCHAIN=\(go[0-9.]*\).*/\1/p' "$ROOT/Dockerfile")
gokey=$( (go env GOVERSION && cat "$ROOT/go.mod" "$ROOT/go.sum" "$ROOT/scripts/compose-smoke/golang/Dockerfile") | sha256sum | cut -c1-16)
if cached "$GO_IMAGE" "$gokey"; then
	say "  $GO_IMAGE: cached"
else
	ctx=$RUN/ctx/golang
	mkdir -p "$ctx/warm"
	cp "$ROOT/scripts/compose-smoke/golang/Dockerfile" "$ctx/"
	cp -r "$(go env GOROOT)" "$ctx/go"
	host_proxy=$(go env GOPROXY)
	modfill() {
		cd "$ROOT"
		GOWORK=off GOMODCACHE=$ctx/gomod GOFLAGS=-modcacherw \
			GOPROXY="file://$(go env GOMODCACHE)/cache/download,$host_proxy" go mod download
		# The toolchain the Dockerfile asks for, when it is not this one.
		if [ -n "$want_toolchain" ] && [ "$want_toolchain" != "$(go env GOVERSION)" ]; then
			GOWORK=off GOMODCACHE=$ctx/gomod GOFLAGS=-modcacherw GOPROXY=$host_proxy \
				go mod download "golang.org/toolchain@v0.0.1-$want_toolchain.linux-amd64"
		fi
	}
	bg "$CACHE/logs/gomod.log" "filling the module cache" modfill
	cp "$ROOT/go.mod" "$ROOT/go.sum" "$ctx/warm/"
	(cd "$ROOT" && GOWORK=off go list -deps -f '{{if not .Standard}}{{if not .Module.Main}}{{.ImportPath}}{{end}}{{end}}' \
		./worker ./api ./starter) >"$ctx/warm/packages"
	bg "$CACHE/logs/image-golang.log" "building $GO_IMAGE" docker build --label "flashsale.smoke.key=$gokey" -t "$GO_IMAGE" "$ctx"
	rm -rf "$ctx"
fi
standin "$DISTROLESS_IMAGE" distroless

image_of() { sed -n "s/^ *image: \(${1//\//\\/}:[^ ]*\)$/\1/p" "$ROOT/docker-compose.yml" | head -n 1; }
standin "$(image_of temporalio/server)" temporal-server "$TBIN/server:temporal-server"
standin "$(image_of temporalio/admin-tools)" admin-tools "$TBIN/sql:temporal-sql-tool" "$TBIN/temporal:temporal"
standin "$(image_of temporalio/ui)" ui "$TBIN/temporal-ui-server:ui-server"
standin "$(image_of postgres)" postgres
standin "$(image_of mariadb)" mariadb
standin "$(image_of redis)" redis
standin "$(image_of haproxy)" haproxy
standin "$(image_of prom/prometheus)" prometheus "$PROM_BIN/prometheus:prometheus" "$PROM_BIN/promtool:promtool"
standin "$(image_of grafana/grafana)" grafana

# ---- up ---------------------------------------------------------------------

rand() { openssl rand -hex "$1"; }
cat >"$RUN/env" <<EOF
POSTGRES_PASSWORD=$(rand 16)
MYSQL_ROOT_PASSWORD=$(rand 16)
WEBHOOK_SECRET=$(rand 24)
ADMIN_TOKEN=$(rand 24)
USER_ID_HMAC_KEY=$(rand 24)
BUYER_JWT_SECRET=$(rand 32)
PUBLISH_IP=127.0.0.1
HTTP_PORT=$HTTP_PORT
HAPROXY_STATS_PORT=$STATS_PORT
TEMPORAL_PORT=$TEMPORAL_PORT
UI_PORT=$UI_PORT
PROMETHEUS_PORT=$PROM_PORT
GRAFANA_PORT=$GRAFANA_PORT
REVISION=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
EOF
set -a
# shellcheck disable=SC1091 # made just above
. "$RUN/env"
set +a
API=http://127.0.0.1:$HTTP_PORT

# wait_for WHAT SECONDS CMD...: CMD until it succeeds.
wait_for() {
	local what=$1 secs=$2 t=$SECONDS
	shift 2
	until "$@" >/dev/null 2>&1; do
		[ $((SECONDS - t)) -ge "$secs" ] && die "$what: not after $secs s"
		sleep 2
	done
	say "  $what ($((SECONDS - t)) s)"
}
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$API/readyz")" = 200 ]; }

say "docker compose up -d --build (the Dockerfile builds flashsale:local: minutes when its sources changed)"
up_t=$SECONDS
bg "$CACHE/logs/up.log" "docker compose up" compose up -d --build
wait_for "the API answers /readyz through HAProxy" 300 ready
say "first up: $((SECONDS - up_t)) s"
compose ps --format '{{.Service}} {{.State}} {{.Health}}' | sort | uniq -c | sed 's/^/  /' >&2
[ "$(compose ps --format '{{.State}}' temporal-ui)" = running ] || die "the Web UI container is not running"

# ---- a sale -------------------------------------------------------------------

STARTER=$RUN/starter
(cd "$ROOT" && GOWORK=off go build -o "$STARTER" ./starter)
export BUYER_JWT_SECRET WEBHOOK_SECRET
# The buyer side, one process per buyer: token, then POST /api/v1/orders
# (the same client_order_id again on 429/503, as a client retries).
cat >"$RUN/buy.sh" <<'EOF'
#!/bin/sh
sku=$1 user=$2 api=$3 starter=$4
tok=$("$starter" token --user "$user" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
for _ in 1 2 3 4 5 6 7 8 9 10; do
	out=$(curl -s --max-time 20 -w ' %{http_code}' -H "Authorization: Bearer $tok" \
		-d "{\"client_order_id\":\"$sku-$user\",\"items\":[{\"sku_id\":\"$sku\",\"quantity\":1}]}" "$api/api/v1/orders")
	code=${out##* }
	case $code in 429 | 502 | 503) sleep 0.5 ;; *) break ;; esac
done
echo "$code $(echo "$out" | sed -n 's/.*"order_id":"\([^"]*\)".*/\1/p; s/.*"code":"\([A-Z_]*\)".*/\1/p' | head -n 1)"
EOF
# sell SKU UNITS BUYERS: a SKU of UNITS, BUYERS buyers at once; every
# winner pays by the signed callback; exact counts checked.
sell() {
	local sku=$1 units=$2 buyers=$3 t=$SECONDS out won sold
	out=$(curl -s --max-time 30 -X PUT -H "Authorization: Bearer $ADMIN_TOKEN" \
		-d "{\"total\":$units,\"price\":1000,\"buckets\":4}" "$API/api/v1/admin/skus/$sku")
	echo "$out" | grep -q '"verified":true' || die "SKU $sku not created: $out"
	seq 1 "$buyers" | sed "s/^/u/" | xargs -P 16 -I{} sh "$RUN/buy.sh" "$sku" {} "$API" "$STARTER" >"$RUN/$sku.buys"
	won=$(grep -c '^201 ' "$RUN/$sku.buys" || true)
	sold=$(grep -c '^409 SOLD_OUT' "$RUN/$sku.buys" || true)
	[ "$won" = "$units" ] || die "$sku: $won orders for $units units: $(cut -d' ' -f1,2 "$RUN/$sku.buys" | sed 's/ b-.*//' | sort | uniq -c | tr '\n' ' ')"
	[ $((won + sold)) = "$buyers" ] || die "$sku: answers other than 201 and 409 SOLD_OUT: $(grep -v '^201 \|^409 SOLD_OUT' "$RUN/$sku.buys" | sort | uniq -c | head)"
	say "  $sku: $won of $buyers buyers won a unit, $sold told SOLD_OUT ($((SECONDS - t)) s)"
	t=$SECONDS
	grep '^201 ' "$RUN/$sku.buys" | cut -d' ' -f2 |
		xargs -P 8 -I{} "$STARTER" pay --order {} --txn "txn-{}" --amount 1000 --via-api "$API" >"$RUN/$sku.pays"
	[ "$(grep -c '"status":"PAID"' "$RUN/$sku.pays")" = "$units" ] ||
		die "$sku: $(grep -c '"status":"PAID"' "$RUN/$sku.pays") of $units payments PAID: $(grep -v PAID "$RUN/$sku.pays" | head -3)"
	say "  $sku: $units orders paid by signed callback ($((SECONDS - t)) s)"
}
# check SKU UNITS: `starter check` inside the stack (an api container, its
# environment) clean, the SKU sold out in MySQL and Redis.
check_ok() {
	local out
	out=$(compose exec -T api starter check --sku "$1" 2>&1) || return 1
	echo "$out" | jq -e --argjson u "$2" '.ok and (.skus[0].sold == $u) and (.skus[0].available == 0) and (.skus[0].redis.drift == 0)' >/dev/null
}
check() {
	wait_for "starter check --sku $1 in the stack: ok, $2 sold, nothing left, no drift" 120 check_ok "$1" "$2"
}

say "sale 1: $UNITS units, $BUYERS buyers, through HAProxy"
sell smoke1 "$UNITS" "$BUYERS"
check smoke1 "$UNITS"

# ---- the Web UI, Prometheus -----------------------------------------------------

UI=http://127.0.0.1:$UI_PORT
curl -sf --max-time 10 "$UI/api/v1/settings" | grep -q '"DefaultNamespace":"default"' || die "Web UI settings: $(curl -s "$UI/api/v1/settings")"
curl -sf --max-time 10 "$UI/" | grep -qi '<html' || die "the Web UI serves no page"
ui_orders() {
	curl -s --max-time 10 -G "$UI/api/v1/namespaces/default/workflows" \
		--data-urlencode 'query=SkuIds="smoke1" AND OrderStatus="PAID"' | jq '.executions | length'
}
some_ui_orders() { [ "$(ui_orders)" -gt 0 ]; }
wait_for "the Web UI lists the sale's PAID orders" 60 some_ui_orders
say "  Web UI: page, settings (namespace default), $(ui_orders) PAID orders of smoke1 on its first page"

# targets JOB COUNT: Prometheus scrapes COUNT instances of JOB, all up.
targets_up() {
	curl -s --max-time 10 "http://127.0.0.1:$PROM_PORT/api/v1/targets" |
		jq -e --arg j "$1" --argjson n "$2" '[.data.activeTargets[] | select(.labels.job == $j)] | (length == $n) and all(.health == "up")' >/dev/null
}
scraped() { targets_up flashsale-api "$1" && targets_up flashsale-worker "$2"; }
wait_for "Prometheus: 2 api and 2 worker targets up" 90 scraped 2 2
curl -sf --max-time 10 "http://127.0.0.1:$GRAFANA_PORT/api/health" >/dev/null || die "the Grafana stand-in does not answer"

# ---- scale ---------------------------------------------------------------------

say "scaling to 4 APIs and 3 workers"
bg "$CACHE/logs/scale.log" "docker compose up --scale api=4 --scale worker=3" compose up -d --no-build --scale api=4 --scale worker=3
# HAProxy's stats (CSV): api servers UP, and each one's request total.
backends() { curl -s --max-time 5 "http://127.0.0.1:$STATS_PORT/;csv" | awk -F, '$1 == "apis" && $2 != "BACKEND" && $18 == "UP" {print $2, $8}'; }
four_up() { [ "$(backends | wc -l)" = 4 ]; }
wait_for "HAProxy: 4 APIs UP" 120 four_up
before=$(backends)
for _ in $(seq 1 40); do curl -s -o /dev/null --max-time 5 "$API/readyz"; done
after=$(backends)
busy=0
while read -r name total; do
	old=$(echo "$before" | awk -v n="$name" '$1 == n {print $2}')
	[ "$total" -gt "${old:-0}" ] && busy=$((busy + 1))
done <<<"$after"
[ "$busy" = 4 ] || die "40 requests reached $busy of 4 APIs: $after"
say "  40 requests spread over all 4 APIs"
wait_for "Prometheus: 4 api and 3 worker targets up" 120 scraped 4 3

# ---- stop, start, sell again ----------------------------------------------------

say "docker compose stop, then start"
bg "$CACHE/logs/stop.log" "docker compose stop" compose stop
start_t=$SECONDS
bg "$CACHE/logs/start.log" "docker compose start" compose start
wait_for "the API answers /readyz again" 300 ready
say "restart: $((SECONDS - start_t)) s to a ready API"
cluster_whole() {
	local n
	for n in 1 2 3 4 5 6; do
		compose exec -T "redis-$n" redis-cli cluster info | grep -q 'cluster_state:ok' || return 1
	done
	! compose exec -T redis-1 redis-cli cluster nodes | grep -q 'noaddr\|fail'
}
wait_for "Redis Cluster: every node ok, no node without an address" 60 cluster_whole
# Redis came back empty; the reconcile job (--now) refills it from MySQL.
check smoke1 "$UNITS"
out=$(sh "$RUN/buy.sh" smoke1 late-buyer "$API" "$STARTER")
[ "$out" = "409 SOLD_OUT" ] || die "a buyer of the sold-out SKU after the restart got: $out"
say "sale 2: 100 units, 150 buyers, after the restart"
sell smoke2 100 150
check smoke2 100

say "PASS: up $((SECONDS - up_t)) s ago; whole smoke $((SECONDS - T0)) s"
