"""The result check's portable core: which comparisons it finds on the tree (table-driven from
``data/literal_filter_cases.json``), which stored values count as close, the queries it builds
(safe by construction) and its time budget."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import sqlglot

from cadet_magic.result_check.probe_database import (
    candidates_sql,
    check_result,
    check_values,
    occurs_sql,
    same_up_to_case_sql,
)
from cadet_magic.result_check.values import (
    Filter,
    close_to_pattern,
    close_values,
    literal_filters,
    one_slip,
)
from cadet_magic.schema.structure import Column, Schema, Table
from cadet_magic.sql.target import Target

DATA = json.loads((Path(__file__).parent / "data" / "literal_filter_cases.json").read_text())
SCHEMA = Schema(
    tuple(
        Table(name, tuple(Column(c, t) for c, t in cols)) for name, cols in DATA["schema"].items()
    )
)


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["id"] for c in DATA["cases"]])
def test_literal_filters(case):
    got = literal_filters(case["sql"], Target.named(case.get("dialect", "sqlite")), SCHEMA)
    assert [[f.where, f.value, f.op] for f in got] == case["expect"]


@pytest.mark.parametrize(
    ("value", "stored", "expect"),
    [
        ("France", ["france", "Spain"], ["france"]),
        ("france ", ["France", "FRANCE"], ["France", "FRANCE"]),
        ("New  York", ["New York"], ["New York"]),
        ("Germnay", ["Germany", "Greece"], ["Germany"]),
        ("vlovo", ["volvo", "saab"], ["volvo"]),
        ("Kabul", ["Kabul"], []),  # the value itself is not "close"
        ("UK", ["US", "uk"], ["uk"]),
        ("UK", ["US"], []),  # two letters: no spelling guess
        ("Atlantis", ["France", "Spain"], []),
    ],
)
def test_close_values(value, stored, expect):
    assert list(close_values(value, stored)) == expect


@pytest.mark.parametrize(
    ("pattern", "stored", "expect"),
    [
        ("%FRANCE%", ["la France", "Spain"], ["la France"]),
        ("% East%", ["North East", "West"], ["North East"]),
        ("%compter%", ["Computer Science", "History"], ["Computer Science"]),
        ("%Norht%", ["NorthDakota", "Texas"], ["NorthDakota"]),
        ("A_", ["ab", "xyz"], ["ab"]),
        ("%zzz%", ["abc"], []),
    ],
)
def test_close_to_pattern(pattern, stored, expect):
    assert list(close_to_pattern(pattern, stored)) == expect


def test_one_slip():
    assert one_slip("kabul", "kaubl") and one_slip("kabul", "kabl") and one_slip("abc", "abcd")
    assert not one_slip("kabul", "kabul") and not one_slip("kabul", "lubak")


HOSTILE = Filter('we"ird', None, "c'ol", 'x\'); DROP TABLE "we""ird"; --', "=")


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres", "mysql", "spark"])
def test_check_queries_are_one_select_with_the_value_as_a_literal(dialect):
    for sql in (
        occurs_sql([HOSTILE, Filter("t", "s", "c", "%a%", "LIKE")], Target.named(dialect)),
        same_up_to_case_sql(HOSTILE, Target.named(dialect)),
        candidates_sql(HOSTILE, Target.named(dialect)),
    ):
        trees = sqlglot.parse(sql, read=dialect)
        assert len(trees) == 1 and isinstance(trees[0], sqlglot.exp.Select), sql
        literals = [lit.this for lit in trees[0].find_all(sqlglot.exp.Literal) if lit.is_string]
        assert all(";" not in lit or lit.startswith("x')") for lit in literals)
        assert not list(trees[0].find_all(sqlglot.exp.Drop))


def test_hostile_names_and_values_run_as_data_on_sqlite():
    con = sqlite3.connect(":memory:")
    con.execute('CREATE TABLE "we""ird" ("c\'ol" TEXT)')
    con.execute('INSERT INTO "we""ird" VALUES (?)', (HOSTILE.value.upper(),))
    fetch = lambda sql, timeout: con.execute(sql).fetchall()  # noqa: E731
    (found,), queries, _ = check_values(
        [HOSTILE], Schema(), fetch, target=Target.named("sqlite"), timeout=5
    )
    assert found.occurs is False and found.close == (HOSTILE.value.upper(),) and queries == 2
    assert con.execute('SELECT count(*) FROM "we""ird"').fetchall() == [(1,)]


def test_complete_samples_answer_without_a_query():
    schema = Schema(
        (Table("t", (Column("c", "TEXT", samples=("paid", "open"), samples_complete=True),)),)
    )

    def fetch(sql, timeout):
        raise AssertionError("no query expected: " + sql)

    fs = [Filter("t", None, "c", "paid", "="), Filter("t", None, "c", "zzz", "=")]
    found, queries, _ = check_values(fs, schema, fetch, target=Target.named("sqlite"), timeout=5)
    assert [(f.occurs, f.close) for f in found] == [(True, ()), (False, ())] and queries == 0


def test_incomplete_samples_still_ask_the_database():
    schema = Schema((Table("t", (Column("c", "TEXT", samples=("paid",)),)),))
    asked = []

    def fetch(sql, timeout):
        asked.append(sql)
        return [(1,)]

    (found,), queries, _ = check_values(
        [Filter("t", None, "c", "Open", "=")],
        schema,
        fetch,
        target=Target.named("sqlite"),
        timeout=5,
    )
    assert found.occurs is True and queries == 1


def test_budget_bounds_the_queries_and_leaves_the_rest_unknown():
    now = [0.0]

    def clock():
        return now[0]

    timeouts = []

    def fetch(sql, timeout):
        timeouts.append(timeout)
        now[0] += 0.15  # each query "takes" 150 ms
        return [(0,)] if sql.startswith("SELECT CASE") else []

    fs = [Filter("t", None, "c", "France", "=")]
    (found,), queries, out = check_values(
        fs, Schema(), fetch, target=Target.named("sqlite"), timeout=30, budget=0.2, clock=clock
    )
    # the flag query and one close-value query fit; the spelling query would start past 200 ms
    assert found.occurs is False and found.close == () and out and queries == 2
    assert timeouts[0] == pytest.approx(0.2) and timeouts[1] == pytest.approx(0.05)


def test_failed_check_query_claims_nothing():
    def fetch(sql, timeout):
        raise RuntimeError("no such table")

    (found,), _, _ = check_values(
        [Filter("t", None, "c", "x", "=")],
        Schema(),
        fetch,
        target=Target.named("sqlite"),
        timeout=5,
    )
    assert found.occurs is None and not found.suspect


def test_suspect_feedback_shows_the_sql_and_stays_short():
    from cadet_magic.result_check.probe_database import Finding, ValueCheck

    sql = "SELECT id FROM country WHERE name = 'France' AND continent = 'europe'"
    vc = ValueCheck(
        attempt=1,
        findings=(
            Finding(Filter("country", None, "name", "France", "="), False, ("france",)),
            Finding(Filter("country", None, "continent", "europe", "="), False, ("Europe",)),
        ),
    )
    text = vc.feedback(sql)
    assert sql in text and "'France' does not occur in country.name; it holds 'france'." in text
    guidance = text.split("```\n", 2)[-1]
    assert len(guidance.split()) <= 60, guidance
    assert vc.suspect and vc.warnings() == [
        "The answer may be wrong: 'France' does not occur in country.name; it holds 'france'. "
        "'europe' does not occur in country.continent; it holds 'Europe'."
    ]


DATES = json.loads((Path(__file__).parent / "data" / "date_text_cases.json").read_text())


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
@pytest.mark.parametrize("case", DATES["cases"], ids=[c["id"] for c in DATES["cases"]])
def test_dates_stored_as_text_in_another_format(case, engine):
    import sqlite3

    import duckdb

    con = sqlite3.connect(":memory:") if engine == "sqlite" else duckdb.connect()
    for s in DATES["setup"]:
        con.execute(s)
    schema = Schema((Table("ev", tuple(Column(c, "VARCHAR(20)") for c in ("d", "iso", "n"))),))
    vc = check_result(case["sql"], attempt=1, rows=0, schema=schema,
                      fetch=lambda q, t: con.execute(q).fetchall(), target=Target.named(engine), timeout=5,
                      budget=30)  # fmt: skip
    assert vc.suspect is case["suspect"]
    assert [v for f in vc.missing for v in f.close] == case["close"]


RANGES = json.loads((Path(__file__).parent / "data" / "number_range_cases.json").read_text())


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
@pytest.mark.parametrize("case", RANGES["cases"], ids=[c["id"] for c in RANGES["cases"]])
def test_empty_result_from_a_number_outside_the_range(case, engine):
    import sqlite3

    import duckdb

    con = sqlite3.connect(":memory:") if engine == "sqlite" else duckdb.connect()
    for s in RANGES["setup"]:
        con.execute(s)
    cols = (("id", "INT"), ("age", "INT"), ("height", "REAL"), ("name", "VARCHAR(10)"))
    schema = Schema((Table("people", tuple(Column(c, t) for c, t in cols)),))
    rows = con.execute(case["sql"]).fetchall()
    assert rows == []
    vc = check_result(case["sql"], attempt=1, rows=0, schema=schema,
                      fetch=lambda q, t: con.execute(q).fetchall(), target=Target.named(engine), timeout=5,
                      budget=30)  # fmt: skip
    assert vc.warnings() == case["warnings"] and not vc.suspect
