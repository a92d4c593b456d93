"""The agent's own read-only SQLite connection, and when it is opened immutable (JupyterLite's
drive, where each of SQLite's look-ups on the file is a request to the page)."""

from __future__ import annotations

import sqlite3

import pytest

from cadet_magic import lite
from cadet_magic.db import sqlite as db


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
