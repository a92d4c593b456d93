"""``%%ask`` in the offline JupyterLite site, in headless Chromium, with nothing leaving 127.0.0.1.

The built site (``build/lite``) is served on 127.0.0.1; Chromium resolves no other host, and every
request the page or the kernel's worker makes to another host fails the test. The browser
tutorial notebook runs top to bottom against the shipped SQLite shop with scripted replies: a
first-try answer, a failed attempt corrected on the next, a refused DELETE, and the fallback
ending with the clear "pandas is not available in this kernel" message. Then the browser model
client talks to an OpenAI-compatible server on 127.0.0.1 (another origin: the CORS preflight is
real, nothing is intercepted), and its one-line errors are checked: timeout, HTTP error, CORS
refusal. Screenshots go to test-artifacts/lite/.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.browser.lab import CHROMIUM, CHROMIUM_ARGS
from tests.conftest import need
from tests.fake_openai import FakeOpenAI
from tests.lite.site import OFFLINE, ROOT, serve

pytestmark = pytest.mark.lite

ARTIFACTS = ROOT / "test-artifacts" / "lite"
NOTEBOOK_NAME = "cadet_in_the_browser.ipynb"
NB = "() => window.jupyterapp.shell.currentWidget"
KERNEL_IDLE = f"""() => {{
  const w = ({NB})();
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}}"""
SOURCES = f"""() => {{
  const cells = ({NB})().content.model.cells; const out = [];
  for (let i = 0; i < cells.length; i++) out.push(cells.get(i).sharedModel.getSource());
  return out;
}}"""
DONE = ".cadet-panel .cadet-status.cadet-ok, .cadet-panel .cadet-status.cadet-bad"
# a UsageError (no model, bad option): IPython prints its one line on stderr
REFUSED = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"


class Session:
    """The page, the requests that left 127.0.0.1, and timings."""

    def __init__(self, page, outside: list[str], errors: list[str]) -> None:
        self.page = page
        self.outside = outside
        self.errors = errors  # the console's errors and uncaught exceptions, page and workers
        self.missing: list[str] = []  # addresses answered with an HTTP error
        self.timings: dict[str, float] = {}

    def shot(self, name: str, top=None) -> None:
        if top is not None:
            top.evaluate("e => e.scrollIntoView({block: 'start'})")
            self.page.wait_for_timeout(300)
        self.page.screenshot(path=str(ARTIFACTS / name))

    def run_new_cell(self, source: str, timeout: float = 120_000):
        """Appends a code cell, runs it to the end, returns its locator."""
        index = len(self.page.evaluate(SOURCES))
        self.page.evaluate(
            f"""() => {{
          const nb = ({NB})();
          nb.content.model.sharedModel.insertCell({index}, {{cell_type: 'code', source: {source!r}}});
          nb.content.activeCellIndex = {index};
        }}"""
        )
        self.page.evaluate(
            "async () => { await window.jupyterapp.commands.execute('notebook:run-cell'); }"
        )
        self.page.wait_for_function(KERNEL_IDLE, timeout=timeout)
        cell = self.page.locator(".jp-Notebook .jp-Cell").nth(index)
        if source.lstrip().startswith("%%ask"):
            cell.locator(f"{DONE}, {REFUSED}").first.wait_for(timeout=timeout)
        self.page.wait_for_timeout(300)
        return cell


@pytest.fixture(scope="module")
def lite(lite_build):
    need(Path(CHROMIUM).exists(), f"Chromium not installed at {CHROMIUM} (Debian package chromium)")
    need(importlib.util.find_spec("playwright") is not None, "Python package playwright missing")
    from playwright.sync_api import sync_playwright

    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    outside: list[str] = []

    def watch(request) -> None:
        url = request.url
        if url.split(":", 1)[0] in ("http", "https", "ws", "wss"):
            if urlparse(url).hostname != "127.0.0.1":
                outside.append(url)

    # no other host resolves: a request meant for a CDN fails here instead of leaving
    args = [*CHROMIUM_ARGS, "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
    with serve(OFFLINE) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 1400})
            context.on("request", watch)
            context.on("requestfailed", watch)
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
            missing: list[str] = []  # the site's files the page asked for and did not get
            context.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
            page.set_default_timeout(120_000)
            t0 = time.monotonic()
            page.goto(f"{base}/")  # the site's root page: it opens the tutorial
            page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Cell')")
            page.wait_for_function(KERNEL_IDLE, timeout=180_000)
            session = Session(page, outside, errors)
            session.missing = missing
            session.timings["page open to kernel idle"] = time.monotonic() - t0
            yield session
        finally:
            browser.close()
    assert not outside, f"requests left 127.0.0.1: {outside[:10]}"


def test_the_site_opens_on_the_tutorial_without_errors(lite):
    path = lite.page.evaluate(f"() => ({NB})().context.path")
    assert path == NOTEBOOK_NAME, path
    assert not lite.errors, (lite.errors, lite.missing)
    # the notebook's first checkpoint is made (the kernel's start no longer waits for it)
    checkpoints = lite.page.evaluate(
        "async path => { const contents = window.jupyterapp.serviceManager.contents;"
        " for (let i = 0; i < 100; i++) { const c = await contents.listCheckpoints(path);"
        " if (c.length) return c.length; await new Promise(r => setTimeout(r, 100)); }"
        " return 0; }",
        NOTEBOOK_NAME,
    )
    assert checkpoints >= 1


def test_tutorial_notebook_runs_offline(lite):
    page = lite.page
    sources = page.evaluate(SOURCES)
    # the scripted sections: every cell above the reader's own question (tests/lite/
    # test_lite_model.py runs that one with the model in the page)
    own = next(i for i, s in enumerate(sources) if "--model browser" in s)
    asks = [i for i, s in enumerate(sources[:own]) if s.startswith("%%ask")]
    assert len(asks) == 4, sources
    t0 = time.monotonic()
    page.evaluate(
        f"() => {{ ({NB})().content.activeCellIndex = {own};"
        " return window.jupyterapp.commands.execute('notebook:run-all-above'); }"
    )
    page.wait_for_function(
        f"() => document.querySelectorAll('{DONE}').length >= {len(asks)}", timeout=240_000
    )
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    page.wait_for_timeout(500)
    lite.timings["tutorial run-all"] = time.monotonic() - t0
    body = page.locator("body").inner_text()
    assert "Traceback" not in body and "Loading widget" not in body, body[-3000:]

    cells = page.locator(".jp-Notebook .jp-Cell")
    panels = [cells.nth(i).locator(".cadet-panel") for i in asks]
    for panel in panels:
        assert "scripted" in panel.locator(".cadet-scripted").text_content().lower()
    # JupyterLab renders cells out of view lazily: the checks below read rendered text
    cells.nth(asks[0]).scroll_into_view_if_needed()
    page.wait_for_timeout(500)

    # 1. first try; -o without pandas stores a list of dicts and says so
    first = cells.nth(asks[0])
    assert panels[0].locator(".cadet-status.cadet-ok").count() == 1
    assert "list of dicts" in first.locator(".jp-OutputArea").inner_text()
    top = cells.nth(asks[0] + 1).locator(".jp-OutputArea").inner_text()
    assert "{'country':" in top and "'customers':" in top, top

    # 2. a failed attempt corrected on the next, with feedback the panel shows
    corrected = panels[1]
    sections = corrected.locator(".cadet-attempts > .jupyter-widget-Collapse")
    assert sections.count() == 2
    assert "\u2713" in sections.nth(1).locator(".jupyter-widget-Collapse-header").inner_text()
    sections.nth(0).locator(".jupyter-widget-Collapse-header").click()
    feedback = sections.nth(0).locator(".cadet-feedback")
    feedback.wait_for(state="visible")
    assert "unit_price" in feedback.inner_text()
    assert corrected.locator("table.cadet-table tbody tr").count() >= 6
    lite.shot("corrected.png", top=corrected)

    # 3. the DELETE is refused before it reaches the database; the retry reads instead
    refused = panels[2]
    attempt1 = refused.locator(".cadet-attempts > .jupyter-widget-Collapse").first
    assert "DELETE" in attempt1.text_content()
    verdict = attempt1.locator(".cadet-verdict").text_content()
    assert "DELETE" in verdict or "write" in verdict.lower() or "read" in verdict.lower(), verdict
    assert refused.locator(".cadet-status.cadet-ok").count() == 1
    lite.shot("refused.png", top=refused)

    # 4. the fallback ends with the clear message
    fallback = panels[3]
    assert fallback.locator(".cadet-status.cadet-bad").count() == 1
    assert "pandas is not available in this kernel" in fallback.text_content()
    lite.shot("fallback.png", top=fallback)

    # the insert button adds the corrected SQL as a %%sql cell below
    count = len(page.evaluate(SOURCES))
    corrected.locator("button.cadet-insert").click()
    page.wait_for_function(
        f"() => ({SOURCES})()[{asks[1] + 1}].startsWith('%%sql')", timeout=20_000
    )
    inserted = page.evaluate(SOURCES)[asks[1] + 1]
    assert "unit_price" in inserted and "FROM order_items" in inserted
    assert len(page.evaluate(SOURCES)) == count + 1
    lite.shot("inserted.png", top=cells.nth(asks[1]))
    assert not lite.outside, lite.outside


def test_requests_from_the_kernel_are_watched(lite):
    """The watch sees the kernel worker's own requests, and no other host resolves."""
    probe = "https://cdn.jsdelivr.net/cadet-probe"
    cell = lite.run_new_cell(
        "from cadet_magic.llm.browser import TransportError, xhr_transport\n"
        "try:\n"
        f"    xhr_transport('GET', {probe!r}, {{}}, '', 5)\n"
        "except TransportError as e:\n"
        "    print('blocked:', e.kind)"
    )
    assert "blocked: blocked" in cell.locator(".jp-OutputArea").inner_text()
    assert probe in lite.outside, lite.outside
    lite.outside.clear()  # the probe was ours


def test_browser_model_client(lite):
    """openai:<model> with a base URL: a real cross-origin call from the kernel's worker."""
    with FakeOpenAI(cors=True) as server:
        server.script(
            [
                "```sql\nSELECT COUNT(*) AS n FROM order\n```",
                "```sql\nSELECT COUNT(*) AS n FROM orders\n```",
            ]
        )
        lite.run_new_cell(
            '%config AskMagic.model = "openai:scripted-test-model"\n'
            f'%config AskMagic.base_url = "{server.base_url}"\n'
            '%config AskMagic.api_key = "test-key"'
        )
        t0 = time.monotonic()
        cell = lite.run_new_cell("%%ask --con con\nHow many orders are there?")
        lite.timings["browser client %%ask (2 calls)"] = time.monotonic() - t0
        panel = cell.locator(".cadet-panel")
        assert panel.locator(".cadet-status.cadet-ok").count() == 1, cell.inner_text()
        assert panel.locator(".cadet-attempts > .jupyter-widget-Collapse").count() == 2
        assert "600" in panel.locator("table.cadet-table").inner_text()
        lite.shot("browser-client.png", top=panel)
        methods = [(r.method, r.path) for r in server.received]
        assert ("OPTIONS", "/v1/chat/completions") in methods, methods  # the real preflight
        posts = [r for r in server.received if r.method == "POST"]
        assert len(posts) == 2
        assert posts[0].headers["authorization"] == "Bearer test-key"
        assert posts[0].headers["origin"].startswith("http://127.0.0.1:")
        assert posts[0].body["model"] == "scripted-test-model"

        # HTTP error: one line naming the status and the server's message
        server.script([{"status": 401, "message": "Incorrect API key provided"}])
        cell = lite.run_new_cell("%%ask --con con\nHow many products are there?")
        text = cell.locator(".jp-OutputArea").inner_text()
        assert "answered HTTP 401" in text and "Incorrect API key provided" in text, text
        assert "Traceback" not in text

        # timeout: AskMagic.model_timeout bounds the call
        server.script([{"content": "```sql\nSELECT 1\n```", "delay": 4}])
        lite.run_new_cell("%config AskMagic.model_timeout = 1")
        cell = lite.run_new_cell("%%ask --con con\nHow many customers are there?")
        text = cell.locator(".jp-OutputArea").inner_text()
        assert "did not answer within AskMagic.model_timeout = 1 s" in text, text
        lite.run_new_cell("%config AskMagic.model_timeout = 120")

    # CORS refusal: a server that sends no CORS headers
    with FakeOpenAI(["```sql\nSELECT 1\n```"], cors=False) as bare:
        lite.run_new_cell(f'%config AskMagic.base_url = "{bare.base_url}"')
        cell = lite.run_new_cell("%%ask --con con\nHow many orders were cancelled?")
        text = cell.locator(".jp-OutputArea").inner_text()
        assert "Access-Control-Allow-Origin" in text and "could not reach" in text, text
        assert not bare.requests  # the browser never sent the POST
        lite.shot("cors-refused.png", top=cell)

    # scripted:PATH works here too (the tutorial used it); the key never reached the notebook
    assert "test-key" not in (ROOT / "lite" / "content" / NOTEBOOK_NAME).read_text()
    print("lite timings:", {k: round(v, 1) for k, v in lite.timings.items()})
    assert not lite.outside, lite.outside


def test_follow_up_and_rerun_in_the_browser(lite):
    """--follow sends the previous answer with the question; --rerun makes no model call."""
    per_status = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY status"
    shipped = "SELECT COUNT(*) AS n FROM orders WHERE status = 'shipped'"
    with FakeOpenAI(cors=True) as server:
        server.script([f"```sql\n{per_status}\n```", f"```sql\n{shipped}\n```"])
        lite.run_new_cell(
            '%config AskMagic.model = "openai:scripted-test-model"\n'
            f'%config AskMagic.base_url = "{server.base_url}"\n'
            '%config AskMagic.api_key = "test-key"'
        )
        first = lite.run_new_cell("%%ask --con con\nOrders per status?")
        assert first.locator(".cadet-panel .cadet-status.cadet-ok").count() == 1
        # kept in the drive's folder (no link, a regular file, signed with the page's key)
        kept = lite.run_new_cell("%cadet keep").inner_text()
        assert "Kept: 'Orders per status?'" in kept, kept
        listed = lite.run_new_cell("%cadet examples").inner_text()
        assert "1 kept answer(s)" in listed and "never used" not in listed, listed
        follow = lite.run_new_cell("%%ask --con con --follow\nonly the shipped ones")
        panel = follow.locator(".cadet-panel")
        assert panel.locator(".cadet-status.cadet-ok").count() == 1, follow.inner_text()
        assert "Followed answer" in panel.inner_text()
        sent = json.dumps(server.requests[-1])
        assert "Orders per status?" in sent and "GROUP BY status" in sent
        calls = len(server.requests)
        rerun = lite.run_new_cell("%%ask --con con --rerun\nOrders per status?")
        panel = rerun.locator(".cadet-panel")
        assert panel.locator(".cadet-status.cadet-ok").count() == 1, rerun.inner_text()
        assert "no model call" in panel.inner_text()
        assert len(server.requests) == calls  # the rerun asked the model nothing
        lite.shot("follow-rerun.png", top=panel)


def _ask_when_loaded(lite, source: str, tries: int = 20):
    """Runs an ``%%ask`` cell; while a fresh kernel is still loading cadet_magic's parser and
    widgets (one line asking to run the cell again), runs it again a moment later."""
    for _ in range(tries):
        cell = lite.run_new_cell(source)
        if "still loading" not in cell.locator(".jp-OutputArea").inner_text():
            return cell
        lite.page.wait_for_timeout(2000)
    raise AssertionError(f"cadet_magic still loading after {tries} tries")


def test_rerun_after_the_page_is_reloaded(lite):
    """The notebook saved and the page reloaded (a new kernel: no model configured, no
    session history): JupyterLite does not tell the kernel its notebook, so --rerun says in one
    line that it cannot tell which notebook it runs; named with %env JPY_SESSION_NAME, it takes
    the SQL from the saved notebook's record, no model call."""
    setup = (
        "%load_ext cadet_magic\nimport sqlite3\n"
        'con = sqlite3.connect("file:/drive/shop.sqlite?mode=ro", uri=True)'
    )
    question = "Customers per country, asked before the reload?"
    per_country = (
        "SELECT country, COUNT(*) AS customers FROM customers GROUP BY country ORDER BY country"
    )
    page = lite.page
    with FakeOpenAI(cors=True) as server:
        server.script([f"```sql\n{per_country}\n```"])
        lite.run_new_cell(setup)
        lite.run_new_cell(
            '%config AskMagic.model = "openai:scripted-test-model"\n'
            f'%config AskMagic.base_url = "{server.base_url}"\n'
            '%config AskMagic.api_key = "test-key"'
        )
        first = _ask_when_loaded(lite, f"%%ask --con con\n{question}")
        assert first.locator(".cadet-panel .cadet-status.cadet-ok").count() == 1
        answer = first.locator(".cadet-panel table.cadet-table").inner_text()
        page.evaluate(
            "async () => { await window.jupyterapp.commands.execute('docmanager:save'); }"
        )
        saved = page.evaluate(f"() => JSON.stringify(({NB})().content.model.toJSON())")
        assert '"cadet"' in saved and "GROUP BY country" in saved  # the record is in the file
        calls = len(server.requests)

        page.on("dialog", lambda d: d.accept())  # were the page to ask about leaving
        t0 = time.monotonic()
        page.reload()
        page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Cell')")
        page.wait_for_function(KERNEL_IDLE, timeout=180_000)
        lite.timings["reload to kernel idle"] = time.monotonic() - t0
        assert "GROUP BY country" in page.evaluate(
            f"() => JSON.stringify(({NB})().content.model.toJSON())"
        )
        lite.run_new_cell(setup)  # a new kernel: no model, no history, no answers
        unnamed = _ask_when_loaded(lite, f"%%ask --con con --rerun\n{question}")
        said = unnamed.locator(".jp-OutputArea").inner_text()
        assert "cannot tell which notebook it runs" in said, said
        lite.run_new_cell(f"%env JPY_SESSION_NAME={NOTEBOOK_NAME}")
        rerun = lite.run_new_cell(f"%%ask --con con --rerun\n{question}")
        panel = rerun.locator(".cadet-panel")
        assert panel.locator(".cadet-status.cadet-ok").count() == 1, rerun.inner_text()
        text = panel.inner_text()
        assert "no model call" in text and NOTEBOOK_NAME in text, text
        assert panel.locator("table.cadet-table").inner_text() == answer
        assert len(server.requests) == calls  # nothing asked the model after the reload
        lite.shot("rerun-after-reload.png", top=panel)


def test_a_returning_readers_kernel_sees_the_drive(lite):
    """A second visit in the same browser (the site's service worker now controls the page,
    its HTTP cache is warm, the kernel starts sooner): the kernel mounts the drive, so the
    tutorial's database is there, as on the first visit. JupyterLite registered its worker anew
    on that visit, and a kernel created meanwhile went without the drive."""
    page = lite.page.context.new_page()
    logs: list[str] = []
    page.on("console", lambda m: logs.append(m.text))
    try:
        page.goto(lite.page.url.split("?", 1)[0] + f"?path={NOTEBOOK_NAME}")
        page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Cell')")
        page.wait_for_function(KERNEL_IDLE, timeout=180_000)
        assert not [t for t in logs if "will NOT be synced" in t], logs
        assert "JupyterLite ServiceWorker was already registered" in logs, logs
        # a module put on the drive after the kernel's start is found by the kernel's first
        # cell (the kernel's Python started and imported before the drive was mounted)
        page.evaluate(
            "() => window.jupyterapp.serviceManager.contents.save('reader_module.py',"
            " {type: 'file', format: 'text', content: 'ANSWER = 42'})"
        )
        visit = Session(page, lite.outside, lite.errors)
        cell = visit.run_new_cell(
            "import os, reader_module; print(sorted(os.listdir('/drive')), reader_module.ANSWER)"
        )
        out = cell.locator(".jp-OutputArea").inner_text()
        assert "shop.sqlite" in out and "42" in out, out
    finally:
        page.evaluate("() => window.jupyterapp.serviceManager.contents.delete('reader_module.py')")
        page.close()
