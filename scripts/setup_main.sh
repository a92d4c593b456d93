#!/usr/bin/env bash
# The main job's install (scripts/quickstart.sh): what executing notebooks/quickstart.ipynb on the
# embedded DuckDB sample needs, and nothing more:
#   Debian   libseccomp2 (the seccomp filter of the fallback's confined worker); python3 when
#            there is none, and python3-venv when it cannot create a virtual environment
#   .venv    pip install -e ".[notebooks]": the package with its dependencies, plus nbclient,
#            nbformat, nbconvert and ipykernel to run the notebook headless and write its HTML
#   kernel   the venv's Jupyter kernel spec
# The tests' install (scripts/setup.sh) runs this first, then adds the rest. Everything goes into
# .venv, never the system interpreter (Debian's and Ubuntu's refuse `pip install` outside a venv,
# PEP 668). PYTHON picks the interpreter the venv is created from (default python3). Idempotent
# and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

# libseccomp.so.2: the seccomp filter of the fallback's worker (loaded by pyseccomp).
if ! ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'; then
  apt_install setup libseccomp2
fi

BASE_PY="${PYTHON:-python3}"
if ! command -v "$BASE_PY" >/dev/null 2>&1; then apt_install setup python3 python3-venv; fi
if [ ! -x "$PY" ] || ! "$PY" -c "import sys" >/dev/null 2>&1; then
  echo "setup: creating the virtual environment .venv"
  rm -rf "$VENV"
  if ! "$BASE_PY" -m venv "$VENV" >/dev/null 2>&1; then
    # Debian's python3 needs python3-venv for ensurepip
    apt_install setup python3-venv
    rm -rf "$VENV"
    "$BASE_PY" -m venv "$VENV"
  fi
  rm -f .cache/pip-*
fi
pip_install main "cadet_magic, nbclient, nbconvert, ipykernel" -e ".[notebooks]"
"$PY" -m ipykernel install --sys-prefix --name python3 >/dev/null
