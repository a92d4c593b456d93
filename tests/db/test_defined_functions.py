"""Functions the database defines itself never run inside an agent's query unless the user
allowed them by name: a crafted DuckDB file whose macros stand for the names DuckDB binds
operators and aggregates to (``count_star``, ``||``, ``~~``, ``+``, ``date_part``,
``list_value``) and read a key file; a Python function registered on the connection; a
PostgreSQL database with functions and an operator of its own. Real engines, **scripted**
models (the attacker's choice of replies), table-driven from ``defined_function_runs.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.api import ask
from tests.helpers import CountingModel, fake_model, sql_reply

DATA = json.loads(Path(__file__).with_name("defined_function_runs.json").read_text())
SECRET = "KEY-FILE-LINE-93c1"


@pytest.fixture
def hostile_file(tmp_path: Path):
    """The DuckDB file as it was sent, opened read-only as a user opens a shipped file, with a
    Python function the user registered on the connection."""
    import duckdb

    key = tmp_path / "home" / ".ssh" / "id_ed25519"
    key.parent.mkdir(parents=True)
    key.write_text(SECRET + "\n")
    path = tmp_path / "sent.duckdb"
    con = duckdb.connect(str(path))
    for statement in DATA["macros"]:
        con.execute(statement.replace("{key}", str(key)))
    for statement in DATA["relations"]:
        con.execute(statement)
    con.close()
    con = duckdb.connect(str(path), read_only=True)
    con.create_function("pyf", lambda s: f"{s}!", ["VARCHAR"], "VARCHAR")
    # On the user's own connection the file's macros do run: that is what the agent avoids.
    assert SECRET in str(con.execute("SELECT count(*) FROM customers").fetchone()[0])
    yield con
    con.close()


def everything(result) -> str:
    """All the model was sent, every attempt's record and the answer."""
    return json.dumps(
        [result.prompts, result.provenance, [a.__dict__ for a in result.all_attempts]],
        default=str,
    ) + repr(result.rows)


def _asked(con, sql: str, **options):
    model = CountingModel(fake_model(*[sql_reply(sql)] * 4))
    return ask("What does the data say?", con=con, model=model, fallback=False, **options)


@pytest.mark.parametrize("share", ["schema", "samples"])
@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: c["sql"][:60])
def test_duckdb_runs_only_its_own_functions(hostile_file, case, share):
    r = _asked(hostile_file, case["sql"], share=share, max_attempts=1)
    assert SECRET not in everything(r)
    if "rows" in case:
        assert r.ok, r.attempts[-1].error
        assert [list(row) for row in r.rows] == case["rows"]
    else:
        assert not r.ok
        assert r.attempts[-1].outcome == "refused", r.attempts[-1].error
        assert case["refused"] in (r.attempts[-1].error or "")


def test_relations_calling_defined_functions_are_withheld_and_never_sampled(hostile_file):
    from cadet_magic.db.duckdb import DuckDBRunner

    schema = DuckDBRunner(hostile_file).schema()
    names = {t.name for t in schema.tables}
    assert names == {"customers", "plain"}
    said = " ".join(schema.withheld)
    assert all(name in said for name in DATA["withheld"])
    assert SECRET not in json.dumps([str(t) for t in schema.tables]) + said
    # a name DuckDB has stays allowed (its own function is bound first); the file's own are not
    assert {"count_star", "lower", "||"} <= schema.functions.shadowed
    assert {"fmt", "leak", "pyf"} <= schema.functions.defined - schema.functions.shadowed
    assert not {"fmt", "leak", "pyf"} & schema.functions.allowed


@pytest.mark.parametrize("case", DATA["allowed"], ids=lambda c: c["sql"][:60])
def test_a_function_the_user_allowed_by_name_runs(hostile_file, case):
    r = _asked(hostile_file, case["sql"], allow_functions=case["allow"], max_attempts=1)
    assert SECRET not in everything(r)
    if "rows" in case:
        assert r.ok and [list(row) for row in r.rows] == case["rows"]
    else:
        assert not r.ok and case["refused"] in (r.attempts[-1].error or "")


@pytest.mark.parametrize("sql", DATA["runner"])
def test_the_runner_refuses_what_the_check_would_have_refused(hostile_file, sql):
    """Past the check (text given to the runner directly): DuckDB's own parser lists what
    the statement calls, and a defined function does not run."""
    from cadet_magic.db.duckdb import DuckDBRunner
    from cadet_magic.errors import EngineError

    runner = DuckDBRunner(hostile_file)
    with pytest.raises(EngineError) as raised:
        runner.run(sql, limit=10, timeout=5)
    assert str(raised.value).startswith("Not run:")
    assert SECRET not in str(raised.value)


def test_the_result_checks_probes_run_checked(hostile_file):
    """A value that does not occur makes the result check probe the column with LOWER and
    TRIM, which the file redefines: the probes are checked and bound to DuckDB's own."""
    r = _asked(hostile_file, "SELECT name FROM customers WHERE city = 'Paris'", max_attempts=1)
    assert SECRET not in everything(r)
    assert any("paris" in w for w in r.warnings + [a.feedback or "" for a in r.all_attempts])


def test_the_users_connection_is_left_as_it_was(hostile_file):
    before = hostile_file.execute("SELECT current_setting('search_path')").fetchone()
    r = _asked(hostile_file, "SELECT count(*) AS n FROM customers")
    assert r.ok
    assert hostile_file.execute("SELECT current_setting('search_path')").fetchone() == before


PG_SETUP = [
    "CREATE SCHEMA own",
    "CREATE TABLE own.items (id integer, label text)",
    "INSERT INTO own.items VALUES (1, 'a'), (2, 'b')",
    "CREATE FUNCTION own.note() RETURNS text LANGUAGE sql STABLE AS $$ SELECT 'PG-SECRET' $$",
    "CREATE FUNCTION own.upper(integer) RETURNS text LANGUAGE sql IMMUTABLE "
    "AS $$ SELECT 'PG-SECRET' $$",
    "CREATE FUNCTION own.same(text, text) RETURNS boolean LANGUAGE sql IMMUTABLE "
    "AS $$ SELECT true $$",
    "CREATE OPERATOR own.&& (LEFTARG = text, RIGHTARG = text, FUNCTION = own.same)",
    "CREATE VIEW own.noted AS SELECT own.note() AS n",
]


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT label FROM items ORDER BY id", [("a",), ("b",)]),
        ("SELECT note() AS n", "defined by this database"),
        ("SELECT upper(id) AS u FROM items", "defined by this database"),
        ("SELECT label FROM items WHERE label && 'x'", "operator &&"),
        ("SELECT n FROM noted", "noted"),
    ],
)
def test_postgres_functions_and_operators_of_the_database(pg_url, sql, expected):
    import sqlalchemy as sa

    engine = sa.create_engine(pg_url)
    with engine.begin() as c:
        c.execute(sa.text("DROP SCHEMA IF EXISTS own CASCADE"))
        for statement in PG_SETUP:
            c.execute(sa.text(statement))
    try:
        with engine.connect() as con:
            con.execute(sa.text("SET search_path = own, public"))
            r = _asked(con, sql, max_attempts=1)
            assert "PG-SECRET" not in everything(r)
            if isinstance(expected, list):
                assert r.ok and [tuple(row) for row in r.rows] == expected
            else:
                assert not r.ok and expected in (r.attempts[-1].error or "")
            con.rollback()
    finally:
        with engine.begin() as c:
            c.execute(sa.text("DROP SCHEMA own CASCADE"))
        engine.dispose()
