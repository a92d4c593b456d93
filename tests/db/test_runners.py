"""The runners on real engines: nothing persists even with the safety check switched off,
runaway queries are stopped at the timeout, Ctrl-C cancels, the connection stays usable."""

from __future__ import annotations

import _thread
import json
import sqlite3
import threading
import time
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from cadet_magic.db.connect import resolve_runner
from cadet_magic.errors import QueryTimeout
from tests.helpers import TIME_SLACK

WRITES = json.loads((Path(__file__).parent / "write_statements.json").read_text())
SETUP = [
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer VARCHAR(20), amount INTEGER)",
    "INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32)",
]
RUNAWAY = {
    "duckdb": "SELECT count(*) FROM range(1000000000) a, range(1000000000) b",
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "postgres": "SELECT count(*) FROM generate_series(1, 1000000000) a, generate_series(1, 1000000000) b",
}


@pytest.fixture(
    params=["duckdb-native", "duckdb-sqlalchemy", "sqlite3", "sqlite-sqlalchemy", "postgres"]
)
def engine(request, tmp_path):
    """(runner, read_state, check_alive) on a fresh database of each kind."""
    kind = request.param
    if kind == "duckdb-native":
        con = duckdb.connect(str(tmp_path / "d.duckdb"))
        for s in SETUP:
            con.execute(s)
        yield (
            resolve_runner(con),
            lambda: _state(con.execute, False),
            lambda: con.execute("SELECT 1").fetchall(),
        )
        con.close()
        return
    if kind == "sqlite3":
        con = sqlite3.connect(tmp_path / "s.db")
        for s in SETUP:
            con.execute(s)
        con.commit()
        yield (
            resolve_runner(con),
            lambda: _state(con.execute, True),
            lambda: con.execute("SELECT 1").fetchall(),
        )
        con.close()
        return
    if kind == "postgres":
        url = request.getfixturevalue("pg_url")
        schema = f"t{abs(hash(request.node.name)) % 10**8}"
        engine = sa.create_engine(url)
        with engine.begin() as c:
            c.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
        engine = sa.create_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    else:
        name = "duckdb:///" if kind == "duckdb-sqlalchemy" else "sqlite:///"
        engine = sa.create_engine(name + str(tmp_path / "x.db"))
    with engine.begin() as c:
        for s in SETUP:
            c.exec_driver_sql(s)
    conn = engine.connect()
    conn = (
        conn.execution_options(isolation_level="AUTOCOMMIT")
        if kind != "duckdb-sqlalchemy"
        else conn
    )

    def state():
        return _state(lambda q: conn.exec_driver_sql(q), kind == "sqlite-sqlalchemy")

    yield resolve_runner(conn), state, lambda: conn.exec_driver_sql("SELECT 1").fetchall()
    conn.close()
    engine.dispose()


def _state(execute, sqlite: bool):
    if sqlite:
        query = "SELECT name FROM sqlite_master WHERE type = 'table'"
    else:
        query = "SELECT table_name FROM information_schema.tables WHERE table_name IN ('orders', 'stolen')"
    tables = sorted(r[0] for r in execute(query).fetchall())
    rows = execute("SELECT * FROM orders ORDER BY order_id").fetchall()
    return tables, [tuple(r) for r in rows]


@pytest.mark.parametrize("write", WRITES, ids=[w["kind"] for w in WRITES])
def test_writes_never_persist_even_unchecked(engine, write):
    runner, state, alive = engine
    before = state()
    try:
        runner.run(write["sql"], limit=10, timeout=10)
    except Exception:  # noqa: BLE001 - refusing is fine too; persisting is not
        pass
    assert state() == before
    assert alive() == [(1,)]


def test_reads_run_and_truncate(engine):
    runner, state, alive = engine
    r = runner.run("SELECT order_id FROM orders ORDER BY order_id", limit=1, timeout=10)
    assert r.rows == [(1,)] and r.truncated and r.columns == ["order_id"]
    r = runner.run("SELECT order_id FROM orders ORDER BY order_id", limit=5, timeout=10)
    assert r.rows == [(1,), (2,)] and not r.truncated


def test_large_results_stop_at_the_limit(engine):
    """Streamed (no ORDER BY) and sorted: exactly ``limit`` rows, the first ones, truncated."""
    runner, state, alive = engine
    series = {
        "duckdb": "SELECT range AS n FROM range(200000)",
        "sqlite": "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c "
        "WHERE n < 199999) SELECT n FROM c",
        "postgres": "SELECT n FROM generate_series(0, 199999) AS s(n)",
    }[runner.dialect]
    r = runner.run(series, limit=1000, timeout=30)
    assert len(r.rows) == 1000 and r.truncated
    r = runner.run(f"SELECT n FROM ({series}) AS t ORDER BY n DESC", limit=3, timeout=30)
    assert r.rows == [(199999,), (199998,), (199997,)] and r.truncated
    assert alive() == [(1,)]


def test_failed_query_leaves_connection_usable(engine):
    runner, state, alive = engine
    with pytest.raises(Exception):  # noqa: B017 - the engine's own error class
        runner.run("SELECT no_such_column FROM orders", limit=5, timeout=10)
    assert alive() == [(1,)]
    assert runner.run("SELECT count(*) FROM orders", limit=5, timeout=10).rows == [(2,)]


def test_runaway_query_times_out(engine):
    runner, state, alive = engine
    t0 = time.monotonic()
    with pytest.raises(QueryTimeout):
        runner.run(RUNAWAY[runner.dialect], limit=5, timeout=1.0)
    assert time.monotonic() - t0 < 1.0 + TIME_SLACK
    assert alive() == [(1,)]


def test_ctrl_c_cancels_the_query(engine):
    runner, state, alive = engine
    timer = threading.Timer(0.5, _thread.interrupt_main)
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run(RUNAWAY[runner.dialect], limit=5, timeout=30)
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 0.5 + TIME_SLACK
    assert alive() == [(1,)]
