"""One Target: the database as the check, the runner and the diagnosis take it, resolved once
and passed down whole (cases in ``target_cases.json``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cadet_magic.agent import steps
from cadet_magic.agent.run import run_agent
from cadet_magic.db.sqlite import SQLiteRunner
from cadet_magic.runner import target_of
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.dialect import dialect_of
from cadet_magic.sql.functions import FunctionCatalog
from cadet_magic.sql.target import Target, as_target
from cadet_magic.sql.validate import validate_sql
from tests.helpers import fake_model, sql_reply

CASES = json.loads((Path(__file__).parent / "target_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[str(c["given"]) for c in CASES])
def test_a_name_resolves_once(case):
    t = Target.named(case["given"])
    assert (t.engine, t.name, t.read) == (case["engine"], case["name"], case["read"])
    assert type(t.dialect).__name__ == case["class"]
    assert t.dialect is dialect_of(case["read"])  # sqlglot's object, made once per name
    assert as_target(t) is t and t.tables is None and t.columns is None


def test_the_schema_gives_its_names():
    catalog = FunctionCatalog("mysql", frozenset({"lower"}), frozenset({"lower"}))
    schema = Schema.from_mapping({"orders": ["id", "amount"]}, dialect="mysql")
    schema = Schema(schema.tables, dialect="mysql", functions=catalog, ansi_quotes=True)
    t = Target.named("mariadb").with_schema(schema)
    assert t.tables == ("orders",) and dict(t.columns) == {"orders": ("id", "amount")}
    assert t.functions is catalog and t.ansi_quotes and t.engine == "mysql"
    assert Target.named("sqlite").with_schema(Schema()).tables is None  # not read: no allow-list


def test_validate_sql_takes_a_target_or_a_name_never_both():
    t = Target.named("duckdb").with_names(["orders"], {"orders": ["id"]})
    by_target = validate_sql("SELECT id FROM orders", t)
    by_name = validate_sql(
        "SELECT id FROM orders", "duckdb", ["orders"], columns={"orders": ["id"]}
    )
    assert by_target.ok and by_name.ok and str(by_target.sql) == str(by_name.sql)
    assert by_target.query.target is t
    assert not validate_sql("SELECT * FROM customers", t).ok  # the target's tables
    with pytest.raises(TypeError):
        validate_sql("SELECT 1", t, ["orders"])


def test_the_run_reads_the_target_once_and_every_check_takes_it(monkeypatch):
    """The runner's Target, the schema's names added once by read_schema; the check of every
    attempt (and of the stats figures' queries) is handed that same object, and so is the
    CheckedQuery the runner runs."""
    con = sqlite3.connect(":memory:")
    con.executescript(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, amount REAL);"
        "INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32.5);"
    )
    runner = SQLiteRunner(con)
    seen: list[object] = []
    checked = steps.validate_sql

    def recording(sql, target, *rest, **kw):
        seen.append(target)
        return checked(sql, target, *rest, **kw)

    monkeypatch.setattr(steps, "validate_sql", recording)
    model = fake_model(
        sql_reply("SELECT amout FROM orders"), sql_reply("SELECT sum(amount) AS s FROM orders")
    )
    r = run_agent("Total?", model=model, runner=runner, share="stats")
    assert r.ok and r.rows == [(42.5,)] and len(r.attempts) == 2
    target = seen[-1]
    assert target.tables == ("orders",) and target.engine == "sqlite"
    assert target.dialect is target_of(runner).dialect
    assert len(seen) > 2 and all(t is target for t in seen)  # stats' checks and both attempts
