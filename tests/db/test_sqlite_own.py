"""The agent's own read-only SQLite connection, and when it is opened immutable (JupyterLite's
drive, where each of SQLite's look-ups on the file is a request to the page)."""

from __future__ import annotations

import os
import sqlite3

import pytest

from cadet_magic import lite
from cadet_magic.db import sqlite as db
from cadet_magic.db.session import DbSession
from cadet_magic.errors import EngineError


@pytest.fixture
def shop(tmp_path):
    path = tmp_path / "shop.sqlite"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2);")
    con.commit()
    con.close()
    return str(path)


@pytest.mark.parametrize("immutable", [False, True])
def test_own_connection_reads_and_refuses_writes(shop, immutable):
    con = db.open_read_only(shop, immutable=immutable)
    try:
        assert con.execute("SELECT count(*) FROM t").fetchone() == (2,)
        with pytest.raises(sqlite3.DatabaseError):
            con.execute("INSERT INTO t VALUES (3)")
    finally:
        con.close()
    assert sqlite3.connect(shop).execute("SELECT count(*) FROM t").fetchone() == (2,)


@pytest.mark.parametrize(
    ("pyodide", "path", "expected"),
    [
        (True, "/drive/shop.sqlite", True),
        (True, "/drive/data/shop.sqlite", True),
        (True, "/tmp/shop.sqlite", False),  # the kernel's own memory file system: no requests
        (True, "/drivers.sqlite", False),
        (False, "/drive/shop.sqlite", False),  # CPython: another process may write the file
    ],
)
def test_immutable_only_on_jupyterlites_drive(monkeypatch, pyodide, path, expected):
    monkeypatch.setattr(lite, "in_pyodide", lambda: pyodide)
    assert db.unchanging(path) is expected


@pytest.fixture
def on_drive(monkeypatch):
    """Every file counts as JupyterLite's drive (connections immutable and reused); the opens of
    the agent's own connections are counted."""
    opened = []
    real = db.open_read_only

    def counted(*args, **kwargs):
        opened.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(db, "unchanging", lambda path: True)
    monkeypatch.setattr(db, "open_read_only", counted)
    return opened


def question(user: sqlite3.Connection, session: DbSession) -> list:
    """What one question does with the database: the schema, a query; then its runner ends."""
    runner = db.SQLiteRunner(user, session=session)
    try:
        runner.schema()
        return runner.run("SELECT x FROM t ORDER BY x", limit=10, timeout=5.0).rows
    finally:
        runner.close()


def test_drive_connections_are_reused_between_questions(shop, on_drive):
    user, session = sqlite3.connect(shop), DbSession()
    assert question(user, session) == [(1,), (2,)]
    assert len(on_drive) == 2  # one for the catalog, one for the queries
    assert question(user, session) == [(1,), (2,)]
    assert question(user, session) == [(1,), (2,)]
    assert len(on_drive) == 2  # none opened again
    assert question(user, DbSession()) == [(1,), (2,)]
    assert len(on_drive) == 4  # another session keeps its own
    assert user.in_transaction is False
    assert user.execute("SELECT count(*) FROM t").fetchone() == (2,)


def test_a_changed_file_is_opened_again(shop, on_drive):
    user, session = sqlite3.connect(shop), DbSession()
    assert question(user, session) == [(1,), (2,)]
    writer = sqlite3.connect(shop)
    writer.execute("INSERT INTO t VALUES (3)")
    writer.commit()
    writer.close()
    os.utime(shop, ns=(1, 1))  # a new stamp even where the clock is coarse
    assert question(user, session) == [(1,), (2,), (3,)]
    assert len(on_drive) == 4


def test_reused_connections_still_refuse_writes(shop, on_drive):
    user, session = sqlite3.connect(shop), DbSession()
    question(user, session)
    runner = db.SQLiteRunner(user, session=session)
    with pytest.raises(EngineError, match="not authorized"):
        runner.run("INSERT INTO t VALUES (9)", limit=10, timeout=5.0)
    runner.close()
    assert question(user, session) == [(1,), (2,)]


def test_outside_the_drive_each_question_opens_its_own(shop, monkeypatch):
    opened = []
    real = db.open_read_only
    monkeypatch.setattr(db, "open_read_only", lambda *a, **k: opened.append(a) or real(*a, **k))
    user, session = sqlite3.connect(shop), DbSession()
    question(user, session)
    question(user, session)
    assert len(opened) == 4 and len(session.reused_connections) == 0
