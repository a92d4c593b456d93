"""The model in the JupyterLite page, in headless Chromium, offline, with the real model.

The offline site (``build/lite``, built with the pinned model in parts and wllama) is served on
127.0.0.1 with the site's ``_headers`` (cross-origin isolated: several threads); Chromium
resolves no other host, and a request to one fails the test. The tutorial's own-question cell
(``%%ask --model browser``) runs on ``shop.sqlite``: the page fetches the model's parts once
into the browser's storage, loads it, and answers through the kernel's synchronous requests
relayed by the service worker. The panel shows the model, its threads, its calls and tokens.
A reload then loads the model from the browser's copy: no part is fetched again. A host
without the isolation headers gives one thread, and the model says so. A site built with
``--model-url`` takes the parts from another origin.

A Chromium profile on disk (the browser's storage as a reader's would be); screenshots go to
test-artifacts/lite-model/.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.browser.lab import CHROMIUM, CHROMIUM_ARGS
from tests.conftest import need
from tests.lite.site import OFFLINE, ROOT, model_inputs, serve
from tests.lite.test_lite_browser import DONE, KERNEL_IDLE, NB, NOTEBOOK_NAME, REFUSED, SOURCES

pytestmark = [pytest.mark.lite, pytest.mark.llm]

ARTIFACTS = ROOT / "test-artifacts" / "lite-model"
MODEL = "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)"
#: A question on two busy cores: the model's load and a few calls of up to minutes each.
QUESTION_TIMEOUT = 20 * 60_000
RUN_CELL = (
    f"async i => {{ const nb = ({NB})(); nb.content.activeCellIndex = i;"
    " await window.jupyterapp.commands.execute('notebook:run-cell'); }"
)


class Browser:
    """One Chromium profile on disk, the requests it made, and its console errors."""

    def __init__(self, context) -> None:
        self.context = context
        self.requests: list[str] = []
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.part_headers: dict[str, str] = {}
        context.on("request", self._watch)
        context.on("requestfailed", self._watch_failed)
        context.on("response", self._response)

    def _watch(self, request) -> None:
        url = request.url
        if url.split(":", 1)[0] in ("http", "https", "ws", "wss"):
            self.requests.append(url)
            if urlparse(url).hostname != "127.0.0.1":
                self.outside.append(url)

    def _watch_failed(self, request) -> None:
        if urlparse(request.url).hostname not in ("127.0.0.1", None):
            self.outside.append(request.url)

    def _response(self, response) -> None:
        if "/static/cadet-model/parts/" in response.url:
            self.part_headers[response.url] = response.headers.get("cache-control", "")

    def parts_fetched(self, since: int = 0) -> list[str]:
        return [u for u in self.requests[since:] if "/static/cadet-model/parts/" in u]

    def open(self, url: str):
        page = self.context.new_page()
        page.set_default_timeout(180_000)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.goto(url)
        page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Cell')")
        page.wait_for_function(KERNEL_IDLE, timeout=180_000)
        return page


def run_cell(page, index: int, timeout: float = 180_000):
    """Runs the notebook's cell ``index`` to the idle kernel; returns its locator."""
    page.evaluate(RUN_CELL, index)
    page.wait_for_timeout(300)
    page.wait_for_function(KERNEL_IDLE, timeout=timeout)
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def append_cell(page, source: str, timeout: float = 180_000):
    """Appends a code cell with ``source``, runs it; returns its locator."""
    index = len(page.evaluate(SOURCES))
    page.evaluate(
        f"""() => ({NB})().content.model.sharedModel.insertCell({index},
        {{cell_type: 'code', source: {source!r}}})"""
    )
    return run_cell(page, index, timeout)


@pytest.fixture(scope="module")
def browser(lite_build, tmp_path_factory):
    missing = model_inputs()
    need(missing is None, f"the site was built without the model in the page: {missing} missing")
    need(Path(CHROMIUM).exists(), f"Chromium not installed at {CHROMIUM} (Debian package chromium)")
    need(importlib.util.find_spec("playwright") is not None, "Python package playwright missing")
    from playwright.sync_api import sync_playwright

    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    args = [*CHROMIUM_ARGS, "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
    with serve(OFFLINE) as base, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM,
            args=args,
            headless=True,
            viewport={"width": 1280, "height": 1400},
        )
        try:
            session = Browser(context)
            session.base = base  # type: ignore[attr-defined]
            session.pw = pw  # type: ignore[attr-defined]
            yield session
        finally:
            context.close()
    assert not session.outside, f"requests left 127.0.0.1: {session.outside[:10]}"


def test_own_question_answered_by_the_model_in_the_page(browser):
    page = browser.open(f"{browser.base}/")  # the site's root: it opens the tutorial
    assert page.evaluate("crossOriginIsolated") is True  # the site's _headers, as served
    sources = page.evaluate(SOURCES)
    own = next(i for i, s in enumerate(sources) if "--model browser" in s)
    for i, source in enumerate(sources[:own]):  # %load_ext and the shop's connection
        if source.startswith(("%load_ext", "import sqlite3", "%config AskMagic.model_timeout")):
            run_cell(page, i)
    t0 = time.monotonic()
    cell = run_cell(page, own, timeout=QUESTION_TIMEOUT)
    cell.locator(f"{DONE}, {REFUSED}").first.wait_for(timeout=QUESTION_TIMEOUT)
    seconds = time.monotonic() - t0
    panel = cell.locator(".cadet-panel")
    text = cell.inner_text()
    page.screenshot(path=str(ARTIFACTS / "own-question.png"))
    # answered by the real model, on the shop
    assert panel.locator(".cadet-status.cadet-ok").count() == 1, text
    assert panel.locator("table.cadet-table tbody tr").count() >= 2, text
    assert panel.locator(".cadet-scripted").count() == 0
    # the panel names the model, where it runs and its threads, and counts its calls and tokens
    assert f"browser: {MODEL}, run in this page, 2 threads: cross-origin isolated" in text, text
    usage = re.search(
        r"model [\d.]+ s in (\d+) call\(s\) \u00b7 tokens ([\d,]+) in / ([\d,]+) out", text
    )
    assert usage and int(usage[1]) >= 1 and int(usage[2].replace(",", "")) > 100, text
    # the load: every part fetched once, never kept in the HTTP cache (the page keeps them)
    assert "The model in this page is ready: fetched 1,117 MB" in text, text
    fetched = browser.parts_fetched()
    assert len(fetched) == len(set(fetched)) == 12, fetched
    assert set(browser.part_headers.values()) == {"no-store"}, browser.part_headers
    assert not browser.outside, browser.outside
    assert not [e for e in browser.errors if "404" not in e], browser.errors
    print(f"own question answered by the model in the page in {seconds:.1f} s (with its load)")
    page.close()


def test_a_reload_loads_the_browsers_copy(browser):
    """A second visit: the model comes from the browser's storage, no part is fetched."""
    since = len(browser.requests)
    page = browser.open(f"{browser.base}/lab/index.html?path={NOTEBOOK_NAME}")
    cell = append_cell(
        page,
        "from cadet_magic.llm.page import load_page_model\n"
        "print(load_page_model().state.progress_text())",
        timeout=600_000,
    )
    out = cell.locator(".jp-OutputArea").inner_text()
    assert "The model in this page is ready: read from this browser's storage" in out, out
    assert not browser.parts_fetched(since), browser.parts_fetched(since)
    page.screenshot(path=str(ARTIFACTS / "reload.png"))
    page.close()


def test_one_thread_where_the_host_sends_no_isolation_headers(browser):
    """A host that ignores ``_headers``: the page is not cross-origin isolated, the model
    would run on one thread, and the model's label says so (nothing is loaded here: another
    origin, another storage)."""
    with serve(OFFLINE, isolated=False) as plain:
        page = browser.open(f"{plain}/lab/index.html?path={NOTEBOOK_NAME}")
        assert page.evaluate("crossOriginIsolated") is False
        cell = append_cell(
            page,
            "from cadet_magic.llm.page import PageChatModel\nprint(PageChatModel().cadet_label)",
        )
        out = cell.locator(".jp-OutputArea").inner_text()
        assert f"browser: {MODEL}, run in this page, 1 thread: the page is not" in out, out
        page.close()


def test_the_model_from_a_url_the_deployer_names(browser, tmp_path):
    """A site built with ``--model-url``: no parts of its own, the page fetches them from
    another origin (the host allows every origin with CORS) into the browser's storage,
    checked against the same hashes, and loads the model; the reader sees the megabytes
    fetched, growing, then the loading."""
    parts = OFFLINE / "static" / "cadet-model" / "parts"
    with serve(parts, cors=True) as host:
        out = tmp_path / "site"
        proc = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "build_lite.py"), "--variant", "offline"]
            + ["--model-url", f"{host}/", "--out", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert not (out / "static" / "cadet-model" / "parts").exists()
        since = len(browser.requests)
        with serve(out) as base:
            page = browser.open(f"{base}/lab/index.html?path={NOTEBOOK_NAME}")
            # the lines the reader sees below the cell while it loads, each as it came
            cell = append_cell(
                page,
                "from cadet_magic.llm.page import PageChatModel\n"
                "_m = PageChatModel(on_progress=lambda s: print(s.progress_text()))\n"
                "_ = _m.ensure_loaded()",
                timeout=600_000,
            )
            out_text = cell.locator(".jp-OutputArea").inner_text()
            lines = out_text.strip().splitlines()
            assert "The model in this page is ready: fetched 1,117 MB" in lines[-1], out_text
            # the megabytes fetched, growing, then the loading, then ready
            got = [re.search(r"into this browser .*: ([\d,]+) of 1,117 MB", x) for x in lines]
            fetching = [(i, int(m[1].replace(",", ""))) for i, m in enumerate(got) if m]
            mb = [n for _, n in fetching]
            assert len(mb) >= 2 and mb == sorted(mb) and mb[-1] > mb[0], out_text
            loading = [i for i, x in enumerate(lines) if x.startswith("Loading the model into")]
            assert loading and fetching[-1][0] < loading[0] < len(lines) - 1, out_text
            fetched = [u for u in browser.requests[since:] if ".gguf.part" in u]
            assert len(fetched) == 12 and all(u.startswith(host) for u in fetched), fetched
            page.close()
