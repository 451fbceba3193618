#!/bin/sh
# Creates and migrates Temporal's two PostgreSQL databases, for both
# deployments: scripts/cluster.sh runs it with the schema tool it built
# (go.temporal.io/server/cmd/tools/sql), docker-compose.yml's
# temporal-schema job with temporalio/admin-tools' temporal-sql-tool.
# Idempotent, so it runs on every start (schema tool v1.29.1):
# create-database ignores an existing database, setup-schema -v 0.0 only
# creates the version tables when missing and leaves a newer version alone,
# update-schema applies only versions newer than the database's. Any failure
# stops it (set -e): the server must never start on a half-made schema.
#
# Environment: SQL_TOOL (temporal-sql-tool), TEMPORAL_SQL_HOST, TEMPORAL_SQL_PORT,
# TEMPORAL_SQL_USER, TEMPORAL_SQL_PASSWORD, TEMPORAL_DB, TEMPORAL_VISIBILITY_DB
# (the same names deploy/temporal/config/flashsale.yaml reads).
set -eu

: "${SQL_TOOL:=temporal-sql-tool}"
: "${TEMPORAL_SQL_HOST:=127.0.0.1}"
: "${TEMPORAL_SQL_PORT:=5432}"
: "${TEMPORAL_SQL_USER:=postgres}"
: "${TEMPORAL_DB:=temporal}"
: "${TEMPORAL_VISIBILITY_DB:=temporal_visibility}"
# The schema tool reads the password from SQL_PASSWORD, never from argv.
SQL_PASSWORD=${TEMPORAL_SQL_PASSWORD:-}
export SQL_PASSWORD

sqltool() {
	"$SQL_TOOL" --plugin postgres12 --ep "$TEMPORAL_SQL_HOST" -p "$TEMPORAL_SQL_PORT" -u "$TEMPORAL_SQL_USER" "$@"
}

# PostgreSQL may still be starting (compose starts this job once its health
# check passes, but a restart of the database can race it): 60 tries.
i=0
until sqltool --db postgres create-database >/dev/null 2>&1 || [ "$i" -ge 60 ]; do
	i=$((i + 1))
	echo "setup-schema: PostgreSQL $TEMPORAL_SQL_HOST:$TEMPORAL_SQL_PORT not answering yet ($i/60)"
	sleep 1
done

for db in "$TEMPORAL_DB" "$TEMPORAL_VISIBILITY_DB"; do
	schema=postgresql/v12/temporal
	[ "$db" = "$TEMPORAL_VISIBILITY_DB" ] && schema=postgresql/v12/visibility
	echo "setup-schema: $db ($schema)"
	sqltool --db "$db" create-database
	sqltool --db "$db" setup-schema -v 0.0
	# --schema-name: the schemas embedded in the tool, so the tool and the
	# schema it applies always have the same version.
	sqltool --db "$db" update-schema --schema-name "$schema"
done
echo "setup-schema: done"
