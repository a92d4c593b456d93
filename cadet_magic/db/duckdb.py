"""Runner for DuckDB connections (edge: imports nothing from duckdb at module import).

The query runs on a sibling cursor in its own READ ONLY transaction that is always
rolled back, so the user's connection (and any transaction it has open, even an
aborted one) is never touched and DuckDB itself refuses writes to the database.
DuckDB's own parser must see exactly one SELECT statement (or a PIVOT), and that parsed
statement is what runs: COPY ... TO, EXPORT DATABASE, SET/RESET/PRAGMA, ATTACH/DETACH,
INSTALL/LOAD, CALL, CHECKPOINT, VACUUM, CREATE SECRET, EXPLAIN, USE and stacked
statements never reach execution, whatever the safety check said; nor does a SELECT that, as
DuckDB's parser reads it, reads a file (``read_csv(...)``, ``FROM 'notes.csv'``: the user's
connection may have file access on). The watchdog
thread calls ``interrupt()`` at the deadline (also during the cleanup after a streamed
result); a KeyboardInterrupt does the same.

Memory: for a run the instance's ``memory_limit`` is lowered to what it uses now plus
:func:`~cadet_magic.db.sqlite.heap_budget` of the result budget and put back afterwards
(:mod:`cadet_magic.db.duckdb_memory`; skipped for a query that builds no state across rows),
so an aggregate, list, join or sort that would grow beyond it fails with DuckDB's
out-of-memory error, shown as one line. Values computed row by row outside DuckDB's buffer
manager (``repeat('x', 10^9)`` in each row of a vector, a window ``string_agg``) and the Python
objects of the rows fetched are not counted by it: on Linux the kernel process's data limit is
held at what it maps now plus that budget and :data:`DATA_SLACK` for the run
(:func:`~cadet_magic.db.oslimit.data_limit`), so such an allocation fails and ends the run in
one line too. A chunk is :data:`TEXT_CHUNK` rows when a column is not of a fixed size.

Time: DuckDB checks for an interrupt between vectors, so a statement busy inside one vector
(building huge values) outlives the watchdog's ``interrupt()``. The statement therefore runs
on a thread of its own and :meth:`DuckDBRunner.run` returns at the time limit plus
:data:`MARGIN` whatever the statement does: past it the run ends with the time limit's
error while the interrupted statement finishes its vector in the background (within the data
limit), rolls back and puts the settings back. The next run on the same connection waits for
it first (within its own time limit).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cadet_magic.db.base import BaseRunner, RunControl, Statement
from cadet_magic.db.bounded_fetch import FIRST_CHUNK, column_sizer
from cadet_magic.db.duckdb_defined import (
    defined_uses,
    engine_first,
    refuse_defined_calls,
    refuse_file_reads,
)
from cadet_magic.db.duckdb_memory import MemoryLimit, holds_state, size_bytes
from cadet_magic.db.duckdb_schema import (
    FINGERPRINT_SQL,
    duckdb_fingerprint,
    duckdb_schema,
    duckdb_view_definitions,
    rollback_quietly,
)
from cadet_magic.db.function_catalogs import duckdb_functions, with_functions
from cadet_magic.db.oslimit import data_limit
from cadet_magic.db.session import DbSession, current
from cadet_magic.errors import QueryTimeout, ResultTooLarge
from cadet_magic.runner import RunResult
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.functions import FunctionCatalog
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.target import Target
from cadet_magic.sql.views import without_withheld

__all__ = [  # the schema reading stays importable from here
    "FINGERPRINT_SQL",
    "DuckDBRunner",
    "duckdb_fingerprint",
    "duckdb_schema",
    "first_rows_sql",
    "only_select",
    "size_bytes",
]

#: Rows of the first fetch when a column holds text, blobs or nested values (each converted
#: to a Python object before it can be measured); later chunks follow the rows' average size.
TEXT_CHUNK = 1
#: Seconds a run may last past its time limit before it returns without the statement.
MARGIN = 1.0
#: Bytes the kernel may map during a run beyond the engine's heap budget (the rows fetched
#: as Python objects, the interpreter's own work meanwhile).
DATA_SLACK = 256 * 2**20
#: The thread of the latest run per connection (by ``id``): a run left running in the
#: background past its time limit is waited for before the next one starts.
_RUNNING: dict[int, threading.Thread] = {}
_RUNNING_LOCK = threading.Lock()


def _is_interrupt(error: BaseException) -> bool:
    return type(error).__name__ == "InterruptException" or "INTERRUPT" in str(error)


def _is_out_of_memory(error: BaseException) -> bool:
    return isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryException"


#: DuckDB column types whose Python values have a small fixed size.
_FIXED_TYPE = re.compile(
    r"(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|DOUBLE|FLOAT|REAL|DECIMAL\(.*\)|BOOLEAN|UUID|"
    r"INTERVAL|DATE|TIME( WITH TIME ZONE)?|TIMESTAMP(_S|_MS|_NS| WITH TIME ZONE)?)"
)


def duckdb_kind(type_name: object) -> str:
    """A DuckDB result column's type as ``"fixed"``, ``"text"`` or ``"other"`` (for sizing).

    Example:
        >>> [duckdb_kind(t) for t in ("BIGINT", "DECIMAL(10,2)", "VARCHAR", "INTEGER[]")]
        ['fixed', 'fixed', 'text', 'other']
    """
    name = str(type_name)
    if _FIXED_TYPE.fullmatch(name):
        return "fixed"
    if name in ("VARCHAR", "BLOB", "JSON") or name.startswith("ENUM("):
        return "text"
    return "other"


def only_select(con: Any, sql: str) -> Any:
    """DuckDB's own parse of ``sql``: its one statement when that is a SELECT (or a PIVOT).

    Raises:
        duckdb.PermissionException: for anything else (naming what DuckDB parsed), so it
            never runs.

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> str(only_select(con, "FROM range(3)").type)
        'StatementType.SELECT'
        >>> only_select(con, "COPY (SELECT 1) TO 'x.csv'")
        Traceback (most recent call last):
        ...
        _duckdb.PermissionException: Not run: DuckDB reads this as a COPY statement; only one SELECT (a query) can run here.
    """
    import duckdb

    statements = con.extract_statements(sql)
    kinds = [str(s.type).rsplit(".", 1)[-1] for s in statements]
    # MULTI is DuckDB's own expansion of a PIVOT whose columns are found at run time (a
    # query over the data, then the pivot); nothing of the text can be added to it.
    if kinds not in (["SELECT"], ["MULTI"]):
        what = " + ".join(kinds) if kinds else "nothing"
        raise duckdb.PermissionException(
            f"Not run: DuckDB reads this as {'an' if what[0] in 'AEIOU' else 'a'} {what} "
            "statement; only one SELECT (a query) can run here."
        )
    return statements[0]


class DuckDBRunner(BaseRunner):
    """Runs checked SQL on a native ``duckdb.DuckDBPyConnection``."""

    dialect = "duckdb"
    routes_ctrl_c = True
    #: The rows are in: whatever of the query still runs is interrupted so the cleanup is
    #: quick, and the deadline stays armed until the cleanup is over.
    cancel_during_cleanup = True

    def __init__(
        self,
        connection: Any,
        label: str = "duckdb (native connection)",
        session: DbSession | None = None,
    ) -> None:
        self.connection = connection
        self.label = label
        self.session = session or current()
        self.memory = MemoryLimit(connection)
        #: The cursor of the statement each run thread is running (by thread ident).
        self._cursors: dict[int, Any] = {}

    def run(
        self, sql: str | CheckedQuery, *, limit: int, timeout: float, max_bytes: int | None = None
    ) -> RunResult:
        """:meth:`BaseRunner.run` on a thread of its own, returning by ``timeout`` +
        :data:`MARGIN`; for the run the instance's ``memory_limit`` is lowered to what it uses
        + the heap budget (never above the user's own) and the process's data limit is held
        (see the module), both put back exactly after the statement ends."""
        from cadet_magic.db.sqlite import heap_budget

        key = id(self.connection)
        ends = time.monotonic() + timeout + MARGIN
        with _RUNNING_LOCK:
            previous = _RUNNING.get(key)
        if previous is not None and previous.is_alive():
            # The interrupted statement of an earlier run is finishing its vector.
            previous.join(max(0.0, ends - MARGIN - time.monotonic()))
            if previous.is_alive():
                raise QueryTimeout(timeout)
        done, gone = threading.Event(), threading.Event()
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                if gone.is_set():
                    return  # the caller stopped waiting before the statement began
                with data_limit(heap_budget(max_bytes) + DATA_SLACK):
                    before = self.memory.lower(heap_budget(max_bytes)) if holds_state(sql) else None
                    try:
                        box["result"] = BaseRunner.run(
                            self, sql, limit=limit, timeout=timeout, max_bytes=max_bytes
                        )
                    finally:
                        self.memory.restore(before)
            except MemoryError:
                box["error"] = ResultTooLarge()
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                box["error"] = e
            finally:
                done.set()

        thread = threading.Thread(target=work, name="cadet_magic-duckdb-run", daemon=True)
        with _RUNNING_LOCK:
            _RUNNING[key] = thread
        thread.start()
        try:
            finished = _wait(done, ends)
        except KeyboardInterrupt:
            gone.set()
            self._stop(thread)
            done.wait(MARGIN)
            raise
        if not finished:
            gone.set()
            self._stop(thread)
            raise QueryTimeout(timeout)
        with _RUNNING_LOCK:
            if _RUNNING.get(key) is thread:
                del _RUNNING[key]
        if "error" in box:
            raise box["error"]
        return box["result"]

    def _stop(self, thread: threading.Thread) -> None:
        """Interrupts the statement ``thread`` runs (its cursor, while it has one)."""
        cur = self._cursors.get(thread.ident or 0)
        if cur is not None:
            _interrupt(cur)

    @contextmanager
    def transaction(self, timeout: float, control: RunControl) -> Iterator[Any]:
        """A sibling cursor of the user's connection, inside a READ ONLY transaction we roll back.

        A cursor is a second connection to the same database (about 5 µs to open): the
        user's connection, its open transaction and its DuckDB 2.0 aborted state are never
        touched, and the query sees exactly what the schema read (also on a cursor) saw:
        the committed catalog, not the user's temporary tables.
        """
        cur = self.connection.cursor()
        try:
            cur.execute("BEGIN TRANSACTION READ ONLY")
        except Exception:
            cur.close()
            raise
        me = threading.get_ident()
        self._cursors[me] = cur
        try:
            yield cur
        finally:
            _interrupt(cur)
            rollback_quietly(cur)
            self._cursors.pop(me, None)
            cur.close()

    def execute(
        self, handle: Any, sql: str | CheckedQuery, limit: int, control: RunControl
    ) -> Statement:
        text = first_rows_sql(sql, limit + 1)
        statement = only_select(handle, text)
        refuse_file_reads(handle, text)  # the user's connection may have file access on
        catalog = self._catalog(sql)
        if catalog is not None and catalog.defined:
            engine_first(handle)
            refuse_defined_calls(handle, text, catalog)
        rel = handle.execute(statement)
        description = rel.description or ()
        kinds = [duckdb_kind(d[1]) for d in description]
        return Statement(
            [d[0] for d in description],
            rel.fetchmany,
            column_sizer(kinds),
            first=FIRST_CHUNK if set(kinds) <= {"fixed"} else TEXT_CHUNK,
        )

    def cancel(self, handle: Any) -> None:
        handle.interrupt()

    def timed_out(self, error: BaseException, control: RunControl) -> bool:
        return control.fired.is_set() and _is_interrupt(error)

    def user_interrupt(self, error: BaseException) -> bool:
        # DuckDB turns a Ctrl-C (SIGINT) during a query into this error.
        return "query interrupted" in str(error).lower()

    def out_of_memory(self, error: BaseException) -> bool:
        return _is_out_of_memory(error)

    def _catalog(self, sql: str | CheckedQuery) -> FunctionCatalog | None:
        """The function catalog a run is held to: the one ``sql`` was checked against (with
        the user's allowed names), else the connection's."""
        if isinstance(sql, CheckedQuery) and sql.target.functions is not None:
            return sql.target.functions
        return self.schema().functions

    def schema(self) -> Schema:
        """The schema with samples, read once per connection and again when the catalog changes."""
        return self.session.schema_cache.get(
            self.connection, lambda: duckdb_fingerprint(self.connection), self._read_schema
        )

    def _read_schema(self) -> Schema:
        """The function catalog first: the relations that call a function the database
        defines are neither sampled nor shown (:func:`defined_uses`)."""
        functions = duckdb_functions(self.connection)
        defining = functions is not None and bool(functions.defined)
        calling = defined_uses(self.connection, functions)
        schema = duckdb_schema(
            self.connection,
            samples=True,
            watchdog=self.session.watchdog,
            withheld=calling,
            own_functions_first=defining,
        )
        return without_withheld(
            with_functions(schema, functions), duckdb_view_definitions(self.connection), calling
        )


#: Text that may hold an ORDER BY (a false positive only costs a parse).
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def first_rows_sql(sql: str | CheckedQuery, n: int) -> str:
    """The SQL to run for its first ``n`` rows.

    DuckDB streams a result and ``fetchmany`` stops the pipeline early, so a query without
    ORDER BY runs as it is. With an ORDER BY the row limit goes into the SQL (on the syntax
    tree): the engine then keeps the top ``n`` rows instead of sorting everything, which is
    what keeps a sorted 10^7-row result cheap.

    Example:
        >>> first_rows_sql("SELECT * FROM t", 11)
        'SELECT * FROM t'
        >>> first_rows_sql("SELECT * FROM t ORDER BY x DESC", 11)
        'SELECT * FROM t ORDER BY x DESC LIMIT 11'
    """
    from cadet_magic.sql.limit import add_limit

    return add_limit(sql, _DUCKDB, n) if _ORDER_BY.search(str(sql)) else str(sql)


#: What a DuckDB runner runs on (its dialect resolved once).
_DUCKDB = Target.named("duckdb")


def _wait(done: threading.Event, ends: float) -> bool:
    """Waits for ``done`` until the monotonic time ``ends``, in slices short enough that a
    Ctrl-C arriving meanwhile is raised at once (whether or not it woke the wait)."""
    while not done.is_set():
        left = ends - time.monotonic()
        if left <= 0:
            return False
        done.wait(min(left, 0.05))
    return True


def _interrupt(con: Any) -> None:
    try:
        con.interrupt()
    except Exception:  # noqa: BLE001 - nothing running
        pass
