#!/usr/bin/env bash
# The fault-injection suite (issue 5): flash sales through the HTTP API with
# real worker and API processes and private Redis, Temporal and MariaDB
# instances (the shared services are never touched), one fault per case,
# then the invariant checker. Behind the "faults" build tag, so CI's
# go test ./... does not run it.
#
#   scripts/faults.sh [--loaded] [go test arguments]
#
# --loaded keeps every core busy with a busy-loop process for the whole run
# (FAULTS_CPU_LOAD), so the suite proves it holds on a machine doing
# something else too. Extra arguments go to go test, e.g.
#   scripts/faults.sh --loaded -count 3
#   scripts/faults.sh -run 'TestFaults/1_'
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--loaded" ]; then
	shift
	export FAULTS_CPU_LOAD="$(nproc)"
fi

log=$(mktemp -t flashsale-faults.XXXXXX)
trap 'rm -f "$log"' EXIT
status=0
go test -tags faults -count=1 -v -timeout 90m "$@" ./lab/faults/ 2>&1 | tee "$log" || status=$?
echo
# The table TestMain prints, repeated at the end where it is easy to find.
sed -n '/^fault-injection summary/,$p' "$log" | grep -v '^\(PASS\|FAIL\|ok \)' || true
exit "$status"
