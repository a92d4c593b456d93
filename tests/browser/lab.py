"""A throwaway JupyterLab server and headless Chromium for the browser tests."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_quickstart(root: Path) -> Path:
    """The quickstart notebook and its scripted replies in ``root``."""
    for name in ("quickstart.ipynb", "quickstart_replies.json"):
        shutil.copy(ROOT / "notebooks" / name, root / name)
    return root / "quickstart.ipynb"


@contextlib.contextmanager
def jupyter_lab(
    root: Path, home: Path, timeout: float = 60.0, model: str | None = None
) -> Iterator[str]:
    """Runs JupyterLab on 127.0.0.1 serving ``root``; yields its base URL with the token.
    ``model`` is the kernels' CADET_MODEL (default: none).

    Configuration, runtime, settings and workspace folders live under ``home``, so the
    user's own are never read or written. The server is stopped at the end.
    """
    port, token = free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k != "CADET_MODEL"}
    if model:
        env["CADET_MODEL"] = model
    env.update(
        PLOOMBER_STATS_ENABLED="false",
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        IPYTHONDIR=str(home / "ipython"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    # No news/announcement pop-up over the notebook in screenshots.
    labconfig = home / "config" / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
    (labconfig / "page_config.json").write_text(
        '{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}'
    )
    log = open(home / "lab.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            f"--ServerApp.token={token}",
            "--allow-root",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
            "--ServerApp.port_retries=0",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited: {(home / 'lab.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not start in time") from None
                time.sleep(0.3)
        yield f"{base}|{token}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        log.close()
