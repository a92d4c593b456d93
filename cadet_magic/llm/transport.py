"""How the browser chat client reaches a server: the transports and the origin rules.

A *transport* is ``transport(method, url, headers, body, timeout) -> (status, text)``: in a
Pyodide kernel a synchronous ``XMLHttpRequest`` (:func:`xhr_transport`), in CPython the
standard library (:func:`urllib_transport`), in tests any callable. Neither follows a redirect
to another origin (the ``Authorization`` header would go with it); no HTTP answer at all is a
:class:`TransportError`. :func:`shown_url` is a URL as it may be shown or logged.

Example:
    >>> origin("http://Host:80/v1"), shown_url("https://u:p@h/v1?key=k")
    (('http', 'host', 80), 'https://h/v1')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

#: ``transport(method, url, headers, body, timeout) -> (status, response text)``; raises
#: :class:`TransportError` when no HTTP answer arrived.
Transport = Callable[[str, str, Mapping[str, str], str, float], tuple[int, str]]


def origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of ``url`` (the browser's notion of an origin).

    Example:
        >>> origin("https://api.example.com/v1") == origin("https://API.example.com:443/x")
        True
    """
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port or default


def shown_url(url: str) -> str:
    """``url`` as it may be shown or logged: without user, password, query or fragment.

    Example:
        >>> shown_url("https://user:pw@host:8443/v1/chat/completions?api-key=k#f")
        'https://host:8443/v1/chat/completions'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = host + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc, query="", fragment="").geturl()


class TransportError(Exception):
    """No HTTP answer: ``kind`` is ``"timeout"``, ``"blocked"`` (a browser refused or could not
    send the request: CORS, refused connection, offline; it does not say which),
    ``"network"`` (outside a browser: refused, DNS, ...; ``detail`` says) or ``"redirect"``
    (the server sent the call to another origin, which is not followed: ``detail`` says
    where)."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(detail or kind)
        self.kind = kind
        self.detail = detail


def xhr_transport(
    method: str, url: str, headers: Mapping[str, str], body: str, timeout: float
) -> tuple[int, str]:
    """A synchronous ``XMLHttpRequest`` from the kernel's web worker (Pyodide only).

    A worker may block on a synchronous request; the kernel is busy running the cell anyway.
    """
    import js  # Pyodide's bridge to the JavaScript global scope
    from pyodide.ffi import JsException

    xhr = js.XMLHttpRequest.new()
    xhr.open(method, url, False)
    xhr.timeout = int(timeout * 1000)
    for name, value in headers.items():
        xhr.setRequestHeader(name, value)
    try:
        xhr.send(body)
    except JsException as e:
        text = str(e)
        kind = "timeout" if "Timeout" in text or "timed out" in text.lower() else "blocked"
        raise TransportError(kind, text) from None
    if xhr.status == 0:  # no HTTP answer (blocked by CORS, refused, offline)
        raise TransportError("blocked", "status 0")
    final = str(getattr(xhr, "responseURL", "") or url)
    if origin(final) != origin(url):  # the browser followed a redirect to another origin
        raise TransportError("redirect", shown_url(final))
    return int(xhr.status), str(xhr.responseText)


def urllib_transport(
    method: str, url: str, headers: Mapping[str, str], body: str, timeout: float
) -> tuple[int, str]:
    """The same call from CPython's standard library (a kernel without LangChain)."""
    import socket
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body.encode(), headers=dict(headers), method=method)
    opener = urllib.request.build_opener(_same_origin_redirects())
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except TimeoutError:
        raise TransportError("timeout") from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, TimeoutError | socket.timeout):
            raise TransportError("timeout") from None
        raise TransportError("network", str(e.reason)) from None


def _same_origin_redirects() -> Any:
    import urllib.request

    class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
        """Follows a redirect only within the request's origin and only when it keeps the
        method and body (307, 308); any other is a :class:`TransportError` (``redirect``),
        so the ``Authorization`` header never goes to another server."""

        def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def,unused-ignore]
            if origin(newurl) != origin(req.full_url) or code not in (307, 308):
                fp.close()
                raise TransportError("redirect", f"{shown_url(newurl)} (HTTP {code})")
            return urllib.request.Request(
                newurl,
                data=req.data,
                headers=dict(req.header_items()),
                method=req.get_method(),
            )

    return SameOriginRedirects()
