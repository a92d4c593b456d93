#!/usr/bin/env bash
# The whole test suite: lint and format check, type check, the package's doctests, then pytest
# (real DuckDB, SQLite, PostgreSQL, IPython/jupysql; a throwaway PostgreSQL cluster is started
# and stopped).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
"$PY" -m ruff check cadet_magic tests benchmarks workloads scripts
"$PY" -m ruff format --check cadet_magic tests benchmarks workloads scripts
"$PY" -m mypy  # the package, configured in pyproject.toml [tool.mypy]
"$PY" -m pytest -q -p no:cacheprovider --doctest-modules cadet_magic  # every docstring example
"$PY" -m pytest "$@"
