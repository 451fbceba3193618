#!/usr/bin/env bash
# The scale-out suite (issue 9): flash sales through HAProxy on the process
# topology of scripts/cluster.sh (brought up first if needed), one node
# lost or restarted per case, then every order settled and `starter check`
# clean. Behind the "scaleout" build tag, so CI's go test ./... does not run
# it. The cluster stays up afterwards (scripts/cluster.sh down stops it).
# Extra arguments go to go test, e.g.
#   scripts/scaleout.sh -run 'TestScaleOut/b_'
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp -t flashsale-scaleout.XXXXXX)
trap 'rm -f "$log"' EXIT
status=0
go test -tags scaleout -count=1 -v -timeout 60m "$@" ./lab/scaleout/ 2>&1 | tee "$log" || status=$?
echo
# The table TestMain prints, repeated at the end where it is easy to find.
sed -n '/^scale-out summary:/,$p' "$log" | grep -v '^\(PASS\|FAIL\|ok \)' || true
exit "$status"
