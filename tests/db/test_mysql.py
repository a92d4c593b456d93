"""MySQL/MariaDB on a throwaway MariaDB server: SQLAlchemy URLs (PyMySQL), jupysql's current
connection and a raw PyMySQL connection; the agent runs on a connection of its own, READ ONLY
and rolled back, under the server's time limit, stopped by KILL QUERY on Ctrl-C; the user's
connection, transaction and data stay exactly as they were."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest

from cadet_magic.db.connect import resolve_runner
from cadet_magic.db.mysql import MySQLRunner
from cadet_magic.errors import QueryTimeout
from cadet_magic.sql.validate import validate_sql
from tests.helpers import TIME_SLACK

pytestmark = pytest.mark.mysql

HOSTILE = json.loads((Path(__file__).parent / "mysql_hostile.json").read_text())["cases"]
SETUP = [
    "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(50) COMMENT 'full name', "
    "city VARCHAR(30)) COMMENT 'people who buy'",
    "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, amount DECIMAL(10,2), "
    "FOREIGN KEY (customer_id) REFERENCES customers(id))",
    "CREATE SEQUENCE seq",
    "INSERT INTO customers VALUES (1, 'Ann', 'Paris'), (2, 'Bob', 'Rome'), (3, 'Alice', 'Paris')",
    "INSERT INTO orders VALUES (1, 1, 10.5), (2, 1, 20), (3, 2, 5)",
]
RUNAWAY = "SELECT COUNT(*) FROM seq_1_to_100000000 a, seq_1_to_100000000 b"


@pytest.fixture
def shop(mysql_url):
    """(SQLAlchemy URL, PyMySQL keyword arguments) of a fresh database with the shop tables."""
    import pymysql

    from workloads.mariadb import connect_args

    args = connect_args(mysql_url.replace("mysql+pymysql://", "mysql://"))
    con = pymysql.connect(**args, autocommit=True)
    with con.cursor() as cur:
        for s in SETUP:
            cur.execute(s)
    con.close()
    return mysql_url, args


def _state(args: dict) -> tuple:
    """Everything a hostile statement could leave behind, read on a fresh connection."""
    import pymysql

    con = pymysql.connect(**args)
    try:
        with con.cursor() as cur:
            cur.execute("SELECT * FROM orders ORDER BY id")
            rows = cur.fetchall()
            cur.execute(
                "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema',"
                " 'sys') ORDER BY 1, 2"
            )
            tables = cur.fetchall()
            cur.execute(
                "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA ="
                " DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION"
            )
            columns = cur.fetchall()
            cur.execute("SELECT User FROM mysql.user ORDER BY 1")
            users = cur.fetchall()
            cur.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY 1")
            schemas = cur.fetchall()
            cur.execute("SELECT IS_USED_LOCK('evil'), @@GLOBAL.max_connections")
            locks = cur.fetchall()
        return rows, tables, columns, users, schemas, locks
    finally:
        con.close()


@pytest.mark.parametrize("dialect", ["mysql+pymysql", "mariadb+pymysql"])
def test_sqlalchemy_url_runs_and_reads_the_schema(shop, dialect):
    import sqlalchemy as sa

    url, _ = shop
    engine = sa.create_engine(url.replace("mysql+pymysql", dialect, 1))
    with engine.connect() as conn:
        runner = resolve_runner(conn)
        assert isinstance(runner, MySQLRunner) and runner.dialect == "mysql"
        schema = runner.schema()
        customers = schema.table("customers")
        assert customers.comment == "people who buy"
        assert [c.name for c in customers.columns] == ["id", "name", "city"]
        assert customers.columns[0].primary_key and customers.columns[1].comment == "full name"
        assert set(customers.columns[2].samples) == {"Paris", "Rome"}
        fk = schema.table("orders").foreign_keys[0]
        assert (fk.columns, fk.ref_table, fk.ref_columns) == (
            ("customer_id",),
            "customers",
            ("id",),
        )
        assert schema.functions is not None and "date_format" in schema.functions.allowed
        assert "sleep" not in schema.functions.allowed
        result = runner.run("SELECT name FROM customers ORDER BY id", limit=2, timeout=10)
        assert result.rows == [("Ann",), ("Bob",)] and result.truncation == "rows"
        assert runner.schema() is schema  # cached while the catalog is unchanged
        runner.close()
    engine.dispose()


def test_schema_cache_sees_a_new_column(shop):
    import pymysql
    import sqlalchemy as sa

    url, args = shop
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        first = resolve_runner(conn).schema()
        con = pymysql.connect(**args, autocommit=True)
        con.cursor().execute("ALTER TABLE customers ADD COLUMN email VARCHAR(80)")
        con.close()
        again = resolve_runner(conn).schema()
        assert again is not first and "email" in again.table("customers").column_names()
    engine.dispose()


def test_byte_budget_cuts_the_stream(shop):
    import sqlalchemy as sa

    url, _ = shop
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
        assert runner.run("SELECT 1", limit=5, timeout=10).rows == [(1,)]
    engine.dispose()


@pytest.mark.parametrize("kind", ["sqlalchemy", "pymysql"])
def test_user_transaction_and_pending_work_untouched(shop, kind):
    """The user has uncommitted work: the agent neither commits it nor rolls it back, and
    the user's connection stays in its transaction."""
    import pymysql
    import sqlalchemy as sa

    url, args = shop
    if kind == "sqlalchemy":
        engine = sa.create_engine(url)
        conn = engine.connect()
        conn.exec_driver_sql("INSERT INTO orders VALUES (9, 2, 99)")
        raw = conn.connection.dbapi_connection
        target = conn
    else:
        raw = pymysql.connect(**args)
        raw.cursor().execute("INSERT INTO orders VALUES (9, 2, 99)")
        target = raw
    thread_id = raw.thread_id()
    runner = resolve_runner(target)
    r = runner.run("SELECT COUNT(*) FROM orders", limit=5, timeout=10)
    assert r.rows == [(3,)]  # the agent's own connection: the pending row is not visible
    with pytest.raises(Exception):  # noqa: B017 - the engine refuses: READ ONLY
        runner.run("INSERT INTO orders VALUES (10, 1, 1)", limit=5, timeout=10)
    # the user's connection: same session, transaction still open, pending row still there
    assert raw.thread_id() == thread_id
    cur = raw.cursor()
    cur.execute("SELECT @@in_transaction, COUNT(*) FROM orders")
    assert cur.fetchall() == ((1, 4),)
    raw.rollback()
    cur.execute("SELECT COUNT(*) FROM orders")
    assert cur.fetchall() == ((3,),)  # not committed by the agent
    runner.close()
    if kind == "sqlalchemy":
        conn.close()
        engine.dispose()
    else:
        raw.close()


def test_raw_pymysql_connection(shop):
    import pymysql

    _, args = shop
    raw = pymysql.connect(**args)
    runner = resolve_runner(raw)
    assert isinstance(runner, MySQLRunner) and "PyMySQL" in runner.label
    assert runner.run("SELECT city FROM customers WHERE id = 2", limit=5, timeout=10).rows == [
        ("Rome",)
    ]
    assert runner.schema().table("orders") is not None
    runner.close()
    raw.close()


def test_jupysql_current_connection(shop, ipython_shell):
    pytest.importorskip("sql")
    url, _ = shop
    ip = ipython_shell
    ip.run_line_magic("load_ext", "sql")
    ip.run_line_magic("sql", f"{url} --alias mysqltest")
    try:
        runner = resolve_runner(None)
        assert isinstance(runner, MySQLRunner)
        assert runner.run("SELECT COUNT(*) FROM customers", limit=5, timeout=10).rows == [(3,)]
        runner.close()
    finally:
        ip.run_line_magic("sql", "--close mysqltest")


def test_runaway_query_times_out_on_the_server(shop):
    import pymysql

    _, args = shop
    raw = pymysql.connect(**args)
    runner = resolve_runner(raw)
    t0 = time.monotonic()
    with pytest.raises(QueryTimeout):
        runner.run(RUNAWAY, limit=5, timeout=1.0)
    assert time.monotonic() - t0 < 1.0 + TIME_SLACK
    assert runner.run("SELECT 1", limit=5, timeout=10).rows == [(1,)]
    assert _running(args) == []
    runner.close()
    raw.close()


def test_ctrl_c_kills_the_query(shop):
    import pymysql

    _, args = shop
    raw = pymysql.connect(**args)
    runner = resolve_runner(raw)
    main = threading.main_thread().ident
    timer = threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run(RUNAWAY, limit=5, timeout=60)
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 0.5 + TIME_SLACK
    deadline = time.monotonic() + TIME_SLACK
    while _running(args) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(args) == []  # KILL QUERY stopped it on the server
    assert runner.run("SELECT 1", limit=5, timeout=10).rows == [(1,)]
    cur = raw.cursor()
    cur.execute("SELECT 2")
    assert cur.fetchall() == ((2,),)  # the user's connection was never involved
    runner.close()
    raw.close()


def _running(args: dict) -> list:
    import pymysql

    con = pymysql.connect(**args)
    try:
        with con.cursor() as cur:
            cur.execute(
                "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%seq_1_to_%' "
                "AND ID <> CONNECTION_ID()"
            )
            return list(cur.fetchall())
    finally:
        con.close()


def test_regexp_and_dual_run_after_regeneration(shop):
    """sqlglot writes REGEXP as REGEXP_LIKE (absent from MariaDB) and quotes DUAL: what runs
    keeps the operator form, so valid MySQL keeps working."""
    import sqlalchemy as sa

    url, _ = shop
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        runner = resolve_runner(conn)
        schema = runner.schema()
        for sql, rows in [
            (
                "SELECT name FROM customers WHERE name REGEXP '^A' ORDER BY id",
                [("Ann",), ("Alice",)],
            ),
            ("SELECT name FROM customers WHERE name RLIKE 'b$' OR name NOT REGEXP 'A'", [("Bob",)]),
            ("SELECT 1 + 1 FROM DUAL", [(2,)]),
            ("SELECT IFNULL(NULL, 3), name FROM customers LIMIT 1, 1", [(3, "Bob")]),
            ("SELECT DATE_FORMAT('2024-05-06', '%Y') AS y", [("2024",)]),
            (
                "SELECT GROUP_CONCAT(name ORDER BY id SEPARATOR '|') FROM customers",
                [("Ann|Bob|Alice",)],
            ),
        ]:
            v = validate_sql(sql, "mysql", schema.table_names(), schema.functions)
            assert v.ok, (sql, v.issues)
            assert "REGEXP_LIKE" not in v.sql
            assert runner.run(v.sql, limit=10, timeout=10).rows == rows, v.sql
        runner.close()
    engine.dispose()


@pytest.fixture
def hostile_env(shop):
    import sqlalchemy as sa

    url, args = shop
    engine = sa.create_engine(url)
    conn = engine.connect()
    runner = resolve_runner(conn)
    yield runner, args, runner.schema()
    runner.close()
    conn.close()
    engine.dispose()


@pytest.mark.parametrize("hostile", HOSTILE, ids=[h["kind"] for h in HOSTILE])
def test_hostile_sql_never_reaches_the_server(hostile_env, hostile):
    """The check refuses every case with the live catalog; only checked SQL would run."""
    runner, args, schema = hostile_env
    sql = hostile["sql"].format(file=f"/tmp/cadet-hostile-{uuid.uuid4().hex}")
    v = validate_sql(sql, "mysql", schema.table_names(), schema.functions)
    assert not v.ok, (hostile["kind"], v.sql)


ENGINE_REFUSES = [h for h in HOSTILE if h["engine"] == "refuses"]


@pytest.mark.parametrize("hostile", ENGINE_REFUSES, ids=[h["kind"] for h in ENGINE_REFUSES])
def test_engine_refuses_with_the_check_bypassed(hostile_env, hostile):
    """The outer layer: in START TRANSACTION READ ONLY the server itself refuses writes."""
    runner, args, _ = hostile_env
    before = _state(args)
    path = f"/tmp/cadet-hostile-{uuid.uuid4().hex}"
    with pytest.raises(Exception):  # noqa: B017 - any refusal by the server
        runner.run(hostile["sql"].format(file=path), limit=5, timeout=10)
    assert not os.path.exists(path)
    assert _state(args) == before
    assert runner.run("SELECT COUNT(*) FROM orders", limit=5, timeout=10).rows == [(3,)]


#: One call that checks neither max_statement_time nor KILL QUERY: about 8 s of SHA-512 rounds
#: on this kind of machine (the killed server thread finishes it, so keep it short).
#: One call that runs far past the limit plus the kill margin on any machine (about 2 s per
#: 5 million rounds measured here on an idle core: 50 million is about 20 s; a smaller count
#: finished before the watchdog's second step on a quiet machine and the run simply answered).
STUCK = "SELECT LENGTH(ENCRYPT('x', '$6$rounds=50000000$salt'))"


def _stuck_gone(args: dict) -> None:
    """Waits until the server's killed thread has finished its call (so it does not burn the
    shared machine's cores into the next test)."""
    import pymysql

    deadline = time.monotonic() + 60
    con = pymysql.connect(**args)
    try:
        with con.cursor() as cur:
            while time.monotonic() < deadline:
                cur.execute(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE "
                    "'%ENCRYPT(%' AND ID <> CONNECTION_ID()"
                )
                if cur.fetchone()[0] == 0:
                    return
                time.sleep(0.5)
    finally:
        con.close()


def test_a_call_that_ignores_kill_query_ends_at_the_limit(shop):
    """KILL QUERY does not take inside ENCRYPT: the watchdog kills the agent's connection
    and the next run opens a new one; the user's connection is untouched."""
    import pymysql

    _, args = shop
    raw = pymysql.connect(**args)
    runner = resolve_runner(raw)
    runner.run("SELECT 1", limit=5, timeout=10)
    first = runner._thread_id
    t0 = time.monotonic()
    try:
        with pytest.raises(QueryTimeout):
            runner.run(STUCK, limit=5, timeout=1.0)
        assert time.monotonic() - t0 < 1.0 + 0.5 + 1.0 + TIME_SLACK
        assert runner.run("SELECT 2", limit=5, timeout=10).rows == [(2,)]
        assert runner._thread_id != first  # a new connection
        cur = raw.cursor()
        cur.execute("SELECT 3")
        assert cur.fetchall() == ((3,),)
    finally:
        _stuck_gone(args)
        runner.close()
        raw.close()


def test_ask_refuses_encrypt_and_the_engine_bounds_it_when_the_check_is_bypassed(shop, monkeypatch):
    """Through ask(): ENCRYPT is refused by the check (never-list); with that rule removed
    (the outer layer alone) ask(timeout=1) still ends at the limit plus the margin."""
    import pymysql

    import cadet_magic
    from cadet_magic.llm import ScriptedModel
    from cadet_magic.sql import functions

    _, args = shop
    raw = pymysql.connect(**args)
    model = ScriptedModel({"Hash?": [f"```sql\n{STUCK}\n```", "```sql\nSELECT 1 AS x\n```"]})
    r = cadet_magic.ask("Hash?", con=raw, model=model, timeout=1, fallback=False)
    assert r.attempts[0].outcome == "refused" and "encrypt()" in r.attempts[0].error
    assert r.ok and r.rows == [(1,)]

    from cadet_magic.sql import rules

    monkeypatch.delitem(functions.NEVER, "encrypt")
    monkeypatch.delitem(rules.OTHER_FUNCTIONS, "encrypt")
    from cadet_magic.db.session import current

    current().schema_cache.clear()
    model = ScriptedModel({"Hash?": [f"```sql\n{STUCK}\n```"]})
    t0 = time.monotonic()
    try:
        r = cadet_magic.ask(
            "Hash?", con=raw, model=model, timeout=1, fallback=False, max_attempts=1
        )
        assert [a.outcome for a in r.attempts] == ["timeout"] and not r.ok
        assert time.monotonic() - t0 < 1.0 + 0.5 + 1.0 + TIME_SLACK
    finally:
        _stuck_gone(args)
        raw.close()


QUOTE_RUNS = json.loads((Path(__file__).parent / "mysql_quote_runs.json").read_text())["cases"]


@pytest.mark.parametrize("case", QUOTE_RUNS, ids=[c["id"] for c in QUOTE_RUNS])
def test_double_quotes_follow_the_connections_sql_mode(shop, case):
    """The check reads "x" as the user's session does: a string without ANSI_QUOTES, a name
    with it (read once from the connection's sql_mode); the user's session keeps its mode."""
    import pymysql
    import sqlalchemy as sa

    import cadet_magic
    from cadet_magic.llm import ScriptedModel

    url, args = shop
    mode = case["sql_mode"]
    question = f"Who? ({case['id']})"
    model = ScriptedModel({question: [f"```sql\n{r}\n```" for r in case["replies"]]})
    engine = None
    if case["via"] == "pymysql":
        user = pymysql.connect(**args, **({"sql_mode": mode} if mode else {}))
        session = user
    else:
        init = {"init_command": f"SET SESSION sql_mode = '{mode}'"} if mode else {}
        engine = sa.create_engine(url, connect_args=init)
        user = engine.connect()
        session = user.connection.dbapi_connection
    try:
        with session.cursor() as cur:
            cur.execute("SELECT @@SESSION.sql_mode")
            before = cur.fetchone()
        r = cadet_magic.ask(question, con=user, model=model, fallback=False)
        assert [a.outcome for a in r.attempts] == case["outcomes"], r.message
        assert r.ok and [list(row) for row in r.rows] == case["rows"]
        assert r.sql == case["sql"]
        if "feedback" in case:
            assert case["feedback"] in r.attempts[0].feedback
        with session.cursor() as cur:
            cur.execute("SELECT @@SESSION.sql_mode")
            assert cur.fetchone() == before
    finally:
        user.close()
        if engine is not None:
            engine.dispose()


def test_the_mode_is_the_connections_even_when_the_schema_is_cached(shop):
    """The server's default mode changes between two questions on the same user connection:
    the second run's connection reads it, though the schema comes from the cache."""
    import pymysql

    import cadet_magic
    from cadet_magic.llm import ScriptedModel

    _, args = shop
    reply = '```sql\nSELECT "name" FROM customers WHERE id = 2\n```'
    raw = pymysql.connect(**args)  # no sql_mode of its own: the server's default
    admin = pymysql.connect(**args, autocommit=True)
    with admin.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.sql_mode")
        (default,) = cur.fetchone()
    try:
        model = ScriptedModel({"Who is 2?": [reply]})
        first = cadet_magic.ask("Who is 2?", con=raw, model=model, fallback=False)
        assert first.ok and first.rows == [("name",)]  # a string in the default mode
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL sql_mode = %s", (f"{default},ANSI_QUOTES".strip(","),))
        model = ScriptedModel({"Who is 2?": [reply]})
        second = cadet_magic.ask("Who is 2?", con=raw, model=model, fallback=False)
        assert second.ok and second.rows == [("Bob",)]  # a name once the mode has ANSI_QUOTES
    finally:
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL sql_mode = %s", (default,))
        admin.close()
        raw.close()
