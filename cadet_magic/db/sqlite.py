"""Runner for stdlib ``sqlite3`` connections (portable: works in Pyodide, no threads).

A file database is queried on a read-only connection of the agent's own
(``file:...?mode=ro``, ``PRAGMA query_only``, no ATTACH, a read-only authorizer and
a progress handler that stops it at the deadline), so the user's connection, its
authorizer, its progress handler and its transaction are never touched. An
in-memory database exists only inside the user's connection: there the query runs
on it, inside a savepoint that is always rolled back, under the same authorizer
and progress handler, which are removed afterwards (any the user had set are not
restored: sqlite3 cannot read them back).

Memory: no single value can exceed the run's byte budget (``SQLITE_LIMIT_LENGTH`` on the
connection, restored after the run: a longer string or blob fails with "string or blob too
big"), and where the SQLite library's C API is reachable (ctypes: CPython, not Pyodide)
SQLite's hard heap limit holds it to what it used before the run plus :func:`heap_budget`
(the limit is process-wide: SQLite work of other threads during the run shares it; it is
restored after). Time: the progress handler runs while rows are fetched too, so the limit
covers transfer as well as execution.
"""

from __future__ import annotations

import sqlite3
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

from cadet_magic.db.base import BaseRunner, RunControl, Statement
from cadet_magic.db.function_catalogs import (
    sqlite_function_allowed,
    sqlite_functions,
    with_functions,
)
from cadet_magic.db.reused_connections import Stamp, stamp, unchanging
from cadet_magic.db.session import DbSession, current
from cadet_magic.db.sqlite_errors import sqlite_error
from cadet_magic.errors import EngineError, ResultTooLarge
from cadet_magic.options import RESULT_BYTES
from cadet_magic.schema.samples import TIME_BUDGET, read_samples
from cadet_magic.schema.structure import Column, ForeignKey, Schema, Table
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.views import without_withheld

#: The one line for a value (or SQLite's heap during the run) beyond the budget.
TOO_BIG = (
    "A value of the result is larger than the result budget: ask for fewer or shorter values, "
    "or raise %config AskMagic.result_bytes."
)
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
# Recursive CTEs report SQLITE_RECURSIVE (33) on newer SQLite versions.
_ALLOWED_ACTIONS.add(getattr(sqlite3, "SQLITE_RECURSIVE", 33))


def read_only_authorizer(action: int, *args: object) -> int:
    """Allows reading; denies writes, schema changes, TEMP objects, ATTACH and PRAGMA, and
    calls of functions outside SQLite's own state-free built-ins."""
    if action == sqlite3.SQLITE_FUNCTION and not sqlite_function_allowed(args[1]):  # type: ignore[arg-type]
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY


def database_file(con: sqlite3.Connection) -> str | None:
    """The file of the connection's main database, or None when it lives in memory."""
    try:
        for _, name, file in con.execute("PRAGMA database_list"):
            if name == "main":
                return file or None
    except sqlite3.Error:
        return None
    return None


def open_read_only(
    path: str, timeout: float = 5.0, authorizer: bool = True, immutable: bool = False
) -> sqlite3.Connection:
    """A new connection that can only read ``path``: opened read-only by SQLite itself,
    ``query_only`` set, no database can be attached, the read-only authorizer installed
    (without ``authorizer``, for the catalog reads, which need PRAGMA). ``immutable`` tells
    SQLite the file cannot change while the connection is open: no locks, no look-up of a
    journal or change check before each statement (see :func:`unchanging`).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "t.db")
        >>> w = sqlite3.connect(path); _ = w.execute("CREATE TABLE t (x)"); w.close()
        >>> ro = open_read_only(path)
        >>> ro.execute("INSERT INTO t VALUES (1)")
        Traceback (most recent call last):
        ...
        sqlite3.DatabaseError: not authorized
    """
    con = sqlite3.connect(
        f"file:{quote(path)}?mode=ro" + ("&immutable=1" if immutable else ""),
        uri=True,
        timeout=timeout,
        isolation_level=None,
        check_same_thread=False,
    )
    con.execute("PRAGMA query_only = ON")
    if hasattr(con, "setlimit"):  # Python 3.11+
        con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    if authorizer:
        con.set_authorizer(read_only_authorizer)
    return con


def heap_budget(max_bytes: int | None) -> int:
    """Bytes SQLite may allocate during a run beyond what it held before: eight times the
    result budget, at least 256 MiB (sorting, grouping and window frames need room).

    Example:
        >>> heap_budget(64 * 2**20) // 2**20, heap_budget(2**20) // 2**20
        (512, 256)
    """
    budget = RESULT_BYTES if max_bytes is None else max_bytes
    return max(256 * 2**20, 8 * budget)


def _sqlite_c_api() -> Any:
    """``(sqlite3_memory_used, sqlite3_hard_heap_limit64)`` of the SQLite library the sqlite3
    module uses, or None (no ctypes, as in Pyodide, or a library without them)."""
    global _C_API
    if _C_API is False:
        try:
            import ctypes
            import importlib

            lib = ctypes.CDLL(importlib.import_module("_sqlite3").__file__)
            used = lib.sqlite3_memory_used
            used.restype, used.argtypes = ctypes.c_int64, []
            limit = lib.sqlite3_hard_heap_limit64
            limit.restype, limit.argtypes = ctypes.c_int64, [ctypes.c_int64]
            _C_API = (used, limit)
        except Exception:  # noqa: BLE001 - no C API here: the length limit still holds
            _C_API = None
    return _C_API


_C_API: Any = False


@contextmanager
def bounded_memory(con: sqlite3.Connection, max_bytes: int | None) -> Iterator[None]:
    """No value longer than the byte budget on ``con`` and SQLite's heap held to what it
    uses now plus :func:`heap_budget`, both restored afterwards."""
    budget = RESULT_BYTES if max_bytes is None else max_bytes
    old_length = None
    if hasattr(con, "setlimit"):  # Python 3.11+
        old_length = con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(2**20, budget))
    api = _sqlite_c_api()
    old_heap = None
    if api is not None:
        used, limit = api
        current_limit = limit(-1)
        wanted = used() + heap_budget(max_bytes)
        if current_limit <= 0 or wanted < current_limit:  # never raise the user's own limit
            old_heap = limit(wanted)
    try:
        yield
    finally:
        if old_heap is not None:
            api[1](old_heap)
        if old_length is not None:
            con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, old_length)


class SQLiteRunner(BaseRunner):
    """Runs checked SQL on a ``sqlite3.Connection`` without letting anything persist."""

    dialect = "sqlite"
    #: SQLite stops itself at the deadline (a progress handler): no watchdog thread, which
    #: Pyodide does not have.
    watched = False

    def __init__(
        self,
        connection: sqlite3.Connection,
        label: str = "sqlite3",
        session: DbSession | None = None,
    ) -> None:
        self.connection = connection
        self.label = label
        self.session = session or current()
        self._file: str | None | bool = False  # not looked up yet
        #: The agent's own read-only connections to a file database, opened once per runner (one
        #: question: schema, query, value checks), with the read-only authorizer (queries) and
        #: without it (catalog reads); closed with the runner. Each open reads the file's header
        #: and looks for its journal: in JupyterLite, where /drive is served by the page, a round
        #: of requests each time, so there they stay open in the session instead (below).
        self._opened: dict[bool, sqlite3.Connection] = {}
        weakref.finalize(self, _close_all, self._opened)
        #: In JupyterLite's drive the connections stay open in the session instead, for later
        #: questions, with the file's stamp (:mod:`cadet_magic.db.reused_connections`), read once per runner.
        self._stamp: Stamp | None | bool = False

    def _own(self, timeout: float, authorizer: bool = True) -> sqlite3.Connection | None:
        """The agent's own read-only connection for a file database; None in memory."""
        if self._file is False:
            self._file = database_file(self.connection)
        if not self._file:
            return None
        path = str(self._file)
        con = self._opened.get(authorizer)
        if con is None and unchanging(path):  # opened by an earlier question, file unchanged
            con = self.session.reused_connections.get(path, authorizer, self._file_stamp(path))
        if con is not None:  # this run's wait for a writer's lock
            con.set_authorizer(None)
            con.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if authorizer:
                con.set_authorizer(read_only_authorizer)
            return con
        try:
            con = open_read_only(path, timeout, authorizer, immutable=unchanging(path))
        except sqlite3.Error:  # e.g. a WAL database in a folder we cannot write to
            return None
        now = self._file_stamp(path) if unchanging(path) else None
        if now is not None:
            self.session.reused_connections.put(path, authorizer, now, con)
        else:
            self._opened[authorizer] = con
        return con

    def _file_stamp(self, path: str) -> Stamp | None:
        """The file's stamp, read once per runner (one question)."""
        if self._stamp is False:
            self._stamp = stamp(path)
        return None if isinstance(self._stamp, bool) else self._stamp

    def close(self) -> None:
        """Closes the agent's own connections (the user's is never closed)."""
        _close_all(self._opened)

    @contextmanager
    def transaction(self, timeout: float, control: RunControl) -> Iterator[sqlite3.Connection]:
        """The agent's own read-only connection (a file database), or the user's inside a
        savepoint that is rolled back (in memory); the read-only authorizer and a progress
        handler that stops the statement at the deadline are installed either way."""
        own = self._own(timeout)
        con = own if own is not None else self.connection
        user = own is None

        def progress() -> int:
            if time.monotonic() > control.deadline:
                control.fired.set()
                return 1
            return 0

        # the agent's own connection stays open for the runner's question (closed with it)
        if user:
            con.execute("SAVEPOINT cadet_magic")
        try:
            con.set_authorizer(read_only_authorizer)
            con.set_progress_handler(progress, 1000)
            with bounded_memory(con, control.max_bytes):
                yield con
        finally:
            con.set_progress_handler(None, 0)
            if user:
                con.set_authorizer(None)
                con.execute("ROLLBACK TO cadet_magic")
                con.execute("RELEASE cadet_magic")

    def execute(
        self, handle: sqlite3.Connection, sql: str | CheckedQuery, limit: int, control: RunControl
    ) -> Statement:
        cur = handle.execute(str(sql))
        return Statement([d[0] for d in cur.description or ()], cur.fetchmany, close=cur.close)

    def cancel(self, handle: sqlite3.Connection) -> None:
        handle.interrupt()

    def timed_out(self, error: BaseException, control: RunControl) -> bool:
        return isinstance(error, sqlite3.OperationalError) and control.fired.is_set()

    def user_interrupt(self, error: BaseException) -> bool:
        # Not our deadline: a Ctrl-C caught inside the progress handler, or another thread's
        # interrupt(). Either way the user stopped it.
        return isinstance(error, sqlite3.OperationalError) and str(error) == "interrupted"

    def engine_error(self, error: BaseException) -> EngineError:
        return sqlite_error(error)

    def failure(self, error: BaseException, control: RunControl) -> BaseException:
        if isinstance(error, sqlite3.DataError) and "too big" in str(error):
            return ResultTooLarge(TOO_BIG)  # a value longer than the byte budget
        return super().failure(error, control)

    def schema(self) -> Schema:
        """The schema with samples, read once per connection and again when it changes
        (for a file database, on the agent's own read-only connection)."""

        def on_own(read):
            def call():
                own = self._own(5.0, authorizer=False)
                return read(self.connection if own is None else own)

            return call

        return self.session.schema_cache.get(
            self.connection,
            on_own(sqlite_fingerprint),
            on_own(
                lambda con: without_withheld(
                    with_functions(sqlite_schema(con, samples=True), sqlite_functions(con)),
                    dict(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'")),
                )
            ),
        )


def _close_all(connections: dict[bool, sqlite3.Connection]) -> None:
    while connections:
        connections.popitem()[1].close()


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
    """Tables and views with columns, keys, each table's ``CREATE`` statement as SQLite keeps
    it, and (with ``samples``) a few values (SQLite has no comments).

    Example:
        >>> con = sqlite3.connect(":memory:")
        >>> _ = con.executescript("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT);"
        ...                       "INSERT INTO t VALUES (1, 'a'), (2, 'b');")
        >>> [(c.name, c.primary_key, c.samples) for c in sqlite_schema(con, True).table("t").columns]
        [('id', True, ()), ('s', False, ('a', 'b'))]
    """
    names = []
    views = set()
    statements: dict[str, str] = {}
    for name, kind, sql in con.execute(
        "SELECT name, type, sql FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
    ):
        names.append(name)
        if kind == "view":
            views.add(name)
        elif sql:
            statements[name] = str(sql)
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
        tables.append(
            Table(name=name, columns=cols, foreign_keys=foreign, ddl=statements.get(name))
        )
    schema = Schema(tables=tuple(tables), dialect="sqlite")
    if samples:
        with read_only(con, time_budget + 1.0):
            schema = read_samples(
                schema, lambda q: con.execute(q).fetchall(), skip=views, time_budget=time_budget
            )
    return schema
