#!/usr/bin/env bash
# The whole test suite: starts missing services, checks formatting, vet and
# the compose file, then runs every test against the real services.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/services.sh
scripts/redis-cluster.sh up # internal/clustertest: 3 masters + 3 replicas on 7001-7006, seconds when already up

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# Tests that need live services carry the integration build tag, so a bare
# `go test ./...` is the fast inner loop; this script runs every test. The
# fault and scale-out suites have tags of their own: vetted here, run by
# scripts/faults.sh and scripts/scaleout.sh (the smoke below).
go vet -tags integration ./... ./lab/...
go vet -tags faults ./lab/faults/
go vet -tags scaleout ./lab/scaleout/

# The lint gate (samples-go's Makefile): go.mod must match the imports,
# staticcheck over everything, errcheck (no error dropped unless
# scripts/errcheck.exclude says why losing it loses nothing), and
# workflowcheck proves workflows/ calls nothing non-deterministic
# (time.Now, goroutines, map ranges, global state). Pinned versions, built
# from the module proxy on first use.
echo "test: lint (go mod tidy -diff, staticcheck, errcheck, workflowcheck)" >&2
GOWORK=off go mod tidy -diff
(cd lab && GOWORK=off go mod tidy -diff)
(cd internal/devstack/mysqld && GOWORK=off go mod tidy -diff)
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags integration ./... ./lab/...
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags faults,scaleout ./lab/faults/ ./lab/scaleout/
go run github.com/kisielk/errcheck@v1.30.0 -exclude scripts/errcheck.exclude -tags integration ./... ./lab/...
go run github.com/kisielk/errcheck@v1.30.0 -exclude scripts/errcheck.exclude -tags faults,scaleout ./lab/faults/ ./lab/scaleout/
go run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 ./workflows/...

# docker-compose validates docker-compose.yml (no Docker engine runs here:
# the file is checked, not run; deploy/deploy_test.go checks it runs the
# files scripts/cluster.sh runs) and HAProxy runs the cluster topology's
# load balancer. Installed when missing; a machine that cannot install them
# fails here instead of skipping the checks.
need=()
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
command -v haproxy >/dev/null 2>&1 || need+=(haproxy)
# lab/bench drives the API with wrk beside its own load generator.
command -v wrk >/dev/null 2>&1 || need+=(wrk)
# promtool (Debian's prometheus package; the service is never started here)
# checks deploy/prometheus/ and runs its rule tests.
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
	echo "test: installing ${need[*]} (apt-get)" >&2
	# --no-install-recommends: docker-compose alone, not a Docker engine.
	{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >/tmp/flashsale-apt.log 2>&1 || {
		echo "test: apt-get install ${need[*]} failed; see /tmp/flashsale-apt.log" >&2
		exit 1
	}
fi
compose_env=$(mktemp)
cluster_started=0
cleanup() {
	rm -f "$compose_env"
	# The smoke's topology goes down with the run, whatever happened, unless
	# it was already up before (a developer's own cluster stays).
	if [ "$cluster_started" = 1 ]; then scripts/cluster.sh down || true; fi
}
trap cleanup EXIT
# Throwaway values for the ${VAR:?...} secrets, so that config can render.
printf '%s\n' POSTGRES_PASSWORD=x MYSQL_ROOT_PASSWORD=x WEBHOOK_SECRET=x ADMIN_TOKEN=x USER_ID_HMAC_KEY=x >"$compose_env"
docker-compose --env-file "$compose_env" -f docker-compose.yml config --quiet
echo "test: docker-compose.yml valid" >&2
# The alerts and recording rules on synthetic series, with the promtool of
# the Prometheus docker-compose.yml deploys (scripts/promtool.sh builds it
# from the module proxy on first use; Debian's 2.42 counts range-window
# edges differently). deploy/rules_test.go runs the same with $PROMTOOL, and
# checks every alert has a runbook section and cases.
PROMTOOL=$(scripts/promtool.sh --dir)/promtool
export PROMTOOL
(cd deploy/prometheus && "$PROMTOOL" check config prometheus.yml >/dev/null &&
	"$PROMTOOL" check rules recording.rules.yml alerts.rules.yml >/dev/null &&
	"$PROMTOOL" test rules recording_test.yml alerts_test.yml >/dev/null)
echo "test: deploy/prometheus rules valid, promtool tests passed ($("$PROMTOOL" --version 2>&1 | head -n 1))" >&2

# internal/httpapi's sale page test drives a real headless Chromium (Debian's); without it
# that test fails with the command to install it.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } || true
fi

# -p 2: packages share one Temporal dev server on 2 cores; more parallel
# packages only add contention.
go test -tags integration -race -count=1 -p 2 -timeout 20m ./...
# The lab (its own module, lab/): the benchmark's, crowds' and fairness
# simulator's own tests. Its fault and scale-out suites run by
# scripts/faults.sh and scripts/scaleout.sh; the smoke below is one of them.
(cd lab && go test -tags integration -count=1 -timeout 20m ./...)

# A short smoke of the cluster topology (issue 9): scripts/cluster.sh up
# (Temporal as five processes on PostgreSQL, the Redis Cluster, two workers,
# two APIs, HAProxy; the first up builds the Temporal server: 4-10 minutes
# on 2 cores, seconds once built), then one small sale through HAProxy with
# every order settled and `starter check` clean (scaleout/smoke_test.go),
# then down (by the trap above).
if [ -z "$(psql -h 127.0.0.1 -U postgres -Atqc 'select 1' 2>/dev/null)" ]; then
	echo "test: starting PostgreSQL for the cluster smoke" >&2
	pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
fi
if ! scripts/cluster.sh ps | grep -q '^temporal-frontend .* up '; then cluster_started=1; fi
smoke_start=$(date +%s)
echo "test: cluster smoke (scripts/cluster.sh up, then one sale through HAProxy)" >&2
# This checkout's worker, api and starter: binaries an earlier up built
# (from another checkout, or before these changes) are not what is tested.
scripts/cluster.sh build
go test -tags scaleout -count=1 -v -timeout 40m -run '^TestSmoke$' ./lab/scaleout/
echo "test: cluster smoke passed in $(($(date +%s) - smoke_start)) s" >&2

# docker-compose.yml itself, unchanged, on a private Docker engine with
# stand-in images built offline (docs/deploy.md, "The compose smoke"): up,
# a sale through HAProxy paid by signed callbacks, `starter check` in the
# stack, the Web UI and Prometheus targets, --scale, stop/start, a second
# sale, then everything it made removed. First run about 20 min on this
# machine (30-40 on a fresh one: builds, cached under /var/cache/flashsale),
# warm 5 min.
# The process cluster goes down first (2 cores): it is done with.
if [ "$cluster_started" = 1 ]; then
	scripts/cluster.sh down || true
	cluster_started=0
fi
echo "test: compose smoke (scripts/compose-smoke.sh)" >&2
compose_start=$(date +%s)
scripts/compose-smoke.sh
echo "test: compose smoke passed in $(($(date +%s) - compose_start)) s" >&2
