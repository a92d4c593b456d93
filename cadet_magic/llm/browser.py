"""A small OpenAI-compatible chat client for kernels where LangChain cannot load (Pyodide).

In JupyterLite the kernel runs Pyodide in a web worker: LangChain and the ``openai`` package
need compiled dependencies that do not exist there. This module speaks the one endpoint the
agent needs, ``POST {base_url}/chat/completions``, through a *transport* injected at
construction (:mod:`cadet_magic.llm.transport`): in the browser a synchronous ``XMLHttpRequest``
(allowed in a worker), in tests any callable. Everything but
:func:`~cadet_magic.llm.transport.xhr_transport` is pure Python and portable.

Specs served here: ``openai:<model>`` (``https://api.openai.com/v1`` unless a base URL is
given), ``ollama:<model>`` (Ollama's OpenAI-compatible API, ``http://localhost:11434/v1``) and
any ``<provider>:<model>`` with an explicit base URL (an OpenAI-compatible server). The key and
the base URL come from ``%config AskMagic.api_key`` / ``AskMagic.base_url``, else from the usual
environment variables (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``OLLAMA_HOST``); never from the
notebook file.

Example:
    >>> opts = endpoint("openai:gpt-4o-mini", api_key="k", env={})
    >>> opts.url, opts.model
    ('https://api.openai.com/v1/chat/completions', 'gpt-4o-mini')
    >>> def fake(method, url, headers, body, timeout):
    ...     return 200, '{"choices": [{"message": {"content": "SELECT 1"}}]}'
    >>> BrowserChatModel(opts, transport=fake).invoke([("human", "hi")]).content
    'SELECT 1'
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cadet_magic.errors import ConfigurationError, ModelCallError
from cadet_magic.llm.transport import (
    Transport,
    TransportError,
    origin,
    shown_url,
    urllib_transport,
    xhr_transport,
)
from cadet_magic.text import redact

__all__ = [  # the transports stay importable from here
    "BrowserChatModel",
    "EndpointOptions",
    "Transport",
    "TransportError",
    "endpoint",
    "origin",
    "shown_url",
    "urllib_transport",
    "warn_plaintext_key",
    "xhr_transport",
]

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "ollama": "http://localhost:11434/v1",
}
KEY_ENV = {"openai": "OPENAI_API_KEY"}
CORS_HINT = (
    "the server must allow this page's origin with CORS: answer the OPTIONS preflight with "
    "Access-Control-Allow-Origin (this origin or *) and "
    "Access-Control-Allow-Headers: authorization, content-type, and send "
    "Access-Control-Allow-Origin on the response itself"
)


_WARNED: set[tuple[str, str, int | None]] = set()


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def warn_plaintext_key(url: str | None, key: str | None) -> bool:
    """Warns once per server when a key would go over plain HTTP to a host that is not this
    machine (anyone on the way can read it); True when it warned.

    Example:
        >>> warn_plaintext_key("http://127.0.0.1:8000/v1", "sk-1"), warn_plaintext_key(None, "k")
        (False, False)
    """
    if not url or not key:
        return False
    where = origin(url)
    if where[0] != "http" or _loopback(where[1]) or where in _WARNED:
        return False
    _WARNED.add(where)
    warnings.warn(
        f"The API key is sent unencrypted (http://) to {where[1]}: anyone on the network path "
        "can read it. Use an https:// base URL for a server that is not on this machine.",
        UserWarning,
        stacklevel=3,
    )
    return True


@dataclass(frozen=True)
class EndpointOptions:
    """Where and how to call the model (a small frozen object; the key is never shown)."""

    spec: str
    model: str
    base_url: str
    api_key: str | None = None
    timeout: float = 120.0
    temperature: float | None = None
    #: The sampling seed sent with the request (None: none sent).
    seed: int | None = None

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def __repr__(self) -> str:
        key = "set" if self.api_key else "none"
        return f"EndpointOptions(spec={self.spec!r}, url={self.url!r}, api_key={key})"


def endpoint(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
    temperature: float | None = None,
) -> EndpointOptions:
    """The endpoint for ``provider:model``; explicit values win over environment variables.

    >>> endpoint("ollama:llama3.1", env={"OLLAMA_HOST": "http://10.0.0.2:11434"}).url
    'http://10.0.0.2:11434/v1/chat/completions'
    >>> endpoint("vllm:m", base_url="http://127.0.0.1:8000/v1", env={}).url
    'http://127.0.0.1:8000/v1/chat/completions'
    >>> endpoint("anthropic:claude", env={})
    Traceback (most recent call last):
    ...
    cadet_magic.errors.ConfigurationError: No OpenAI-compatible endpoint known for 'anthropic:claude' in this kernel: set %config AskMagic.base_url = "https://.../v1" (a server speaking /chat/completions), or use openai:<model> or ollama:<model>.
    """
    env = os.environ if env is None else env
    provider, sep, model = spec.partition(":")
    provider = provider.strip().lower()
    if not sep or not model.strip():
        raise ConfigurationError(
            f"Model spec {spec!r} is not provider:model (e.g. openai:gpt-4o-mini, ollama:llama3.1)."
        )
    url = base_url or None
    if url is None and provider == "openai":
        url = env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URLS["openai"]
    if url is None and provider == "ollama":
        host = env.get("OLLAMA_HOST")
        if host:
            host = host if "://" in host else f"http://{host}"
            url = host.rstrip("/") + "/v1"
        else:
            url = DEFAULT_BASE_URLS["ollama"]
    if url is None:
        raise ConfigurationError(
            f"No OpenAI-compatible endpoint known for {spec!r} in this kernel: set "
            '%config AskMagic.base_url = "https://.../v1" (a server speaking /chat/completions), '
            "or use openai:<model> or ollama:<model>."
        )
    key = api_key or (env.get(KEY_ENV[provider]) if provider in KEY_ENV else None)
    if provider == "openai" and not key and url == DEFAULT_BASE_URLS["openai"]:
        raise ConfigurationError(
            'No API key for openai: run %config AskMagic.api_key = "sk-..." in this session '
            "(then delete it from the cell) or set OPENAI_API_KEY in the kernel's environment."
        )
    warn_plaintext_key(url, key)
    return EndpointOptions(spec, model.strip(), url, key or None, float(timeout), temperature)


def chat_messages(messages: Sequence[Any]) -> list[dict[str, str]]:
    """The agent's messages (``(role, text)`` tuples or objects with ``type``/``content``) in
    the OpenAI wire format.

    >>> chat_messages([("system", "s"), ("human", "q")])
    [{'role': 'system', 'content': 's'}, {'role': 'user', 'content': 'q'}]
    """
    roles = {"human": "user", "ai": "assistant", "user": "user", "system": "system"}
    out = []
    for m in messages:
        if isinstance(m, tuple):
            role, content = m
        else:
            role, content = getattr(m, "type", "user"), getattr(m, "content", str(m))
        out.append({"role": str(roles.get(role, role)), "content": str(content)})
    return out


def request_body(options: EndpointOptions, messages: Sequence[Any]) -> str:
    """The request's JSON (the temperature only when one is set).

    >>> request_body(endpoint("ollama:m", env={}, temperature=0), [("human", "q")])
    '{"model": "m", "messages": [{"role": "user", "content": "q"}], "temperature": 0}'
    """
    body: dict[str, Any] = {"model": options.model, "messages": chat_messages(messages)}
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.seed is not None:
        body["seed"] = options.seed
    return json.dumps(body)


def request_headers(options: EndpointOptions) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if options.api_key:
        headers["Authorization"] = f"Bearer {options.api_key}"
    return headers


#: Digits an integer of a server's JSON answer may have: a longer one (Python refuses to read
#: one of more than 4,300) is read as None, so the rest of the answer stays readable.
MAX_DIGITS = 30


def _bounded_int(digits: str) -> int | None:
    return int(digits) if len(digits.lstrip("-")) <= MAX_DIGITS else None


def read_json(text: str) -> Any:
    """A server's JSON answer; an integer of more than :data:`MAX_DIGITS` digits is None
    (``Infinity`` and ``NaN``, which Python's reader accepts, are checked where counts are read).

    Example:
        >>> read_json('{"usage": {"prompt_tokens": ' + "9" * 5000 + ', "completion_tokens": 7}}')
        {'usage': {'prompt_tokens': None, 'completion_tokens': 7}}
    """
    return json.loads(text, parse_int=_bounded_int)


def reply_content(options: EndpointOptions, status: int, text: str) -> str:
    """The assistant's text from an HTTP answer, or one clear :class:`ModelCallError` line.

    >>> o = endpoint("ollama:m", env={})
    >>> reply_content(o, 404, '{"error": {"message": "model m not found"}}')
    Traceback (most recent call last):
    ...
    cadet_magic.errors.ModelCallError: The model server answered HTTP 404 for http://localhost:11434/v1/chat/completions: model m not found
    """
    try:
        data = read_json(text) if text else None
    except ValueError:
        data = None
    if not 200 <= status < 300:
        detail = ""
        if isinstance(data, Mapping):
            err = data.get("error")
            detail = err.get("message", "") if isinstance(err, Mapping) else str(err or "")
        if not detail:
            detail = " ".join(text.split())[:200] or "no details"
        detail = " ".join(redact(str(detail), [options.api_key]).split())[:300]
        raise ModelCallError(
            f"The model server answered HTTP {status} for {shown_url(options.url)}: {detail}"
        )
    try:
        content = data["choices"][0]["message"]["content"]  # type: ignore[index]  # None: caught
    except (KeyError, IndexError, TypeError):
        raise ModelCallError(
            f"The model server at {shown_url(options.url)} did not answer in the OpenAI chat format "
            "(no choices[0].message.content)."
        ) from None
    return content or ""


def reply_usage(text: str) -> dict[str, Any] | None:
    """The ``usage`` report of an OpenAI chat answer (``prompt_tokens``,
    ``completion_tokens``), or None when the server sent none.

    >>> reply_usage('{"choices": [], "usage": {"prompt_tokens": 90, "completion_tokens": 7}}')
    {'prompt_tokens': 90, 'completion_tokens': 7}
    >>> reply_usage("not json") is None
    True
    """
    try:
        usage = read_json(text).get("usage")
    except (ValueError, AttributeError):
        return None
    return dict(usage) if isinstance(usage, Mapping) else None


@dataclass
class BrowserReply:
    content: str
    #: The server's ``usage`` report (read by the agent as the attempt's tokens), or None.
    usage: dict[str, Any] | None = None


class BrowserChatModel:
    """A chat model with ``invoke(messages)``, calling ``/chat/completions`` over ``transport``."""

    def __init__(self, options: EndpointOptions, transport: Transport | None = None) -> None:
        self.options = options
        self.transport = transport or (xhr_transport if in_browser() else urllib_transport)
        self.name = options.spec
        self.model_name = options.model

    def cadet_sample(
        self, messages: Sequence[Any], *, count: int, seed: int, temperature: float
    ) -> list[BrowserReply]:
        """``count`` replies sampled at ``temperature``, the i-th with seed ``seed + i`` (one
        request each: the same prompt, which a server caching prompt prefixes reads once)."""
        replies = []
        for i in range(count):
            options = dataclasses.replace(self.options, temperature=temperature, seed=seed + i)
            replies.append(BrowserChatModel(options, self.transport).invoke(messages))
        return replies

    def invoke(self, messages: Sequence[Any], *args: Any, **kwargs: Any) -> BrowserReply:
        o = self.options
        try:
            status, text = self.transport(
                "POST", o.url, request_headers(o), request_body(o, messages), o.timeout
            )
        except TransportError as e:
            url = shown_url(o.url)
            if e.kind == "timeout":
                raise ModelCallError(
                    f"The model did not answer within AskMagic.model_timeout = {o.timeout:g} s "
                    f"({url}); raise it with %config AskMagic.model_timeout = "
                    f"{max(300, 2 * o.timeout):g}."
                ) from None
            if e.kind == "blocked":
                raise ModelCallError(
                    f"The browser could not reach {url} (refused or blocked): if the server "
                    f"is up, {CORS_HINT}."
                ) from None
            if e.kind == "redirect":
                raise ModelCallError(
                    f"The model server at {url} redirected the call to {e.detail}, another "
                    "origin: not followed (the key would go there). Set AskMagic.base_url to "
                    "the server you mean."
                ) from None
            detail = redact(e.detail or e.kind, [o.api_key])
            raise ModelCallError(f"Could not reach {url}: {detail}.") from None
        return BrowserReply(reply_content(o, status, text), reply_usage(text))


def in_browser() -> bool:
    """True in a Pyodide kernel (where this client is the way to reach a model)."""
    import sys

    return sys.platform == "emscripten"
