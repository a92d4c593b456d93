"""Double-quoted strings end to end with a scripted model (table-driven from
``data/double_quote_runs.json``): on SQLite the value is checked like any string literal, the
feedback asks for single quotes and the SQL the user gets back has them; on DuckDB double
quotes name a column and the engine's error is diagnosed as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.test_suspect_runs import CONNECT, ask

RUNS = json.loads((Path(__file__).parent / "data" / "double_quote_runs.json").read_text())


@pytest.mark.parametrize("case", RUNS, ids=[c["id"] for c in RUNS])
def test_double_quote_runs(case):
    r, model, _ = ask(CONNECT[case["engine"]](), case["replies"])
    assert [a.outcome for a in r.attempts] == case["outcomes"]
    assert r.ok and [list(row) for row in r.rows] == case["rows"]
    assert [a.sql for a in r.attempts] == case["sqls"]
    assert r.sql == case["sqls"][-1]
    if "feedback" in case:
        assert case["feedback"] in r.attempts[0].feedback
        assert case["feedback"] in model.prompts[1][-1][1]
