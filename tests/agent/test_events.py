"""Progress events carry typed records: the finished attempts and the provisional one."""

import sqlite3

from cadet_magic.agent.run import run_agent
from cadet_magic.db.sqlite import SQLiteRunner
from cadet_magic.display.static import attempt_body_html
from cadet_magic.llm import ScriptedModel
from cadet_magic.result import Outcome, Phase


def _events():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x INT)")
    model = ScriptedModel({"Sum?": ["SELECT sum(y) FROM t", "SELECT sum(x) AS s FROM t"]})
    events = []
    result = run_agent("Sum?", model=model, runner=SQLiteRunner(con), on_event=events.append)
    return result, events


def test_provisional_records_follow_the_attempt():
    result, events = _events()
    by_step = [(e.step, e.attempt) for e in events]
    assert by_step[0] == ("read_schema", None)
    step, running = by_step[1]
    assert step == "generate" and running.running and running.sql == "SELECT sum(y) FROM t"
    assert running.phase == Phase.sql and running.number == 1
    execute = next(e for e in events if e.step == "execute")
    assert execute.attempt.outcome == Outcome.error and "no such column" in execute.attempt.error
    diagnose = next(e for e in events if e.step == "diagnose")
    assert diagnose.attempt.category == "column_not_found"
    closed = next(e for e in events if e.step == "next_attempt")
    assert closed.attempts[0].number == 1 and not closed.attempts[0].running
    assert closed.attempt.number == 2 and closed.attempt.sql is None  # waiting for the model
    assert events[-1].attempt is None and list(events[-1].attempts) == result.attempts


def test_the_provisional_record_renders_with_the_finished_helpers():
    _, events = _events()
    execute = next(e for e in events if e.step == "execute")
    html = attempt_body_html(execute.attempt)
    assert "Safety check:" in html and "passed" in html and "no such column" in html
    generate = events[1]
    assert "pending" in attempt_body_html(generate.attempt)
