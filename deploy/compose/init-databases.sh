#!/bin/sh
# Runs once, when the PostgreSQL volume is empty: each service gets its own database.
set -eu
for db in gallery platform; do
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -c "CREATE DATABASE $db"
done
