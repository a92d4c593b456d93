"""The checked query travels whole: the model's SQL is parsed once per attempt (by the check);
the runner's row limit, the result check, the diagnosis and the comparison with the previous
attempt use the check's tree (scripted model; real SQLite and DuckDB)."""

from __future__ import annotations

import sqlite3

import duckdb
import pytest
from sqlglot.dialects.dialect import Dialect

from cadet_magic.agent.run import run_agent
from cadet_magic.db.duckdb import DuckDBRunner
from cadet_magic.db.sqlite import SQLiteRunner
from tests.helpers import fake_model, sql_reply

REPLIES = [
    "SELECT amout FROM orders ORDER BY id",  # the engine refuses: diagnosed
    "SELECT sum(amount) FROM orders WHERE customer = 'Ann' ORDER BY 1",  # suspect: 'ann' exists
    "SELECT sum(amount) FROM orders WHERE customer = 'ann' ORDER BY 1",  # the answer
]


@pytest.fixture
def parses(monkeypatch):
    seen: list[str] = []
    original = Dialect.parse

    def counting(self, sql, **opts):
        seen.append(sql)
        return original(self, sql, **opts)

    monkeypatch.setattr(Dialect, "parse", counting)
    return seen


def _orders(con) -> None:
    con.execute("CREATE TABLE orders (id INTEGER, customer VARCHAR(20), amount INTEGER)")
    con.execute("INSERT INTO orders VALUES (1, 'ann', 3), (2, 'bob', 4)")


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_one_parse_per_attempt(engine, parses):
    con = sqlite3.connect(":memory:") if engine == "sqlite" else duckdb.connect()
    _orders(con)
    runner = SQLiteRunner(con) if engine == "sqlite" else DuckDBRunner(con)
    schema = runner.schema()  # read before counting: the catalog is not the attempt's SQL
    parses.clear()
    model = fake_model(*(sql_reply(s) for s in REPLIES))
    r = run_agent("Total of ann?", model=model, runner=runner, schema=schema, model_timeout=None)
    assert r.ok and r.rows == [(3,)]
    assert [a.category for a in r.attempts] == ["column_not_found", "value_not_found", None]
    assert [a.outcome for a in r.attempts] == ["error", "suspect", "ok"]
    written = [p for p in parses if p.strip().rstrip(";") in REPLIES]
    assert len(written) == len(r.attempts) == 3, parses
    # the result check's own probe (is 'Ann' stored?) passes the safety check too: one parse
    probes = [p for p in parses if p not in written]
    assert len(probes) == 1 and "EXISTS" in probes[0], parses


def test_one_parse_per_fallback_attempt(parses):
    """The fallback's simple-SELECT rule reads the check's tree too."""
    con = sqlite3.connect(":memory:")
    _orders(con)
    runner = SQLiteRunner(con)
    schema = runner.schema()
    parses.clear()
    fallback = (
        "```sql\nSELECT customer, amount FROM orders\n```\n"
        "```python\nresult = df.groupby('customer')['amount'].sum()\n```"
    )
    model = fake_model(sql_reply("SELECT amout FROM orders"), fallback)
    r = run_agent("Total per customer?", model=model, runner=runner, schema=schema, max_attempts=1)
    assert r.ok and r.answered_by == "fallback"
    # the SQL attempt's query once, the product's SELECT once (the tables it joins were read
    # from the SQL attempt's tree when it closed, not parsed again)
    assert len(parses) == len(r.attempts) + len(r.fallback.attempts) == 2, parses
    assert r.fallback.sql.startswith("SELECT orders.id AS id")


def test_the_dialect_is_resolved_once_and_travels_with_the_query(monkeypatch):
    """The run's Target holds sqlglot's dialect object, resolved once, and so does the
    CheckedQuery the check makes against it: every step hands that object to sqlglot instead
    of a name it would look up again (a three-attempt run looked the name up 26 times before,
    then twice, in the result check's probes; now never)."""
    from cadet_magic.sql.dialect import dialect_of
    from cadet_magic.sql.validate import validate_sql

    con = sqlite3.connect(":memory:")
    _orders(con)
    runner = SQLiteRunner(con)
    schema = runner.schema()

    def ask():
        model = fake_model(*(sql_reply(s) for s in REPLIES))
        return run_agent("Total of ann?", model=model, runner=runner, schema=schema)

    ask()  # the per-name caches filled
    lookups: list[object] = []
    original = Dialect.get_or_raise.__func__  # type: ignore[attr-defined]

    def counting(cls, dialect):
        if dialect is None or isinstance(dialect, str):
            lookups.append(dialect)
        return original(cls, dialect)

    monkeypatch.setattr(Dialect, "get_or_raise", classmethod(counting))
    r = ask()
    assert r.ok and len(r.attempts) == 3
    assert not [name for name in lookups if isinstance(name, str)], lookups
    query = validate_sql("SELECT 1", "SQLite").query
    assert query is not None and query.dialect is dialect_of("sqlite") and query.read == "sqlite"
