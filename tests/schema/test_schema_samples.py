import sqlite3

import pytest

from cadet_magic.schema.model import Schema
from cadet_magic.schema.samples import (
    is_text_type,
    sample_sql,
    samples_from_rows,
    text_columns,
    with_samples,
)
from cadet_magic.sql.dialect import dialect_of

ROWS = [("paid",)] * 5 + [("open",)] * 3 + [("void",)] + [(None,)] * 2 + [("",)]
CASES = [
    # (values in the column, expected samples)
    (ROWS, ("paid", "open", "void")),
    ([(f"v{i}",) for i in range(21)], ()),  # 21 distinct: not low-cardinality
    ([(f"v{i:02}",) for i in range(20)], ("v00", "v01", "v02", "v03", "v04")),
    ([("x" * 41,), ("short",)], ("short",)),
    ([(None,)], ()),
]


def _sqlite(values):
    con = sqlite3.connect(":memory:")
    con.execute('CREATE TABLE "Order Data" ("Status" TEXT)')
    con.executemany('INSERT INTO "Order Data" VALUES (?)', values)
    return con


@pytest.mark.parametrize(("values", "expected"), CASES)
def test_sqlite(values, expected):
    con = _sqlite(values)
    assert (
        samples_from_rows(con.execute(sample_sql("Order Data", "Status", dialect_of("sqlite"))))
        == expected
    )


@pytest.mark.parametrize(("values", "expected"), CASES)
def test_duckdb(values, expected):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute('CREATE SCHEMA s; CREATE TABLE s."Order Data" ("Status" TEXT)')
    if values:
        con.executemany('INSERT INTO s."Order Data" VALUES (?)', values)
    sql = sample_sql("s.Order Data", "Status", dialect_of("duckdb"))
    assert samples_from_rows(con.execute(sql).fetchall()) == expected


def test_scan_is_bounded():
    con = _sqlite([("a",)] * 50 + [("b",)] * 100)
    rows = con.execute(
        sample_sql("Order Data", "Status", dialect_of("sqlite"), scan_rows=50)
    ).fetchall()
    assert rows == [("a", 50)]


@pytest.mark.parametrize(
    ("type_", "text"),
    [
        ("TEXT", True),
        ("varchar(255)", True),
        ("", True),
        ("CHAR(3)", True),
        ("INTEGER", False),
        ("float(10,2)", False),
        ("DATE", False),
        ("number", False),
    ],
)
def test_is_text_type(type_, text):
    assert is_text_type(type_) is text


def test_with_samples_copies():
    s = Schema.from_mapping({"t": ["a", "b"]})
    t = with_samples(s, {("t", "b"): ["x"]})
    assert t.table("t").columns[1].samples == ("x",)
    assert s.table("t").columns[1].samples == ()
    assert [c.name for _, c in text_columns(t)] == ["a", "b"]
