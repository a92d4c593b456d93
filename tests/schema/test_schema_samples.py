import sqlite3

import pytest

from cadet_magic.schema.samples import (
    MAX_CELL_CHARS,
    MAX_ROW_TABLES,
    cell_text,
    is_text_type,
    read_rows,
    read_samples,
    sample_sql,
    samples_from_rows,
    text_columns,
    with_samples,
)
from cadet_magic.schema.structure import Schema
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


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, None),
        (3, "3"),
        (2.5, "2.5"),
        (b"\x00\x01", "<2 bytes>"),
        ("x" * (MAX_CELL_CHARS + 5), "x" * MAX_CELL_CHARS),
    ],
)
def test_cell_text(value, text):
    assert cell_text(value) == text


def _tables(n):
    con = sqlite3.connect(":memory:")
    for i in range(n):
        con.execute(f"CREATE TABLE t{i} (id INT, status TEXT)")
        con.execute(f"INSERT INTO t{i} VALUES (1, 'paid'), (2, 'open'), (3, 'paid'), (4, 'void')")
    return con, Schema.from_mapping({f"t{i}": ["id", "status"] for i in range(n)}, "sqlite")


def test_the_schema_read_gets_values_and_rows():
    con, schema = _tables(2)
    got = read_samples(schema, lambda q: con.execute(q).fetchall(), skip=("t1",))
    t0, t1 = got.table("t0"), got.table("t1")
    assert t0.columns[1].samples == ("paid", "open", "void")
    assert t0.rows == (("1", "paid"), ("2", "open"), ("3", "paid"))
    assert t1.columns[1].samples == () and t1.rows == ()  # views are skipped


def test_rows_are_read_for_the_first_tables_only():
    con, schema = _tables(MAX_ROW_TABLES + 1)
    got = read_rows(schema, lambda q: con.execute(q).fetchall(), time_budget=60)
    assert all(t.rows for t in got.tables[:MAX_ROW_TABLES])
    assert got.tables[MAX_ROW_TABLES].rows == ()


def test_a_table_whose_rows_fail_keeps_none():
    con, schema = _tables(1)

    def fetch(sql):
        raise sqlite3.OperationalError("no")

    assert read_rows(schema, fetch).table("t0").rows == ()
