"""The schema is read once per connection and again only after the user changes the catalog;
reading it (with samples and comments) leaves the user's connection and transaction as they were."""

from __future__ import annotations

import sqlite3

import duckdb
import pytest
import sqlalchemy as sa

import cadet_magic
from cadet_magic.db.connect import resolve_runner
from cadet_magic.db.schema_cache import SCHEMA_CACHE, SchemaCache
from cadet_magic.llm import ScriptedModel
from cadet_magic.schema.link import rank_tables
from cadet_magic.schema.render import COMPACT, render_schema

SETUP = [
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(20), tier VARCHAR(10))",
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES "
    "customers (id), status VARCHAR(10), amount INTEGER)",
    "INSERT INTO customers VALUES (1, 'ann', 'gold'), (2, 'bob', 'silver')",
    "INSERT INTO orders VALUES (1, 1, 'shipped', 10), (2, 2, 'cancelled', 32), (3, 1, 'shipped', 5)",
]
KINDS = ["duckdb-native", "duckdb-sqlalchemy", "sqlite3", "sqlite-sqlalchemy", "postgres"]


@pytest.fixture(params=KINDS)
def db(request, tmp_path):
    """(connection to ask on, run(sql) as the user with a commit) for each kind."""
    kind = request.param
    SCHEMA_CACHE.clear()
    if kind == "duckdb-native":
        con = duckdb.connect(str(tmp_path / "d.duckdb"))
        for s in SETUP:
            con.execute(s)
        yield con, lambda q: con.execute(q)
        con.close()
        return
    if kind == "sqlite3":
        con = sqlite3.connect(tmp_path / "s.db")
        for s in SETUP:
            con.execute(s)
        con.commit()

        def run(q):
            con.execute(q)
            con.commit()

        yield con, run
        con.close()
        return
    if kind == "postgres":
        url = request.getfixturevalue("pg_url")
        schema = f"c{abs(hash(request.node.name)) % 10**8}"
        engine = sa.create_engine(url)
        with engine.begin() as c:
            c.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
        engine.dispose()
        engine = sa.create_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    else:
        name = "duckdb:///" if kind == "duckdb-sqlalchemy" else "sqlite:///"
        engine = sa.create_engine(name + str(tmp_path / "x.db"))
    conn = engine.connect()
    for s in SETUP:
        conn.exec_driver_sql(s)
    conn.commit()

    def run(q):
        conn.exec_driver_sql(q)
        conn.commit()

    yield conn, run
    conn.close()
    engine.dispose()


def _schema(con):
    return resolve_runner(con).schema()


def _ask(con, question="How many orders?"):
    model = ScriptedModel({question: ["SELECT count(*) AS n FROM orders"]})
    return cadet_magic.ask(question, con=con, model=model)


def test_read_once_across_asks(db):
    con, _ = db
    first, second = _ask(con), _ask(con)
    assert first.ok and second.ok and second.rows == [(3,)]
    assert SCHEMA_CACHE.reads == 1 and SCHEMA_CACHE.hits >= 1


def test_reread_after_user_changes_the_catalog(db):
    con, run = db
    s1 = _schema(con)
    assert _schema(con) is s1 and SCHEMA_CACHE.reads == 1
    run("CREATE TABLE returns (order_id INTEGER, reason VARCHAR(30))")
    s2 = _schema(con)
    assert SCHEMA_CACHE.reads == 2 and s2.table("returns") is not None
    assert _schema(con) is s2
    run("ALTER TABLE returns ADD COLUMN refunded INTEGER")
    s3 = _schema(con)
    assert SCHEMA_CACHE.reads == 3 and "refunded" in s3.table("returns").column_names()
    run("DROP TABLE returns")
    s4 = _schema(con)
    assert SCHEMA_CACHE.reads == 4 and s4.table("returns") is None
    assert _schema(con) is s4 and SCHEMA_CACHE.reads == 4


def test_samples_keys_render_and_linking(db):
    con, _ = db
    schema = _schema(con)
    orders, customers = schema.table("orders"), schema.table("customers")
    cols = {c.name: c for c in orders.columns}
    assert set(cols["status"].samples) == {"shipped", "cancelled"}
    assert cols["status"].samples[0] == "shipped"  # most frequent first
    assert cols["order_id"].primary_key and not cols["order_id"].samples
    assert not cols["customer_id"].samples  # a key: identifiers, not data
    assert [fk.ref_table for fk in orders.foreign_keys] == ["customers"]
    assert set({c.name: c for c in customers.columns}["tier"].samples) == {"gold", "silver"}
    text = render_schema(schema, COMPACT)
    assert "e.g. 'shipped'|'cancelled'" in text and "ORDER_ID INTEGER PK" in text.upper()
    # The prompt's own form: CREATE TABLE statements with each table's rows read too.
    text = render_schema(schema)
    assert "CREATE TABLE" in text.upper() and "rows of orders:" in text and "shipped" in text
    # A value the question mentions points at its table.
    assert rank_tables(schema, "Which gold members are there?")[0][0] == "customers"


def test_schema_read_leaves_the_transaction_alone(db):
    con, _ = db
    if isinstance(con, duckdb.DuckDBPyConnection):
        con.execute("BEGIN TRANSACTION")
        con.execute("INSERT INTO customers VALUES (9, 'zed', 'gold')")
        _schema(con)
        assert con.execute("SELECT count(*) FROM customers").fetchone() == (3,)
        con.execute("ROLLBACK")
        assert con.execute("SELECT count(*) FROM customers").fetchone() == (2,)
        return
    if isinstance(con, sqlite3.Connection):
        con.execute("INSERT INTO customers VALUES (9, 'zed', 'gold')")
        assert con.in_transaction
        _schema(con)
        assert con.in_transaction
        assert con.execute("SELECT count(*) FROM customers").fetchone() == (3,)
        con.rollback()
        assert con.execute("SELECT count(*) FROM customers").fetchone() == (2,)
        return
    con.exec_driver_sql("INSERT INTO customers VALUES (9, 'zed', 'gold')")
    assert con.in_transaction()
    _schema(con)
    assert con.in_transaction()
    assert con.exec_driver_sql("SELECT count(*) FROM customers").fetchone() == (3,)
    con.rollback()
    assert con.exec_driver_sql("SELECT count(*) FROM customers").fetchone() == (2,)


def test_comments_duckdb():
    SCHEMA_CACHE.clear()
    con = duckdb.connect()
    for s in SETUP:
        con.execute(s)
    con.execute("COMMENT ON TABLE orders IS 'one row per order'")
    s1 = _schema(con)
    con.execute("COMMENT ON COLUMN orders.amount IS 'in cents'")
    s2 = _schema(con)
    assert s1.table("orders").comment == "one row per order" and SCHEMA_CACHE.reads == 2
    assert {c.name: c.comment for c in s2.table("orders").columns}["amount"] == "in cents"
    text = render_schema(s2, COMPACT)
    assert "/* in cents */" in text and "-- one row per order" in text


def test_comments_postgres(pg_url):
    SCHEMA_CACHE.clear()
    engine = sa.create_engine(pg_url)
    with engine.begin() as c:
        c.exec_driver_sql("DROP SCHEMA IF EXISTS cmt CASCADE; CREATE SCHEMA cmt")
    engine = sa.create_engine(pg_url, connect_args={"options": "-csearch_path=cmt"})
    with engine.connect() as conn:
        for s in SETUP:
            conn.exec_driver_sql(s)
        conn.exec_driver_sql("COMMENT ON TABLE orders IS 'one row per order'")
        conn.commit()
        s1 = _schema(conn)
        conn.exec_driver_sql("COMMENT ON COLUMN orders.amount IS 'in cents'")
        conn.commit()
        s2 = _schema(conn)
    engine.dispose()
    assert s1.table("orders").comment == "one row per order" and SCHEMA_CACHE.reads == 2
    assert {c.name: c.comment for c in s2.table("orders").columns}["amount"] == "in cents"


def test_views_are_listed_but_not_sampled():
    SCHEMA_CACHE.clear()
    con = sqlite3.connect(":memory:")
    for s in SETUP:
        con.execute(s)
    con.execute("CREATE VIEW shipped AS SELECT * FROM orders WHERE status = 'shipped'")
    view = _schema(con).table("shipped")
    assert view is not None and not any(c.samples for c in view.columns)


def test_sqlite3_connections_are_remembered_without_weak_references():
    cache = SchemaCache(strong_entries=2)
    cons = [sqlite3.connect(":memory:") for _ in range(3)]
    for con in cons:
        cache.get(con, lambda: 1, lambda: cadet_magic.schema.structure.Schema())
    cache.get(cons[2], lambda: 1, lambda: cadet_magic.schema.structure.Schema())
    assert cache.reads == 3 and cache.hits == 1
    cache.get(cons[0], lambda: 1, lambda: cadet_magic.schema.structure.Schema())
    assert cache.reads == 4  # the oldest entry was dropped


def test_large_table_sampling_is_bounded():
    """A column of many distinct values gets none; the scan stops at SCAN_ROWS rows."""
    SCHEMA_CACHE.clear()
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE big AS SELECT i AS id, 'v' || (i % 7) AS kind, 'u' || i AS unique_text "
        "FROM range(200000) t(i)"
    )
    cols = {c.name: c for c in _schema(con).table("big").columns}
    assert len(cols["kind"].samples) == 5 and cols["unique_text"].samples == ()
