#!/usr/bin/env bash
# The main job: execute notebooks/quickstart.ipynb headless on the embedded DuckDB sample
# database; writes notebooks/quickstart.executed.ipynb (and .html).
set -euo pipefail
cd "$(dirname "$0")/.."
CADET_SETUP_BROWSER=0 CADET_SETUP_BINDER=0 CADET_SETUP_MARIADB=0 CADET_SETUP_LLM=0 bash scripts/setup.sh
source scripts/env.sh
"$PY" scripts/run_quickstart.py "$@"
