# Sourced by the scripts: the project's virtual environment, Jupyter's data folder and two
# install helpers. Everything is installed into .venv (never the system interpreter: Debian's
# and Ubuntu's system Pythons refuse `pip install` outside a venv, PEP 668).
VENV="$PWD/.venv"
PY="$VENV/bin/python"
# The kernel spec lives in the venv (ipykernel install --sys-prefix); JUPYTER_PATH puts it
# ahead of any user-level python3 spec that points at another interpreter.
export JUPYTER_PATH="$VENV/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"
export PLOOMBER_STATS_ENABLED=false

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

# apt_install WHO PACKAGE...: installs Debian packages, saying which and for whom.
apt_install() {
  local who="$1"
  shift
  echo "$who: installing Debian packages: $*"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" \
    >/dev/null
}

# pip_install NAME "module, module" PIP-ARGS...: installs into .venv when pyproject.toml changed
# since the last install of NAME on this machine, when one of the modules cannot be imported,
# or when CADET_SETUP_FORCE=1.
pip_install() {
  local name="$1" modules="$2"
  shift 2
  mkdir -p .cache
  local stamp
  stamp=".cache/pip-$name-$(sha256sum pyproject.toml | cut -c1-16)"
  if [ ! -f "$stamp" ] || ! "$PY" -c "import $modules" >/dev/null 2>&1 \
    || [ "${CADET_SETUP_FORCE:-0}" = "1" ]; then
    echo "setup: installing Python packages ($name)"
    "$PY" -m pip install -q --disable-pip-version-check "$@"
    rm -f ".cache/pip-$name-"* && touch "$stamp"
  fi
}

# need_compiler WHO: a C and C++ compiler and make (Debian build-essential), for llama.cpp's build.
need_compiler() {
  if ! { command -v cc && command -v c++ && command -v make; } >/dev/null 2>&1; then
    apt_install "$1" build-essential
  fi
}
