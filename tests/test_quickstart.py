"""The README's main job: the quickstart notebook executed headless. Here with ``--scripted``
(the stored, labelled replies); with the real local model in tests/llm/test_main_job.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def outputs_text(cell, kind: str = "text/plain") -> str:
    return "".join(o.get("data", {}).get(kind, "") for o in cell.outputs)


def test_the_notebook_names_no_model():
    """The quickstart runs whatever the default is (the local model, or CADET_MODEL): no cell
    configures a model, and the prose promises nothing a real model may not do."""
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "AskMagic.model" not in code and "--model" not in code and "scripted" not in code
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for promise in ("diagnosed and corrected", "is refused", "the second attempt succeeds"):
        assert promise not in prose


def test_quickstart_runs_headless_with_the_labelled_scripted_model(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CADET_MODEL"}
    env["PLOOMBER_STATS_ENABLED"] = "false"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_quickstart.py"), "--scripted", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "with model: scripted stand-in" in done.stdout
    nb = nbformat.read(tmp_path / "quickstart.executed.ipynb", as_version=4)
    asks = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%ask")]
    assert len(asks) == 5
    for cell in asks:
        text, html = outputs_text(cell), outputs_text(cell, "text/html")
        assert "SCRIPTED" in text and "scripted" in html.lower(), cell.source
        assert "Answer" in text and "Traceback" not in text
    first, corrected, refused, grouped, own = (outputs_text(c) for c in asks)
    assert "Julia Lopez" in first and "4584.76" in first
    assert "column_not_found" in corrected and "Attempt 2: ok" in corrected
    assert "refused" in refused
    assert "aggregation_error" in grouped
    assert "United States" in own
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    # A quiet notebook: nothing on stderr (PySpark's pandas FutureWarning came from jupysql
    # importing pyspark), no jupysql notes about its configuration, no kernel warnings.
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert [o for o in outputs if o.get("name") == "stderr"] == []
    shown = "".join(str(o.get("data", "")) + str(o.get("text", "")) for o in outputs)
    assert "toml" not in shown and "Warning" not in shown and "configurations" not in shown
    assert "Warning" not in done.stderr and "WARNING" not in done.stderr, done.stderr
    assert (tmp_path / "quickstart.executed.html").exists()
    # The HTML export shows the static account of every run, not an empty widget.
    page = (tmp_path / "quickstart.executed.html").read_text()
    assert "Loading widget" not in page and "application/vnd.jupyter.widget-view+json" not in page
    assert len(re.findall(r"class=.cadet-ask\b", page)) >= len(asks)
    assert len(re.findall(r"class=.cadet-attempt\b", page)) >= 6
    assert "column_not_found" in page and "Feedback sent to the model:" in page
    assert "Safety check:" in page and "Scripted stand-in model" in page
