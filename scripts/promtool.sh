#!/usr/bin/env bash
# promtool of the Prometheus version docker-compose.yml deploys
# (prom/prometheus:vX.Y.Z), built with that Prometheus from the module proxy
# on first use (Debian's promtool is 2.42; range-window edges count
# differently from 3.0 on, so the rule tests must run on the deployed one).
#
#   scripts/promtool.sh ARGS...   run it (e.g. test rules alerts_test.yml)
#   scripts/promtool.sh --dir     build if missing; print the directory that
#                                 holds prometheus and promtool
#
# Cached in $FLASHSALE_CACHE/prometheus-X.Y.Z (default /var/cache/flashsale);
# the first build takes 3-8 minutes on 2 cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${FLASHSALE_CACHE:-/var/cache/flashsale}
V=$(sed -n 's/^ *image: prom\/prometheus:v\([0-9]*\.[0-9]*\.[0-9]*\)$/\1/p' "$ROOT/docker-compose.yml")
[ -n "$V" ] || {
	echo "promtool.sh: no prom/prometheus:vX.Y.Z image in docker-compose.yml" >&2
	exit 1
}
# Prometheus 3.x is published to the module proxy as v0.MMM.P: 3.5.0 = v0.305.0.
IFS=. read -r major minor patch <<<"$V"
MODULE_VERSION=v0.$((major * 100 + minor)).$patch
DIR=$CACHE/prometheus-$V

if [ ! -x "$DIR/promtool" ]; then
	mkdir -p "$CACHE"
	exec 8>"$CACHE/.prometheus-build.lock"
	flock 8
	if [ ! -x "$DIR/promtool" ]; then
		echo "promtool.sh: building Prometheus and promtool $V ($MODULE_VERSION) from the module proxy (first use: 3-8 min)" >&2
		t=$SECONDS
		# Inside the module's own source: its go.mod has replace directives,
		# which `go install pkg@version` refuses.
		src=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "github.com/prometheus/prometheus@$MODULE_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		[ -d "$src" ] || {
			echo "promtool.sh: go mod download github.com/prometheus/prometheus@$MODULE_VERSION failed" >&2
			exit 1
		}
		work=$(mktemp -d "$CACHE/.prometheus-src.XXXXXX")
		trap 'rm -rf "$work"' EXIT
		cp -r "$src/." "$work/"
		chmod -R u+w "$work"
		mkdir -p "$work/out"
		(cd "$work" && GOWORK=off nice -n 10 go build -trimpath \
			-ldflags "-X github.com/prometheus/common/version.Version=$V -X github.com/prometheus/common/version.Revision=$MODULE_VERSION" \
			-o out/ ./cmd/prometheus ./cmd/promtool) >&2
		rm -rf "$DIR"
		mv "$work/out" "$DIR"
		echo "promtool.sh: built $DIR in $((SECONDS - t)) s" >&2
	fi
fi
if [ "${1:-}" = --dir ]; then
	echo "$DIR"
	exit 0
fi
exec "$DIR/promtool" "$@"
