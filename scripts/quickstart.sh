#!/usr/bin/env bash
# The main job: execute notebooks/quickstart.ipynb headless on the embedded DuckDB sample
# database; writes notebooks/quickstart.executed.ipynb (and .html). Installs only what that
# needs first (scripts/setup_main.sh); the tests' extras come with scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_main.sh
source scripts/env.sh
"$PY" scripts/run_quickstart.py "$@"
