#!/usr/bin/env bash
# What scripts/build_lite.sh needs beyond `pip install -e ".[dev]"` and scripts/setup_pyodide.sh:
# the pure-Python wheels the browser kernel loads (IPython's stack, the widget libraries and
# cadet_magic's portable dependencies), downloaded once into .cache/lite/wheels/ (gitignored)
# for Pyodide's Python 3.14. The build itself downloads nothing.
# Versions: the ones installed in .venv where present, so both kernels run the same code.
# Idempotent: a second run with the same versions does nothing. Skipped with
# CADET_SETUP_BROWSER=0 (as scripts/quickstart.sh does).
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
if [ -f "$CACHE/READY" ] && [ "$(cat "$CACHE/READY")" = "$specs" ]; then
  exit 0
fi
echo "setup_lite: downloading pure wheels into $CACHE/wheels"
rm -rf "$CACHE"
mkdir -p "$CACHE/wheels"
# shellcheck disable=SC2086
"$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.14 --implementation py --abi none --platform any \
  -d "$CACHE/wheels" $specs
echo "$specs" >"$CACHE/READY"
echo "setup_lite: ready"
