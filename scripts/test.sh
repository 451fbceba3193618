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
go vet ./...

if ! command -v docker-compose >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	apt-get install -y -qq docker-compose >/dev/null 2>&1 || true
fi
if command -v docker-compose >/dev/null 2>&1; then
	# No Docker engine here: the compose file is validated, not run.
	docker-compose -f docker-compose.yml config --quiet
else
	echo "test: docker-compose not installed; skipping compose validation (apt-get install docker-compose)" >&2
fi

# internal/httpapi's sale page test drives a real headless Chromium (Debian's); without it
# that test fails with the command to install it.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } || true
fi

# -p 2: packages share one Temporal dev server on 2 cores; more parallel
# packages only add contention.
go test -race -count=1 -p 2 -timeout 20m ./...
