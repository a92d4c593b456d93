"""What a query reads through a view is checked as what it reads directly: a view whose
definition (from the engine's catalog) the safety check refuses is withheld from the schema,
the prompt, the ``stats`` figures and the check's known tables. Real engines, **scripted**
hostile models (the attacker's choice of replies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.api import ask
from tests.helpers import CountingModel, fake_model, sql_reply

SECRET = "PRIVATE-KEY-LINE-7f3a"

#: The hostile model's replies: each would read the file through the view were it run.
HOSTILE = [
    "SELECT note FROM notes",
    "SELECT CAST(note AS INTEGER) AS n FROM notes",
    "SELECT count(*) AS n FROM main.notes",
    "SELECT * FROM deeper",
]


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "home" / ".ssh" / "id_ed25519"
    path.parent.mkdir(parents=True)
    path.write_text(f"{SECRET}\n")
    return path


def duckdb_file(tmp_path: Path, secret: Path):
    """A DuckDB file someone sent: a table, an honest view, a view reading a file and a view
    over that view; opened as a user would open it."""
    import duckdb

    path = tmp_path / "sent.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE orders (id INTEGER, amount DOUBLE)")
    con.execute("INSERT INTO orders VALUES (1, 10), (2, 32.5)")
    con.execute("CREATE VIEW totals AS SELECT sum(amount) AS total FROM orders")
    con.execute(f"CREATE VIEW notes AS SELECT content AS note FROM read_text('{secret}')")
    con.execute("CREATE VIEW deeper AS SELECT note FROM notes")
    con.close()
    return duckdb.connect(str(path))


def everything_sent(result) -> str:
    """All the model was sent and all the user's record keeps."""
    return json.dumps([result.prompts, result.provenance], default=str)


@pytest.mark.parametrize("share", ["schema", "stats", "samples"])
@pytest.mark.parametrize("reply", HOSTILE)
def test_a_view_reading_a_file_is_withheld_on_duckdb(tmp_path, secret, share, reply):
    con = duckdb_file(tmp_path, secret)
    model = CountingModel(fake_model(*[sql_reply(reply)] * 4))
    r = ask("What is written there?", con=con, model=model, share=share, fallback=False)
    assert not r.ok
    assert SECRET not in everything_sent(r)
    assert all(SECRET not in (a.error or "") for a in r.all_attempts)  # nor in the panel
    first = "\n".join(m[1] for m in model.prompts[0])
    assert "notes" not in first and "deeper" not in first and "totals" in first
    assert r.attempts[0].outcome == "refused"


def test_an_honest_view_still_answers_and_the_user_is_told(tmp_path, secret, caplog):
    con = duckdb_file(tmp_path, secret)
    model = CountingModel(fake_model(sql_reply("SELECT total FROM totals")))
    with caplog.at_level("WARNING", logger="cadet_magic"):
        r = ask("Total?", con=con, model=model)
    assert r.ok and r.rows == [(42.5,)]
    said = " ".join(rec.getMessage() for rec in caplog.records).lower()
    assert "view notes" in said and "view deeper" in said and "read_text" in said
    # the user's own connection still reads the view (nothing was changed on it)
    assert con.execute("SELECT note FROM notes").fetchone()[0].startswith(SECRET)


def test_sqlite_an_application_function_in_a_view_is_withheld(secret):
    """In-memory SQLite: a function registered on the user's connection (it reads files) is
    called by a view: the view is withheld, and SQLite's authorizer denies the call anyway."""
    import sqlite3

    con = sqlite3.connect(":memory:")
    con.create_function("readfile", 1, lambda p: Path(p).read_text())
    con.execute("CREATE TABLE orders (id INTEGER, amount REAL)")
    con.execute(f"CREATE VIEW notes AS SELECT readfile('{secret}') AS note")
    con.execute("CREATE VIEW deeper AS SELECT note FROM notes")
    for share in ("schema", "stats", "samples"):
        model = CountingModel(fake_model(*[sql_reply(r) for r in HOSTILE[:2]] * 2))
        r = ask("What is written there?", con=con, model=model, share=share, fallback=False)
        assert not r.ok and SECRET not in everything_sent(r)
        assert "notes" not in model.prompts[0][0][1] and "orders" in model.prompts[0][0][1]


def test_postgres_views_and_file_foreign_tables_are_withheld(pg_url):
    """A view calling pg_read_file and a file_fdw foreign table (the server reads the file as
    the query runs): both withheld; the model's queries naming them are refused."""
    import sqlalchemy as sa

    engine = sa.create_engine(pg_url)
    with engine.begin() as c:
        data = c.execute(sa.text("SHOW data_directory")).scalar()
    Path(data, "cadet_secret.txt").write_text(f"{SECRET}\n")
    statements = [
        "DROP VIEW IF EXISTS deeper, notes",
        "DROP FOREIGN TABLE IF EXISTS keys",
        "CREATE EXTENSION IF NOT EXISTS file_fdw",
        "DROP SERVER IF EXISTS files CASCADE",
        "CREATE SERVER files FOREIGN DATA WRAPPER file_fdw",
        f"CREATE FOREIGN TABLE keys (line text) SERVER files OPTIONS (filename "
        f"'{data}/cadet_secret.txt')",
        "CREATE VIEW notes AS SELECT pg_read_file('cadet_secret.txt') AS note",
        "CREATE VIEW deeper AS SELECT note FROM notes",
        "CREATE TABLE IF NOT EXISTS view_orders (id integer, amount numeric)",
    ]
    with engine.begin() as c:
        for s in statements:
            c.execute(sa.text(s))
        assert SECRET in c.execute(sa.text("SELECT line FROM keys")).scalar()  # it would leak
    try:
        with engine.connect() as con:
            for share in ("schema", "stats", "samples"):
                replies = [*HOSTILE[:2], "SELECT line FROM keys"]
                model = CountingModel(fake_model(*[sql_reply(x) for x in replies]))
                r = ask(
                    "What is written there?",
                    con=con,
                    model=model,
                    share=share,
                    fallback=False,
                    max_attempts=3,
                )
                assert not r.ok and SECRET not in everything_sent(r)
                assert all(a.outcome == "refused" for a in r.attempts)
                system = model.prompts[0][0][1]
                assert "view_orders" in system
                assert all(n not in system for n in ("notes", "deeper", "keys"))
    finally:
        with engine.begin() as c:
            for s in (
                "DROP VIEW deeper, notes",
                "DROP SERVER files CASCADE",
                "DROP TABLE view_orders",
            ):
                c.execute(sa.text(s))
        engine.dispose()


def test_mariadb_a_view_reading_a_file_or_who_is_connected_is_withheld(mysql_url):
    import sqlalchemy as sa

    engine = sa.create_engine(mysql_url)
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE orders (id INT, amount DECIMAL(8,2))"))
        c.execute(sa.text("CREATE VIEW notes AS SELECT LOAD_FILE('/etc/hostname') AS note"))
        c.execute(sa.text("CREATE VIEW home AS SELECT CURRENT_USER() AS note"))
        c.execute(sa.text("CREATE VIEW deeper AS SELECT note FROM notes"))
        c.execute(sa.text("CREATE VIEW totals AS SELECT sum(amount) AS total FROM orders"))
        user = c.execute(sa.text("SELECT CURRENT_USER()")).scalar()
        hostname = c.execute(sa.text("SELECT LOAD_FILE('/etc/hostname')")).scalar()
    try:
        with engine.connect() as con:
            replies = ["SELECT note FROM notes", "SELECT note FROM home", "SELECT * FROM deeper"]
            model = CountingModel(fake_model(*[sql_reply(x) for x in replies]))
            r = ask(
                "What is written there?",
                con=con,
                model=model,
                share="stats",
                fallback=False,
                max_attempts=3,
            )
            sent = everything_sent(r)
            assert not r.ok and user not in sent and (not hostname or str(hostname) not in sent)
            assert all(a.outcome == "refused" for a in r.attempts)
            system = model.prompts[0][0][1]
            assert "totals" in system and all(n not in system for n in ("notes", "home"))
    finally:
        engine.dispose()


@pytest.mark.spark
def test_spark_a_persistent_view_calling_reflect_is_withheld(spark):
    """A view in the metastore calls reflect (any static Java method): its text, from the
    catalog, is refused by the check, so the view is withheld. (Temporary views have no text in
    the catalog: they are made by code run in the user's own session and are not re-checked.)"""
    spark.sql("CREATE TABLE IF NOT EXISTS view_orders (id INT, amount DOUBLE) USING parquet")
    spark.sql(
        "CREATE OR REPLACE VIEW view_home AS "
        "SELECT reflect('java.lang.System', 'getProperty', 'user.home') AS note FROM view_orders"
    )
    spark.sql("CREATE OR REPLACE VIEW view_totals AS SELECT sum(amount) AS t FROM view_orders")
    home = spark.sql("SELECT reflect('java.lang.System', 'getProperty', 'user.home')").first()[0]
    try:
        replies = ["SELECT note FROM view_home", "SELECT 'x' || note AS n FROM view_home"]
        model = CountingModel(fake_model(*[sql_reply(x) for x in replies]))
        r = ask(
            "What is written there?",
            con=spark,
            model=model,
            share="stats",
            fallback=False,
            max_attempts=2,
        )
        assert not r.ok and all(a.outcome == "refused" for a in r.attempts)
        assert f'"{home}' not in everything_sent(r) and f"'{home}" not in everything_sent(r)
        system = model.prompts[0][0][1]
        assert "view_totals" in system and "view_home" not in system
    finally:
        spark.sql("DROP VIEW IF EXISTS view_home")
        spark.sql("DROP VIEW IF EXISTS view_totals")
