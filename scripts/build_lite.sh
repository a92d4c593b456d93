#!/usr/bin/env bash
# Builds the JupyterLite sites: build/lite/ (offline: Pyodide and every wheel inside the site)
# and build/lite-online/ (Pyodide's full distribution from its CDN). Serve either folder with any
# static file server, e.g. `python -m http.server -b 127.0.0.1 -d build/lite` (then open
# http://127.0.0.1:8000/: it opens on the tutorial).
# Usage: bash scripts/build_lite.sh [--variant offline|online|both]
# Needs what scripts/setup.sh installs (it is run first; quick when done). Downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${CADET_SKIP_SETUP:-0}" != "1" ]; then bash scripts/setup.sh; fi
source scripts/env.sh
exec "$PY" scripts/build_lite.py "$@"
