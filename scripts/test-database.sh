#!/usr/bin/env bash
# A PostgreSQL server on loopback for the cluster tests (issue 16): installs
# the Debian package when it is missing, starts the default cluster, creates
# the test role and database, and prints the line to eval:
#   eval "$(scripts/test-database.sh)"   # sets CUZK_TEST_DATABASE_URL (and
#                                        # CUZK_TEST_DATABASE_RESTART, for the restart test)
# Everything but the export goes to stderr.
set -euo pipefail
exec 3>&1 1>&2

if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  echo "installing postgresql (Debian package)"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q postgresql
fi

version=$(ls /usr/lib/postgresql | sort -V | tail -1)
if command -v pg_lsclusters >/dev/null && ! pg_lsclusters -h | grep -q "^$version main"; then
  pg_createcluster "$version" main 3>&-
fi
if ! pg_lsclusters -h | grep -q "^$version main .* online"; then
  # The server must not hold the caller's stdout (fd 3) open, or $(...) never ends.
  pg_ctlcluster "$version" main start 3>&- </dev/null
fi

as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi; }
for _ in $(seq 1 30); do
  as_postgres pg_isready -q -h 127.0.0.1 && break
  sleep 1
done
as_postgres psql -q -h 127.0.0.1 -v ON_ERROR_STOP=1 -c \
  "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cuzk') THEN CREATE ROLE cuzk LOGIN PASSWORD 'cuzk'; END IF; END \$\$;" \
  2>/dev/null || as_postgres psql -q -v ON_ERROR_STOP=1 -c \
  "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cuzk') THEN CREATE ROLE cuzk LOGIN PASSWORD 'cuzk'; END IF; END \$\$;"
if ! as_postgres psql -tA -c "SELECT 1 FROM pg_database WHERE datname = 'cuzk_test'" | grep -q 1; then
  as_postgres createdb -O cuzk cuzk_test
fi
echo "PostgreSQL $version on 127.0.0.1:5432, database cuzk_test"
echo "export CUZK_TEST_DATABASE_URL=postgres://cuzk:cuzk@127.0.0.1:5432/cuzk_test" >&3
# How the restart test restarts the server (the server again kept off fd 3).
echo "export CUZK_TEST_DATABASE_RESTART='pg_ctlcluster $version main restart </dev/null'" >&3
