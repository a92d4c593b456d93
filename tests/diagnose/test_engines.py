"""Real engine errors, raw and wrapped, read into the right category and suggestions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cadet_magic.db.driver_errors import diagnose_error
from tests.conftest import need

DATA = json.loads((Path(__file__).parent / "data" / "engine_cases.json").read_text())
SCHEMA = DATA["schema"]
CASES = DATA["cases"]


def _check(case: dict, engine: str, error: BaseException | None, dialect: str) -> None:
    expected = case["expect"][engine]
    if expected is None:
        assert error is None, f"{case['id']}: {engine} was expected to accept it: {error}"
        return
    assert error is not None, f"{case['id']}: {engine} accepted it, expected {expected}"
    d = diagnose_error(error, engine=dialect, sql=case["sql"], schema=SCHEMA)
    assert d.category.value == expected, f"{case['id']} on {engine}: {error}"
    if case["suggestion"]:
        assert case["suggestion"] in d.suggestions[:3], (case["id"], d.suggestions)
    assert d.feedback.startswith("Your previous query failed:")


def _run(execute, sql: str) -> BaseException | None:
    try:
        execute(sql)
    except Exception as e:  # noqa: BLE001
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


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_duckdb_native(duck, case):
    _check(case, "duckdb", _run(lambda q: duck.execute(q).fetchall(), case["sql"]), "duckdb")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_sqlite_native(lite, case):
    _check(case, "sqlite", _run(lambda q: lite.execute(q).fetchall(), case["sql"]), "sqlite")


@pytest.fixture(scope="module")
def pg_libpq(pg_url):
    psycopg = pytest.importorskip("psycopg")
    url = pg_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("DROP SCHEMA IF EXISTS diag CASCADE")
        con.execute("CREATE SCHEMA diag")
        for s in DATA["ddl"]:
            con.execute(s.replace("TABLE ", "TABLE diag.").replace("INTO ", "INTO diag."))
    return url + "?options=-csearch_path%3Ddiag"


@pytest.mark.postgres
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_postgres_psycopg3(pg_libpq, case):
    import psycopg

    with psycopg.connect(pg_libpq, autocommit=True) as con:
        err = _run(lambda q: con.execute(q).fetchall(), case["sql"])
    _check(case, "postgresql", err, "postgresql")


@pytest.mark.postgres
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_postgres_psycopg2(pg_libpq, case):
    psycopg2 = pytest.importorskip("psycopg2")
    con = psycopg2.connect(pg_libpq)
    con.autocommit = True
    try:
        cur = con.cursor()

        def execute(q: str) -> None:
            cur.execute(q)
            cur.fetchall()

        err = _run(execute, case["sql"])
    finally:
        con.close()
    _check(case, "postgresql", err, "postgresql")


WRAPPED = [c for c in CASES if c["id"] in ("col", "tab2", "join", "agg", "func3", "date3", "type")]


@pytest.mark.parametrize("case", WRAPPED, ids=[c["id"] for c in WRAPPED])
def test_sqlalchemy_wrapped_duckdb_and_sqlite(case):
    sa = pytest.importorskip("sqlalchemy")
    pytest.importorskip("duckdb_engine")
    for url, engine in (("duckdb:///:memory:", "duckdb"), ("sqlite://", "sqlite")):
        eng = sa.create_engine(url)
        with eng.connect() as con:
            for s in DATA["ddl"]:
                con.exec_driver_sql(s)
            err = _run(lambda q, con=con: con.exec_driver_sql(q).fetchall(), case["sql"])
            if err is not None:
                assert hasattr(err, "orig")
            _check(case, engine, err, engine)
            # the message alone (as logged) gives the same answer
            if err is not None:
                _check(case, engine, str(err), engine)
            con.rollback()
        eng.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("case", WRAPPED, ids=[c["id"] for c in WRAPPED])
def test_sqlalchemy_wrapped_postgres(pg_url, pg_libpq, case):
    sa = pytest.importorskip("sqlalchemy")
    eng = sa.create_engine(pg_url, connect_args={"options": "-csearch_path=diag"})
    with eng.connect() as con:
        # exec_driver_sql + psycopg reads % as a placeholder: double it, as users must
        err = _run(lambda q: con.exec_driver_sql(q.replace("%", "%%")).fetchall(), case["sql"])
        _check(case, "postgresql", err, "postgresql")
        if err is not None:
            _check(case, "postgresql", str(err), "postgresql")
        con.rollback()
    eng.dispose()


def test_jupysql_wrapped(monkeypatch, ipython_shell):
    """jupysql raises a UsageError whose text embeds the driver message; both forms read."""
    pytest.importorskip("sql")
    need(True, "")
    monkeypatch.setenv("PLOOMBER_STATS_ENABLED", "false")
    ip = ipython_shell  # the session's shell, whichever test started it
    ip.run_line_magic("load_ext", "sql")
    ip.run_line_magic("sql", "duckdb:// --alias diagtest")
    for s in DATA["ddl"]:
        ip.run_line_magic("sql", s)
    with pytest.raises(Exception) as info:
        ip.run_line_magic("sql", "SELECT amout FROM orders")
    d = diagnose_error(info.value, engine="duckdb", sql="SELECT amout FROM orders", schema=SCHEMA)
    assert d.category.value == "column_not_found"
    assert d.suggestions[0] == "orders.amount"
    d2 = diagnose_error(str(info.value), schema=SCHEMA)  # an engine not named: every reader
    assert d2.category.value == "column_not_found" and d2.details.name == "amout"
    ip.run_line_magic("sql", "--close diagtest")
