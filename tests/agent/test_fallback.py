"""The fallback end to end when the model writes both blocks (the simple SELECT and the pandas
code: the path where the product writes no SELECT itself): a scripted model, real SQLite and
DuckDB, the real code runner. The product's own SELECT is tested in test_fallback_fetch.py."""

from __future__ import annotations

import sqlite3

import duckdb
import pandas as pd
import pytest

from cadet_magic.agent.events import RunDone
from cadet_magic.agent.run import run_agent
from cadet_magic.db.duckdb import DuckDBRunner
from cadet_magic.db.sqlite import SQLiteRunner
from cadet_magic.fallback.in_process import run_code
from tests.helpers import CountingModel, fake_model, sql_reply

SCHEMA = (
    "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT);"
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL, "
    "status TEXT);"
    "INSERT INTO customers VALUES (1, 'ann'), (2, 'bob'), (3, 'cid');"
    "INSERT INTO orders VALUES (1, 1, 10, 'shipped'), (2, 2, 32.5, 'shipped'), "
    "(3, 1, 7.5, 'shipped'), (4, 3, 3, 'cancelled'), (5, 3, 4, 'shipped');"
)
QUESTION = "Which customer has the largest shipped order, with its amount?"
FAILED_SQL = [
    sql_reply("SELECT name, amout FROM orders JOIN customers USING (customer_id)"),
    sql_reply("SELECT name, amount FROM orders JOIN customers USING (customer_id) LIMT 1"),
    sql_reply("SELECT nam FROM customers"),
]
SIMPLE = (
    "SELECT c.name, o.amount FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
    "WHERE o.status = 'shipped'"
)
CODE = "top = df.sort_values('amount', ascending=False).head(1)\nresult = top[['name', 'amount']]"
EXPECTED = [["bob", 32.5]]


def fallback_reply(sql: str = SIMPLE, code: str = CODE) -> str:
    return f"Here is a simpler way:\n```sql\n{sql}\n```\nand\n```python\n{code}\n```\n"


def sqlite_runner():
    con = sqlite3.connect(":memory:")
    con.executescript(SCHEMA)
    return SQLiteRunner(con)


def duckdb_runner():
    con = duckdb.connect()
    con.execute(SCHEMA.replace("REAL", "DOUBLE"))
    return DuckDBRunner(con)


@pytest.fixture(autouse=True)
def model_writes_the_select(monkeypatch):
    from cadet_magic.agent import fallback_phase

    monkeypatch.setattr(fallback_phase, "PRODUCT_SELECT", False)


@pytest.fixture(params=[sqlite_runner, duckdb_runner], ids=["sqlite", "duckdb"])
def runner(request):
    return request.param()


def ask(runner, *replies, **kw):
    model = CountingModel(fake_model(*replies))
    events = []
    result = run_agent(QUESTION, model=model, runner=runner, on_event=events.append, **kw)
    done = events.pop()  # the run's end: the result as the core built it
    assert isinstance(done, RunDone) and done.result is result
    return result, model, events


def test_three_failed_sql_attempts_then_the_fallback_answers(runner):
    r, model, events = ask(runner, *FAILED_SQL, fallback_reply())
    assert r.ok and r.answered_by == "fallback" and r.stop_reason == "success"
    assert r.df.values.tolist() == EXPECTED and isinstance(r.df, pd.DataFrame)
    assert r.columns == ["name", "amount"] and r.rows == [("bob", 32.5)]
    assert r.sql == SIMPLE  # the SQL that produced the answer
    assert [a.phase for a in r.attempts] == ["sql"] * 3  # the failed SQL attempts stay
    assert all(a.outcome != "ok" for a in r.attempts)
    fb = r.fallback
    assert fb.ok and fb.sql == SIMPLE and fb.code == CODE and fb.result is r.df
    assert [(a.number, a.phase, a.outcome) for a in fb.attempts] == [(1, "fallback", "ok")]
    assert fb.attempts[0].code == CODE
    assert set(fb.attempts[0].timings) == {"generate", "check", "check_code", "execute", "run_code"}
    assert r.model_calls == 4 == len(model.prompts)
    steps = [e.step for e in events]
    assert steps[steps.index("hand_over") :] == [
        "hand_over",
        "generate",
        "check",
        "check_code",
        "execute",
        "run_code",
        "finish",
    ]
    prompt = model.prompts[3]
    assert "```python" in prompt[0][1] and "no imports" in prompt[0][1].lower()
    human = prompt[1][1]
    assert human.startswith(f"Question: {QUESTION}")
    assert "amout" in human and "SELECT nam FROM customers" in human  # the failed SQL, briefly


def test_a_refused_program_gets_feedback_and_the_second_try_answers(runner):
    hostile = "import os\nresult = os.listdir('.')"
    r, model, _ = ask(runner, *FAILED_SQL, fallback_reply(code=hostile), fallback_reply())
    assert r.ok and r.answered_by == "fallback"
    first, second = r.fallback.attempts
    assert (first.number, first.outcome, first.category) == (1, "refused", "code_refused")
    assert "line 1" in first.feedback and "import" in first.feedback
    assert "execute" not in first.timings  # nothing ran
    assert (second.number, second.outcome) == (2, "ok")
    retry_prompt = model.prompts[4][1][1]
    assert first.feedback in retry_prompt and hostile in retry_prompt
    assert r.model_calls == 5


@pytest.mark.parametrize(
    ("sql", "word"),
    [
        (
            "SELECT c.name, max(o.amount) AS amount FROM orders o JOIN customers c "
            "ON c.customer_id = o.customer_id GROUP BY c.name",
            "GROUP BY",
        ),
        (
            "WITH s AS (SELECT * FROM orders WHERE status = 'shipped') "
            "SELECT c.name, s.amount FROM s JOIN customers c ON c.customer_id = s.customer_id",
            "CTE",
        ),
        (
            "SELECT c.name, o.amount, rank() OVER (ORDER BY o.amount DESC) AS r FROM orders o "
            "JOIN customers c ON c.customer_id = o.customer_id",
            "window",
        ),
        (
            "SELECT DISTINCT c.name, o.amount FROM orders o JOIN customers c "
            "ON c.customer_id = o.customer_id",
            "DISTINCT",
        ),
        (
            "SELECT name, (SELECT max(amount) FROM orders) AS amount FROM customers",
            "subquery",
        ),
    ],
    ids=["aggregation", "cte", "window", "distinct", "subquery"],
)
def test_a_fallback_select_that_is_not_simple_is_refused_with_feedback(runner, sql, word):
    r, model, _ = ask(runner, *FAILED_SQL, fallback_reply(sql=sql), fallback_reply())
    assert r.ok and r.answered_by == "fallback"
    first = r.fallback.attempts[0]
    assert first.outcome == "refused" and first.category == "not_simple"
    assert word in first.feedback and "pandas" in first.feedback
    assert "execute" not in first.timings


def test_an_unsafe_fallback_select_goes_through_the_safety_check(runner):
    r, _, _ = ask(runner, *FAILED_SQL, fallback_reply(sql="DELETE FROM orders"), fallback_reply())
    first = r.fallback.attempts[0]
    assert r.ok and first.outcome == "refused" and first.category != "not_simple"
    assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=5).rows == [(5,)]


def test_a_python_error_comes_back_with_type_line_and_the_columns(runner):
    broken = "x = 1\nresult = df.sort_values('amout').head(1)"
    r, model, _ = ask(runner, *FAILED_SQL, fallback_reply(code=broken), fallback_reply())
    assert r.ok
    first = r.fallback.attempts[0]
    assert (first.outcome, first.category) == ("error", "python_error")
    assert first.error.startswith("KeyError at line 2:") and "amout" in first.error
    assert "name, amount" in first.feedback  # df's columns, so the model can fix the name


def test_a_fallback_sql_error_goes_through_the_diagnosis(runner):
    wrong = SIMPLE.replace("o.amount", "o.amout")
    r, _, _ = ask(runner, *FAILED_SQL, fallback_reply(sql=wrong), fallback_reply())
    first = r.fallback.attempts[0]
    assert r.ok and first.outcome == "error" and first.category == "column_not_found"
    assert "amount" in first.feedback


def test_missing_result_gets_its_own_feedback(runner):
    r, _, _ = ask(runner, *FAILED_SQL, fallback_reply(code="top = df.head(1)"), fallback_reply())
    first = r.fallback.attempts[0]
    assert r.ok and first.category == "no_result" and "result =" in first.feedback


def test_a_reply_without_both_blocks(runner):
    r, _, _ = ask(runner, *FAILED_SQL, sql_reply(SIMPLE), fallback_reply())
    first = r.fallback.attempts[0]
    assert r.ok and first.outcome == "no_sql" and first.category == "no_blocks"
    assert "```python" in first.feedback


def test_too_many_rows_for_the_fallback_is_refused_not_answered_on_part_of_the_data(runner):
    r, _, _ = ask(runner, *FAILED_SQL, fallback_reply(), fallback_reply(), fallback_row_limit=2)
    assert not r.ok and r.fallback is not None and not r.fallback.ok
    assert r.fallback.attempts[0].category == "too_many_rows"
    assert "more than 2 rows" in r.fallback.attempts[0].feedback


def test_the_fallback_failing_every_attempt_stops_for_good(runner):
    bad = fallback_reply(code="result = df['nope']")
    r, model, events = ask(
        runner,
        *FAILED_SQL,
        bad,
        bad.replace("nope", "nix"),
        bad.replace("nope", "nada"),
        fallback_reply(),
    )
    assert not r.ok and r.answered_by is None and r.stop_reason == "max_attempts"
    assert [a.number for a in r.attempts] == [1, 2, 3]
    assert [a.number for a in r.fallback.attempts] == [1, 2, 3]  # the counter restarted
    assert r.model_calls == 6 == len(model.prompts)  # never a second fallback
    assert [e.step for e in events].count("hand_over") == 1
    assert "3 SQL attempt(s) failed" in r.message and "fallback" in r.message
    assert "Attempt 3" in r.message and "Fallback attempt 3" in r.message
    assert r.fallback.attempts[-1].feedback is None
    assert r.df is None and r.sql is None


def test_no_fallback_when_disabled(runner):
    r, model, events = ask(runner, *FAILED_SQL, fallback_reply(), fallback=False)
    assert not r.ok and r.fallback is None and r.stop_reason == "max_attempts"
    assert r.model_calls == 3 and "hand_over" not in [e.step for e in events]


def test_no_fallback_on_a_non_retryable_error():
    con = sqlite3.connect(":memory:")
    con.close()
    r, model, _ = ask(SQLiteRunner(con), *FAILED_SQL, fallback_reply())
    assert not r.ok and r.stop_reason == "not_retryable" and r.fallback is None
    assert r.model_calls == 1


def test_no_fallback_on_a_model_error(runner):
    class Broken:
        def invoke(self, messages):
            raise TimeoutError("connect timed out")

    r = run_agent(QUESTION, model=Broken(), runner=runner)
    assert r.stop_reason == "model_error" and r.fallback is None and r.model_calls == 1


def test_repeated_sql_is_told_and_the_fallback_does_not_follow(runner):
    """A model that writes the failed SQL again is told so (with the exact columns of the
    tables involved); when it writes it once more the fallback does not run (its SELECT
    repeated that SQL too on the evaluation's questions): no call is spent on it."""
    r, model, _ = ask(runner, FAILED_SQL[0], FAILED_SQL[0], FAILED_SQL[0], fallback_reply())
    assert r.fallback is None and r.model_calls == 3 and not r.ok
    assert r.stop_reason in ("max_attempts", "unchanged_sql")
    assert "again" in r.attempts[1].feedback and "exactly these columns" in r.attempts[1].feedback
    assert "again" in model.prompts[2][-1][1]


def test_a_model_that_repeated_itself_once_still_gets_the_fallback(runner):
    r, _, _ = ask(runner, FAILED_SQL[0], FAILED_SQL[0], FAILED_SQL[1], fallback_reply())
    assert r.fallback is not None and r.ok and r.model_calls == 4


def test_a_model_error_in_the_fallback_keeps_both_phases_in_the_message(runner):
    r, _, _ = ask(runner, *FAILED_SQL)  # the scripted model has nothing left for the fallback
    assert not r.ok and r.stop_reason == "model_error" and r.fallback is not None
    assert r.fallback.attempts[0].outcome == "model_error"
    assert "3 SQL attempt(s) failed" in r.message
    # What to do is about the model, not about rephrasing the question.
    assert "model could not be called" in r.message.splitlines()[-1]
    assert "rephras" not in r.message.splitlines()[-1]


def test_a_model_error_line_ends_in_one_full_stop(runner):
    class Broken:
        def invoke(self, messages):
            raise TimeoutError("Request timed out.")

    r = run_agent(QUESTION, model=Broken(), runner=runner)
    assert "Request timed out. Check the model" in r.message and ".." not in r.message


def test_success_on_the_first_attempt_calls_the_model_once(runner):
    r, model, events = ask(runner, sql_reply("SELECT count(*) AS n FROM orders"))
    assert r.ok and r.answered_by == "sql" and r.fallback is None and r.model_calls == 1
    assert "check_code" not in [e.step for e in events]


def test_the_code_runner_is_injectable(runner):
    calls = []

    def recording_runner(code, df, *, timeout, **limits):
        calls.append((code, list(df.columns), len(df), timeout))
        return run_code(code, df, timeout=timeout)

    r, _, _ = ask(runner, *FAILED_SQL, fallback_reply(), code_runner=recording_runner, timeout=7)
    assert r.ok and calls == [(CODE, ["name", "amount"], 4, 7)]


# what to do without pandas: installable in a local kernel; not in an offline browser site
NO_PANDAS_ADVICE = [
    (False, "pip install pandas pyarrow", "offline"),
    (True, "an offline site cannot install it", "pip install pandas pyarrow"),
]


@pytest.mark.parametrize(("in_browser", "says", "never"), NO_PANDAS_ADVICE)
def test_without_pandas_the_fallback_is_a_clear_error_not_a_crash(
    runner, monkeypatch, in_browser, says, never
):
    from cadet_magic.agent import run as agent_run

    def no_pandas(columns, rows):
        raise ImportError("No module named 'pandas'")

    monkeypatch.setattr(agent_run, "IN_BROWSER", in_browser)
    r, _, _ = ask(runner, *FAILED_SQL, fallback_reply(), fallback_reply(), frame_maker=no_pandas)
    assert not r.ok and r.stop_reason == "not_retryable"
    assert r.fallback.attempts[0].category == "unavailable" and len(r.fallback.attempts) == 1
    assert "pandas" in r.message and says in r.message and never not in r.message


def test_a_scalar_answer_becomes_a_one_cell_table(runner):
    r, _, _ = ask(runner, *FAILED_SQL, fallback_reply(code="result = df['amount'].max()"))
    assert r.ok and r.columns == ["result"] and r.rows == [(32.5,)]
