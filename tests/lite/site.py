"""The built JupyterLite site for the tests: built once per session, served on 127.0.0.1."""

from __future__ import annotations

import contextlib
import functools
import re
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
GGUF = ROOT / ".cache" / "llm" / "qwen.gguf"
WLLAMA = ROOT / ".cache" / "lite" / "wllama" / "node_modules" / "@wllama" / "wllama"


def model_inputs() -> str | None:
    """What the site's model in the page needs and is missing here (None: nothing)."""
    if not GGUF.exists():
        return f"the pinned model {GGUF} (bash scripts/setup_llm.sh)"
    if not WLLAMA.exists():
        return f"the model's runtime {WLLAMA} (npm @wllama/wllama: bash scripts/setup_lite.sh)"
    return None


def build_sites() -> str:
    """Runs the build (both variants, with the model in the page where its inputs are here);
    returns its report (sizes, times)."""
    model = [] if model_inputs() is None else ["--no-model"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_lite.py"), "--variant", "both", *model],
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

    def end_headers(self) -> None:
        if self.server.cors:  # type: ignore[attr-defined]
            self.send_header("Access-Control-Allow-Origin", "*")
        for name, value in cache_headers(self.directory, self.path.split("?", 1)[0]):
            if self.server.isolated or not name.lower().startswith("cross-origin"):  # type: ignore[attr-defined]
                self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args) -> None:
        self.server.log.append(self.path)  # type: ignore[attr-defined]


def cache_headers(folder: str, path: str) -> list[tuple[str, str]]:
    """The headers the site's ``_headers`` file gives ``path``, as a static host would send them
    (``*`` matches any characters; every matching rule applies); unmatched files get those
    hosts' default, revalidation on every visit."""
    out: list[tuple[str, str]] = []
    rules = Path(folder) / "_headers"
    if rules.exists():
        pattern = None
        for line in rules.read_text().splitlines():
            if line.lstrip().startswith("#"):  # a comment (Netlify and Cloudflare read them)
                continue
            if line.startswith("/"):
                pattern = re.compile(".*".join(map(re.escape, line.strip().split("*"))) + "$")
            elif line.strip() and pattern is not None and pattern.match(path):
                name, value = line.strip().split(":", 1)
                out.append((name.strip(), value.strip()))
    if not any(name.lower() == "cache-control" for name, _ in out):
        out.append(("Cache-Control", "public, max-age=0, must-revalidate"))
    return out


@contextlib.contextmanager
def serve(folder: Path, isolated: bool = True, port: int = 0, cors: bool = False) -> Iterator[str]:
    """Serves ``folder`` on 127.0.0.1 (``port``, default a free one); yields the base URL. With
    ``isolated`` off, the cross-origin isolation headers of the site's ``_headers`` are left out
    (a host that does not read that file: the page runs the model on one thread); with ``cors``
    every origin may read the files (a host of the model's parts for another site)."""
    server = ThreadingHTTPServer(
        ("127.0.0.1", port), functools.partial(_Handler, directory=str(folder))
    )
    server.daemon_threads = True
    server.log = []  # type: ignore[attr-defined]
    server.isolated = isolated  # type: ignore[attr-defined]
    server.cors = cors  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
