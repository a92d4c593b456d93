"""The live %%ask panel in a real JupyterLab, driven by headless Chromium.

Runs the quickstart notebook (its scripted replies, through CADET_MODEL) in JupyterLab on
127.0.0.1, checks every ``%%ask`` panel (attempt sections, feedback on corrected attempts, the result, never
'Loading widget...'), clicks the insert button and runs the inserted ``%%sql`` cell, copies the
SQL, and takes screenshots in the light and the dark theme (test-artifacts/browser/).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.browser.lab import CHROMIUM, CHROMIUM_ARGS, ROOT, copy_quickstart, jupyter_lab
from tests.conftest import need

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-artifacts" / "browser"

NOTEBOOK = "() => window.jupyterapp.shell.currentWidget"
KERNEL_IDLE = f"""() => {{
  const w = ({NOTEBOOK})();
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}}"""
SOURCES = f"""() => {{
  const cells = ({NOTEBOOK})().content.model.cells; const out = [];
  for (let i = 0; i < cells.length; i++) out.push(cells.get(i).sharedModel.getSource());
  return out;
}}"""


#: A cell whose scripted model takes its time, so that the panel is seen while it runs.
SLOW_CELL = """import time
from cadet_magic.llm import ScriptedModel

class SlowScripted(ScriptedModel):
    def invoke(self, messages, *args, **kwargs):
        time.sleep(1.5)
        return super().invoke(messages, *args, **kwargs)

slow = SlowScripted({"How many orders are there?": [
    "```sql\\nSELECT COUNT(*) AS n FROM order\\n```",
    "```sql\\nSELECT COUNT(*) AS n FROM orders\\n```",
]}, name="scripted:slow")
get_ipython().run_cell_magic("ask", "--model slow", "How many orders are there?")
"""


def _requirements() -> None:
    need(Path(CHROMIUM).exists(), f"Chromium not installed at {CHROMIUM} (Debian package chromium)")
    for module in ("playwright", "jupyterlab", "ipylab", "anywidget"):
        need(importlib.util.find_spec(module) is not None, f"Python package {module} missing")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a copy of the quickstart notebook, and a Chromium page on it."""
    _requirements()
    from playwright.sync_api import sync_playwright

    tmp = tmp_path_factory.mktemp("lab")
    root, home = tmp / "notebooks", tmp / "home"
    root.mkdir()
    home.mkdir()
    copy_quickstart(root)
    # every cell rendered (no windowing), so each %%ask cell's output is in the page
    settings = home / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    scripted = "scripted:quickstart_replies.json"
    with jupyter_lab(root, home, model=scripted) as address, sync_playwright() as pw:
        base, token = address.split("|")
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 1400})
            context.grant_permissions(
                ["clipboard-read", "clipboard-write"], origin=base.replace("localhost", "127.0.0.1")
            )
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/quickstart.ipynb?token={token}&reset")
            page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Cell')")
            page.wait_for_function(KERNEL_IDLE)
            yield page
        finally:
            browser.close()


def _shot(page, name: str, top=None) -> Path:
    """A screenshot of the page, scrolled so that ``top`` (a locator) starts the view."""
    if top is not None:
        top.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path


def _luminance(page, locator) -> float:
    rgb = locator.evaluate("e => getComputedStyle(e).color")
    r, g, b = (int(x) for x in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def _start_new_cell(page, source: str) -> int:
    """Appends a code cell holding ``source`` and starts running it; its index."""
    index = len(page.evaluate(SOURCES))
    page.evaluate(
        f"""() => {{
      const nb = ({NOTEBOOK})();
      nb.content.model.sharedModel.insertCell({index}, {{cell_type: 'code', source: {source!r}}});
      nb.content.activeCellIndex = {index};
    }}"""
    )
    # not awaited: the command's promise settles only when the cell has run
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-cell'); }")
    return index


def test_panel_in_jupyterlab(lab):
    page = lab
    t0 = time.monotonic()
    sources = page.evaluate(SOURCES)
    asks = [i for i, s in enumerate(sources) if s.startswith("%%ask")]
    assert len(asks) >= 4, sources
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    done = ".cadet-panel .cadet-status.cadet-ok, .cadet-panel .cadet-status.cadet-bad"
    page.wait_for_function(f"() => document.querySelectorAll('{done}').length >= {len(asks)}")
    page.wait_for_function(KERNEL_IDLE)
    page.wait_for_timeout(500)
    print(f"all cells ran in {time.monotonic() - t0:.1f} s")

    body = page.locator("body").inner_text()
    assert "Loading widget" not in body and "Error displaying widget" not in body
    assert "Traceback" not in body

    cells = page.locator(".jp-Notebook .jp-Cell")
    corrected = None
    for i in asks:
        panel = cells.nth(i).locator(".cadet-panel")
        assert panel.count() == 1, f"no panel under cell {i}: {sources[i]!r}"
        assert "scripted" in panel.locator(".cadet-scripted").inner_text().lower()
        sections = panel.locator(".cadet-attempts > .jupyter-widget-Collapse")
        n = sections.count()
        assert n >= 1
        titles = [
            sections.nth(k).locator(".jupyter-widget-Collapse-header").inner_text()
            for k in range(n)
        ]
        assert all(f"Attempt {k + 1}" in t for k, t in enumerate(titles)), titles
        fallback = panel.locator(".cadet-fallback-banner")
        open_ = panel.locator(".cadet-attempts > .jupyter-widget-Collapse-open").count()
        if fallback.count() and fallback.first.is_visible():
            assert "fallback" in fallback.first.inner_text().lower()
            _shot(page, "panel-fallback-light.png", top=panel)
            assert open_ == 0  # SQL attempts collapsed; the fallback's own is open
        else:
            assert open_ == 1  # compact: only the last attempt open
            assert "jupyter-widget-Collapse-open" in (sections.nth(n - 1).get_attribute("class"))
        for k in range(n - 1):  # every failed attempt that was followed sent feedback
            text = sections.nth(k).text_content()
            assert "Feedback sent to the model" in text, titles[k]
            assert "Safety check" in text
        if panel.locator(".cadet-answer").count():
            assert panel.locator("table.cadet-table tbody tr").count() >= 1
        else:
            assert panel.locator(".cadet-summary").is_visible()
        if corrected is None and n >= 2 and "\u2713" in titles[-1]:
            corrected = i
    assert corrected is not None, "no %%ask cell was corrected on a later attempt"

    # the corrected cell: open attempt 1 and read the feedback the model got
    cell = cells.nth(corrected)
    panel = cell.locator(".cadet-panel")
    first = panel.locator(".cadet-attempts > .jupyter-widget-Collapse").first
    first.locator(".jupyter-widget-Collapse-header").click()
    feedback = first.locator(".cadet-feedback")
    feedback.wait_for(state="visible")
    assert len(feedback.inner_text()) > 40
    assert first.locator(".cadet-error").is_visible()
    _shot(page, "panel-light.png", top=panel)
    assert _luminance(page, panel.locator(".cadet-question")) < 0.5

    # insert the final SQL as a %%sql cell below, through the button
    final_sql = panel.locator(".cadet-attempts > .jupyter-widget-Collapse").last
    final_sql = " ".join(final_sql.locator("pre.cadet-sql").text_content().split())
    panel.locator("button.cadet-insert").click()
    page.wait_for_function(
        f"() => ({SOURCES})()[{corrected + 1}].startsWith('%%sql')", timeout=15_000
    )
    inserted = page.evaluate(SOURCES)[corrected + 1]
    assert inserted.startswith("%%sql\n")
    assert final_sql in " ".join(inserted.split())
    assert len(page.evaluate(SOURCES)) == len(sources) + 1
    assert "Inserted" in panel.locator(".cadet-action-note").inner_text()
    # the new cell is the active one: run it, it gives rows
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
    rows = cells.nth(corrected + 1).locator(".jp-OutputArea-output table tbody tr")
    rows.first.wait_for(state="visible", timeout=20_000)
    assert rows.count() >= 1
    _shot(page, "notebook-light.png", top=cells.nth(asks[0]))

    # copy the SQL to the clipboard
    panel.locator("button.cadet-copy").click()
    note = panel.locator(".cadet-action-note")
    page.wait_for_function(
        "e => /copied|Ctrl\\+C/.test(e.innerText)", arg=note.element_handle(), timeout=10_000
    )
    if "copied" in note.inner_text():
        copied = page.evaluate("() => navigator.clipboard.readText()")
        assert " ".join(copied.split()) == final_sql
    else:  # clipboard blocked: the SQL is shown selected for a manual copy
        assert panel.locator("textarea.cadet-manual").is_visible()

    # live updates: a slow scripted model; the status clock ticks while the model "thinks"
    index = _start_new_cell(page, SLOW_CELL)
    slow = cells.nth(index).locator(".cadet-panel")
    clock = slow.locator(".cadet-status .cadet-clock")
    clock.wait_for(state="visible", timeout=20_000)
    assert "Running" in slow.locator(".cadet-status").inner_text()
    first_read = clock.inner_text()
    page.wait_for_timeout(700)
    assert clock.inner_text() != first_read, "the status clock did not tick while running"
    _shot(page, "panel-running.png", top=slow)
    slow.locator(".cadet-status.cadet-ok").wait_for(timeout=20_000)
    assert "Attempt 2" in slow.locator(".cadet-attempts").inner_text()

    # keep the corrected answer as an example, through the panel's button
    panel.locator("button.cadet-keep").click()
    page.wait_for_function(
        "e => /Kept/.test(e.innerText)", arg=note.element_handle(), timeout=15_000
    )
    assert panel.locator("button.cadet-keep").is_disabled()

    # rerun the corrected question without a model: JupyterLab tells the kernel its notebook
    # file (JPY_SESSION_NAME), whose saved outputs hold the recorded SQL
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    question = sources[corrected].split("\n", 1)[1]
    index = _start_new_cell(page, f"%%ask --rerun --model no-such-model\n{question}")
    rerun = cells.nth(index).locator(".cadet-panel")
    rerun.locator(".cadet-status.cadet-ok").wait_for(timeout=30_000)
    text = rerun.inner_text()
    assert "no model call" in text and "quickstart.ipynb" in text, text
    _shot(page, "panel-rerun.png", top=rerun)

    # the dark theme
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme', "
        "{theme: 'JupyterLab Dark'})"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_timeout(800)
    assert _luminance(page, panel.locator(".cadet-question")) > 0.5
    assert _luminance(page, panel.locator(".cadet-attempts pre.cadet-sql").last) > 0.5
    _shot(page, "panel-dark.png", top=panel)
    _shot(page, "notebook-dark.png", top=cells.nth(asks[0]))
    body = page.locator("body").inner_text()
    assert "Loading widget" not in body
    print(f"browser test body took {time.monotonic() - t0:.1f} s; artifacts in {ARTIFACTS}")
    assert os.listdir(ARTIFACTS)
