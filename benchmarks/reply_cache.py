"""A model server's replies shared between runs that send it the same request.

The evaluation runs every question in three feedback modes, one after the other. The modes
differ only after the first attempt: its request (system prompt, schema, question, sampling
settings) is the same byte for byte, and at temperature 0 a model's reply to it differs
between modes only by the server's floating-point noise (llama.cpp's reply can change with
how much of the prompt it had cached). :class:`ReplyCache` is an OpenAI-compatible proxy on
127.0.0.1 in front of the real server: a chat request whose JSON body was answered before gets
the stored answer, any other goes to the server and its answer (status 200 only) is stored.
So the three modes start from the same first reply, which also takes the server's noise out of
their comparison, and an interrupted run does not pay again for the calls it had made. Two
runs may share one file at the same time (say the same questions with and without a change,
each on its own server): before asking its server, a cache reads what the other appended.

What the caller sees of a stored reply is the server's own answer, usage included; only the
time differs (a stored reply comes back at once). ``hits`` and ``misses`` count requests.

Use::

    with llm_server() as url, ReplyCache(url, Path(".cache/replies.jsonl")) as cache:
        evaluate(..., base_url=cache.base_url)
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any


def request_key(body: bytes) -> str:
    """The key of a chat request: its JSON canonicalised (key order and spacing do not count).

    >>> request_key(b'{"a": 1, "b": [2]}') == request_key(b'{"b":[2],"a":1}')
    True
    """
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = body.decode("utf-8", "replace")
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ReplyCache:
    """The proxy: ``base_url`` to give the client, ``upstream`` the real server's base URL
    (``http://127.0.0.1:PORT/v1``), ``path`` a JSON-lines file keeping the stored replies
    across runs (``None``: in memory only), ``timeout`` seconds per upstream request."""

    def __init__(self, upstream: str, path: Path | None = None, timeout: float = 600.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.path = path
        self.timeout = timeout
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._replies: dict[str, dict[str, Any]] = {}
        self._read = 0  # bytes of the file read so far
        self._refresh()
        self._server: http.server.ThreadingHTTPServer | None = None

    def _refresh(self) -> None:
        """Reads the replies appended to the file since the last read: another run sharing
        the file (the same questions on another server) may have stored them meanwhile."""
        if self.path is None or not self.path.is_file():
            return
        with self.path.open("rb") as f:
            f.seek(self._read)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a last line still being written waits for the next read
        self._read += end
        for line in data[:end].decode("utf-8", "replace").splitlines():
            try:
                entry = json.loads(line)
                self._replies[entry["key"]] = entry
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by an interrupted write

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the reply cache is not running (use it as a context manager)")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def answer(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
        """Status, content type and body for a POST to ``path`` (under ``/v1``)."""
        key = request_key(body) if path.endswith("/chat/completions") else None
        with self._lock:
            stored = self._replies.get(key) if key else None
            if stored is None and key:
                self._refresh()
                stored = self._replies.get(key)
            if stored is not None:
                self.hits += 1
                return 200, stored["content_type"], stored["body"].encode("utf-8")
        status, content_type, data = self._forward("POST", path, body, headers)
        with self._lock:
            self.misses += 1
            if key and status == 200:
                entry = {"key": key, "content_type": content_type, "body": data.decode("utf-8")}
                self._replies[key] = entry
                if self.path is not None:
                    with self.path.open("a", encoding="utf-8") as f:
                        f.write(json.dumps(entry) + "\n")
        return status, content_type, data

    def _forward(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, str, bytes]:
        suffix = path[len("/v1") :] if path.startswith("/v1") else path
        req = urllib.request.Request(
            self.upstream + suffix, data=body, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.headers.get("Content-Type", ""), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type", ""), e.read()
        except (urllib.error.URLError, OSError) as e:  # no answer: the client sees a 502
            error = {"error": {"message": f"the model server did not answer: {e}", "type": "proxy"}}
            return 502, "application/json", json.dumps(error).encode("utf-8")

    def __enter__(self) -> ReplyCache:
        cache = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, content_type: str, data: bytes) -> None:
                self.send_response(status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _headers(self) -> dict[str, str]:
                keep = {"content-type", "authorization"}
                return {k: v for k, v in self.headers.items() if k.lower() in keep}

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._send(*cache.answer(self.path, body, self._headers()))

            def do_GET(self) -> None:
                self._send(*cache._forward("GET", self.path, None, self._headers()))

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
