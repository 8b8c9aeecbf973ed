#!/bin/sh
# Run by the postgres image on its first start (an empty data directory), as its superuser, in
# POSTGRES_DB: creates the roles of docs/roles.sql (mounted at ROLES_SQL) and sets the passwords
# of the three that log in from INSIGHTS_OWNER_PASSWORD, INSIGHTS_SYNC_PASSWORD and
# INSIGHTS_SERVE_PASSWORD. docker-compose.yml mounts this directory at /docker-entrypoint-initdb.d.
# The passwords go through psql's \getenv: never on a command line, never in a log.
set -eu

: "${INSIGHTS_OWNER_PASSWORD:?set INSIGHTS_OWNER_PASSWORD}"
: "${INSIGHTS_SYNC_PASSWORD:?set INSIGHTS_SYNC_PASSWORD}"
: "${INSIGHTS_SERVE_PASSWORD:?set INSIGHTS_SERVE_PASSWORD}"

psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -f "${ROLES_SQL:-/insights/roles.sql}"

psql -v ON_ERROR_STOP=1 --no-psqlrc --quiet --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
\getenv owner_password INSIGHTS_OWNER_PASSWORD
\getenv sync_password INSIGHTS_SYNC_PASSWORD
\getenv serve_password INSIGHTS_SERVE_PASSWORD
alter role insights_owner password :'owner_password';
alter role insights_sync password :'sync_password';
alter role insights_serve password :'serve_password';
SQL
