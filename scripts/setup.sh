#!/usr/bin/env bash
# Installs what a new machine lacks: Debian packages, the project's virtual environment (.venv)
# with the Python packages, and the Jupyter kernel. Idempotent and quick when everything is
# already there.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

need_apt=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
# libseccomp.so.2: the seccomp filter of the fallback's worker (loaded by pyseccomp).
ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || need_apt+=(libseccomp2)
if [ "${CADET_SETUP_BROWSER:-1}" = "1" ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

BASE_PY="${PYTHON:-python3}"
source scripts/env.sh
if [ ! -x "$PY" ] || ! "$PY" -c "import sys" >/dev/null 2>&1; then
  echo "setup: creating the virtual environment .venv"
  rm -rf "$VENV"
  if ! "$BASE_PY" -m venv "$VENV" >/dev/null 2>&1; then
    # Debian's python3 needs python3-venv for ensurepip
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    rm -rf "$VENV"
    "$BASE_PY" -m venv "$VENV"
  fi
  rm -f .cache/pip-*
fi
# Reinstall when pyproject.toml changed since the last install on this machine (or on a new one).
mkdir -p .cache
stamp=".cache/pip-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ] || ! "$PY" -c "import cadet_magic, nbclient, pytest, ruff" >/dev/null 2>&1 \
   || [ "${CADET_SETUP_FORCE:-0}" = "1" ]; then
  echo "setup: installing Python packages"
  "$PY" -m pip install -q --disable-pip-version-check -e ".[dev]"
  rm -f .cache/pip-* && touch "$stamp"
fi
"$PY" -m ipykernel install --sys-prefix --name python3 >/dev/null

# Component-specific set-up (each script is idempotent and quick when done already).
for extra in scripts/setup_pyodide.sh scripts/setup_browser.sh scripts/setup_lite.sh \
  scripts/setup_binder.sh scripts/setup_spark.sh; do
  if [ -f "$extra" ]; then bash "$extra"; fi
done
# MySQL/MariaDB: the server binaries the `mysql` tests start as a throwaway process.
bash scripts/setup_mariadb.sh
# The real local model for the `llm` tests (skipped by the main job: CADET_SETUP_LLM=0).
bash scripts/setup_llm.sh
