#!/usr/bin/env bash
# What the browser test (tests/browser) needs beyond `pip install -e ".[dev]"`: Debian's Chromium
# and a font for it. Playwright's Python package drives that Chromium through executable_path,
# so no browser build is downloaded. Idempotent and quick when done; skipped with
# CADET_SETUP_BROWSER=0 (as scripts/quickstart.sh does).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${CADET_SETUP_BROWSER:-1}" = "1" ] || exit 0

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# headless Chromium renders text with fontconfig's fonts; a bare machine may have none
fc-list 2>/dev/null | grep -q . || need_apt+=(fonts-dejavu-core)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup_browser: installing Debian packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${need_apt[@]}" >/dev/null
fi

source scripts/env.sh
# playwright (dev extras) drives the system Chromium; ipylab and anywidget (runtime) bring the
# JupyterLab extensions the panel's buttons use. All come from pip: check, do not download.
if ! "$PY" -c "import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ('playwright', 'jupyterlab', 'ipylab', 'anywidget')))"; then
  echo "setup_browser: installing Python packages"
  "$PY" -m pip install -q --disable-pip-version-check -e ".[dev]"
fi
