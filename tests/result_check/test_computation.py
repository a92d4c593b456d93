"""The computation sign and the engine's lacks, table-driven (data/computation_cases.json), on
real engines' catalogs (SQLite and DuckDB) for what they lack."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import duckdb
import pytest
import sqlglot

from cadet_magic.db.duckdb import DuckDBRunner
from cadet_magic.db.sqlite import SQLiteRunner
from cadet_magic.result_check.computation import engine_lacks, missing_computation
from cadet_magic.runner import target_of

CASES = json.loads((Path(__file__).parent / "data" / "computation_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['missing']}:{c['sql'][:40]}" for c in CASES])
def test_a_named_computation_the_query_lacks_is_found(case):
    tree = sqlglot.parse_one(case["sql"], read="sqlite")
    found = missing_computation(case["question"], tree)
    if case["missing"] is None:
        assert found is None
    else:
        assert found is not None and found.name == case["missing"]
        assert list(found.computed) == case["computed"]
        assert case["missing"] in found.message()


def target(engine: str):
    if engine == "sqlite":
        con = sqlite3.connect(":memory:")
        con.execute("CREATE TABLE t (x REAL, s TEXT)")
        runner = SQLiteRunner(con)
    else:
        con = duckdb.connect()
        con.execute("CREATE TABLE t (x DOUBLE, s VARCHAR)")
        runner = DuckDBRunner(con)
    return target_of(runner).with_schema(runner.schema())


@pytest.mark.parametrize(
    ("engine", "sql", "lacks"),
    [
        ("sqlite", "SELECT MEDIAN(x) FROM t", ["MEDIAN"]),
        ("sqlite", "SELECT STDDEV(x), VARIANCE(x) FROM t", ["STDDEV", "VARIANCE"]),
        ("sqlite", "SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY x) FROM t", None),
        ("sqlite", "SELECT s FROM t WHERE s REGEXP 'a+'", ["REGEXP"]),
        ("sqlite", "SELECT AVG(x), LAG(x) OVER (ORDER BY x) FROM t", []),
        ("duckdb", "SELECT MEDIAN(x), STDDEV(x), QUANTILE_CONT(x, 0.9) FROM t", []),
    ],
)
def test_what_the_engine_lacks_is_read_from_its_own_catalog(engine, sql, lacks):
    found = engine_lacks(sqlglot.parse_one(sql, read=engine), target(engine))
    if lacks is None:  # an ordered-set aggregate: SQLite's dialect has no WITHIN GROUP
        assert "WITHIN GROUP" in found
    else:
        assert list(found) == lacks
