"""The loop on a real SQLite database with a scripted model."""

import sqlite3

import pytest

from cadet_magic.agent.events import RunDone
from cadet_magic.agent.run import run_agent
from cadet_magic.db.sqlite import SQLiteRunner
from tests.helpers import CountingModel, fake_model, sql_reply


@pytest.fixture
def con():
    c = sqlite3.connect(":memory:")
    c.executescript(
        "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer TEXT, amount REAL);"
        "INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32.5), (3, 'ann', 7.5);"
    )
    return c


def run(con, *replies, **kw):
    model = CountingModel(fake_model(*replies))
    events = []
    result = run_agent(
        "Total per customer?", model=model, runner=SQLiteRunner(con), on_event=events.append, **kw
    )
    done = events.pop()  # the run's end: the result as the core built it
    assert isinstance(done, RunDone) and done.result is result
    return result, model, events


def test_first_attempt_success_calls_the_model_once(con):
    r, model, events = run(con, sql_reply("SELECT sum(amount) AS total FROM orders"))
    assert r.ok and r.rows == [(50.0,)] and r.columns == ["total"]
    assert len(r.attempts) == 1 and r.attempts[0].outcome == "ok" and r.stop_reason == "success"
    assert len(model.prompts) == 1 and r.model_calls == 1
    assert [e.step for e in events] == [
        "read_schema",
        "generate",
        "check",
        "execute",
        "check_result",
        "finish",
    ]


def test_misspelled_column_is_corrected_with_feedback(con):
    r, model, _ = run(
        con,
        sql_reply("SELECT customer, sum(amout) FROM orders GROUP BY customer"),
        sql_reply(
            "SELECT customer, sum(amount) AS total FROM orders GROUP BY customer ORDER BY customer"
        ),
    )
    assert r.ok and r.rows == [("ann", 17.5), ("bob", 32.5)]
    first, second = r.attempts
    assert (first.outcome, first.category) == ("error", "column_not_found")
    assert "amout" in first.error and first.feedback
    assert second.number == 2 and second.diff and "amount" in second.diff
    retry = model.prompts[1]
    # the first prompt unchanged in front (a server's prompt cache reuses it), then the
    # failed SQL as the model's turn and the feedback as the user's
    assert retry[:2] == model.prompts[0]
    assert [role for role, _ in retry[2:]] == ["ai", "human"]
    assert "amout" in retry[2][1] and first.feedback in retry[3][1]


def test_three_failures_end_with_a_summary(con):
    r, model, _ = run(
        con,
        sql_reply("SELECT a FROM orders"),
        sql_reply("SELECT b FROM orders"),
        sql_reply("SELECT c FROM orders"),
        fallback=False,
    )
    assert not r.ok and r.stop_reason == "max_attempts"
    assert [a.number for a in r.attempts] == [1, 2, 3]
    assert r.attempts[-1].feedback is None  # nothing was sent after the last attempt
    assert "3 attempt(s) failed" in r.message and "Attempt 3" in r.message
    assert len(model.prompts) == 3
    third = model.prompts[2]
    assert third[:4] == model.prompts[1]  # each retry appends to the previous prompt
    assert "SELECT a FROM orders" in third[2][1] and "SELECT b FROM orders" in third[4][1]


def test_unchanged_sql_is_told_then_stops(con):
    """The same failed SQL again is told so once; a third time it stops (no fallback here)."""
    r, model, _ = run(
        con,
        sql_reply("SELECT a FROM orders"),
        sql_reply("select A  from orders;"),
        sql_reply("SELECT a FROM orders"),
        max_attempts=4,
        fallback=False,
    )
    assert r.stop_reason == "unchanged_sql" and len(r.attempts) == 3 and len(model.prompts) == 3
    assert "You wrote the query of attempt 1 again" in model.prompts[2][-1][1]


def test_no_sql_is_a_retryable_attempt_with_feedback(con):
    r, _, _ = run(
        con, "I think you want the orders table.", sql_reply("SELECT count(*) FROM orders")
    )
    assert r.ok and r.attempts[0].outcome == "no_sql" and r.attempts[0].category == "no_sql"
    assert "```sql" in r.attempts[0].feedback


def test_refused_sql_never_runs(con):
    r, _, _ = run(con, sql_reply("DELETE FROM orders"), sql_reply("SELECT count(*) FROM orders"))
    assert r.ok and r.attempts[0].outcome == "refused" and r.rows == [(3,)]


@pytest.mark.parametrize("max_attempts", [1, 2, 3, 5])
def test_attempt_count_never_exceeds_the_maximum(con, max_attempts):
    replies = [sql_reply(f"SELECT col{i} FROM orders") for i in range(max_attempts + 3)]
    r, model, _ = run(con, *replies, max_attempts=max_attempts, fallback=False)
    assert len(r.attempts) == max_attempts == len(model.prompts)
    assert max(a.number for a in r.attempts) == max_attempts


def test_model_error_is_one_clear_line(con):
    class Broken:
        def invoke(self, messages):
            raise TimeoutError("connect timed out\nlong trace")

    r = run_agent("q?", model=Broken(), runner=SQLiteRunner(con))
    assert not r.ok and r.stop_reason == "model_error"
    assert (
        "\n" not in r.message and "TimeoutError" in r.message and "connect timed out" in r.message
    )


def test_large_schema_is_linked_within_the_budget():
    con = sqlite3.connect(":memory:")
    for i in range(200):
        con.execute(
            f"CREATE TABLE noise_{i} (id INTEGER PRIMARY KEY, label_{i} TEXT, value_{i} REAL)"
        )
    con.execute("CREATE TABLE invoices (invoice_id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
    model = CountingModel(fake_model(sql_reply("SELECT sum(total) FROM invoices")))
    r = run_agent(
        "What is the invoice total?", model=model, runner=SQLiteRunner(con), schema_budget=2000
    )
    system = model.prompts[0][0][1]
    assert r.ok and "CREATE TABLE invoices (" in system
    schema_part = system.split("<schema>")[1].split("</schema>")[0]
    assert len(schema_part.strip()) <= 2000


def test_feedback_names_the_function_the_model_wrote_not_its_regenerated_spelling(con):
    # The checked SQL is regenerated: median(x) runs as PERCENTILE_CONT(x, 0.5) on SQLite.
    r, model, _ = run(
        con,
        sql_reply("SELECT median(amount) AS m FROM orders"),
        sql_reply("SELECT avg(amount) AS m FROM orders"),
        fallback=False,
    )
    first = r.attempts[0]
    assert first.category == "function_not_found"
    # the engine's message, naming the function as the model wrote it
    assert "MEDIAN" in first.error and "PERCENTILE_CONT" not in first.error
    assert '"MEDIAN"' in first.feedback and "PERCENTILE_CONT" not in first.feedback
    assert r.ok and len(model.prompts) == 2
