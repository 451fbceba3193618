#!/usr/bin/env bash
# The same sale measured on the dev-server topology and on the cluster
# topology in one run (issue 9): orders/s, the reservation answer's p50/p99,
# CPU per order of the Temporal server (and PostgreSQL) from /proc/<pid>/stat.
# scaleout/sidebyside_test.go; brings the cluster up first (scripts/cluster.sh
# up) and starts its own private dev server. Heavy: run it alone, e.g.
#   flock /tmp/flashsale-heavy.lock scripts/sidebyside.sh
# SBS_UNITS and SBS_BUYERS size the sale (default 300 units, 1500 buyers).
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test -tags scaleout -count=1 -v -timeout 30m -run '^TestSideBySide$' ./lab/scaleout/
