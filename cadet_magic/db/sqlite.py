"""Runner for stdlib ``sqlite3`` connections (portable: works in Pyodide, no threads).

The query runs inside a savepoint that is always rolled back, under an authorizer
that allows reads only, and a progress handler that stops it at the deadline.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

from cadet_magic.db.base import RunResult
from cadet_magic.db.cache import SCHEMA_CACHE
from cadet_magic.db.functions import sqlite_function_allowed, sqlite_functions, with_functions
from cadet_magic.errors import QueryTimeout
from cadet_magic.schema.model import Column, ForeignKey, Schema, Table
from cadet_magic.schema.samples import TIME_BUDGET, read_samples

_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
# Recursive CTEs report SQLITE_RECURSIVE (33) on newer SQLite versions.
_ALLOWED_ACTIONS.add(getattr(sqlite3, "SQLITE_RECURSIVE", 33))


def read_only_authorizer(action: int, *args: object) -> int:
    """Allows reading; denies writes, schema changes, TEMP objects, ATTACH and PRAGMA, and
    calls of functions outside SQLite's own state-free built-ins."""
    if action == sqlite3.SQLITE_FUNCTION and not sqlite_function_allowed(args[1]):  # type: ignore[arg-type]
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY


class SQLiteRunner:
    """Runs checked SQL on a ``sqlite3.Connection`` without letting anything persist."""

    dialect = "sqlite"

    def __init__(self, connection: sqlite3.Connection, label: str = "sqlite3") -> None:
        self.connection = connection
        self.label = label

    def run(self, sql: str, *, limit: int, timeout: float) -> RunResult:
        con = self.connection
        deadline = time.monotonic() + timeout
        timed_out = False

        def progress() -> int:
            nonlocal timed_out
            if time.monotonic() > deadline:
                timed_out = True
                return 1
            return 0

        t0 = time.perf_counter()
        con.execute("SAVEPOINT cadet_magic")
        cur = None
        try:
            con.set_authorizer(read_only_authorizer)
            con.set_progress_handler(progress, 1000)
            try:
                cur = con.execute(sql)
                rows = cur.fetchmany(limit + 1)
            except sqlite3.OperationalError as e:
                if timed_out:
                    raise QueryTimeout(timeout) from e
                if str(e) == "interrupted":
                    # Not our deadline: a Ctrl-C caught inside the progress handler, or
                    # another thread's interrupt(). Either way the user stopped it.
                    raise KeyboardInterrupt from e
                raise
            except KeyboardInterrupt:
                con.interrupt()
                raise
            columns = [d[0] for d in cur.description or ()]
        finally:
            if cur is not None:
                cur.close()
            con.set_progress_handler(None, 0)
            con.set_authorizer(None)
            con.execute("ROLLBACK TO cadet_magic")
            con.execute("RELEASE cadet_magic")
        truncated = len(rows) > limit
        return RunResult(
            columns, [tuple(r) for r in rows[:limit]], truncated, time.perf_counter() - t0, sql
        )

    def schema(self) -> Schema:
        """The schema with samples, read once per connection and again when it changes."""
        return SCHEMA_CACHE.get(
            self.connection,
            lambda: sqlite_fingerprint(self.connection),
            lambda: with_functions(
                sqlite_schema(self.connection, samples=True), sqlite_functions(self.connection)
            ),
        )


def sqlite_fingerprint(con: sqlite3.Connection) -> tuple | None:
    """``PRAGMA schema_version`` (bumped by every schema change) and the database's file."""
    try:
        version = con.execute("PRAGMA schema_version").fetchone()[0]
        files = tuple(r[2] for r in con.execute("PRAGMA database_list") if r[1] == "main")
    except sqlite3.Error:
        return None
    return version, files


@contextmanager
def read_only(con: sqlite3.Connection, timeout: float) -> Iterator[None]:
    """Reads only, inside a savepoint that is rolled back, stopped after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    con.execute("SAVEPOINT cadet_magic_schema")
    try:
        con.set_authorizer(read_only_authorizer)
        con.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
        yield
    finally:
        con.set_progress_handler(None, 0)
        con.set_authorizer(None)
        con.execute("ROLLBACK TO cadet_magic_schema")
        con.execute("RELEASE cadet_magic_schema")


def sqlite_schema(
    con: sqlite3.Connection, samples: bool = False, time_budget: float = TIME_BUDGET
) -> Schema:
    """Tables and views with columns, keys and (with ``samples``) a few values (SQLite has no comments).

    Example:
        >>> con = sqlite3.connect(":memory:")
        >>> _ = con.executescript("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT);"
        ...                       "INSERT INTO t VALUES (1, 'a'), (2, 'b');")
        >>> [(c.name, c.primary_key, c.samples) for c in sqlite_schema(con, True).table("t").columns]
        [('id', True, ()), ('s', False, ('a', 'b'))]
    """
    names = []
    views = set()
    for name, kind in con.execute(
        "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
    ):
        names.append(name)
        if kind == "view":
            views.add(name)
    tables = []
    for name in names:
        quoted = '"' + name.replace('"', '""') + '"'
        cols = tuple(
            Column(name=r[1], type=r[2] or "", primary_key=bool(r[5]))
            for r in con.execute(f"PRAGMA table_info({quoted})")
        )
        fks: dict[int, list] = {}
        for r in con.execute(f"PRAGMA foreign_key_list({quoted})"):
            fks.setdefault(r[0], []).append((r[3], r[2], r[4]))
        foreign = tuple(
            ForeignKey(tuple(c[0] for c in v), v[0][1], tuple(c[2] or "" for c in v))
            for v in fks.values()
        )
        tables.append(Table(name=name, columns=cols, foreign_keys=foreign))
    schema = Schema(tables=tuple(tables), dialect="sqlite")
    if samples:
        with read_only(con, time_budget + 1.0):
            schema = read_samples(
                schema, lambda q: con.execute(q).fetchall(), skip=views, time_budget=time_budget
            )
    return schema
