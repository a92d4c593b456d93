"""The ``browser`` model spec: the model that runs in the JupyterLite page itself (edge).

The JupyterLite site ships the pinned GGUF model in parts and llama.cpp compiled to WebAssembly
(npm ``@wllama/wllama``); a page of the site runs it (``lite/model/page.js``). The kernel runs
Pyodide in a web worker and a cell's code is synchronous, so the client speaks to the page
through synchronous requests to ``<site>/cadet-model/<path>``, which the site's service worker
answers by relaying them to the page and back (``lite/model/relay.js``; ARCHITECTURE.md says
why this channel): ``status`` (``?since=V`` waits up to a second for a change after version
``V``), ``load``, and the model calls: ``calls`` starts one (OpenAI's chat format) and
``calls/<id>?wait=S`` asks for its end, so that no request outlasts the browser's limit on a
service worker's answer (:meth:`PageChatModel.invoke`).

Loading the model (:func:`load_page_model`, before the run starts, so a model call's time is
the call's own): its parts are fetched once into the browser's storage (1.1 GB; later visits
read them from there), then loaded into the page's memory. Meanwhile the client follows the
page's progress and shows it below the cell (:func:`show_progress`: bytes of the model fetched,
then loading) and says how many threads the model runs with: several when the page is
cross-origin isolated (the site's ``_headers``), one otherwise.

Example (a scripted stand-in for the page, not the real one):
    >>> import json
    >>> idle = {"state": "idle", "version": 0, "name": "Qwen", "threads": 2, "isolated": True}
    >>> answers = iter([
    ...     idle, idle,
    ...     {"state": "fetching", "version": 1, "total": 100, "fetched": 40},
    ...     {"state": "ready", "version": 2, "name": "Qwen", "threads": 2, "isolated": True,
    ...      "total": 100, "fetched": 100},
    ...     {"id": "c1"},
    ...     {"state": "done", "reply": {"choices": [{"message": {"content": "SELECT 1"}}],
    ...      "usage": {"prompt_tokens": 12, "completion_tokens": 3}}},
    ... ])
    >>> def page(method, url, headers, body, timeout):
    ...     return 200, json.dumps(next(answers))
    >>> seen = []
    >>> model = PageChatModel("http://site/", transport=page, on_progress=seen.append)
    >>> model.cadet_label
    'browser: Qwen, run in this page, 2 threads: cross-origin isolated'
    >>> reply = model.invoke([("human", "one?")])
    >>> reply.content, reply.usage["completion_tokens"], [s.state for s in seen]
    ('SELECT 1', 3, ['fetching', 'ready'])
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from cadet_magic.errors import CadetError, ConfigurationError, ModelCallError, NoModelError
from cadet_magic.llm.browser import BrowserReply, chat_messages, read_json
from cadet_magic.llm.transport import Transport, TransportError, shown_url

log = logging.getLogger("cadet_magic")

#: The spec.
SPEC = "browser"
#: Where the site's service worker answers for the page (under the site's root).
PATH = "cadet-model/"
#: Seconds a model call may take when ``AskMagic.model_timeout`` sets no limit (two cores run
#: the model in the page several times slower than llama.cpp in a CPython kernel).
CALL_TIMEOUT = 600.0
#: Seconds a request may take besides the wait it asks for (the page answers at once).
STATUS_TIMEOUT = 30.0
#: Seconds one request for a call's end waits at most: the site's service worker answers each
#: request, and Chromium ended one of its fetch events after 5 minutes (a call on a busy machine
#: took longer).
POLL_WAIT = 20.0
NO_MODEL_HERE = (
    "No model configured, and this JupyterLite site has no model in the page: name one that "
    "the browser can reach, e.g. %%ask --model openai:gpt-4o-mini with %config "
    'AskMagic.api_key = "...", or an OpenAI-compatible server on your machine that allows this '
    'page (%config AskMagic.base_url = "http://127.0.0.1:8000/v1").'
)
NOT_IN_PAGE = (
    "The browser model runs in the JupyterLite site's page only; in this kernel use "
    "--model local (the model installed by python -m cadet_magic.local install) or "
    "llamacpp:PATH."
)


@dataclass(frozen=True)
class PageModelState:
    """What the page says about its model (``lite/model/page.js``)."""

    #: idle, absent (a site without the model), fetching, loading, ready, error
    state: str = "idle"
    version: int = 0
    name: str = ""
    total: int = 0  # bytes of the model
    stored: int = 0  # bytes read from the browser's storage
    fetched: int = 0  # bytes fetched from the site so far
    parts: int = 0
    parts_stored: int = 0
    threads: int = 0  # planned until the model is loaded, then the ones it runs with
    isolated: bool = False
    cores: int = 0
    fetch_seconds: float = 0.0
    load_seconds: float = 0.0
    error: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PageModelState:
        """From the page's JSON (camelCase names; unknown ones ignored).

        >>> PageModelState.from_json({"state": "ready", "loadSeconds": 2.5, "new": 1}).load_seconds
        2.5
        """
        known = {f.name for f in fields(cls)}
        values = {re.sub("([A-Z])", r"_\1", k).lower(): v for k, v in data.items()}
        return cls(**{k: v for k, v in values.items() if k in known})

    @property
    def threads_text(self) -> str:
        """How many threads, and why.

        >>> PageModelState(threads=2, isolated=True).threads_text
        '2 threads: cross-origin isolated'
        >>> PageModelState(threads=1, isolated=False).threads_text
        '1 thread: the page is not cross-origin isolated'
        """
        n = self.threads or 1
        count = f"{n} thread{'s' if n != 1 else ''}"
        if self.isolated:
            return f"{count}: cross-origin isolated"
        return f"{count}: the page is not cross-origin isolated"

    def progress_text(self) -> str:
        """One line for the reader while the model loads.

        >>> PageModelState("fetching", total=1_117_320_768, fetched=400_000_000).progress_text()
        'Fetching the model into this browser (once; later visits read it from there): 400 of 1,117 MB'
        >>> PageModelState("loading", threads=1).progress_text()
        'Loading the model into memory (1 thread: the page is not cross-origin isolated)'
        """
        mb = 1e6
        if self.state == "fetching":
            done = (self.stored + self.fetched) / mb
            if self.fetched or not self.stored:
                return (
                    "Fetching the model into this browser (once; later visits read it from "
                    f"there): {done:,.0f} of {self.total / mb:,.0f} MB"
                )
            return f"Reading the model from this browser's storage: {done:,.0f} MB"
        if self.state == "loading":
            return f"Loading the model into memory ({self.threads_text})"
        if self.state == "ready":
            got = (
                f"fetched {self.fetched / mb:,.0f} MB in {self.fetch_seconds:.1f} s"
                if self.fetched
                else f"read from this browser's storage in {self.fetch_seconds:.1f} s"
            )
            return (
                f"The model in this page is ready: {got}, loaded in {self.load_seconds:.1f} s "
                f"({self.threads_text})."
            )
        return f"The model in this page: {self.state}"


def reply_of(reply: Any) -> BrowserReply:
    """The page's OpenAI chat completion as a reply (its text and usage).

    >>> reply_of({"choices": [{"message": {"content": "SELECT 1"}}],
    ...           "usage": {"prompt_tokens": 9, "completion_tokens": 2}}).usage
    {'prompt_tokens': 9, 'completion_tokens': 2}
    """
    try:
        content = reply["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise ModelCallError("The model in this page answered without a message.") from None
    usage = reply.get("usage")
    return BrowserReply(str(content), dict(usage) if isinstance(usage, Mapping) else None)


def site_root() -> str:
    """The JupyterLite site's root URL, from the kernel's worker (``<root>/extensions/...``)."""
    import js  # Pyodide's bridge to the JavaScript global scope

    here = str(js.location.href)
    root = here.split("/extensions/", 1)[0] if "/extensions/" in here else str(js.location.origin)
    return root.rstrip("/") + "/"


class PageChatModel:
    """A chat model answered by the page's model: ``invoke(messages)`` returns a
    :class:`~cadet_magic.llm.browser.BrowserReply` with the page's usage report.

    Args:
        root: the site's root URL (default: :func:`site_root`).
        timeout: seconds a model call may take (None: :data:`CALL_TIMEOUT`).
        temperature: sampling temperature (None: 0, greedy, as the CPython kernel's ``local``).
        transport: the synchronous request (default: the browser's ``XMLHttpRequest``).
        on_progress: called with each new :class:`PageModelState` while the model loads
            (default: :func:`show_progress`).
        default: chosen because no model was configured (the label says so).
        clock: seconds, for the call's time limit.
    """

    def __init__(
        self,
        root: str | None = None,
        *,
        timeout: float | None = None,
        temperature: float | None = None,
        transport: Transport | None = None,
        on_progress: Callable[[PageModelState], None] | None = None,
        default: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if transport is None:
            from cadet_magic.llm.transport import xhr_transport

            transport = xhr_transport
        self.root = root or site_root()
        self.transport = transport
        self.on_progress = on_progress if on_progress is not None else show_progress()
        self.default = default
        self.name = SPEC
        self.state = self.status()
        if self.state.state == "absent":
            raise ConfigurationError(
                "This JupyterLite site was built without the model in the page "
                "(scripts/build_lite.sh --no-model): use a model server or a hosted model "
                "(see the tutorial's last section), or a site built with the model."
            )
        self.model_name = self.state.name or SPEC
        self.timeout = CALL_TIMEOUT if timeout is None else float(timeout)
        self.temperature = 0.0 if temperature is None else float(temperature)
        self.clock = clock

    @property
    def cadet_label(self) -> str:
        """How answers name the model: its name, where it runs and with how many threads (and,
        chosen because none was configured, that too)."""
        why = " (no model configured, so the model in this page)" if self.default else ""
        return f"{SPEC}{why}: {self.model_name}, run in this page, {self.state.threads_text}"

    def _send(
        self,
        method: str,
        path: str,
        body: str = "",
        timeout: float = STATUS_TIMEOUT,
        raw: bool = False,
    ) -> Mapping[str, Any]:
        """One request to the page (through the site's service worker): its JSON answer, or one
        :class:`ModelCallError` line (``raw``: no answer at all is the transport's
        :class:`TransportError`)."""
        url = self.root + PATH + path
        headers = {"Content-Type": "application/json"} if body else {}
        try:
            status, text = self.transport(method, url, headers, body, timeout)
        except TransportError as e:
            if raw:
                raise
            raise ModelCallError(
                f"The page's model did not answer at {shown_url(url)} ({e.kind}): reload the page."
            ) from None
        try:
            data = read_json(text)
        except ValueError:
            data = None
        if status == 404 and path == "status" or not isinstance(data, Mapping):
            raise ModelCallError(
                f"Nothing answers for the page's model at {shown_url(url)} (HTTP {status}): this "
                "page is not one of the JupyterLite site's with the model, or its service worker "
                "is not running yet (reload the page)."
            )
        if status != 200:
            err = data.get("error")
            detail = err.get("message", "") if isinstance(err, Mapping) else str(err or "")
            raise ModelCallError(f"The page's model answered HTTP {status}: {detail}")
        return data

    def _request(self, method: str, path: str) -> PageModelState:
        return PageModelState.from_json(self._send(method, path))

    def status(self, since: int | None = None) -> PageModelState:
        """The page's model state (waiting up to a second for a version after ``since``)."""
        return self._request("GET", "status" if since is None else f"status?since={since}")

    def ensure_loaded(self) -> PageModelState:
        """Loads the model if it is not loaded yet, reporting each change to ``on_progress``;
        a failed load is one :class:`ModelCallError` line."""
        state = self.status()
        if state.state != "ready":
            state = self._request("POST", "load")
            shown = -1
            while state.state not in ("ready", "error", "absent"):
                if state.version != shown and state.state != "idle":  # idle: load not begun
                    self.on_progress(state)
                    shown = state.version
                state = self.status(since=state.version)
            if state.state == "error":
                raise ModelCallError(f"The model in this page could not be loaded: {state.error}")
            self.on_progress(state)
        self.state = state
        return state

    def invoke(self, messages: Sequence[Any], *args: Any, **kwargs: Any) -> BrowserReply:
        """Starts the call in the page, then asks for its end (each request waiting up to
        :data:`POLL_WAIT` seconds) until it ends or :attr:`timeout` passes; a call abandoned
        (the time limit, an interrupt) is stopped in the page."""
        self.ensure_loaded()
        body = json.dumps({"messages": chat_messages(messages), "temperature": self.temperature})
        call = str(self._send("POST", "calls", body)["id"])
        deadline = self.clock() + self.timeout
        try:
            while True:
                left = deadline - self.clock()
                if left <= 0:
                    self._cancel(call)
                    raise ModelCallError(
                        f"The model did not answer within AskMagic.model_timeout = "
                        f"{self.timeout:g} s (the model in this page); raise it with %config "
                        f"AskMagic.model_timeout = {max(600, 2 * self.timeout):g}."
                    )
                wait = round(min(POLL_WAIT, left), 1)
                try:
                    got = self._send(
                        "GET", f"calls/{call}?wait={wait:g}", "", wait + STATUS_TIMEOUT, raw=True
                    )
                except TransportError as e:  # a page too busy to answer in time: ask again
                    if e.kind != "timeout":
                        raise ModelCallError(
                            f"The page's model did not answer ({e.kind}): reload the page."
                        ) from None
                    continue
                if got.get("state") == "done":
                    return reply_of(got.get("reply"))
                if got.get("state") == "error":
                    raise ModelCallError(f"The model in this page failed: {got.get('error')}")
        except KeyboardInterrupt:
            self._cancel(call)
            raise

    def _cancel(self, call: str) -> None:
        try:
            self._send("POST", f"calls/{call}/cancel")
        except ModelCallError:  # the page is gone: so is the call
            pass

    def __repr__(self) -> str:
        return f"PageChatModel({self.root!r})"


def show_progress() -> Callable[[PageModelState], None]:
    """Shows the loading below the cell being run, one line updated in place (in IPython),
    else logs it."""
    handle: Any = None

    def show(state: PageModelState) -> None:
        nonlocal handle
        text = state.progress_text()
        shell = sys.modules.get("IPython")
        if shell is None or shell.get_ipython() is None:
            log.info("%s", text)
            return
        from html import escape

        from IPython.display import HTML, display

        bar = ""
        if state.state == "fetching" and state.total:
            done = state.stored + state.fetched
            bar = f" <progress value='{done}' max='{state.total}'></progress>"
        html = HTML(f"<div class='cadet-model-progress'>{escape(text)}{bar}</div>")
        if handle is None:
            handle = display(html, display_id=True)
        else:
            handle.update(html)

    return show


def load_page_model(
    timeout: float | None = None, temperature: float | None = None, *, default: bool = False
) -> PageChatModel:
    """The ``browser`` spec's model (the JupyterLite page's), loaded; one
    :class:`ConfigurationError` line outside the page."""
    if sys.platform != "emscripten":
        raise ConfigurationError(NOT_IN_PAGE)
    model = PageChatModel(timeout=timeout, temperature=temperature, default=default)
    model.ensure_loaded()  # before the run: the model calls' times are the calls' own
    return model


def default_page_model(timeout: float | None = None, temperature: float | None = None) -> Any:
    """The model used in JupyterLite when none is configured: the page's, when the site has
    one, else :class:`NoModelError` saying what works in the browser."""
    try:
        model = PageChatModel(timeout=timeout, temperature=temperature, default=True)
    except CadetError:  # a site without the model, or no page answering for it
        raise NoModelError(NO_MODEL_HERE) from None
    model.ensure_loaded()
    return model
