#!/usr/bin/env bash
# Starts a Temporal dev server (frontend :7233, Web UI :8233) tuned for this
# project, unless one already answers on :7233. Installs the CLI from the Go
# module proxy on first use (no binary downloads here; ~3 minutes on 2 cores).
#
# Why the flags:
#   --search-attribute ...            OrderStatus, UserId, SkuIds: the order
#                                     workflow sets them; unregistered ones
#                                     fail its workflow tasks.
#   history.transferProcessorMaxPollRPS=1000
#                                     the default (20) adds ~50 ms at every task
#                                     hand-off; Update-with-Start answers in
#                                     ~35 ms instead of ~245 ms.
#   system.forceSearchAttributesCacheRefreshOnRead=false
#                                     the dev server forces it on: every
#                                     search-attribute lookup reads the database.
#   system.enableActivityEagerExecution=true
#                                     an activity starts inside the workflow
#                                     task's completion (one round trip fewer).
#   matching.numTaskqueue{Read,Write}Partitions=1
#                                     one worker, few pollers: no forwarding or
#                                     spilling between 4 partitions.
#   history.hostLevelCacheMaxSize, history.eventsCacheMaxSizeBytes
#                                     15 minutes of open orders stay in memory.
#   (each measured A/B by `starter bench`: README, "The dev server settings")
#   sqlite journal_mode=wal, synchronous=normal
#                                     2-3x the workflow throughput of the
#                                     default rollback journal with fsync.
# TEMPORAL_DB_FILE=path keeps history on disk (survives a restart); unset,
# the server runs in memory.
set -euo pipefail

TEMPORAL_CLI_VERSION=v1.5.1
PORT=${TEMPORAL_PORT:-7233}
UI_PORT=${TEMPORAL_UI_PORT:-8233}
LOG=${TEMPORAL_LOG:-/tmp/flashsale-temporal.log}

temporal_bin() {
	if command -v temporal >/dev/null 2>&1; then command -v temporal; return; fi
	local gobin
	gobin=$(go env GOBIN); [ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
	if [ ! -x "$gobin/temporal" ]; then
		echo "building the Temporal CLI $TEMPORAL_CLI_VERSION from the Go module proxy (first run only, ~3 min)..." >&2
		GOFLAGS= go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION" >&2
	fi
	echo "$gobin/temporal"
}

up() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

if up; then
	echo "temporal: already running on :$PORT" >&2
	exit 0
fi

BIN=$(temporal_bin)
args=(server start-dev --ip 127.0.0.1 --port "$PORT" --ui-port "$UI_PORT" --log-level warn
	--search-attribute OrderStatus=Keyword
	--search-attribute UserId=Keyword
	--search-attribute SkuIds=KeywordList
	--dynamic-config-value history.transferProcessorMaxPollRPS=1000
	--dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=false
	--dynamic-config-value system.enableActivityEagerExecution=true
	--dynamic-config-value matching.numTaskqueueReadPartitions=1
	--dynamic-config-value matching.numTaskqueueWritePartitions=1
	--dynamic-config-value history.hostLevelCacheMaxSize=131072
	--dynamic-config-value history.eventsCacheMaxSizeBytes=67108864
	--sqlite-pragma journal_mode=wal
	--sqlite-pragma synchronous=normal)
if [ -n "${TEMPORAL_DB_FILE:-}" ]; then args+=(--db-filename "$TEMPORAL_DB_FILE"); fi

# 3-9 closed: the server must not keep a caller's lock for its whole life
# (`flock /tmp/flashsale-heavy.lock scripts/test.sh` hands it on as fd 3).
# setsid: its own session and process group, so a signal to the caller's
# group (a job stopped with kill -- -PGID, a Ctrl-C) does not take it down
# too, without a line in its log.
setsid nohup "$BIN" "${args[@]}" >"$LOG" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
echo "temporal: starting (pid $!, log $LOG)" >&2
for _ in $(seq 1 120); do
	if up && "$BIN" operator namespace describe --address "127.0.0.1:$PORT" -n default >/dev/null 2>&1; then
		echo "temporal: ready on :$PORT, Web UI http://127.0.0.1:$UI_PORT" >&2
		exit 0
	fi
	sleep 0.5
done
echo "temporal: did not become ready; last log lines:" >&2
tail -20 "$LOG" >&2
exit 1
