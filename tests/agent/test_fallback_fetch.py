"""The fallback with the product's own SELECT (the model writes only pandas), and the SQL
phase giving way to it early: a scripted model, real SQLite and DuckDB, the real worker.
Entry cases are in data/fallback_entry_cases.json."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import duckdb
import pytest

from cadet_magic.agent.run import run_agent
from cadet_magic.db.duckdb import DuckDBRunner
from cadet_magic.db.sqlite import SQLiteRunner
from tests.helpers import CountingModel, fake_model, sql_reply

SCHEMA = (
    "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name VARCHAR, city VARCHAR);"
    "CREATE TABLE products (product_id INTEGER PRIMARY KEY, name VARCHAR, category VARCHAR);"
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, "
    "customer_id INTEGER REFERENCES customers (customer_id), day DATE);"
    "CREATE TABLE items (order_id INTEGER REFERENCES orders (order_id), "
    "product_id INTEGER REFERENCES products (product_id), quantity INTEGER, price DECIMAL(8, 2));"
    "INSERT INTO customers VALUES (1, 'ann', 'Oslo'), (2, 'bob', 'Rome');"
    "INSERT INTO products VALUES (1, 'pen', 'office'), (2, 'cup', 'kitchen');"
    "INSERT INTO orders VALUES (1, 1, '2024-01-05'), (2, 2, '2024-02-10'), (3, 1, '2024-03-15');"
    "INSERT INTO items VALUES (1, 1, 1, 2.5), (2, 1, 2, 2.5), (3, 2, 3, 2.5);"
)
CASES = json.loads((Path(__file__).parent / "data" / "fallback_entry_cases.json").read_text())[
    "cases"
]


def runner_for(engine: str):
    if engine == "sqlite":
        con = sqlite3.connect(":memory:")
        con.executescript(SCHEMA)
        return SQLiteRunner(con)
    con = duckdb.connect()
    for statement in SCHEMA.split(";"):
        if statement.strip():
            con.execute(statement)
    return DuckDBRunner(con)


def code_reply(code: str) -> str:
    return f"```python\n{code}\n```"


def ask(engine: str, question: str, *replies: str, **options):
    model = CountingModel(fake_model(*replies))
    result = run_agent(question, model=model, runner=runner_for(engine), **options)
    return result, model


@pytest.mark.parametrize(
    ("case", "engine"),
    [(c, e) for c in CASES for e in c["engines"]],
    ids=[f"{c['id']}-{e}" for c in CASES for e in c["engines"]],
)
def test_the_sql_phase_gives_way_early_only_when_sql_cannot_help(case, engine):
    replies = [sql_reply(s) for s in case["sql"]] + [code_reply(c) for c in case["code"]]
    r, model = ask(engine, case["question"], *replies, candidates=3)
    assert r.ok, r.message
    assert [list(row) for row in r.rows] == case["answer"]
    assert len(r.attempts) == case["sql_attempts"]
    if case["entered"] is None:
        assert r.answered_by == "sql" and r.fallback is None
        return
    assert r.answered_by == "fallback" and str(r.fallback.reason) == case["entered"]
    assert r.candidates == []  # no vote: its candidates would meet the same lack
    assert r.model_calls == len(replies) == len(model.prompts)
    last_sql = r.attempts[-1]
    assert last_sql.outcome in ("suspect", "error") and last_sql.retryable
    pandas_prompt = model.prompts[-1]
    human = pandas_prompt[1][1]
    assert "```sql" not in pandas_prompt[0][1]  # the model is asked for pandas only
    assert "df: 3 rows, fetched by: SELECT" in human
    assert "- quantity (int64" in human and "- price (float64" in human  # DECIMAL as float
    if "JOIN orders" in r.fallback.sql:
        assert "- day (datetime64" in human  # dates as dates, on both engines
    assert r.fallback.sql.startswith("SELECT items.order_id AS order_id")


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_without_the_fallback_the_sql_answer_stands(engine):
    sql = "SELECT AVG(quantity * price) AS median FROM items"
    r, _ = ask(engine, "What is the median line value?", sql_reply(sql), fallback=False)
    assert r.ok and r.answered_by == "sql" and r.fallback is None and len(r.attempts) == 1


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_missing_column_is_answered_with_the_columns_and_a_type_error_with_the_dtypes(engine):
    avg = "SELECT AVG(quantity * price) AS median FROM items"
    missing = "result = df.groupby('order_id')['amount'].sum().median()"
    typed = "result = df['quantity'].str.len().median()"
    right = "result = (df['quantity'] * df['price']).median()"
    r, model = ask(
        engine,
        "What is the median line value?",
        sql_reply(avg),
        code_reply(missing),
        code_reply(typed),
        code_reply(right),
    )
    assert r.ok and r.answered_by == "fallback" and r.rows == [(5.0,)]
    first, second, third = r.fallback.attempts
    assert first.category == "python_error" and "KeyError" in first.error
    assert "df has exactly these columns: order_id, product_id, quantity, price" in first.feedback
    assert "SELECT" not in first.feedback.split("columns:")[1]  # the model cannot change it
    assert second.category == "python_error" and "AttributeError" in second.error
    assert "quantity (int64)" in second.feedback and "pd.to_numeric" in second.feedback
    assert third.outcome == "ok"
    retry = model.prompts[-1][1][1]
    assert first.error in retry and second.feedback in retry
    assert missing in retry and typed in retry  # the earlier code, with its errors


def test_tables_without_foreign_keys_are_joined_on_shared_key_names():
    con = sqlite3.connect(":memory:")
    con.executescript(
        "CREATE TABLE people (people_id INTEGER, name TEXT, nationality TEXT);"
        "CREATE TABLE player (player_id INTEGER, people_id INTEGER, earnings REAL);"
        "INSERT INTO people VALUES (1, 'a', 'X'), (2, 'b', 'X'), (3, 'c', 'Y');"
        "INSERT INTO player VALUES (10, 1, 5), (11, 2, 9), (12, 3, 1);"
    )
    sql = (
        "SELECT nationality, AVG(earnings) FROM player JOIN people "
        "ON player.people_id = people.people_id GROUP BY nationality"
    )
    code = "result = df.groupby('nationality')['earnings'].median().reset_index()"
    model = CountingModel(fake_model(sql_reply(sql), code_reply(code)))
    r = run_agent(
        "What is the median earnings per nationality?", model=model, runner=SQLiteRunner(con)
    )
    assert r.ok and r.answered_by == "fallback" and r.rows == [("X", 7.0), ("Y", 1.0)]
    assert "JOIN people ON player.people_id = people.people_id" in r.fallback.sql


def test_the_model_writes_both_blocks_when_the_product_cannot(monkeypatch):
    """No table read and too many in the schema to take them all: the two-block prompt."""
    from cadet_magic.agent import fallback_phase

    monkeypatch.setattr(fallback_phase, "MAX_SCHEMA_TABLES", 1)
    select = "SELECT quantity, price FROM items"
    r, model = ask(
        "sqlite",
        "What is the median line value?",
        "I cannot write that.",
        "Still no.",
        "No.",
        f"```sql\n{select}\n```\n" + code_reply("result = (df.quantity * df.price).median()"),
    )
    assert r.ok and r.answered_by == "fallback" and r.fallback.sql == select
    assert "```sql" in model.prompts[-1][0][1]


@pytest.mark.parametrize("share", ["schema", "stats", "samples"])
def test_the_pandas_prompt_shows_values_only_at_the_samples_level(share):
    sql = "SELECT AVG(quantity * price) AS median FROM items JOIN products USING (product_id)"
    r, model = ask(
        "duckdb",
        "What is the median line value?",
        sql_reply(sql),
        code_reply("result = (df['quantity'] * df['price']).median()"),
        share=share,
    )
    assert r.ok and r.answered_by == "fallback"
    human = model.prompts[-1][1][1]
    assert "- category (" in human  # names and dtypes at every level
    assert ("office" in human) is (share == "samples")
    assert ("df: 3 rows" in human) is (share != "schema")


def test_an_empty_fallback_answer_warns_as_an_empty_sql_answer_does():
    from cadet_magic.result_check.probe_database import EMPTY_WARNING

    sql = "SELECT AVG(quantity * price) AS median FROM items"
    empty = "result = df[df['quantity'] > 99][['quantity']]"
    r, _ = ask("sqlite", "What is the median line value?", sql_reply(sql), code_reply(empty))
    assert r.ok and r.answered_by == "fallback" and r.rows == [] and r.warnings == [EMPTY_WARNING]


MEDIAN_CODE = (
    "result = df.assign(v=df['quantity'] * df['price']).groupby('order_id')['v'].sum().median()"
)


def test_a_hand_written_median_failing_on_sqlite_goes_to_the_fallback_at_once():
    """As the local model did on the benchmark: SQLite has no median function, its hand-written
    median failed, and it wrote the same query again until the SQL phase stopped."""
    hand = (
        "SELECT AVG(v) AS median FROM (SELECT SUM(quantity * price) AS v FROM items "
        "GROUP BY order_id) ORDER BY v LIMIT 1 OFFSET (COUNT(*) - 1) / 2"
    )
    r, model = ask(
        "sqlite", "What is the median order value?", sql_reply(hand), code_reply(MEDIAN_CODE)
    )
    assert r.ok and r.answered_by == "fallback" and r.rows == [(5.0,)]
    assert str(r.fallback.reason) == "engine_lacks" and len(r.attempts) == 1
    assert r.model_calls == 2


def test_a_vote_candidate_that_computes_something_else_gives_no_answer():
    typos = [sql_reply(f"SELECT MEDIAN(quantity * pryce{i}) FROM items") for i in range(3)]
    avg = sql_reply("SELECT AVG(quantity * price) AS median FROM items")
    r, _ = ask(
        "duckdb",
        "What is the median line value?",
        *typos,
        avg,
        avg,
        code_reply("result = (df['quantity'] * df['price']).median()"),
        candidates=3,
    )
    assert [c.category for c in r.candidates] == ["computation_missing"] * 2
    assert r.ok and r.answered_by == "fallback" and r.rows == [(5.0,)]
    assert str(r.fallback.reason) == "max_attempts"


def test_the_product_select_follows_a_model_that_repeated_itself():
    same = sql_reply("SELECT MEDIAN(quantity * pryce) FROM items")
    r, _ = ask(
        "duckdb",
        "What is the median line value?",
        same,
        same,
        same,
        code_reply("result = (df['quantity'] * df['price']).median()"),
    )
    assert r.attempts[-1].category == "column_not_found"
    assert r.ok and r.answered_by == "fallback" and r.rows == [(5.0,)]


def test_a_method_asked_of_a_single_number_is_told_so_not_as_a_missing_column():
    """As the local model wrote on the benchmark (shop-02): a product summed to one number
    before the percentile was asked of it."""
    sql = "SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY price) FROM items"
    wrong = 'result = df.groupby("order_id")["quantity"] * df["price"].sum().quantile(0.9)'
    r, _ = ask(
        "sqlite",
        "What is the median line value?",
        sql_reply(sql),
        code_reply(wrong),
        code_reply("result = (df['quantity'] * df['price']).median()"),
    )
    assert r.ok and r.answered_by == "fallback" and str(r.fallback.reason) == "engine_lacks"
    first = r.fallback.attempts[0]
    assert (
        "single number" in first.feedback and "df has exactly these columns" not in first.feedback
    )


def test_reset_index_on_a_single_value_is_told_to_go():
    """As the local model's second code on shop-02 did: the right figure, then .reset_index()."""
    sql = "SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY price) FROM items"
    wrong = "result = (df['quantity'] * df['price']).median().reset_index()"
    r, _ = ask(
        "sqlite",
        "What is the median line value?",
        sql_reply(sql),
        code_reply(wrong),
        code_reply("result = (df['quantity'] * df['price']).median()"),
    )
    assert r.ok and r.rows == [(5.0,)]
    assert "Drop .reset_index()" in r.fallback.attempts[0].feedback
