"""Proof of portability: the portable core runs in Pyodide (JupyterLite's kernel), offline.

Under Node, with the npm ``pyodide`` package prepared by ``scripts/setup_pyodide.sh`` in
``.cache/pyodide/``: micropip from a local wheel, sqlglot and sqlparse from local wheel files,
only the portable modules of cadet_magic (and what they import) copied in, stdlib sqlite3 as
the database and a scripted model (stored replies, not a real LLM). ``portable_core.py`` drives
a question through a failed attempt (``column_not_found``, with feedback) and a corrected one,
a refused DELETE, the runner's timeout, the safety check on hostile SQL, the fallback's code
check, and a question through the fallback phase (its SQL and code checks run; its pandas step
reports pandas unavailable, as it is in Pyodide offline), with tripwires on threads,
subprocesses and signals; this test reads its JSON summary.
Any URL fetch is refused and reported: nothing downloads at test time.

Run: ``bash scripts/setup_pyodide.sh && python -m pytest tests/portable -q`` (skips without
Node or the prepared folder; fails instead with ``CI=true``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from core_files import portable_closure

from tests.conftest import need

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CACHE = ROOT / ".cache" / "pyodide"
DIST = CACHE / "dist"
WHEELS = CACHE / "wheels"

#: Edge modules (CONTRIBUTING.md, "Layout"): never copied into Pyodide, never imported by the core.
EDGES = {
    "api.py",
    "llm/spec.py",
    "magic/magics.py",
    "db/connect.py",
    "db/duckdb.py",
    "db/sqlalchemy.py",
    "db/jupysql.py",
    "display/live.py",
}

pytestmark = pytest.mark.pyodide


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    node = shutil.which("node")
    need(node is not None, "Node.js not installed (bash scripts/setup_pyodide.sh)")
    need(
        (CACHE / "READY").is_file() and (DIST / "pyodide.mjs").is_file(),
        f"prepared Pyodide not found in {CACHE} (bash scripts/setup_pyodide.sh)",
    )
    closure = portable_closure(ROOT / "cadet_magic")
    manifest = tmp_path_factory.mktemp("pyodide") / "manifest.json"
    manifest.write_text(json.dumps({"files": closure.files}))
    out = subprocess.run(
        [
            node,
            str(HERE / "run_pyodide.mjs"),
            *("--dist", str(DIST), "--wheels", str(WHEELS), "--repo", str(ROOT)),
            *("--manifest", str(manifest), "--script", str(HERE / "portable_core.py")),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-5000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    got["closure"] = closure
    return got


def test_runs_on_pyodide_offline(run):
    s = run["summary"]
    assert run["platform"] == "emscripten"
    assert s["platform"] == "emscripten"
    assert s["python"].startswith("3.")
    assert run["network"] == []  # nothing was fetched from a URL
    assert {Path(w).name.split("-")[0] for w in run["wheels"]} == {"sqlglot", "sqlparse"}
    assert all(w.startswith("emfs:") for w in run["wheels"])
    # Typically ~8 s (Pyodide ~3 s, wheels ~1 s, the script ~4 s); a hang or a download would
    # blow this generous bound.
    assert sum(run["timings"].values()) < 60, run["timings"]


def test_only_the_portable_core_was_copied(run):
    closure = run["closure"]
    assert not EDGES & set(run["copied"]), closure.pulled_in
    assert not any(f.startswith("display/") for f in run["copied"])
    assert "agent/run.py" in run["copied"] and "db/sqlite.py" in run["copied"]
    s = run["summary"]
    assert s["edge_modules"] == []  # no IPython, pandas, SQLAlchemy, DuckDB, LangChain, llm
    assert "cadet_magic.agent.run" in s["cadet_modules"]


def test_no_thread_subprocess_or_signal(run):
    s = run["summary"]
    assert s["tripped"] == []
    assert s["threads"] == 1
    # The tripwire works, and Pyodide cannot start a thread at all.
    assert s["tripwire_control"]["seen"][0] == "Thread.start"
    assert "can't start new thread" in s["tripwire_control"]["error"]


def test_failed_then_corrected_question(run):
    city = run["summary"]["city"]
    assert city["ok"] and city["stop_reason"] == "success"
    assert city["scripted"] and "scripted" in city["model"]
    first, second = city["attempts"]
    assert (first["outcome"], first["category"]) == ("error", "column_not_found")
    assert first["error"] == "no such column: o.order_amount"
    assert "o.order_amount" in first["feedback"] and "orders.amount" in first["feedback"]
    assert first["suggestions"][0] == "orders.amount"
    assert (second["outcome"], second["category"], second["number"]) == ("ok", None, 2)
    assert "o.amount" in second["sql"] and city["sql"] == second["sql"]
    assert city["columns"] == ["city", "total"]
    assert city["rows"] == [["Oslo", 8.0], ["Paris", 18.0]]
    # The model was called twice; the second prompt carried the diagnosis' feedback.
    assert len(city["prompts"]) == 2
    assert first["feedback"] in city["prompts"][1]


def test_refused_write_then_answer(run):
    s = run["summary"]
    pending = s["pending"]
    first, second = pending["attempts"]
    assert (first["outcome"], first["category"]) == ("refused", "forbidden")
    assert "DELETE" in first["error"] and first["feedback"]
    assert second["outcome"] == "ok" and pending["rows"] == [[2]]
    assert s["orders_after"] == 5  # the refused DELETE never ran


def test_runner_timeout_without_threads(run):
    t = run["summary"]["timeout"]
    assert t["stopped"] and "time limit" in t["error"]
    assert t["seconds"] < 5 and t["usable_after"]


def test_safety_check_refuses_hostile_sql(run):
    s = run["summary"]
    refused = {h["sql"]: h for h in s["hostile_sql"]}
    assert all(not h["ok"] and h["codes"] for h in refused.values()), refused
    assert refused["SELECT * FROM orders; DROP TABLE orders"]["codes"] == ["multiple_statements"]
    assert s["safe_sql"] == {"ok": True, "sql": "SELECT name FROM customers"}


def test_fallback_code_check(run):
    fb = run["summary"]["fallback_check"]
    assert fb["available"], fb
    assert fb["legit"]["ok"], fb["legit"]
    for h in fb["hostile"]:
        assert not h["ok"] and h["message"].startswith("Refused"), h
    # The code runner, called directly: hostile code refused before anything runs; clean code
    # reported as unrunnable because Pyodide has no pandas/numpy offline here.
    runs = fb["run_code"]
    assert (runs["hostile"]["ok"], runs["hostile"]["kind"]) == (False, "refused")
    assert (runs["legit"]["ok"], runs["legit"]["kind"]) == (False, "unavailable")


def test_fallback_time_limit_and_audit_hook_without_threads(run):
    fb = run["summary"]["fallback_check"]
    assert fb["available"], fb
    guards = fb["guards"]
    assert guards["available"], guards
    assert guards["use_threads"] is False  # sys.platform == "emscripten"
    # An endless loop is stopped by the settrace deadline (no thread, no signal) ...
    assert guards["loop"]["error"].startswith("timeout:"), guards
    assert guards["loop"]["seconds"] < 3
    # ... and the audit hook refuses a directory listing while the code runs, not after.
    assert "PermissionError" in guards["listdir"]["error"], guards
    assert guards["listdir_after"]


def test_question_through_the_fallback_without_pandas(run):
    s = run["summary"]
    m = s["median"]
    assert m["available"], m
    assert not s["pandas_installed"]  # Pyodide offline: no pandas wheel
    # The SQL attempt fails on the engine (SQLite has no median): the engine lacks what the
    # question needs, so the fallback starts at once.
    assert [(a["phase"], a["outcome"]) for a in m["attempts"]] == [("sql", "error")]
    assert m["attempts"][0]["category"] == "function_not_found"
    fb = m["fallback"]
    first, second = fb["attempts"]
    # The product wrote the SELECT: every column of the tables the SQL read, along the key.
    assert "JOIN customers ON orders.customer_id = customers.id" in fb["sql"]
    assert "median" not in fb["sql"].lower()
    # Fallback attempt 1: the code check refuses, and the model is told why.
    assert (first["phase"], first["outcome"], first["category"]) == (
        "fallback",
        "refused",
        "code_refused",
    )
    assert "import os" in first["error"] and "import os" in first["feedback"]
    assert first["feedback"] in m["prompts"][-1]
    # Fallback attempt 2: the code passes its check and the SELECT's rows are there; the pandas
    # step cannot run here, which ends the run cleanly (not retryable) with a message that says
    # why.
    assert (second["outcome"], second["category"]) == ("error", "unavailable")
    assert "pandas" in second["error"]
    assert second["sql"] == fb["sql"] and second["code"] == fb["code"]
    assert not m["ok"] and not fb["ok"] and m["stop_reason"] == "not_retryable"
    assert "This browser kernel has no pandas" in m["message"]
    assert "an offline site cannot install it" in m["message"]
    assert len(m["prompts"]) == 3  # 1 SQL + 2 fallback model calls
    assert s["orders_after"] == 5
