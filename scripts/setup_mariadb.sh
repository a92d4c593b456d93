#!/usr/bin/env bash
# The MariaDB server the `mysql` tests and the MariaDB benchmarks start as a throwaway process
# (workloads/mariadb.py: its own data folder under /tmp, 127.0.0.1, a free port). Only the
# binaries are needed: Debian's mariadb-server (Debian 12 has no mysql-server). No service is
# started or enabled here. Idempotent and quick when installed. Skipped with CADET_SETUP_MARIADB=0.
# PyMySQL, the driver, is a Python dependency (pyproject.toml, extras "mysql" and "dev").
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${CADET_SETUP_MARIADB:-1}" = "1" ] || exit 0
source scripts/env.sh
if ! { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; }; then
  apt_install setup_mariadb mariadb-server
fi
# The compiled drivers the `mysql` tests also run (tests/db/test_mysql_drivers.py): mysqlclient
# (MySQLdb) and MariaDB Connector/Python (refused by the runner, tested as refused) build
# against MariaDB's client library (Debian libmariadb-dev, found through pkg-config, with a C
# compiler).
if ! "$PY" -c "import MySQLdb, mariadb" >/dev/null 2>&1; then
  need=()
  dpkg -s libmariadb-dev >/dev/null 2>&1 || need+=(libmariadb-dev)
  command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
  command -v cc >/dev/null 2>&1 || need+=(build-essential)
  if [ ${#need[@]} -gt 0 ]; then apt_install setup_mariadb "${need[@]}"; fi
  pip_install mysql-drivers "MySQLdb, mariadb" mysqlclient mariadb
fi
