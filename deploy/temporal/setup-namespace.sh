#!/bin/sh
# Registers flashsale's namespace and the order workflow's search attributes,
# for both deployments: scripts/cluster.sh runs it after starting the
# Temporal services, docker-compose.yml's temporal-setup job (image
# temporalio/admin-tools) after the frontend is healthy. Waits for the
# frontend and for the namespace to be served, and fails loudly: a missing
# attribute would turn every buy into a 500, so nothing here ends in || true.
# Idempotent: what exists already is left alone.
#
# Environment: TEMPORAL_CLI (temporal), TEMPORAL_ADDRESS (127.0.0.1:7233),
# TEMPORAL_NAMESPACE (default), NAMESPACE_RETENTION (72h), SEARCH_ATTRIBUTES
# (the file of "Name Type" lines: deploy/temporal/search-attributes),
# SETUP_WAIT_SECONDS (120: each wait below ends that many seconds after it
# began, whatever the frontend does; every CLI call is cut off at the
# deadline, so one that connects and never answers cannot stretch it).
set -eu

: "${TEMPORAL_CLI:=temporal}"
: "${TEMPORAL_ADDRESS:=127.0.0.1:7233}"
: "${TEMPORAL_NAMESPACE:=default}"
: "${NAMESPACE_RETENTION:=72h}"
: "${SEARCH_ATTRIBUTES:=$(dirname "$0")/search-attributes}"
: "${SETUP_WAIT_SECONDS:=120}"

say() { echo "setup-namespace: $*" >&2; }
die() {
	say "error: $*"
	exit 1
}
# t ARGS: one CLI call, killed after CALL_SECONDS (10, or what is left of
# the current wait when less).
CALL_SECONDS=10
t() { timeout "$CALL_SECONDS" "$TEMPORAL_CLI" --address "$TEMPORAL_ADDRESS" "$@"; }
now() { date +%s; }

[ -r "$SEARCH_ATTRIBUTES" ] || die "cannot read the search attribute list $SEARCH_ATTRIBUTES"
# "Name Type" lines, comments and blank lines skipped.
want=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$SEARCH_ATTRIBUTES")
[ -n "$want" ] || die "$SEARCH_ATTRIBUTES lists no search attribute"

# retry WHAT CMD...: CMD until it succeeds, about once a second, until
# SETUP_WAIT_SECONDS have passed; then the last error, and exit 1.
retry() {
	what=$1
	shift
	deadline=$(($(now) + SETUP_WAIT_SECONDS))
	n=0
	while :; do
		left=$((deadline - $(now)))
		[ "$left" -gt 0 ] || die "$what: still failing after ${SETUP_WAIT_SECONDS}s: ${out:-no answer}"
		CALL_SECONDS=$((left < 10 ? left : 10))
		out=""
		out=$("$@" 2>&1) && break
		[ -n "$out" ] || out="no answer within ${CALL_SECONDS}s"
		n=$((n + 1))
		[ $((n % 10)) = 1 ] && say "waiting: $what ($out)"
		sleep 1
	done
	CALL_SECONDS=10
}

retry "frontend $TEMPORAL_ADDRESS SERVING" t operator cluster health
if ! t operator namespace describe -n "$TEMPORAL_NAMESPACE" >/dev/null 2>&1; then
	say "creating namespace $TEMPORAL_NAMESPACE (retention $NAMESPACE_RETENTION)"
	if ! out=$(t operator namespace create -n "$TEMPORAL_NAMESPACE" --retention "$NAMESPACE_RETENTION" 2>&1); then
		# Two setups at once (or a retried job): the other one made it.
		echo "$out" | grep -qi "already" || die "namespace create: $out"
	fi
fi
# A new namespace reaches every frontend's cache within ~10 s; until then it
# is "not found" to some calls.
retry "namespace $TEMPORAL_NAMESPACE served" t operator namespace describe -n "$TEMPORAL_NAMESPACE"

# missing: the "Name Type" lines of $want not yet listed.
missing() {
	retry "search-attribute list" t operator search-attribute list -n "$TEMPORAL_NAMESPACE"
	list=$out
	echo "$want" | while read -r name type; do
		echo "$list" | grep -qw -- "$name" || echo "$name $type"
	done
}

todo=$(missing)
if [ -n "$todo" ]; then
	set --
	while read -r name type; do
		set -- "$@" --name "$name" --type "$type"
	done <<EOT
$todo
EOT
	say "creating search attributes: $(echo "$todo" | tr '\n' ' ')"
	if ! out=$(t operator search-attribute create -n "$TEMPORAL_NAMESPACE" "$@" 2>&1); then
		echo "$out" | grep -qi "already" || die "search-attribute create: $out"
	fi
	listed_by=$(($(now) + SETUP_WAIT_SECONDS))
	while :; do
		# An assignment, not a loop condition: set -e stops here if missing fails.
		todo=$(missing)
		[ -z "$todo" ] && break
		[ "$(now)" -ge "$listed_by" ] && die "search attributes not listed ${SETUP_WAIT_SECONDS}s after creating them: $todo"
		sleep 1
	done
fi
say "namespace $TEMPORAL_NAMESPACE has every search attribute of $SEARCH_ATTRIBUTES"
