"""Progress events are typed records: a step done, an attempt provisional (its record while it
runs), the run done."""

import sqlite3

from cadet_magic.agent.events import AttemptProvisional, RunDone, StepDone
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
    done = events.pop()  # the run's end: the result as the core built it
    assert isinstance(done, RunDone) and done.result is result
    return result, events


def test_provisional_records_follow_the_attempt():
    result, events = _events()
    by_step = [(e.step, e.attempt if isinstance(e, AttemptProvisional) else None) for e in events]
    assert not isinstance(events[0], AttemptProvisional)
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
    assert type(events[-1]) is StepDone and list(events[-1].attempts) == result.attempts


def test_the_provisional_record_renders_with_the_finished_helpers():
    _, events = _events()
    execute = next(e for e in events if e.step == "execute")
    html = attempt_body_html(execute.attempt)
    assert "Safety check:" in html and "passed" in html and "no such column" in html
    generate = events[1]
    assert "pending" in attempt_body_html(generate.attempt)
