"""MySQL/MariaDB through the compiled drivers, on the real server: mysqlclient (``MySQLdb``,
``mysql+mysqldb://``), besides PyMySQL (tests/db/test_mysql.py), and MariaDB
Connector/Python (``mariadb``, ``mariadb+mariadbconnector://``), which is refused.

With mysqlclient: ask() answers through the agent's own connection in utf8mb4 (verified on the driver
and the server) even when the URL asks for sjis, a hostile literal hides no UNION, rows stream
within the byte budget, the time limit and Ctrl-C end a runaway statement on the server, and a
call that ignores KILL QUERY ends at the limit plus the margin. A driver the runner does not
know is refused in one line before any SQL of the model runs: MariaDB Connector/Python among
them (a statement stopped by KILL QUERY came back from it as an ordinary result)."""

from __future__ import annotations

import importlib
import signal
import threading
import time

import pytest

from cadet_magic.db.connect import resolve_runner
from cadet_magic.db.mysql import DRIVERS, MySQLRunner, known_driver
from cadet_magic.errors import ConfigurationError, QueryTimeout
from tests.conftest import need
from tests.db.test_mysql import RUNAWAY, SETUP, STUCK, _running, _stuck_gone
from tests.db.test_mysql_charset import AS_CHARSET, _leaked, hostile
from tests.helpers import TIME_SLACK

pytestmark = pytest.mark.mysql

#: SQLAlchemy driver name -> the driver's module.
COMPILED = {"mysql+mysqldb": "MySQLdb"}


@pytest.fixture(params=sorted(COMPILED))
def url(request, mysql_url):
    """A fresh shop database's URL for one compiled driver (skipped, or failed under CI, when
    the driver is not installed: scripts/setup_mariadb.sh installs both)."""
    import pymysql

    from workloads.mariadb import connect_args

    module = COMPILED[request.param]
    try:
        importlib.import_module(module)
    except ImportError:
        need(False, f"{module} not installed (pip install mysqlclient mariadb; libmariadb-dev)")
    con = pymysql.connect(
        **connect_args(mysql_url.replace("mysql+pymysql://", "mysql://")), autocommit=True
    )
    with con.cursor() as cur:
        for s in SETUP:
            cur.execute(s)
    con.close()
    return mysql_url.replace("mysql+pymysql", request.param, 1)


def _args(url: str) -> dict:
    from workloads.mariadb import connect_args

    return connect_args("mysql://" + url.split("://", 1)[1])


def _ask(conn, sql: str, **options):
    import cadet_magic
    from cadet_magic.llm import ScriptedModel

    model = ScriptedModel({"Q?": [f"```sql\n{sql}\n```", f"```sql\n{sql}\n```"]})
    return cadet_magic.ask("Q?", con=conn, model=model, fallback=False, **options)


def _agent(runner: MySQLRunner) -> tuple:
    """The agent connection's driver name and the server's character sets for it."""
    con = runner._connection()
    cur = con.cursor()
    cur.execute(
        "SELECT @@character_set_client, @@character_set_connection, @@character_set_results"
    )
    row = tuple(cur.fetchone())
    cur.close()
    return known_driver(con), row


#: How the user's connection asks for a multibyte character set, per driver, and the
#: character that hides the UNION.
USER_CHARSET = {
    "mysql+mysqldb": ("?charset=sjis", AS_CHARSET["sjis"]),
}


def test_ask_answers_through_the_driver_in_utf8mb4(url):
    import sqlalchemy as sa

    query, char = USER_CHARSET[url.split(":")[0]]
    engine = sa.create_engine(url + query)
    with engine.connect() as conn:
        r = _ask(conn, "SELECT name FROM customers ORDER BY id")
        assert r.ok and [row[0] for row in r.rows][:2] == ["Ann", "Bob"], r.attempts
        assert not _leaked(_ask(conn, hostile(char)))
        runner = resolve_runner(conn)
        assert _agent(runner) == (DRIVERS[COMPILED[url.split(":")[0]]], ("utf8mb4",) * 3)
        runner.close()
    engine.dispose()


def test_rows_stream_within_the_byte_budget(url):
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        runner = resolve_runner(conn)
        r = runner.run(
            "SELECT REPEAT('x', 1000) AS s FROM seq_1_to_100000",
            limit=1000,
            timeout=10,
            max_bytes=20_000,
        )
        assert r.truncated and r.truncation == "bytes" and 0 < len(r.rows) < 25
        assert runner.run("SELECT 1 AS one", limit=5, timeout=10).rows == [(1,)]
        runner.close()
    engine.dispose()


def test_time_limit_and_ctrl_c_end_the_statement_on_the_server(url):
    import sqlalchemy as sa

    args = _args(url)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        runner = resolve_runner(conn)
        t0 = time.monotonic()
        with pytest.raises(QueryTimeout):
            runner.run(RUNAWAY, limit=5, timeout=1.0)
        assert time.monotonic() - t0 < 1.0 + TIME_SLACK
        main = threading.main_thread().ident
        timer = threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                runner.run(RUNAWAY, limit=5, timeout=60)
        finally:
            timer.cancel()
        deadline = time.monotonic() + TIME_SLACK
        while _running(args) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _running(args) == []
        assert runner.run("SELECT 2 AS two", limit=5, timeout=10).rows == [(2,)]
        assert conn.exec_driver_sql("SELECT 3").scalar() == 3  # the user's connection
        runner.close()
    engine.dispose()


def test_a_call_that_ignores_kill_query_ends_at_the_limit(url):
    import sqlalchemy as sa

    args = _args(url)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        runner = resolve_runner(conn)
        runner.run("SELECT 1", limit=5, timeout=10)
        first = runner._thread_id
        t0 = time.monotonic()
        try:
            with pytest.raises(QueryTimeout):
                runner.run(STUCK, limit=5, timeout=1.0)
            assert time.monotonic() - t0 < 1.0 + 0.5 + 1.0 + TIME_SLACK
            assert runner.run("SELECT 2", limit=5, timeout=10).rows == [(2,)]
            assert runner._thread_id != first
        finally:
            _stuck_gone(args)
            runner.close()
    engine.dispose()


class _UnknownDriverConnection:
    """Stands for a driver the runner does not know (any other DB-API module)."""

    __module__ = "mysql.connector.connection_cext"

    def cursor(self):  # pragma: no cover - never reached: refused before
        raise AssertionError("an unknown driver's cursor was used")

    def close(self) -> None:
        pass


def test_an_unknown_driver_is_refused_in_one_line():
    runner = MySQLRunner(_UnknownDriverConnection, key=object())
    with pytest.raises(ConfigurationError) as caught:
        runner.run("SELECT 1", limit=5, timeout=10)
    text = str(caught.value)
    assert "\n" not in text and "mysql" in text and "PyMySQL" in text


def test_mariadb_connector_is_refused_through_ask(mysql_url):
    """Through ask() with a ``mariadb+mariadbconnector://`` engine: one line naming the
    drivers to use; the user's connection still works."""
    import sqlalchemy as sa

    try:
        import mariadb  # noqa: F401
    except ImportError:
        need(False, "mariadb (MariaDB Connector/Python) not installed")
    engine = sa.create_engine(mysql_url.replace("mysql+pymysql", "mariadb+mariadbconnector", 1))
    with engine.connect() as conn:
        try:
            r = _ask(conn, "SELECT 1 AS one")
        except ConfigurationError as e:
            assert "\n" not in str(e) and "mariadb" in str(e) and "PyMySQL" in str(e)
        else:
            assert not r.ok and any("PyMySQL" in (a.error or "") for a in r.attempts), r
        assert conn.exec_driver_sql("SELECT 3").scalar() == 3
    engine.dispose()


def test_an_unknown_driver_through_ask_loses_nothing(mysql_url, monkeypatch):
    """Through ask(): the refusal is the answer's one line; nothing of the model ran."""
    import sqlalchemy as sa

    from cadet_magic.db import mysql

    engine = sa.create_engine(mysql_url)
    monkeypatch.setattr(mysql, "is_pymysql", lambda raw: False)
    monkeypatch.setattr(mysql, "sqlalchemy_opener", lambda engine: _UnknownDriverConnection)
    with engine.connect() as conn:
        try:
            r = _ask(conn, "SELECT 1 AS one")
        except ConfigurationError as e:
            assert "\n" not in str(e) and "PyMySQL" in str(e)
        else:
            assert not r.ok and any("PyMySQL" in (a.error or "") for a in r.attempts), r
    engine.dispose()
