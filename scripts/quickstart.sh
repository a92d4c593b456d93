#!/usr/bin/env bash
# The main job: execute notebooks/quickstart.ipynb headless on the embedded DuckDB sample shop;
# writes notebooks/quickstart.executed.ipynb (and .html).
#   bash scripts/quickstart.sh              answered by the local model (installed first, once:
#                                           python -m cadet_magic.local install), or by the model
#                                           CADET_MODEL names
#   bash scripts/quickstart.sh --scripted   answered by the scripted stand-in's stored replies
#                                           (notebooks/quickstart_replies.json), labelled as such
# Installs only what that needs first (scripts/setup_main.sh; for the local model, its 1.1 GB
# file into the user's cache folder and llama-cpp-python, compiled once where PyPI has no wheel,
# with a C and C++ compiler when there is none); the tests' extras come with scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_main.sh
source scripts/env.sh
scripted=0
for arg in "$@"; do
  if [ "$arg" = "--scripted" ]; then scripted=1; fi
done
if [ "$scripted" = 0 ] && [ -z "${CADET_MODEL:-}" ]; then
  "$PY" -c "import llama_cpp" >/dev/null 2>&1 || need_compiler quickstart
  "$PY" -m cadet_magic.local install
fi
"$PY" scripts/run_quickstart.py "$@"
