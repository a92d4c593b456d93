"""An engine added through ``db/`` alone (ARCHITECTURE.md, "Where to add things"): the toy
engine of ``toy_engine.py`` raises words no other engine's table reads, and its own table
makes the diagnosis, the public ``diagnose_error`` and the agent's correction work for it as
for a built-in engine. Cases in ``data/toy_engine_cases.json``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cadet_magic.agent.run import run_agent
from cadet_magic.db import error_reader
from cadet_magic.db.driver_errors import diagnose_error
from cadet_magic.diagnose import diagnose
from cadet_magic.diagnose.found import said
from cadet_magic.errors import EngineError
from tests.db.toy_engine import TOY, ToyRunner
from tests.helpers import fake_model, sql_reply

DATA = json.loads((Path(__file__).parent / "data" / "toy_engine_cases.json").read_text())
CASES = DATA["cases"]
RUN = [c for c in CASES if c["sql"]]


@pytest.fixture(autouse=True)
def toy_registered(monkeypatch):
    """The toy engine's table registered for the test only (the built-in engines' stay)."""
    monkeypatch.setattr(error_reader, "ENGINES", dict(error_reader.ENGINES))
    monkeypatch.setattr(error_reader, "_LOADED", dict(error_reader._LOADED))
    error_reader.register(TOY)


@pytest.fixture
def runner() -> ToyRunner:
    con = sqlite3.connect(":memory:")
    for statement in DATA["ddl"]:
        con.execute(statement)
    con.commit()
    return ToyRunner(con)


def _expect(case: dict, d) -> None:
    assert d.category.value == case["category"], (case["id"], d.details)
    for key in ("identifier", "near"):
        if key in case:
            assert said(getattr(d.details, key)) == case[key], (case["id"], d.details)
    if case["suggestion"]:
        assert case["suggestion"] in d.suggestions[:3], (case["id"], d.suggestions)
    assert case["feedback"] in d.feedback, (case["id"], d.feedback)


@pytest.mark.parametrize("case", RUN, ids=[c["id"] for c in RUN])
def test_the_runner_reads_the_toy_errors(case, runner):
    """The runner raises the toy driver's words read by the toy table; diagnosed like any."""
    with pytest.raises(EngineError) as caught:
        runner.run(case["sql"], limit=10, timeout=5)
    error = caught.value
    assert str(error) == case["message"] and error.engine == "toy"
    _expect(case, diagnose(error, sql=case["sql"], target="sqlite", schema=runner.schema()))


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_diagnose_error_reads_toy_text(case, runner):
    """The public entry reads the toy's text through the toy's reader, not any other."""
    d = diagnose_error(case["message"], engine="toy", sql=case["sql"], schema=runner.schema())
    _expect(case, d)
    for engine in ("duckdb", "sqlite", "postgres", "mysql", "spark"):  # none reads the toy's
        other = diagnose_error(case["message"], engine=engine, sql=case["sql"])
        assert other.category.value == "unknown", engine


def test_the_agent_corrects_on_the_toy_engine(runner):
    """A scripted model (labelled as such) writes a wrong column, then follows the feedback."""
    model = fake_model(
        sql_reply("SELECT status, SUM(amout) AS total FROM orders GROUP BY status"),
        sql_reply("SELECT status, SUM(amount) AS total FROM orders GROUP BY status"),
    )
    result = run_agent("Total amount per status?", model=model, runner=runner)
    assert result.ok and sorted(result.rows) == [("open", 32.5), ("paid", 17.5)]
    first = result.attempts[0]
    assert first.category == "column_not_found" and first.error.startswith("T-101")
    assert "orders.amount" in first.feedback
