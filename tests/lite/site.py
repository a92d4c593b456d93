"""The built JupyterLite site for the tests: built once per session, served on 127.0.0.1."""

from __future__ import annotations

import contextlib
import functools
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = ROOT / "build" / "lite"
ONLINE = ROOT / "build" / "lite-online"
PYODIDE_DIST = ROOT / ".cache" / "pyodide" / "dist" / "pyodide.mjs"
WHEELS = ROOT / ".cache" / "lite" / "wheels"


def build_sites() -> str:
    """Runs the build (both variants); returns its report (sizes, times)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_lite.py"), "--variant", "both"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"build_lite failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


class _Handler(SimpleHTTPRequestHandler):
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".json": "application/json",
        ".whl": "application/octet-stream",
        ".ipynb": "application/json",
    }

    def log_message(self, format: str, *args) -> None:
        self.server.log.append(self.path)  # type: ignore[attr-defined]


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serves ``folder`` on 127.0.0.1 (a free port); yields the base URL."""
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Handler, directory=str(folder))
    )
    server.daemon_threads = True
    server.log = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
