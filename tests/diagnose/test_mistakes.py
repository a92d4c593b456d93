"""Realistic model mistakes on real DuckDB, SQLite and PostgreSQL: the category, the name
suggested and the feedback (table-driven from data/mistake_cases.json)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cadet_magic.db.driver_errors import diagnose_error, engine_error
from cadet_magic.diagnose import diagnose
from cadet_magic.schema.structure import Column, ForeignKey, Schema, Table

DATA = json.loads((Path(__file__).parent / "data" / "mistake_cases.json").read_text())
CASES = DATA["cases"]
SCHEMA = Schema(
    tuple(
        Table(
            name,
            tuple(Column(c) for c in spec["columns"]),
            tuple(ForeignKey(tuple(a), t, tuple(b)) for a, t, b in spec.get("foreign_keys", [])),
        )
        for name, spec in DATA["schema"].items()
    )
)
MAX_GUIDANCE_WORDS = 60


def guidance(feedback: str) -> str:
    """The feedback without the failed query in front of it."""
    return feedback.split("```\n", 2)[-1] if "```" in feedback else feedback


def _check(case: dict, engine: str, error: BaseException | None) -> None:
    expected = case["expect"][engine]
    if expected is None:
        assert error is None, f"{case['id']}: {engine} was expected to accept it: {error}"
        return
    assert error is not None, f"{case['id']}: {engine} accepted it, expected {expected}"
    d = diagnose_error(error, engine=engine, sql=case["sql"], schema=SCHEMA)
    assert d.category.value == expected, (case["id"], engine, str(error)[:300], d.details)
    if case.get("suggestion"):
        assert case["suggestion"] in d.suggestions[:3], (case["id"], engine, d.suggestions)
    text = guidance(d.feedback)
    for part in case.get("has", []):
        assert part in text, (case["id"], engine, text)
    for part in case.get("lacks", []):
        assert part not in text, (case["id"], engine, text)
    assert len(text.split()) <= MAX_GUIDANCE_WORDS, (case["id"], engine, text)


def _run(execute, sql: str) -> BaseException | None:
    try:
        execute(sql)
    except Exception as e:  # noqa: BLE001 - the engine's error is what is diagnosed
        return e
    return None


@pytest.fixture(scope="module")
def duck():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    for s in DATA["ddl"]:
        con.execute(s)
    yield con
    con.close()


@pytest.fixture(scope="module")
def lite():
    con = sqlite3.connect(":memory:")
    for s in DATA["ddl"]:
        con.execute(s)
    yield con
    con.close()


@pytest.fixture(scope="module")
def pg(pg_url):
    psycopg = pytest.importorskip("psycopg")
    url = pg_url.replace("postgresql+psycopg://", "postgresql://")
    con = psycopg.connect(url, autocommit=True)
    con.execute("DROP SCHEMA IF EXISTS mistakes CASCADE")
    con.execute("CREATE SCHEMA mistakes")
    con.execute("SET search_path TO mistakes")
    for s in DATA["ddl"]:
        con.execute(s)
    yield con
    con.close()


IDS = [c["id"] for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_duckdb(duck, case):
    _check(case, "duckdb", _run(lambda q: duck.execute(q).fetchall(), case["sql"]))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sqlite(lite, case):
    _check(case, "sqlite", _run(lambda q: lite.execute(q).fetchall(), case["sql"]))


@pytest.mark.postgres
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_postgres(pg, case):
    _check(case, "postgresql", _run(lambda q: pg.execute(q).fetchall(), case["sql"]))


#: Replies the safety check refuses before any engine sees them: the same advice.
REFUSED = [
    ("SELECT name FROM products WHERE category = %s", "placeholders", "placeholders (%s)"),
    ("SELECT name FROM products WHERE name = 'ab", "truncated", "cut off"),
    ("SELECT name, price FROM products WHERE", "truncated", "cut off"),
]


@pytest.mark.parametrize(
    "sql,detail,text", REFUSED, ids=[r[1] + str(i) for i, r in enumerate(REFUSED)]
)
@pytest.mark.parametrize("dialect", ["duckdb", "sqlite", "postgresql"])
def test_refused_by_the_check(sql, detail, text, dialect):
    from cadet_magic.sql.refusal import SafetyRefusal
    from cadet_magic.sql.validate import validate_sql

    verdict = validate_sql(sql, dialect, SCHEMA.table_names())
    if verdict.ok:  # PostgreSQL's reading of %s: the engine rejects it (the cases above)
        assert (dialect, detail) == ("postgresql", "placeholders") and "%s" in verdict.sql
        return
    d = diagnose(SafetyRefusal(verdict.issues), sql=sql, target=dialect, schema=SCHEMA)
    assert d.category.value == "syntax_error" and getattr(d.details, detail, None), d.details
    assert text in d.feedback


def test_case_advice_never_on_case_insensitive_engines():
    """A name differing from a real one only in case is never the cause on SQLite/DuckDB."""
    missing = engine_error("no such column: nme", "sqlite")  # the same missing column on each
    for dialect in ("sqlite", "duckdb", "mysql"):
        d = diagnose(missing, sql='SELECT nme FROM "Artists"', target=dialect, schema=SCHEMA)
        assert d.details.case_sensitive is None and "double quotes" not in d.feedback
    d = diagnose_error('column "name" does not exist', sql='SELECT "name" FROM "Artists"',
                       engine="postgresql", schema=SCHEMA)  # fmt: skip
    assert d.details.case_sensitive == "Artists.Name" and d.suggestions[0] == "Artists.Name"
    # only among the query's own tables: customers.name does not make "Name" a case slip
    d = diagnose_error('column "Name" does not exist', sql='SELECT "Name" FROM orders',
                       engine="postgresql", schema=SCHEMA)  # fmt: skip
    assert getattr(d.details, "case_sensitive", None) is None


def test_errors_name_what_the_model_wrote():
    import sqlite3

    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x REAL)")
    try:
        con.execute("SELECT PERCENTILE_CONT(x, 0.5) FROM t")  # what the check regenerated
    except sqlite3.OperationalError as e:
        d = diagnose_error(e, engine="sqlite", sql="SELECT median(x) FROM t", schema={"t": ["x"]})
    assert d.error == "no such function: MEDIAN" and "MEDIAN" in d.feedback
    assert "PERCENTILE" not in d.error + d.feedback


#: A nested aggregate written through the alias of a selected aggregate (PostgreSQL does not
#: see select aliases inside ORDER BY expressions: a missing column there).
ALIASED_NESTED = "SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY max(n) DESC"


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_nested_aggregate_through_an_alias_names_both(engine, duck, lite):
    con = duck if engine == "duckdb" else lite
    error = _run(lambda q: con.execute(q).fetchall(), ALIASED_NESTED)
    d = diagnose_error(error, engine=engine, sql=ALIASED_NESTED, schema=SCHEMA)
    assert d.category.value == "aggregation_error", (str(error), d.details)
    text = guidance(d.feedback)
    assert "MAX(n) takes MAX over COUNT(*)" in text and "ORDER BY COUNT(*) DESC LIMIT 1" in text
