"""The README's main job: the quickstart notebook executed headless with the scripted model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_runs_headless_with_the_labelled_scripted_model(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CADET_MODEL"}
    env["PLOOMBER_STATS_ENABLED"] = "false"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_quickstart.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    nb = nbformat.read(tmp_path / "quickstart.executed.ipynb", as_version=4)
    asks = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%ask")]
    assert len(asks) == 5
    for cell in asks:
        text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
        assert "SCRIPTED" in text and "scripted" in html.lower(), cell.source
        assert "Answer" in text and "Traceback" not in text
    first, corrected, grouped, refused, fallback = (
        "".join(o.get("data", {}).get("text/plain", "") for o in c.outputs) for c in asks
    )
    assert "Julia Lopez" in first and "4584.76" in first
    assert "column_not_found" in corrected and "Attempt 2: ok" in corrected
    assert "aggregation_error" in grouped
    assert "refused" in refused
    # SQL fails three times (column, GROUP BY, table), then the fallback answers, ties kept.
    assert "Attempt 3" in fallback and "table_not_found" in fallback
    assert "FALLBACK" in fallback.upper() and "Attempt 1 (fallback): ok" in fallback
    assert "USB-C Charger" in fallback and "Strategy Board Game" in fallback
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
