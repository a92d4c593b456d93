"""End to end with a scripted model: the diagnosis of a realistic mistake leads the model
to the right query on the next attempt (real SQLite, DuckDB and PostgreSQL)."""

from __future__ import annotations

import sqlite3

import pytest

from cadet_magic.agent.run import run_agent
from cadet_magic.db.connect import resolve_runner
from tests.helpers import CountingModel, fake_model, sql_reply

DDL = [
    "CREATE TABLE products (product_id INTEGER PRIMARY KEY, name TEXT, category TEXT)",
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, status TEXT)",
    "CREATE TABLE order_items (order_id INTEGER REFERENCES orders (order_id), "
    "product_id INTEGER REFERENCES products (product_id), quantity INTEGER)",
    "INSERT INTO products VALUES (1, 'pen', 'office'), (2, 'ink', 'office'), (3, 'mug', 'home')",
    "INSERT INTO orders VALUES (10, 'shipped'), (11, 'open')",
    "INSERT INTO order_items VALUES (10, 1, 2), (10, 3, 1), (11, 2, 5)",
]
QUESTION = "How many units were ordered per product category?"
WRONG = (
    "SELECT category, SUM(quantity) AS units FROM order_items GROUP BY category ORDER BY category"
)
RIGHT = (
    "SELECT products.category, SUM(order_items.quantity) AS units FROM order_items "
    "JOIN products ON products.product_id = order_items.product_id "
    "GROUP BY products.category ORDER BY products.category"
)
JOIN = "JOIN products ON products.product_id = order_items.product_id"


def _answer(con) -> None:
    model = CountingModel(fake_model(sql_reply(WRONG), sql_reply(RIGHT)))
    result = run_agent(QUESTION, model=model, runner=resolve_runner(con), fallback=False)
    first, second = result.attempts
    assert (first.outcome, first.category) == ("error", "join_error")
    assert "Column category is in products, which the query does not join" in first.feedback
    assert JOIN in first.feedback and first.suggestions[0] == "products.category"
    assert JOIN in model.prompts[1][-1][1]  # the feedback reached the model
    assert second.outcome == "ok" and result.ok
    assert [tuple(r) for r in result.rows] == [("home", 1), ("office", 7)]


def test_missing_join_corrected_on_attempt_2_sqlite():
    con = sqlite3.connect(":memory:")
    for s in DDL:
        con.execute(s)
    _answer(con)


def test_missing_join_corrected_on_attempt_2_duckdb():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    for s in DDL:
        con.execute(s)
    _answer(con)


@pytest.mark.postgres
def test_missing_join_corrected_on_attempt_2_postgres(pg_url):
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(pg_url)
    with engine.begin() as con:
        con.exec_driver_sql("DROP SCHEMA IF EXISTS selfcorr CASCADE")
        con.exec_driver_sql("CREATE SCHEMA selfcorr")
    engine = sa.create_engine(pg_url, connect_args={"options": "-csearch_path=selfcorr"})
    with engine.begin() as con:
        for s in DDL:
            con.exec_driver_sql(s)
    with engine.connect() as con:
        _answer(con)
    engine.dispose()
