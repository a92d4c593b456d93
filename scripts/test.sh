#!/usr/bin/env bash
# The whole test suite: set-up, lint and format check, type check, the package's doctests, then
# pytest (real DuckDB, SQLite, PostgreSQL, IPython/jupysql; a throwaway PostgreSQL cluster is
# started and stopped); pytest prints the 25 slowest tests (pyproject.toml's addopts).
# `--fast`: the fast loop: lint, format check, types, doctests and the unit tier only (marker
# `unit`: no server, subprocess, browser or model; tests/tiers.py), without the set-up
# (.venv must exist). Other arguments go to pytest (with --fast, in place of the tier's files:
# `bash scripts/test.sh --fast tests/sql -k limit`).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
if [ "$fast" = 1 ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "test.sh --fast: no .venv here; run bash scripts/test.sh (or scripts/setup.sh) once first" >&2
    exit 1
  fi
else
  bash scripts/setup.sh
fi
source scripts/env.sh
"$PY" -m ruff check cadet_magic tests benchmarks workloads scripts
"$PY" -m ruff format --check cadet_magic tests benchmarks workloads scripts
"$PY" -m mypy  # the package, configured in pyproject.toml [tool.mypy]
"$PY" -m pytest -q -p no:cacheprovider --durations=0 --durations-min=1 --doctest-modules cadet_magic  # every docstring example
if [ "$fast" = 1 ]; then
  # the tier's files themselves (collecting all of tests/ to select them imports every module)
  [ "$#" -gt 0 ] || set -- $("$PY" -c "from tests.tiers import unit_paths; print(*unit_paths())")
  exec "$PY" -m pytest -q -p no:cacheprovider -m unit "$@"
fi
"$PY" -m pytest "$@"
