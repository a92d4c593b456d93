#!/usr/bin/env bash
# What the repo2docker simulation (tests/test_binder.py) needs: the wheels of everything
# binder/requirements.txt installs, for binder/runtime.txt's Python, downloaded once into
# .cache/binder/wheels/ (gitignored), plus the build backend for `-e .`; and for binder/postBuild's
# `python -m cadet_magic.local install`, the llama-cpp-python wheel the local install builds for
# this machine (scripts/setup_llm.sh: kept in the user's cache folder's wheels/ with its keyed
# BUILD record), copied into .cache/binder/local/wheels/ with the wheels it depends on. llama.cpp
# is compiled once per machine: when the local install has not built it yet, it is built here
# into that same folder, and the install reuses it. (The image itself is built --portable, for
# any x86-64 CPU with AVX2: it runs on other machines than its builder; the simulation runs on
# this one, where this machine's build stands in for it.) The model file itself comes from the
# local model the tests' set-up installed. The test then installs them into a fresh virtual
# environment with --no-index: nothing downloads at test time. Idempotent: a second run with the
# same requirements does nothing. Skipped with CADET_SETUP_BINDER=0.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${CADET_SETUP_BINDER:-1}" = "1" ] || exit 0
source scripts/env.sh
CACHE=".cache/binder"
LOCAL="$CACHE/local/wheels"
runtime="$(sed -n 's/^python-\([0-9.]*\).*/\1/p' binder/runtime.txt)"
PYRT="$(command -v "python$runtime" || true)"
if [ -z "$PYRT" ]; then
  echo "setup_binder: python$runtime (binder/runtime.txt) not found; the Binder simulation will skip" >&2
  exit 0
fi
# this machine's llama-cpp-python wheel (build_wheel reuses the one the local install built)
built="$("$PY" -c 'from cadet_magic.local.model_store import wheel_dir; print(wheel_dir())')"
if ! ls "$built"/llama_cpp_python-*.whl >/dev/null 2>&1; then need_compiler setup_binder; fi
"$PY" - "$LOCAL" <<'PYEOF'
import shutil
import sys
from pathlib import Path

from cadet_magic.errors import CadetError
from cadet_magic.local.model_store import wheel_dir
from cadet_magic.local.runtime import build_wheel

try:
    wheel = build_wheel(wheel_dir(), portable=False, say=lambda text: print("setup_binder:", text))
except CadetError as e:
    sys.exit(f"setup_binder: {e}")
local = Path(sys.argv[1])
record = wheel.parent / "BUILD"
copied = local / "BUILD"
same = (local / wheel.name).exists() and copied.exists()
if not same or copied.read_bytes() != record.read_bytes():
    shutil.rmtree(local, ignore_errors=True)
    local.mkdir(parents=True)
    shutil.copy2(wheel, local / wheel.name)
    shutil.copy2(record, copied)
PYEOF
want="$runtime $(cat binder/requirements.txt pyproject.toml "$LOCAL/BUILD" | sha256sum | cut -c1-16)"
if [ -f "$CACHE/READY" ] && [ "$(cat "$CACHE/READY")" = "$want" ]; then
  exit 0
fi
echo "setup_binder: downloading the Binder environment's wheels into $CACHE/wheels"
rm -rf "$CACHE/wheels" "$CACHE/READY" "$CACHE/pip-env"
mkdir -p "$CACHE/wheels"
# a throwaway venv of the runtime's Python: its pip (a system Python may have none) resolves
# the markers for that Python
"$PYRT" -m venv "$CACHE/pip-env"
PYRT="$CACHE/pip-env/bin/python"
# `-e .[extra]` lines become the project's own requirements (pip would otherwise zip the whole
# working tree); the test installs the project itself from its copy of the repository.
"$PYRT" - >"$CACHE/requirements.txt" <<'PYEOF'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for line in open("binder/requirements.txt"):
    line = line.split("#", 1)[0].strip()
    m = re.fullmatch(r"-e\s+\.(?:\[(.*)\])?", line)
    if m:
        print("\n".join(project["dependencies"]))
        for extra in filter(None, (m.group(1) or "").split(",")):
            print("\n".join(project["optional-dependencies"][extra.strip()]))
    elif line:
        print(line)
PYEOF
"$PYRT" -m pip download -q --disable-pip-version-check -d "$CACHE/wheels" \
  -r "$CACHE/requirements.txt" hatchling editables pip setuptools wheel \
  "$(ls "$LOCAL"/llama_cpp_python-*.whl | head -1)"
rm -rf "$CACHE/pip-env"
echo "$want" >"$CACHE/READY"
echo "setup_binder: ready"
