"""The database an MCP server answers about, opened read-only from ``--db`` (edge: duckdb and
SQLAlchemy imported when needed).

``--db`` is a file path (a DuckDB or SQLite database, told apart by the file's header) or a
URL: ``duckdb:///PATH`` and ``sqlite:///PATH`` open the file natively, any other URL is a
SQLAlchemy engine (``postgresql+psycopg://...``, ``mysql+pymysql://...``). Files are opened
read-only (DuckDB ``read_only`` with file access off, SQLite ``mode=ro``), beneath the
runners' own read-only transactions: the server cannot write to them even past its checks.

Example:
    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.db")
    >>> sqlite3.connect(path).execute("CREATE TABLE t (x INT)").connection.commit()
    >>> con = open_database(path)
    >>> con.execute("SELECT count(*) FROM t").fetchall()
    [(0,)]
    >>> con.execute("INSERT INTO t VALUES (1)")
    Traceback (most recent call last):
    ...
    sqlite3.OperationalError: attempt to write a readonly database
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cadet_magic.errors import NoConnectionError

#: The first bytes of a SQLite database file; a DuckDB file holds ``DUCK`` at offset 8.
SQLITE_HEADER = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"


def kind_of(path: Path) -> str:
    """``"sqlite"`` or ``"duckdb"``, read from the file's header (its name when it is empty).

    Raises:
        NoConnectionError: the file is missing, a folder, or neither kind.
    """
    if not path.is_file():
        raise NoConnectionError(
            f"--db {path}: no such database file (give a DuckDB or SQLite file, or a URL)."
        )
    with path.open("rb") as f:
        head = f.read(16)
    if head.startswith(SQLITE_HEADER):
        return "sqlite"
    if head[8:12] == DUCKDB_MAGIC:
        return "duckdb"
    if not head and path.suffix.lower() in (".db", ".sqlite", ".sqlite3"):
        return "sqlite"
    raise NoConnectionError(
        f"--db {path}: neither a DuckDB nor a SQLite database (give one of those, or a "
        "SQLAlchemy URL such as postgresql+psycopg://user@host/db)."
    )


def open_file(path: Path, kind: str) -> Any:
    """``path`` opened read-only as a ``kind`` database."""
    if kind == "duckdb":
        import duckdb

        return duckdb.connect(str(path), read_only=True, config={"enable_external_access": False})
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, check_same_thread=False)


def open_database(spec: str) -> Any:
    """The connection ``--db spec`` names (see the module), read-only where the engine can be."""
    for scheme, kind in (("duckdb:///", "duckdb"), ("sqlite:///", "sqlite")):
        if spec.startswith(scheme):
            path = Path(spec.removeprefix(scheme)).expanduser()
            if kind_of(path) != kind:
                raise NoConnectionError(f"--db {spec}: the file is not a {kind} database.")
            return open_file(path, kind)
    if "://" in spec:
        from sqlalchemy import create_engine

        try:
            return create_engine(spec)
        except Exception as e:  # noqa: BLE001 - a bad URL or a missing driver: one line
            raise NoConnectionError(f"--db {spec}: {type(e).__name__}: {e}") from None
    path = Path(spec).expanduser()
    return open_file(path, kind_of(path))
