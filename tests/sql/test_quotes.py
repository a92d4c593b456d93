"""Double-quoted strings per engine (table-driven from ``quote_cases.json``): on SQLite a
double-quoted token that names nothing in scope, on MySQL every double-quoted string, is
written in single quotes in the text that runs and in the text the user gets back; on DuckDB
and PostgreSQL, and on MySQL whose sql_mode has ANSI_QUOTES, double quotes name columns and
the text the user gets back is theirs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cadet_magic.sql.validate import validate_sql

DATA = json.loads((Path(__file__).parent / "quote_cases.json").read_text())


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["id"] for c in DATA["cases"]])
def test_double_quoted_strings(case):
    v = validate_sql(
        case["sql"],
        case["dialect"],
        columns=DATA["columns"],
        ansi_quotes=case.get("ansi_quotes", False),
    )
    assert v.ok, v.issues
    assert v.query.written == case["written"]
    assert v.query.sql == case["runs"]
    assert list(v.query.double_quoted) == case["double_quoted"]


def test_without_columns_nothing_changes():
    v = validate_sql('SELECT Name FROM singer WHERE Country = "France"', "sqlite")
    assert v.query.written == 'SELECT Name FROM singer WHERE Country = "France"'
    assert v.query.double_quoted == ()


@pytest.mark.parametrize(
    "case",
    [c for c in DATA["cases"] if c["dialect"] == "sqlite" and c["double_quoted"]],
    ids=lambda c: c["id"],
)
def test_sqlite_reads_the_rewritten_query_as_the_original(case):
    """What runs returns what SQLite returns for the model's own text."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE singer (Singer_ID INT, Name TEXT, Country TEXT)")
    con.execute("CREATE TABLE concert (concert_ID INT, Year INT, Theme TEXT)")
    con.execute("INSERT INTO singer VALUES (1, 'Joe', 'France'), (2, 'Ann', 'Cote d''Ivoire')")
    con.execute("INSERT INTO concert VALUES (1, 2020, 'Happy')")
    v = validate_sql(case["sql"], "sqlite", columns=DATA["columns"])
    assert con.execute(v.query.sql).fetchall() == con.execute(case["sql"]).fetchall()
