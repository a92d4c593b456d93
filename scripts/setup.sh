#!/usr/bin/env bash
# The tests' install (scripts/test.sh): the main job's install (scripts/setup_main.sh), then what
# the test suite adds. Idempotent and quick when everything is already there.
#   Debian   postgresql (the throwaway cluster); chromium and a font (browser and lite tests:
#            setup_browser.sh); nodejs and npm (setup_pyodide.sh); openjdk-17-jdk-headless when
#            no Java is found (setup_spark.sh); mariadb-server (setup_mariadb.sh);
#            build-essential when llama-cpp-python must be compiled (setup_llm.sh)
#   .venv    pip install -e ".[dev]" (the linters, mypy, pytest, JupyterLab, Playwright, the
#            provider and driver packages, pyspark[connect], the JupyterLite build)
#   caches   .cache/: the npm pyodide package and wheels for the Pyodide and JupyterLite tests,
#            the Binder simulation's wheels; the local model and llama-cpp-python go to the
#            user's cache folder (setup_llm.sh: python -m cadet_magic.local install)
# Each component can be skipped: CADET_SETUP_BROWSER=0, CADET_SETUP_BINDER=0,
# CADET_SETUP_MARIADB=0, CADET_SETUP_LLM=0.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_main.sh
source scripts/env.sh

ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_install setup postgresql
pip_install dev "cadet_magic, nbclient, pytest, ruff, mypy" -e ".[dev]"

# Component-specific set-up (each script is idempotent and quick when done already).
for extra in scripts/setup_pyodide.sh scripts/setup_browser.sh scripts/setup_lite.sh \
  scripts/setup_spark.sh; do
  if [ -f "$extra" ]; then bash "$extra"; fi
done
# MySQL/MariaDB: the server binaries the `mysql` tests start as a throwaway process.
bash scripts/setup_mariadb.sh
# The real local model for the `llm` tests (the main job installs the same one; its compiler
# comes with it when llama-cpp-python must be compiled).
bash scripts/setup_llm.sh
# The Binder simulation's wheels, after the local install: it reuses the llama.cpp wheel that
# compiled (llama.cpp is compiled once per machine).
bash scripts/setup_binder.sh
