"""The engines' own function catalogs, read through the runners: every function the engine does
not mark state-free is refused, so are the hostile calls per engine (SQL text, files, sequences,
settings, administration); with the check bypassed the engine's guards refuse what they can;
every gold query stays accepted on its engine's catalog."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from cadet_magic.db.connect import resolve_runner
from cadet_magic.db.schema_cache import SCHEMA_CACHE
from cadet_magic.sql.functions import HARMLESS_VOLATILE, FunctionCatalog
from cadet_magic.sql.validate import validate_sql
from workloads import gold as bench

HOSTILE = json.loads((Path(__file__).with_name("hostile_functions.json")).read_text())
SETUP = {
    "postgres": ["CREATE TABLE t (x INT)", "CREATE SEQUENCE s"],
    "duckdb": ["CREATE TABLE t (x INT)", "CREATE SEQUENCE s"],
    "sqlite": ["CREATE TABLE t (x INT)"],
}


@pytest.fixture
def runner(request, tmp_path):
    """A runner on a fresh database of the engine named by the test's parameter."""
    engine = request.param
    SCHEMA_CACHE.clear()
    if engine == "duckdb":
        con = duckdb.connect(str(tmp_path / "f.duckdb"))
        for s in SETUP[engine]:
            con.execute(s)
        yield resolve_runner(con)
        con.close()
    elif engine == "sqlite":
        con = sqlite3.connect(tmp_path / "f.db")
        for s in SETUP[engine]:
            con.execute(s)
        con.commit()
        yield resolve_runner(con)
        con.close()
    else:
        url = request.getfixturevalue("pg_url")
        eng = sa.create_engine(url)
        with eng.begin() as c:
            c.exec_driver_sql("DROP TABLE IF EXISTS t; DROP SEQUENCE IF EXISTS s")
            for s in SETUP[engine]:
                c.exec_driver_sql(s)
        conn = eng.connect()
        yield resolve_runner(conn)
        conn.close()
        eng.dispose()


ENGINES = ["duckdb", "sqlite", "postgres"]


def _catalog(runner) -> FunctionCatalog:
    catalog = runner.schema().functions
    assert isinstance(catalog, FunctionCatalog) and catalog.engine == runner.dialect
    return catalog


def _call(name: str, catalog: FunctionCatalog) -> list[str]:
    """Ways to call ``name`` with no arguments and one: as a value and as a row source."""
    quoted = name if re.fullmatch(r"[a-z_][a-z0-9_]*", name) else '"' + name + '"'
    return [f"SELECT {quoted}()", f"SELECT {quoted}(1)", f"SELECT * FROM {quoted}()"]


@pytest.mark.parametrize("runner", ENGINES, indirect=True)
def test_every_function_the_engine_does_not_mark_state_free_is_refused(runner) -> None:
    """The hostile corpus enumerated from the real catalog: every name outside the allow-list
    (volatile ones, table functions that read files or run SQL text, never-listed ones)."""
    catalog = _catalog(runner)
    refused = sorted(catalog.known - catalog.allowed)
    assert len(refused) > 10
    passed = []
    for name in refused:
        for sql in _call(name, catalog):
            v = validate_sql(sql, runner.dialect, ["t"], catalog)
            if v.ok:
                passed.append(sql)
    assert not passed, passed


@pytest.mark.parametrize("runner", ENGINES, indirect=True)
def test_the_allow_list_holds_no_volatile_function_but_the_harmless_ones(runner) -> None:
    catalog = _catalog(runner)
    assert catalog.allowed <= catalog.known
    assert {"random"} <= catalog.allowed
    for name in ("nextval", "setval", "current_setting", "query", "query_to_xml", "load_extension"):
        assert name not in catalog.allowed


@pytest.mark.parametrize("runner", ENGINES, indirect=True)
def test_hostile_calls_are_refused_naming_the_function(runner) -> None:
    catalog = _catalog(runner)
    for case in HOSTILE[runner.dialect]:
        v = validate_sql(case["sql"], runner.dialect, ["t"], catalog)
        assert not v.ok, case
        name = re.search(r"(\w+)\(", case["sql"]).group(1)
        assert f"{name}()" in v.issues[0].message or name in v.issues[0].message, v.issues


#: Functions whose arguments carry SQL text or a table name, found in each catalog by the
#: names of their parameters.
SQL_TEXT_FUNCTIONS = {
    "postgres": "SELECT DISTINCT proname FROM pg_proc "
    "WHERE proargnames && ARRAY['query', 'sql', 'cursor', 'tbl']::text[]",
    "duckdb": "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type <> "
    "'pragma' AND list_has_any(parameters, ['query', 'sql', 'table_name', 'serialized_sql'])",
}


@pytest.mark.parametrize("runner", ["duckdb", "postgres"], indirect=True)
def test_functions_taking_sql_text_are_refused(runner) -> None:
    """Enumerated from the catalog: every function with a SQL-text or table-name parameter."""
    catalog = _catalog(runner)
    sql = SQL_TEXT_FUNCTIONS[runner.dialect]
    if runner.dialect == "duckdb":
        names = [r[0] for r in runner.connection.execute(sql).fetchall()]
    else:
        names = [r[0] for r in runner.connection.exec_driver_sql(sql).fetchall()]
        runner.connection.rollback()
    assert {"query", "query_table"} <= set(names) or {"query_to_xml", "ts_stat"} <= set(names)
    for name in names:
        assert name not in catalog.allowed, name
        for call in (f"SELECT {name}('SELECT 1')", f"SELECT * FROM {name}('SELECT 1')"):
            assert not validate_sql(call, runner.dialect, ["t"], catalog).ok, call


@pytest.mark.parametrize("runner", ENGINES, indirect=True)
def test_with_the_check_bypassed_the_engine_refuses_what_it_can(runner) -> None:
    """The engine's own guard, without our check: each call marked engine_refuses fails."""
    for case in HOSTILE[runner.dialect]:
        if not case["engine_refuses"]:
            continue
        with pytest.raises(Exception):  # noqa: B017 - whatever the driver raises
            runner.run(case["sql"], limit=10, timeout=10)
    assert runner.run("SELECT count(*) FROM t", limit=10, timeout=10).rows == [(0,)]


def test_harmless_volatile_functions_stay_allowed_where_the_engine_has_them() -> None:
    con = duckdb.connect()
    from cadet_magic.db.function_catalogs import duckdb_functions, sqlite_functions

    for catalog in (duckdb_functions(con), sqlite_functions(sqlite3.connect(":memory:"))):
        assert catalog is not None
        assert catalog.known & HARMLESS_VOLATILE <= catalog.allowed


def _check(dataset: bench.Dataset, catalog: FunctionCatalog) -> None:
    wrong = []
    for case in dataset.cases:
        v = validate_sql(case.sql, case.dialect, case.tables, catalog)
        if not v.ok:
            wrong.append(f"{case.id}: {v.issues[:1]}")
    assert not wrong, "\n".join(wrong[:20])


def test_gold_queries_accepted_on_sqlite_catalog(shared_data: Path) -> None:
    """Spider and BIRD SQLite gold queries on the catalog of a real Spider database."""
    db = next((shared_data / "spider-dev" / "database").glob("*/*.sqlite"))
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    catalog = _catalog(resolve_runner(con))
    _check(bench.spider(shared_data), catalog)
    _check(bench.bird(shared_data, "sqlite"), catalog)


def test_gold_queries_accepted_on_duckdb_catalog(shared_data: Path) -> None:
    SCHEMA_CACHE.clear()
    catalog = _catalog(resolve_runner(duckdb.connect()))
    _check(bench.tpch(shared_data), catalog)
    _check(bench.tpcds(shared_data), catalog)


def test_gold_queries_accepted_on_postgres_catalog(shared_data: Path, pg_url: str) -> None:
    SCHEMA_CACHE.clear()
    eng = sa.create_engine(pg_url)
    with eng.connect() as conn:
        catalog = _catalog(resolve_runner(conn))
    eng.dispose()
    _check(bench.bird(shared_data, "postgresql"), catalog)


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_the_agent_checks_calls_against_the_engines_catalog(kind: str, tmp_path: Path) -> None:
    """Through ``ask``: a function only the catalog refuses (a user-defined macro or
    application function) is refused naming it, and the retry without it answers."""
    import cadet_magic
    from tests.helpers import fake_model, sql_reply

    SCHEMA_CACHE.clear()
    if kind == "duckdb":
        con = duckdb.connect(str(tmp_path / "a.duckdb"))
        con.execute(
            "CREATE TABLE t (x INT); INSERT INTO t VALUES (1); CREATE MACRO bump(v) AS v + 1"
        )
    else:
        con = sqlite3.connect(tmp_path / "a.db")
        con.execute("CREATE TABLE t (x INT)")
        con.execute("INSERT INTO t VALUES (1)")
        con.commit()
        con.create_function("bump", 1, lambda v: v + 1, deterministic=True)
    model = fake_model(
        sql_reply("SELECT bump(x) AS y FROM t"), sql_reply("SELECT x + 1 AS y FROM t")
    )
    r = cadet_magic.ask("x plus one?", con=con, model=model)
    assert r.ok and r.rows == [(2,)]
    first = r.attempts[0]
    assert first.outcome == "refused" and "bump()" in first.error
    assert "bump()" in (first.feedback or "")
    con.close()


def test_spider_gold_queries_run_under_sqlites_function_authorizer(shared_data: Path) -> None:
    """The authorizer's function allow-list denies no function the gold queries use."""
    root = shared_data / "spider-dev"
    runners: dict[Path, object] = {}
    denied = []
    for q in json.loads((root / "dev.json").read_text()):
        db = root / "database" / q["db_id"] / f"{q['db_id']}.sqlite"
        if not db.exists():
            continue
        if db not in runners:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            con.text_factory = lambda b: b.decode(errors="replace")
            runners[db] = resolve_runner(con)
        try:
            runners[db].run(q["query"], limit=5, timeout=10)
        except sqlite3.DatabaseError as e:
            if "not authorized" in str(e):
                denied.append(f"{q['query']}: {e}")
    assert runners and not denied, denied[:10]


#: What a model steered by text in the data would ask PostgreSQL for: the server's address and
#: version, the roles and their memberships, catalog definitions (all stable functions).
SERVER_INFO_SQL = (
    "SELECT inet_server_addr() AS a, inet_server_port() AS p, version() AS v, "
    "pg_has_role(current_user, 'pg_read_all_data', 'MEMBER') AS m"
)


#: The same facts without a function call: SQL-value keywords and object-identifier casts.
PG_SERVER_FACTS_WITHOUT_A_CALL = (
    "SELECT session_user AS s",
    "SELECT user AS u",
    "SELECT current_role AS r",
    "SELECT x FROM t WHERE user <> ''",
    "SELECT x FROM t WHERE x::text = SESSION_USER",
    "SELECT CURRENT_ROLE || x AS r FROM t",
    "SELECT tableoid::regclass AS c FROM t",
    'SELECT CAST(x AS "regclass") AS c FROM t',
    "SELECT 't'::regclass::oid AS o",
    "SELECT 10::oid::regrole AS r",
    "SELECT CAST('pg_authid' AS pg_catalog.regclass) AS c",
    "SELECT g::oid::regclass AS c FROM generate_series(1, 20000) AS g",
    "SELECT 'int'::regtype AS ty",
    "SELECT 'pg_catalog'::regnamespace AS ns",
    "SELECT 'now'::regproc AS p",
    "SELECT to_regclass('pg_authid') AS c",
    "SELECT current_schemas(true) AS s",
    "SELECT pg_database_size('postgres') AS b",
)


@pytest.mark.parametrize("runner", ["postgres"], indirect=True)
def test_pg_keywords_and_regconfig_that_answer_questions_still_run(runner) -> None:
    """What stays allowed runs: the database and schema the user is in, a text search
    configuration, a value's type."""
    import cadet_magic
    from cadet_magic.llm import ScriptedModel

    sql = (
        "SELECT current_catalog = current_database() AS same, current_schema AS s, "
        "to_tsvector('english'::regconfig, 'Running dogs') AS v, pg_typeof(1)::text AS ty"
    )
    model = ScriptedModel({"Q?": [f"```sql\n{sql}\n```"]})
    r = cadet_magic.ask("Q?", con=runner.connection, model=model, fallback=False)
    assert r.ok, [a.error for a in r.attempts]
    assert r.rows[0][0] is True and r.rows[0][3] == "integer"


@pytest.mark.parametrize("runner", ["postgres"], indirect=True)
def test_ask_never_carries_server_facts_to_the_model(runner, ipython_shell) -> None:
    """Through ``ask()`` and ``%%ask``: the call is refused naming the function, the retry
    answers from the data, and neither the answer nor the feedback holds the server's facts."""
    import cadet_magic
    from cadet_magic.llm import ScriptedModel

    conn = runner.connection
    version = conn.exec_driver_sql("SELECT version()").scalar()
    for sql in (
        SERVER_INFO_SQL,
        "SELECT pg_get_viewdef('t'::regclass) AS d",
        "SELECT has_table_privilege('t', 'SELECT') AS ok",
        *PG_SERVER_FACTS_WITHOUT_A_CALL,
    ):
        model = ScriptedModel(
            {"Rows?": [f"```sql\n{sql}\n```", "```sql\nSELECT count(*) AS n FROM t\n```"]}
        )
        r = cadet_magic.ask("Rows?", con=conn, model=model, fallback=False)
        first = r.attempts[0]
        assert first.outcome == "refused" and "not allowed" in first.error, first.error
        assert r.ok and r.rows == [(0,)]
        assert version not in repr(r.attempts)

    ip = ipython_shell
    ip.run_line_magic("load_ext", "cadet_magic")
    ip.user_ns["pg_con"] = conn
    ip.user_ns["pg_model"] = ScriptedModel(
        {"Rows?": [f"```sql\n{SERVER_INFO_SQL}\n```", "```sql\nSELECT count(*) AS n FROM t\n```"]}
    )
    assert ip.run_cell("%%ask --con pg_con --model pg_model --no-fallback\nRows?").success
    r = ip.user_ns["_ask"]
    assert r.attempts[0].outcome == "refused" and r.ok and version not in repr(r.attempts)
