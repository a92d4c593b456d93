#!/usr/bin/env bash
# The MariaDB server the `mysql` tests and the MariaDB benchmarks start as a throwaway process
# (workloads/mariadb.py: its own data folder under /tmp, 127.0.0.1, a free port). Only the
# binaries are needed: Debian's mariadb-server (Debian 12 has no mysql-server). No service is
# started or enabled here. Idempotent and quick when installed. Skipped with CADET_SETUP_MARIADB=0.
# PyMySQL, the driver, is a Python dependency (pyproject.toml, extras "mysql" and "dev").
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${CADET_SETUP_MARIADB:-1}" = "1" ] || exit 0
if command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
echo "setup_mariadb: installing the Debian package mariadb-server"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  mariadb-server >/dev/null
