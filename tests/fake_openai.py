"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests.

The server speaks just enough of the OpenAI REST API for real provider clients
(``openai``, ``langchain-openai``) to talk to it: ``POST /v1/chat/completions``
(plain JSON, or server-sent events when the request asks for ``stream``) and
``GET /v1/models``. Each chat request consumes the next scripted reply:

* a ``str``: the assistant message content;
* ``{"content": str, "finish_reason": str, "delay": float}``: the same, with
  options (``delay`` waits that many seconds before answering);
* ``{"status": int, ...}``: an error in the OpenAI error shape. Optional keys:
  ``message`` and ``type``/``code`` (fill the default body), ``body`` (sent
  instead: JSON, or a ``str`` sent raw as text/plain), ``headers`` (e.g. ``{"x-should-retry": "false"}`` or
  ``{"retry-after": "0"}``) and ``delay``.

With ``honours_n=True`` a request asking for ``n`` replies gets the next ``n`` scripted
replies as its ``n`` choices (as OpenAI's API does); without it the server answers one
reply whatever ``n`` asks (as llama-cpp-python's server does).

With ``cors=True`` the server answers CORS preflights (``OPTIONS``) and adds
``Access-Control-Allow-Origin: *`` to every answer, as a server a browser page may call
must; without it a browser refuses the call (what the browser tests check too).

When the script runs out, the server answers 500 with ``x-should-retry: false``
and a message saying so, so a test that asks more than it scripted fails fast.

Every request is recorded; ``requests`` holds the parsed JSON bodies of the chat
requests, ``received`` every request with method, path and headers.

Use it as a context manager, or as the pytest fixture ``fake_openai`` (import
it into a test module: ``from fake_openai import fake_openai  # noqa: F401``).

Example:
    >>> import json, urllib.request
    >>> with FakeOpenAI(["Hello!"]) as srv:
    ...     req = urllib.request.Request(
    ...         srv.base_url + "/chat/completions",
    ...         data=json.dumps({"model": "m", "messages": []}).encode(),
    ...         headers={"Content-Type": "application/json"},
    ...     )
    ...     reply = json.load(urllib.request.urlopen(req))
    >>> reply["choices"][0]["message"]["content"]
    'Hello!'
    >>> srv.requests
    [{'model': 'm', 'messages': []}]
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Reply = str | Mapping[str, Any]

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


@dataclass
class RecordedRequest:
    """One request the server received.

    Attributes:
        method: ``GET`` or ``POST``.
        path: The request path, e.g. ``/v1/chat/completions``.
        headers: Request headers, names lower-cased.
        body: The parsed JSON body, or None when there was none.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any = None


@dataclass
class _Answer:
    status: int
    payload: Any
    headers: dict[str, str] = field(default_factory=dict)


def _tokens(text: str) -> int:
    """A crude, deterministic token count: whitespace-separated words."""
    return len(text.split())


def _prompt_text(body: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, Mapping))
    return " ".join(parts)


def error_body(status: int, message: str | None = None, **overrides: Any) -> dict[str, Any]:
    """Builds an error body shaped like the OpenAI API's.

    Args:
        status: HTTP status code the body goes with.
        message: The error message; a generic one by default.
        **overrides: Replace ``type``, ``code`` or ``param``.

    Returns:
        ``{"error": {"message", "type", "param", "code"}}``.

    Example:
        >>> error_body(429)["error"]["code"]
        'rate_limit_exceeded'
    """
    kind, code = _ERROR_TYPES.get(status, ("server_error" if status >= 500 else "error", None))
    if message is None:
        message = f"fake_openai scripted error {status} {HTTPStatus(status).phrase}"
    error = {"message": message, "type": kind, "param": None, "code": code}
    error.update(overrides)
    return {"error": error}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: nothing lingers on stop

    def log_message(self, format: str, *args: Any) -> None:
        """Keeps the test output quiet."""

    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return {"_unparsed": raw.decode("utf-8", "replace")}

    def _record(self, body: Any) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.fake._record(RecordedRequest(self.command, self.path, headers, body))

    def _send(self, answer: _Answer) -> None:
        if isinstance(answer.payload, str):  # a raw body, e.g. a proxy's HTML page
            data, kind = answer.payload.encode("utf-8"), "text/plain; charset=utf-8"
        else:
            data, kind = json.dumps(answer.payload).encode("utf-8"), "application/json"
        self.send_response(answer.status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self._cors_headers()
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _cors_headers(self) -> None:
        if self.server.fake.cors:
            self.send_header("Access-Control-Allow-Origin", "*")

    def do_OPTIONS(self) -> None:
        self._record(None)
        self.send_response(204 if self.server.fake.cors else 405)
        if self.server.fake.cors:
            self._cors_headers()
            self.send_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "authorization, content-type")
            self.send_header("Access-Control-Max-Age", "0")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send_stream(self, chunks: Iterable[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(b"data: " + json.dumps(chunk).encode("utf-8") + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        self._record(None)
        if self.path.rstrip("/") == "/v1/models":
            fake = self.server.fake
            data = [
                {"id": name, "object": "model", "created": fake.created, "owned_by": "fake"}
                for name in fake.models
            ]
            self._send(_Answer(200, {"object": "list", "data": data}))
        else:
            self._send(_Answer(404, error_body(404, f"no route GET {self.path}")))

    def do_POST(self) -> None:
        body = self._read_json()
        self._record(body)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(_Answer(404, error_body(404, f"no route POST {self.path}")))
            return
        if not isinstance(body, dict):
            self._send(_Answer(400, error_body(400, "request body must be a JSON object")))
            return
        fake = self.server.fake
        reply = fake._next_reply(body)
        delay = float(reply.get("delay", 0)) if isinstance(reply, Mapping) else 0.0
        if delay and fake._stopping.wait(delay):
            return  # stopping: drop the connection without an answer
        if isinstance(reply, Mapping) and "status" in reply:
            self._send(fake._error_answer(reply))
        elif body.get("stream"):
            self._send_stream(fake._stream_chunks(body, reply))
        else:
            answer = fake._completion(body, reply)
            for _ in range(int(body.get("n") or 1) - 1 if fake.honours_n else 0):
                more = fake._completion(body, fake._next_reply(body))["choices"][0]
                answer["choices"].append({**more, "index": len(answer["choices"])})
            self._send(_Answer(200, answer))


class FakeOpenAI:
    """A scripted OpenAI-compatible server running in a background thread.

    Args:
        replies: The initial script (see the module docstring).
        models: Model ids listed by ``GET /v1/models``.
        cors: Answer CORS preflights and allow every origin (for browser pages).
        honours_n: Answer a request for ``n`` replies with ``n`` choices.

    Attributes:
        requests: Parsed JSON bodies of the chat completion requests, in order.
        received: Every request received, as :class:`RecordedRequest`.
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        models: Iterable[str] = ("scripted-test-model",),
        cors: bool = False,
        honours_n: bool = False,
    ) -> None:
        self.models = list(models)
        self.cors = cors
        self.honours_n = honours_n
        self.created = int(time.time())
        self.requests: list[Any] = []
        self.received: list[RecordedRequest] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.script(replies)

    # --- lifecycle ----------------------------------------------------------

    def start(self) -> FakeOpenAI:
        """Binds a free port on 127.0.0.1 and starts serving; returns self."""
        if self._server is not None:
            raise RuntimeError("fake_openai server already started")
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving and closes the socket; safe to call twice."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._server is None:
            raise RuntimeError("fake_openai server not started")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """The API base URL to give a client, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # --- script -------------------------------------------------------------

    def script(self, replies: Iterable[Reply]) -> FakeOpenAI:
        """Replaces the replies still to be served; returns self.

        Args:
            replies: Strings (assistant content) or dicts (see the module docstring).
        """
        items = list(replies)
        for item in items:
            if not isinstance(item, str | Mapping):
                raise TypeError(f"a scripted reply must be a str or a dict, not {item!r}")
        with self._lock:
            self._script = deque(items)
        return self

    @property
    def pending(self) -> int:
        """How many scripted replies have not been served yet."""
        with self._lock:
            return len(self._script)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.received.append(request)
            if request.method == "POST" and request.path.rstrip("/").endswith("/chat/completions"):
                self.requests.append(request.body)

    def _next_reply(self, body: Mapping[str, Any]) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return {
            "status": 500,
            "message": f"fake_openai: no scripted reply left (request #{len(self.requests)})",
            "headers": {"x-should-retry": "false"},
        }

    # --- payloads -----------------------------------------------------------

    def _error_answer(self, spec: Mapping[str, Any]) -> _Answer:
        status = int(spec["status"])
        if "body" in spec:
            payload = spec["body"]
        else:
            extra = {k: spec[k] for k in ("type", "code", "param") if k in spec}
            payload = error_body(status, spec.get("message"), **extra)
        headers = {str(k): str(v) for k, v in (spec.get("headers") or {}).items()}
        return _Answer(status, payload, headers)

    def _completion(self, body: Mapping[str, Any], reply: Reply) -> dict[str, Any]:
        content = reply if isinstance(reply, str) else str(reply.get("content", ""))
        finish = "stop" if isinstance(reply, str) else reply.get("finish_reason", "stop")
        prompt, completion = _tokens(_prompt_text(body)), _tokens(content)
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "system_fingerprint": "fake_openai",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _stream_chunks(self, body: Mapping[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
        whole = self._completion(body, reply)
        content = whole["choices"][0]["message"]["content"]
        base = {k: whole[k] for k in ("id", "created", "model", "system_fingerprint")}
        base["object"] = "chat.completion.chunk"

        def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {**base, "choices": [choice]}

        yield chunk({"role": "assistant", "content": ""}, None)
        pieces = content.split(" ")
        for i, piece in enumerate(pieces):
            yield chunk({"content": piece if i == len(pieces) - 1 else piece + " "}, None)
        yield chunk({}, whole["choices"][0]["finish_reason"])
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "choices": [], "usage": whole["usage"]}


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI` with an empty script; stopped afterwards."""
    with FakeOpenAI() as server:
        yield server
