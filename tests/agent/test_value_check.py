"""The result check on real engines (SQLite, DuckDB, PostgreSQL), table-driven from
``data/value_check_cases.json``: which literals it finds, whether they occur, the close
values it names; with the schema's complete samples (no query needed) and without them."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from cadet_magic.db.connect import resolve_runner
from cadet_magic.result_check.probe_database import check_result
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.validate import validate_sql

DATA = json.loads((Path(__file__).parent / "data" / "value_check_cases.json").read_text())
SETUP, CASES = DATA["setup"], DATA["cases"]


@pytest.fixture(scope="module", params=["sqlite", "duckdb", "postgres"])
def engine(request):
    """(engine name, runner, a function giving the user's view of the country table)."""
    kind = request.param
    if kind == "sqlite":
        con = sqlite3.connect(":memory:")
        for s in SETUP:
            con.execute(s)
        con.commit()
        yield (
            kind,
            resolve_runner(con),
            lambda: con.execute("SELECT count(*) FROM country").fetchall(),
        )
        con.close()
        return
    if kind == "duckdb":
        con = duckdb.connect()
        for s in SETUP:
            con.execute(s)
        yield (
            kind,
            resolve_runner(con),
            lambda: con.execute("SELECT count(*) FROM country").fetchall(),
        )
        con.close()
        return
    url = request.getfixturevalue("pg_url")
    engine = sa.create_engine(url)
    with engine.begin() as c:
        c.exec_driver_sql("DROP SCHEMA IF EXISTS value_check CASCADE; CREATE SCHEMA value_check")
    engine = sa.create_engine(url, connect_args={"options": "-csearch_path=value_check"})
    with engine.begin() as c:
        for s in SETUP:
            c.exec_driver_sql(s)
    conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    yield (
        kind,
        resolve_runner(conn),
        lambda: [tuple(r) for r in conn.exec_driver_sql("SELECT count(*) FROM country")],
    )
    conn.close()
    engine.dispose()


def _without_samples(schema: Schema) -> Schema:
    tables = tuple(
        replace(t, columns=tuple(replace(c, samples=(), samples_complete=False) for c in t.columns))
        for t in schema.tables
    )
    return replace(schema, tables=tables, _index={})


@pytest.mark.parametrize("samples", [True, False], ids=["samples", "queries"])
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_value_check(engine, case, samples):
    name, runner, count = engine
    expect = {**case, **case.get(name, {})}
    schema = runner.schema()
    if samples:
        assert any(c.samples_complete for t in schema.tables for c in t.columns)
    else:
        schema = _without_samples(schema)
    verdict = validate_sql(case["sql"], runner.dialect, schema.table_names())
    assert verdict.ok, verdict.issues
    ran = runner.run(verdict.sql, limit=100, timeout=30)
    queries: list[str] = []

    def fetch(sql, timeout):
        queries.append(sql)
        return runner.run(sql, limit=1000, timeout=timeout).rows

    vc = check_result(
        verdict.sql, attempt=1, rows=len(ran.rows), schema=schema, fetch=fetch,
        target=runner.target, timeout=30, budget=120,
    )  # fmt: skip
    got = [[f.filter.where, f.filter.value, list(f.close)] for f in vc.missing]
    assert got == expect["missing"], (name, queries)
    assert vc.suspect is expect["suspect"]
    assert all(f.occurs is not None for f in vc.findings)
    assert not vc.out_of_budget
    assert count() == [(5,)]  # the check's queries changed nothing
    if samples and "LIKE" not in case["sql"]:
        # complete samples answer "occurs" and "nothing close" without a query
        assert all(f.occurs is False and f.close for f in vc.missing) or not queries
