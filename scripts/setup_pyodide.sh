#!/usr/bin/env bash
# Prepares the offline Pyodide used by tests/portable (the portability proof of the core).
#
# Everything lands in .cache/pyodide/ (gitignored):
#   npm/node_modules/pyodide/   the npm package, as downloaded
#   dist/                       a copy of it used as indexURL, with micropip's wheel beside
#                               pyodide-lock.json (its sha256 entry rewritten to match)
#   wheels/                     the pure-Python sqlglot and sqlparse wheels, at the versions
#                               installed in this Python
#   READY                       written last; holds the versions prepared
# Registries (Debian, npm, PyPI) are used here only; the test itself downloads nothing.
# Idempotent: a second run with the same versions does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYODIDE_VERSION="314.0.7"  # ships Python 3.14.2, whose wheels the portable core is tested on
MICROPIP_VERSION="0.11.1"  # the version pyodide-lock.json names
source scripts/env.sh
CACHE=".cache/pyodide"

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "setup_pyodide: installing Debian packages: nodejs npm"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm \
    >/dev/null
fi

versions="$("$PY" -c 'import sqlglot, sqlparse; print(sqlglot.__version__, sqlparse.__version__)')"
read -r SQLGLOT_VERSION SQLPARSE_VERSION <<<"$versions"
want="pyodide=$PYODIDE_VERSION micropip=$MICROPIP_VERSION sqlglot=$SQLGLOT_VERSION sqlparse=$SQLPARSE_VERSION"
if [ -f "$CACHE/READY" ] && [ "$(cat "$CACHE/READY")" = "$want" ] && [ -f "$CACHE/dist/pyodide.mjs" ]; then
  exit 0
fi

echo "setup_pyodide: preparing $CACHE ($want)"
rm -rf "$CACHE"
mkdir -p "$CACHE/npm" "$CACHE/wheels"

npm install --silent --no-audit --no-fund --no-save --prefix "$CACHE/npm" \
  "pyodide@$PYODIDE_VERSION" >/dev/null 2>&1 \
  || npm install --no-audit --no-fund --no-save --prefix "$CACHE/npm" "pyodide@$PYODIDE_VERSION"

# Pure wheels only (py3-none-any), for Pyodide's Python 3.14 (micropip 0.11 requires >=3.13).
"$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.14 -d "$CACHE/wheels" "micropip==$MICROPIP_VERSION" "sqlglot==$SQLGLOT_VERSION" \
  "sqlparse==$SQLPARSE_VERSION"

cp -r "$CACHE/npm/node_modules/pyodide" "$CACHE/dist"
mv "$CACHE/wheels/micropip-$MICROPIP_VERSION-py3-none-any.whl" "$CACHE/dist/"

# PyPI's micropip wheel is not byte-identical to the one the lock file was built with
# (sha256 768de165... vs e2d52886... in the lock). Pyodide under Node does not check it, a
# browser does (integrity): point the copy's lock entry at the downloaded file, so the same
# folder also serves JupyterLite. The npm original in npm/ is left untouched.
"$PY" - "$CACHE/dist" <<'EOF'
import hashlib, json, sys
from pathlib import Path
dist = Path(sys.argv[1])
lock_path = dist / "pyodide-lock.json"
lock = json.loads(lock_path.read_text())
entry = lock["packages"]["micropip"]
entry["sha256"] = hashlib.sha256((dist / entry["file_name"]).read_bytes()).hexdigest()
lock_path.write_text(json.dumps(lock))
EOF
for w in "sqlglot-$SQLGLOT_VERSION" "sqlparse-$SQLPARSE_VERSION"; do
  ls "$CACHE/wheels/$w"-py3-none-any.whl >/dev/null
done

echo "$want" >"$CACHE/READY"
echo "setup_pyodide: ready"
