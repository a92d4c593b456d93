"""The user's session and transaction are left exactly as found, on real engines: PostgreSQL
settings pinned inside the agent's transaction only, a user transaction open or failed,
DuckDB's aborted transaction, SQLite file databases on a connection of the agent's own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from cadet_magic.db.connect import resolve_runner
from cadet_magic.db.postgres import PG_INERROR, pg_transaction_status
from cadet_magic.errors import EngineError, FailedTransactionError
from tests.helpers import TIME_SLACK


@contextmanager
def refused_by(driver_error: type[BaseException]) -> Iterator[None]:
    """The engine refused: the runner raises the driver's error read into an EngineError."""
    with pytest.raises(EngineError) as caught:
        yield
    assert isinstance(caught.value.__cause__, driver_error), caught.value.__cause__


SETUP = [
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer VARCHAR(20), amount INTEGER)",
    "INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32)",
    "CREATE SEQUENCE seq",
]

#: Session settings the user may have that change how SQL text is read: (name, user's value,
#: value inside the agent's transaction).
PG_SESSION = [
    ("standard_conforming_strings", "off", "on"),
    ("transform_null_equals", "on", "off"),
    ("DateStyle", "SQL, DMY", "ISO, MDY"),
    ("IntervalStyle", "sql_standard", "postgres"),
    ("backslash_quote", "on", "safe_encoding"),
    ("array_nulls", "off", "on"),
]


@pytest.fixture
def pg(pg_url, request):
    """(engine, schema name) with the orders table in a schema of its own."""
    schema = f"s{abs(hash(request.node.name)) % 10**8}"
    engine = sa.create_engine(url := pg_url)
    with engine.begin() as c:
        c.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
        c.exec_driver_sql(f"SET LOCAL search_path = {schema}")
        for s in SETUP:
            c.exec_driver_sql(s)
    engine.dispose()
    engine = sa.create_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    yield engine, schema
    engine.dispose()


def _settings(conn) -> dict:
    return {n: conn.exec_driver_sql(f"SHOW {n}").scalar() for n, _, _ in PG_SESSION}


def test_pg_reading_settings_pinned_inside_the_agents_transaction_only(pg):
    engine, _ = pg
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        for name, value, _ in PG_SESSION:
            conn.exec_driver_sql(f"SET {name} = '{value}'")
        before = _settings(conn)
        runner = resolve_runner(conn)
        names = ", ".join(f"current_setting('{n}')" for n, _, _ in PG_SESSION)
        row = runner.run(f"SELECT {names}", limit=5, timeout=10).rows[0]
        assert list(row) == [agent for _, _, agent in PG_SESSION]
        # A backslash in a plain literal is a character, as the check reads it.
        assert runner.run(r"SELECT 'a\'", limit=5, timeout=10).rows == [("a\\",)]
        # x = NULL stays unknown (not rewritten to IS NULL); dates are month-first.
        r = runner.run(
            "SELECT count(*) FILTER (WHERE customer = NULL), DATE '01/02/2024' FROM orders",
            limit=5,
            timeout=10,
        )
        assert r.rows[0][0] == 0 and str(r.rows[0][1]) == "2024-01-02"
        assert _settings(conn) == before


def test_pg_tables_on_the_search_path_are_known(pg):
    engine, schema = pg
    with engine.begin() as c:
        c.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS extra")
        c.exec_driver_sql("CREATE TABLE IF NOT EXISTS extra.stock (sku TEXT PRIMARY KEY, qty INT)")
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        runner = resolve_runner(conn)
        assert "stock" not in {t.name for t in runner.schema().tables}
        conn.exec_driver_sql(f"SET search_path = {schema}, extra")
        names = {t.name for t in runner.schema().tables}
        assert {"orders", "stock"} <= names
        assert runner.run("SELECT count(*) FROM stock", limit=5, timeout=10).rows == [(0,)]
    with engine.begin() as c:
        c.exec_driver_sql("DROP SCHEMA extra CASCADE")


def test_pg_open_user_transaction_continues_unchanged(pg):
    engine, _ = pg
    with engine.connect() as conn:
        conn.exec_driver_sql("INSERT INTO orders VALUES (3, 'cy', 5)")  # uncommitted
        conn.exec_driver_sql("SET LOCAL work_mem = '7MB'")
        raw = conn.connection.dbapi_connection
        locks = "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid()"
        held = conn.exec_driver_sql(locks).scalar()
        runner = resolve_runner(conn)
        # The agent sees the user's uncommitted row.
        assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(3,)]
        # Read-only inside the user's transaction, even with the check bypassed.
        for hostile in (
            "INSERT INTO orders VALUES (9, 'eve', 1)",
            "SELECT set_config('transaction_read_only', 'off', true)",
            "SELECT * FROM orders FOR UPDATE",
        ):
            with pytest.raises(Exception, match="read-only|read-write|syntax error"):
                runner.run(hostile, limit=5, timeout=10)
        assert conn.exec_driver_sql(locks).scalar() == held  # the savepoint's locks are gone
        # Sequence functions (refused by the check) fail READ ONLY too; PostgreSQL keeps a
        # sequence's lock until the top transaction ends, so this one comes last.
        with pytest.raises(Exception, match="read-only"):
            runner.run("SELECT nextval('seq')", limit=5, timeout=10)
        assert pg_transaction_status(raw) == 2  # INTRANS, not reset
        assert conn.exec_driver_sql("SHOW transaction_read_only").scalar() == "off"
        assert conn.exec_driver_sql("SHOW work_mem").scalar() == "7MB"
        assert conn.exec_driver_sql("SHOW statement_timeout").scalar() == "0"
        conn.exec_driver_sql("INSERT INTO orders VALUES (4, 'dee', 6)")
        conn.commit()
    with engine.connect() as c:
        assert c.exec_driver_sql("SELECT count(*) FROM orders").scalar() == 4
        assert c.exec_driver_sql("SELECT last_value, is_called FROM seq").one() == (1, False)


def test_pg_repeatable_read_snapshot_is_kept(pg):
    engine, _ = pg
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        assert conn.exec_driver_sql("SELECT count(*) FROM orders").scalar() == 2
        with engine.begin() as other:
            other.exec_driver_sql("INSERT INTO orders VALUES (7, 'gus', 1)")
        runner = resolve_runner(conn)
        assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(2,)]
        assert conn.exec_driver_sql("SELECT count(*) FROM orders").scalar() == 2
        conn.rollback()
        assert conn.exec_driver_sql("SELECT count(*) FROM orders").scalar() == 3


def test_pg_failed_transaction_is_never_reset(pg):
    engine, _ = pg
    with engine.connect() as conn:
        conn.exec_driver_sql("INSERT INTO orders VALUES (3, 'cy', 5)")
        with pytest.raises(sa.exc.ProgrammingError):
            conn.exec_driver_sql("SELECT no_such_column FROM orders")
        raw = conn.connection.dbapi_connection
        assert pg_transaction_status(raw) == PG_INERROR
        runner = resolve_runner(conn)
        # Answered on a connection of the agent's own: committed rows only.
        assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(2,)]
        assert "orders" in {t.name for t in runner.schema().tables}
        with pytest.raises(Exception, match="read-only"):
            runner.run("SELECT nextval('seq')", limit=5, timeout=10)
        assert pg_transaction_status(raw) == PG_INERROR  # still failed: the user decides
        conn.rollback()
    with engine.connect() as c:
        assert c.exec_driver_sql("SELECT count(*) FROM orders").scalar() == 2


@pytest.mark.parametrize("second", ["static pool", "refused"])
def test_pg_failed_transaction_with_a_single_connection_pool(pg_url, pg, second):
    """A one-connection pool still lets the agent open its own; when the server (here the
    connection factory) refuses a second connection, one clear line and nothing reset."""
    import psycopg

    _, schema = pg
    opened = []

    def creator():
        if second == "refused" and opened:
            raise psycopg.OperationalError("too many connections for role")
        opened.append(1)
        return psycopg.connect(pg_url.replace("+psycopg", ""), options=f"-csearch_path={schema}")

    engine = sa.create_engine(
        "postgresql+psycopg://", creator=creator, poolclass=sa.pool.StaticPool
    )
    conn = engine.connect()
    conn.exec_driver_sql("INSERT INTO orders VALUES (3, 'cy', 5)")
    with pytest.raises(sa.exc.ProgrammingError):
        conn.exec_driver_sql("SELECT no_such_column FROM orders")
    raw = conn.connection.dbapi_connection
    runner = resolve_runner(conn)
    if second == "refused":
        with pytest.raises(FailedTransactionError, match="run ROLLBACK, then ask again"):
            runner.run("SELECT 1", limit=5, timeout=10)
    else:
        assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(2,)]
    assert pg_transaction_status(raw) == PG_INERROR
    conn.rollback()
    assert conn.exec_driver_sql("SELECT count(*) FROM orders").scalar() == 2
    conn.close()
    engine.dispose()


def test_duckdb_aborted_transaction_is_never_reset(tmp_path):
    con = duckdb.connect(str(tmp_path / "d.duckdb"))
    for s in SETUP[:2]:
        con.execute(s)
    con.begin()
    con.execute("INSERT INTO orders VALUES (3, 'cy', 5)")
    with pytest.raises(duckdb.Error):
        con.execute("SELECT no_such_column FROM orders")
    runner = resolve_runner(con)
    assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(2,)]
    with pytest.raises(duckdb.Error, match="aborted"):  # still the user's failed transaction
        con.execute("SELECT 1")
    con.rollback()
    assert con.execute("SELECT count(*) FROM orders").fetchall() == [(2,)]
    con.close()


def test_duckdb_engine_aborted_transaction_is_never_reset(tmp_path):
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'x.duckdb'}")
    with engine.begin() as c:
        for s in SETUP[:2]:
            c.exec_driver_sql(s)
    with engine.connect() as conn:
        conn.exec_driver_sql("INSERT INTO orders VALUES (3, 'cy', 5)")
        with pytest.raises(sa.exc.SQLAlchemyError):
            conn.exec_driver_sql("SELECT no_such_column FROM orders")
        runner = resolve_runner(conn)
        assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(2,)]
        assert conn.in_transaction()
        with pytest.raises(sa.exc.SQLAlchemyError, match="aborted"):
            conn.exec_driver_sql("SELECT 1")
        conn.rollback()
        assert conn.exec_driver_sql("SELECT count(*) FROM orders").scalar() == 2
    engine.dispose()


def test_sqlite_file_database_never_touches_the_users_connection(tmp_path):
    import sqlite3

    path = tmp_path / "s.db"
    con = sqlite3.connect(path)
    for s in SETUP[:2]:
        con.execute(s)
    con.commit()
    seen = []

    def users_authorizer(action, arg1, *rest):
        reading_secret = action == sqlite3.SQLITE_READ and arg1 == "secret"
        return sqlite3.SQLITE_DENY if reading_secret else sqlite3.SQLITE_OK

    con.set_authorizer(users_authorizer)
    con.set_progress_handler(lambda: seen.append(1) and 0, 1)
    con.execute("INSERT INTO orders VALUES (3, 'cy', 5)")  # the user's open transaction
    assert con.in_transaction
    runner = resolve_runner(con)
    # The agent's connection is its own: committed rows only.
    assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(2,)]
    assert "orders" in {t.name for t in runner.schema().tables}
    for hostile in (
        "INSERT INTO orders VALUES (9, 'eve', 1)",
        "DELETE FROM orders",
        f"ATTACH DATABASE '{tmp_path / 'new.db'}' AS x",
        "PRAGMA query_only = OFF",
        "CREATE TEMP TABLE t AS SELECT 1",
    ):
        with refused_by(sqlite3.DatabaseError):
            runner.run(hostile, limit=5, timeout=10)
    assert not (tmp_path / "new.db").exists()
    # The user's handlers are still theirs, the transaction still open with its row.
    assert con.in_transaction
    seen.clear()
    assert con.execute("SELECT count(*) FROM orders").fetchall() == [(3,)]
    assert seen  # the user's progress handler still runs
    con.execute("CREATE TABLE secret (x)")  # creating is allowed by the user's authorizer
    with pytest.raises(sqlite3.DatabaseError, match="prohibited"):  # the user's own denial
        con.execute("SELECT * FROM secret")
    con.rollback()
    assert con.execute("SELECT count(*) FROM orders").fetchall() == [(2,)]
    con.close()


def test_sqlite_in_memory_database_uses_the_users_connection(tmp_path):
    import sqlite3

    con = sqlite3.connect(":memory:")
    for s in SETUP[:2]:
        con.execute(s)
    con.execute("INSERT INTO orders VALUES (3, 'cy', 5)")  # uncommitted
    runner = resolve_runner(con)
    assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(3,)]
    with refused_by(sqlite3.DatabaseError):
        runner.run("DELETE FROM orders", limit=5, timeout=10)
    assert con.in_transaction
    assert con.execute("SELECT count(*) FROM orders").fetchall() == [(3,)]


DUCKDB_HOSTILE = json.loads((Path(__file__).parent / "duckdb_hostile.json").read_text())


def _duckdb_state(con, folder):
    return (
        sorted(p.name for p in folder.iterdir()),
        con.execute("SELECT name, value FROM duckdb_settings() ORDER BY name").fetchall(),
        con.execute("SELECT database_name FROM duckdb_databases() ORDER BY 1").fetchall(),
        con.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall(),
        con.execute("SELECT name FROM duckdb_secrets()").fetchall(),
        con.execute("SELECT * FROM orders ORDER BY order_id").fetchall(),
        con.execute("SELECT count(*) FROM duckdb_tables()").fetchall(),
        con.execute("SELECT currval('seq')").fetchall(),
    )


@pytest.mark.parametrize("hostile", DUCKDB_HOSTILE, ids=[h["kind"] for h in DUCKDB_HOSTILE])
def test_duckdb_engine_refuses_with_the_check_bypassed(tmp_path, hostile):
    """Called on the runner directly (no safety check): DuckDB itself refuses, and no file,
    setting, attached database, extension, secret, row or sequence value changes."""
    folder = tmp_path / "files"
    folder.mkdir()
    con = duckdb.connect(str(tmp_path / "d.duckdb"))
    for s in SETUP:
        con.execute(s)
    con.execute("SELECT nextval('seq')")
    before = _duckdb_state(con, folder)
    runner = resolve_runner(con)
    with refused_by(duckdb.Error):
        runner.run(hostile["sql"].format(dir=folder), limit=5, timeout=10)
    assert _duckdb_state(con, folder) == before
    assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(2,)]
    con.close()


def test_duckdb_cleanup_after_streamed_rows_stays_within_the_limit():
    """A recursive CTE streams its first rows at once and then runs away: the runner returns
    its rows without waiting for the rest, also when the deadline is short."""
    import time

    con = duckdb.connect()
    runaway = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1e12) "
        "SELECT x FROM c"
    )
    runner = resolve_runner(con)
    t0 = time.monotonic()
    r = runner.run(runaway, limit=1000, timeout=1.0)
    assert time.monotonic() - t0 < 1.0 + TIME_SLACK
    assert len(r.rows) == 1000 and r.truncated
    assert con.execute("SELECT 42").fetchall() == [(42,)]


PG_HOSTILE = json.loads((Path(__file__).parent / "pg_hostile.json").read_text())


def _pg_state(conn):
    q = conn.exec_driver_sql
    return (
        q("SELECT name, setting FROM pg_settings ORDER BY name").fetchall(),
        q("SELECT * FROM orders ORDER BY order_id").fetchall(),
        q("SELECT last_value, is_called FROM seq").fetchall(),
        q("SELECT name FROM pg_prepared_statements").fetchall(),
        q("SELECT name FROM pg_cursors").fetchall(),
        q("SELECT count(*) FROM pg_largeobject_metadata").fetchall(),
        q("SELECT relname FROM pg_class WHERE relpersistence = 't'").fetchall(),
    )


@pytest.mark.parametrize("user_transaction", [False, True], ids=["idle", "open transaction"])
@pytest.mark.parametrize("hostile", PG_HOSTILE, ids=[h["kind"] for h in PG_HOSTILE])
def test_pg_engine_refuses_with_the_check_bypassed(pg, hostile, user_transaction):
    """Superuser, runner called directly: the server refuses (DECLARE ... CURSOR FOR takes
    only a query, the transaction or savepoint is READ ONLY) or the rollback undoes it."""
    import os
    import uuid

    engine, _ = pg
    path = f"/tmp/cadet-hostile-{uuid.uuid4().hex}"
    with engine.connect() as conn:
        if not user_transaction:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        before = _pg_state(conn)
        raw = conn.connection.dbapi_connection
        status = pg_transaction_status(raw)
        runner = resolve_runner(conn)
        try:
            runner.run(hostile["sql"].format(file=path), limit=5, timeout=10)
        except Exception:  # noqa: BLE001 - refusing is fine; a change is not
            pass
        assert not os.path.exists(path)
        assert pg_transaction_status(raw) == status
        assert _pg_state(conn) == before
        if user_transaction:
            conn.rollback()


BIG_ROWS = {
    "duckdb": "SELECT i, repeat('x', 1000000) AS blob FROM range(50) t(i)",
    "sqlite": "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 49) "
    "SELECT i, printf('%.*c', 1000000, 'x') AS blob FROM c",
    "postgres": "SELECT i, repeat('x', 1000000) AS blob FROM generate_series(0, 49) AS s(i)",
}


@pytest.fixture(params=["duckdb", "sqlite", "postgres"])
def any_runner(request, tmp_path):
    import sqlite3

    if request.param == "duckdb":
        yield resolve_runner(duckdb.connect(str(tmp_path / "d.duckdb")))
    elif request.param == "sqlite":
        con = sqlite3.connect(tmp_path / "s.db")
        con.execute("CREATE TABLE t (x)")
        con.commit()
        yield resolve_runner(con)
    else:
        engine, _ = request.getfixturevalue("pg")
        with engine.connect() as conn:
            yield resolve_runner(conn.execution_options(isolation_level="AUTOCOMMIT"))


def test_results_stop_at_the_byte_budget(any_runner):
    """Rows of 1 MB: a 4 MB budget keeps the rows that fit and says the bytes cut it."""
    sql = BIG_ROWS[any_runner.dialect]
    r = any_runner.run(sql, limit=1000, timeout=30, max_bytes=4 * 2**20)
    assert r.truncated and r.truncation == "bytes"
    assert 1 <= len(r.rows) <= 4
    assert [row[0] for row in r.rows] == list(range(len(r.rows)))
    r = any_runner.run(sql, limit=3, timeout=30, max_bytes=64 * 2**20)
    assert len(r.rows) == 3 and r.truncated and r.truncation == "rows"
    r = any_runner.run(sql, limit=100, timeout=30, max_bytes=64 * 2**20)
    assert len(r.rows) == 50 and not r.truncated and r.truncation == ""


def test_ask_says_the_byte_budget_cut_the_answer(tmp_path):
    import cadet_magic
    from cadet_magic.display.plain_text import render_text
    from cadet_magic.llm import ScriptedModel

    con = duckdb.connect()
    model = ScriptedModel({"Blobs?": [BIG_ROWS["duckdb"]]})
    r = cadet_magic.ask("Blobs?", con=con, model=model, result_bytes=3 * 2**20)
    assert r.ok and r.truncated and len(r.rows) <= 3
    assert r.truncation_note == (
        "truncated at the 3 MiB result budget (AskMagic.result_bytes): more rows exist"
    )
    assert "AskMagic.result_bytes" in render_text(r)


def test_driver_out_of_memory_is_one_clear_line(tmp_path):
    import cadet_magic
    from cadet_magic.errors import ResultTooLarge
    from cadet_magic.llm import ScriptedModel

    con = duckdb.connect(config={"memory_limit": "20MB", "temp_directory": ""})
    runner = resolve_runner(con)
    with pytest.raises(ResultTooLarge, match="too large for memory"):
        runner.run("SELECT list(range) FROM range(20000000)", limit=5, timeout=30)
    model = ScriptedModel({"All?": ["SELECT list(range) FROM range(20000000)"]})
    with pytest.raises(ResultTooLarge):
        cadet_magic.ask("All?", con=con, model=model)
    assert con.execute("SELECT 1").fetchall() == [(1,)]


def test_pg_failed_transaction_ask_gives_one_line_and_keeps_it(pg_url, pg):
    """Through ask(): the error is the one-line CadetError the magic shows, nothing reset."""
    import psycopg

    import cadet_magic
    from cadet_magic.llm import ScriptedModel

    _, schema = pg
    opened = []

    def creator():
        if opened:
            raise psycopg.OperationalError("too many connections for role")
        opened.append(1)
        return psycopg.connect(pg_url.replace("+psycopg", ""), options=f"-csearch_path={schema}")

    engine = sa.create_engine(
        "postgresql+psycopg://", creator=creator, poolclass=sa.pool.StaticPool
    )
    conn = engine.connect()
    with pytest.raises(sa.exc.ProgrammingError):
        conn.exec_driver_sql("SELECT no_such_column FROM orders")
    raw = conn.connection.dbapi_connection
    model = ScriptedModel({"How many?": ["SELECT count(*) FROM orders"]})
    with pytest.raises(FailedTransactionError) as caught:
        cadet_magic.ask("How many?", con=conn, model=model)
    assert str(caught.value) == (
        "Your connection has a failed transaction: run ROLLBACK, then ask again."
    )
    assert pg_transaction_status(raw) == PG_INERROR
    conn.rollback()
    conn.close()
    engine.dispose()


@pytest.mark.parametrize(
    "query",
    [
        "PIVOT orders ON customer USING sum(amount)",
        "SELECT * FROM (PIVOT orders ON customer USING sum(amount))",
        "UNPIVOT orders ON amount INTO NAME k VALUE v",
        "SUMMARIZE orders",
        "FROM orders SELECT customer",
        "SELECT 1;",
    ],
)
def test_duckdb_engine_guard_lets_queries_through(tmp_path, query):
    con = duckdb.connect(str(tmp_path / "d.duckdb"))
    for s in SETUP[:2]:
        con.execute(s)
    assert resolve_runner(con).run(query, limit=5, timeout=10).rows
    con.close()
