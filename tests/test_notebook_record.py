"""The notebook keeps the record of each answer: provenance in the output metadata survives
saving, reloading and nbconvert, and a whole-notebook rerun (``CADET_RERUN=1``) re-executes
the recorded SQL with zero model calls (the scripted replies file is gone by then, so a model
call could not even be made). A real kernel runs the notebook headless (nbclient)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from run_notebooks import run  # noqa: E402

pytestmark = pytest.mark.notebooks

SETUP = """\
%load_ext cadet_magic
import duckdb
con = duckdb.connect()
con.execute(\"\"\"CREATE TABLE orders (id INTEGER PRIMARY KEY, status VARCHAR, amount DOUBLE,
  year INTEGER);
INSERT INTO orders VALUES (1, 'paid', 10, 2024), (2, 'paid', 32.5, 2025),
  (3, 'cancelled', 7.5, 2025)\"\"\")
%config AskMagic.model = "scripted:replies.json"
%config AskMagic.api_key = "sk-notebook-secret-42"
"""
PER_STATUS = "SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status"
ONLY_2025 = (
    "SELECT status, count(*) AS n FROM orders WHERE year = 2025 GROUP BY status ORDER BY status"
)
REPLIES = {
    "replies": {
        "Orders per status?": [f"```sql\n{PER_STATUS}\n```"],
        "only for 2025": [f"```sql\n{ONLY_2025}\n```"],
    }
}


def notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(SETUP),
        nbformat.v4.new_code_cell("%%ask --con con\nOrders per status?"),
        nbformat.v4.new_code_cell("%%ask --con con --follow\nonly for 2025"),
        nbformat.v4.new_code_cell("_ask.model_calls, _ask.rows"),
    ]
    nbformat.write(nb, path)
    return path


def records(path: Path) -> list[dict]:
    nb = nbformat.read(path, as_version=4)
    found = []
    for cell in nb.cells[1:3]:
        metas = [o.get("metadata", {}).get("cadet") for o in cell.get("outputs", ())]
        found.append(next(m for m in metas if m))
    return found


def test_provenance_saved_reloaded_converted_and_rerun_without_a_model(tmp_path, monkeypatch):
    monkeypatch.delenv("CADET_MODEL", raising=False)
    monkeypatch.delenv("CADET_RERUN", raising=False)
    monkeypatch.setenv("PLOOMBER_STATS_ENABLED", "false")
    (tmp_path / "replies.json").write_text(json.dumps(REPLIES))
    ok, _ = run(notebook(tmp_path / "orders.ipynb"), tmp_path)
    executed = tmp_path / "orders.executed.ipynb"
    assert ok, executed.read_text()[-3000:]
    outputs = json.dumps([c.get("outputs", []) for c in nbformat.read(executed, 4).cells])
    assert "sk-notebook-secret-42" not in outputs  # the key set in the session is not recorded

    first, follow = records(executed)
    assert first["question"] == "Orders per status?" and first["sql"] == PER_STATUS
    assert first["engine"] == "duckdb" and first["database"]["schema_fingerprint"]
    assert first["attempts"][0]["outcome"] == "ok" and "scripted" in first["model"]
    assert follow["followed"]["sql"] == PER_STATUS and follow["sql"] == ONLY_2025

    # nbconvert keeps the output metadata (notebook to notebook) and the HTML export works
    from nbconvert import HTMLExporter, NotebookExporter

    body, _ = NotebookExporter().from_filename(str(executed))
    converted = nbformat.reads(body, as_version=4)
    assert converted.cells[1].outputs[0]["metadata"]["cadet"]["sql"] == PER_STATUS
    html, _ = HTMLExporter().from_filename(str(executed))
    assert "Orders per status?" in html and "Followed answer" in html

    # the whole notebook again, with no model: the replies file is gone, CADET_RERUN=1, and
    # the kernel is told which notebook it runs (as Jupyter does)
    (tmp_path / "replies.json").unlink()
    monkeypatch.setenv("CADET_RERUN", "1")
    monkeypatch.setenv("JPY_SESSION_NAME", str(executed))
    ok, _ = run(executed, tmp_path)
    rerun = tmp_path / "orders.executed.executed.ipynb"
    assert ok, rerun.read_text()[-3000:]
    again, again_follow = records(rerun)
    assert again["model_calls"] == 0 and again_follow["model_calls"] == 0
    assert again["sql"] == PER_STATUS and again_follow["sql"] == ONLY_2025
    assert again["rerun_of"]["created"] == first["created"]
    assert again["rerun_of"]["source"] == str(executed)
    last = nbformat.read(rerun, as_version=4).cells[3].outputs[0]["data"]["text/plain"]
    assert last.startswith("(0, [('cancelled', 1), ('paid', 1)])")

    # as `jupyter nbconvert --execute` runs it: the kernel is not told its file, so it cannot
    # tell which notebook's record to trust (one beside it may come from someone else) and
    # says so in one line instead of reading the folder's notebooks
    monkeypatch.delenv("JPY_SESSION_NAME")
    ok, _ = run(rerun, tmp_path)
    third = tmp_path / "orders.executed.executed.executed.ipynb"
    assert not ok
    error = nbformat.read(third, as_version=4).cells[1].outputs[-1]
    assert "cannot tell which notebook it runs" in json.dumps(error)
