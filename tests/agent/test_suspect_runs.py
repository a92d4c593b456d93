"""The result check in the loop, end to end with a scripted model on real SQLite and DuckDB
(table-driven from ``data/suspect_runs.json``): a literal in the wrong case or spacing is
corrected on attempt 2, a correct answer is never retried, the best suspect result answers
with warnings when the retries give no clean one; the warnings show in every display and go
into the session metrics; the check's queries leave the user's transaction as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from cadet_magic.agent.events import RunDone
from cadet_magic.agent.inputs import RunInputs
from cadet_magic.agent.run import run_agent
from cadet_magic.db.connect import resolve_runner
from cadet_magic.display import mimebundle
from cadet_magic.metrics import SessionMetrics
from tests.helpers import CountingModel, connect_with, fake_model, sql_reply

RUNS = json.loads((Path(__file__).parent / "data" / "suspect_runs.json").read_text())
SETUP = json.loads((Path(__file__).parent / "data" / "value_check_cases.json").read_text())["setup"]
SETUP = [
    *SETUP,
    "INSERT INTO city VALUES (4, 1, 'Lyon')",
]


def _sqlite():
    return connect_with("sqlite", SETUP)


def _duckdb():
    return connect_with("duckdb", SETUP)


CONNECT = {"sqlite": _sqlite, "duckdb": _duckdb}


@pytest.fixture(scope="module")
def pg_engine(request):
    """A SQLAlchemy engine on a PostgreSQL schema holding the test tables."""
    url = request.getfixturevalue("pg_url")
    admin = sa.create_engine(url)
    with admin.begin() as c:
        c.exec_driver_sql("DROP SCHEMA IF EXISTS suspect_runs CASCADE; CREATE SCHEMA suspect_runs")
    admin.dispose()
    engine = sa.create_engine(url, connect_args={"options": "-csearch_path=suspect_runs"})
    with engine.begin() as c:
        for s in SETUP:
            c.exec_driver_sql(s)
    yield engine
    engine.dispose()


@pytest.fixture
def connect(request):
    """engine name -> a fresh connection holding the test tables."""
    opened = []

    def open_(engine):
        if engine != "postgres":
            return CONNECT[engine]()
        conn = request.getfixturevalue("pg_engine").connect()
        opened.append(conn)
        return conn.execution_options(isolation_level="AUTOCOMMIT")

    yield open_
    for conn in opened:
        conn.close()


def ask(con, replies, **kw):
    model = CountingModel(fake_model(*[sql_reply(r) for r in replies]))
    events = []
    result = run_agent(
        "A question about countries", model=model, runner=resolve_runner(con),
        on_event=events.append, inputs=RunInputs(scripted=True), **kw,
    )  # fmt: skip
    done = events.pop()  # the run's end: the result as the core built it
    assert isinstance(done, RunDone) and done.result is result
    return result, model, events


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "postgres"])
@pytest.mark.parametrize("case", RUNS, ids=[c["id"] for c in RUNS])
def test_suspect_runs(case, engine, connect):
    con = connect(engine)
    r, model, events = ask(con, case["replies"], max_attempts=case.get("max_attempts", 3))
    assert [a.outcome for a in r.attempts] == case["outcomes"]
    assert [a.category for a in r.attempts] == case["categories"]
    assert r.ok and r.stop_reason == "success" and r.fallback is None
    rows = [list(row) for row in r.rows]
    assert (sorted(rows) if case.get("order_rows") else rows) == case["rows"]
    assert r.sql == r.attempts[case["sql_of"]].sql
    assert r.warnings == case["warnings"]
    assert len(model.prompts) == len(case["replies"])
    steps = [e.step for e in events]
    for step in case.get("steps", []):
        assert step in steps
    for step in case.get("steps_absent", []):
        assert step not in steps
    if "feedback" in case:
        first = r.attempts[0]
        assert case["feedback"] in first.feedback and first.error in first.feedback
        assert first.sql in first.feedback
        prompt = model.prompts[1][-1][1]  # the next user turn carries the feedback
        assert case["feedback"] in prompt
    for a in r.attempts:
        assert "check_result" in a.timings or a.outcome == "error"


@pytest.mark.filterwarnings("ignore:Traits should be given as instances:DeprecationWarning")
def test_warnings_in_every_display():
    from cadet_magic.display.plain_text import render_text
    from cadet_magic.display.static import render_html

    case = next(c for c in RUNS if c["id"].startswith("retries_spent"))
    r, _, events = ask(_sqlite(), case["replies"], max_attempts=2)
    (warning,) = r.warnings
    text = render_text(r)
    assert f"Warning: {warning}" in text
    html = render_html(r)
    assert "cadet-warning" in html and "does not occur in city.name" in html
    assert "&#x27;paris&#x27;" in html or "'paris'" in html
    assert mimebundle(r)["text/plain"] == text
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from cadet_magic.display.panel import AskPanel

    p = AskPanel(r.question, model=r.model, scripted=True)
    for e in events:
        p.update(e)
    p.finish(r)
    assert "cadet-warning" in p.answer.value and "does not occur in city.name" in p.answer.value


def test_suspect_results_are_counted_apart_in_the_session_metrics():
    m = SessionMetrics()
    by_id = {c["id"]: c for c in RUNS}
    for name in (
        "case_changed_literal_corrected_on_attempt_2",
        "correct_answer_with_literals_never_retried",
        "retries_spent_best_suspect_answers_with_warning",
        "empty_result_out_of_range_answered_with_warning",
    ):
        case = by_id[name]
        m.record(ask(_sqlite(), case["replies"], max_attempts=case.get("max_attempts", 3))[0])
    d = m.as_dict()
    assert d["suspect_questions"] == 2 and d["suspect_corrected"] == 1
    assert d["suspect_answers"] == 1 and d["warned_answers"] == 2
    assert d["first_attempt_success"] == 2 and d["corrected_success"] == 1
    assert d["fallback_success"] == 0 and d["final_failures"] == 0
    assert d["by_error_type"]["value_not_found"] == {
        "count": 2, "corrected": 1, "correction_rate": 0.5,
    }  # fmt: skip
    assert "Suspect results" in m.to_text()


# --------------------------------------------------------------------------- the user's data

SUSPECT = [
    "SELECT id FROM country WHERE name = 'FRANCE'",
    "SELECT id FROM country WHERE name = 'france'",
]


def _check_untouched(r, visible):
    assert r.ok and [a.outcome for a in r.attempts] == ["suspect", "ok"]
    assert visible() == [(6,)]  # the user's uncommitted row is still there


def test_sqlite_transaction_untouched():
    con = _sqlite()
    con.execute("INSERT INTO country VALUES (6, 'Chile', 'South America')")
    assert con.in_transaction
    r, _, _ = ask(con, SUSPECT)
    _check_untouched(r, lambda: con.execute("SELECT count(*) FROM country").fetchall())
    assert con.in_transaction
    con.rollback()
    assert con.execute("SELECT count(*) FROM country").fetchall() == [(5,)]


def test_duckdb_transaction_untouched():
    con = _duckdb()
    con.execute("BEGIN TRANSACTION")
    con.execute("INSERT INTO country VALUES (6, 'Chile', 'South America')")
    r, _, _ = ask(con, SUSPECT)
    _check_untouched(r, lambda: con.execute("SELECT count(*) FROM country").fetchall())
    con.execute("ROLLBACK")
    assert con.execute("SELECT count(*) FROM country").fetchall() == [(5,)]


def test_postgres_transaction_untouched(pg_url):
    engine = sa.create_engine(pg_url)
    with engine.begin() as c:
        c.exec_driver_sql("DROP SCHEMA IF EXISTS suspect_tx CASCADE; CREATE SCHEMA suspect_tx")
    engine = sa.create_engine(pg_url, connect_args={"options": "-csearch_path=suspect_tx"})
    with engine.begin() as c:
        for s in SETUP[:-1]:
            c.exec_driver_sql(s)
    try:
        with engine.connect() as conn:
            conn.begin()
            conn.exec_driver_sql("INSERT INTO country VALUES (6, 'Chile', 'South America')")
            r, _, _ = ask(conn, SUSPECT)

            def visible():
                return [tuple(x) for x in conn.exec_driver_sql("SELECT count(*) FROM country")]

            _check_untouched(r, visible)
            assert conn.in_transaction()
            conn.rollback()
            assert visible() == [(5,)]
    finally:
        engine.dispose()


def test_live_events_show_the_suspect_attempt_as_suspect():
    case = RUNS[0]
    _, _, events = ask(_sqlite(), case["replies"])
    after_check = next(e for e in events if e.step == "check_result")
    assert after_check.attempt is not None and after_check.attempt.outcome == "suspect"
    assert after_check.attempt.category == "value_not_found" and after_check.attempt.running
    retried = next(e for e in events if e.step == "next_attempt")
    assert retried.attempts[-1].outcome == "suspect" and retried.attempt.number == 2
