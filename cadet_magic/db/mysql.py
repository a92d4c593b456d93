"""Runner for MySQL and MariaDB (edge: the driver is PyMySQL, imported lazily).

The user's connection is never used for the agent's statements: on MySQL/MariaDB, starting a
transaction inside the user's open one commits their pending work, and ``READ ONLY`` stops
DML but not DDL, files, locks or variables. So every statement runs on a connection of the
agent's own, opened with the same settings (SQLAlchemy's pool recipe, or the raw PyMySQL
connection's parameters), where:

- it runs in ``START TRANSACTION READ ONLY`` and is always rolled back;
- the server's own per-statement time limit stops it (``SET STATEMENT max_statement_time=N
  FOR ...`` on MariaDB, the session's ``max_execution_time`` on MySQL), and ``KILL QUERY``
  from a second connection stops it on Ctrl-C or when the watchdog fires; a statement that
  ignores both (a function that runs long inside one call, such as ``ENCRYPT`` with many
  rounds) gets ``KILL CONNECTION`` :data:`KILL_MARGIN` seconds later and the agent's socket is
  shut down, so the run ends at the limit plus about 1.5 s whatever the statement
  does; the next run opens a new connection. (The server may finish such a call in its
  killed thread: that time cannot be taken back, which is why the check refuses those
  functions.) The deadline covers fetching the rows as well as running the statement;
- rows stream through an unbuffered cursor, at most ``limit`` rows and about ``max_bytes``
  bytes reach the kernel (:func:`~cadet_magic.db.base.fetch_bounded`);
- the ``sql_mode`` flags that change how SQL text is read (``ANSI_QUOTES``,
  ``NO_BACKSLASH_ESCAPES``, ``PIPES_AS_CONCAT``, ``ORACLE`` ...) are cleared, so the server
  reads the text as the safety check did (the text that runs is written from the checked
  tree); whether the connection's own mode reads double quotes as names (``ANSI_QUOTES``) is
  noted first, and the check reads the model's ``"x"`` the way the user's session would;
- the character set is always ``utf8mb4``, whatever the user's connection uses (its
  ``charset``, ``init_command`` or ``SET NAMES``): in ``sjis``, ``cp932``, ``gbk``, ``big5``
  ... a byte of a character can be a backslash, so a literal the check reads as one string
  would end early on the server. The driver's encoding and the server's
  ``character_set_client/connection/results`` are verified after connecting; anything else
  is refused (:class:`~cadet_magic.errors.ConfigurationError`, one line).

The agent therefore does not see rows the user has not committed yet, and a ``USE`` on the
user's connection is not followed: the agent reads the database the connection was opened
with.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from cadet_magic.db.base import BaseRunner, RunControl, Statement
from cadet_magic.db.function_catalogs import with_functions
from cadet_magic.db.mysql_driver import (
    CHARSET,
    DRIVERS,
    TEXT_MODES,
    close_quietly,
    driver_cursor,
    is_pymysql,
    known_driver,
    pymysql_opener,
    shutdown_socket,
    sqlalchemy_opener,
    use_utf8mb4,
)
from cadet_magic.db.mysql_errors import mysql_errno, mysql_error
from cadet_magic.db.mysql_schema import (
    COLUMNS_SQL,
    FINGERPRINT_SQL,
    KEYS_SQL,
    TABLES_SQL,
    VIEWS_SQL,
    mysql_functions,
    mysql_schema_from_rows,
)
from cadet_magic.db.session import DbSession, current
from cadet_magic.errors import EngineError
from cadet_magic.schema.samples import TIME_BUDGET, read_samples
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.quotes import reads_ansi_quotes
from cadet_magic.sql.views import without_withheld

__all__ = [  # the connection helpers stay importable from here
    "CHARSET",
    "DRIVERS",
    "MySQLRunner",
    "is_pymysql",
    "known_driver",
    "mysql_functions",
    "mysql_schema_from_rows",
    "pymysql_opener",
    "runner_for_engine",
    "runner_for_pymysql",
    "sqlalchemy_opener",
    "use_utf8mb4",
]

#: Server errors of a statement stopped by its time limit (MariaDB, MySQL) or by KILL QUERY.
TIME_LIMIT_ERRORS = frozenset({1969, 3024})
KILLED_ERRORS = frozenset({1317})
#: Seconds after the watchdog's deadline (the limit + :data:`WATCHDOG_GRACE`) until the
#: connection itself is killed when ``KILL QUERY`` did not take.
WATCHDOG_GRACE = 0.5
KILL_MARGIN = 1.0
#: Client errors of a connection killed or shut down under a running statement.
LOST_ERRORS = frozenset({2013, 2006, 2055, 0})


class MySQLRunner(BaseRunner):
    """Runs checked SQL on MySQL or MariaDB, on connections of its own (see the module)."""

    dialect = "mysql"
    #: The server's own time limit comes first; the watchdog's KILL QUERY is the backstop.
    grace = WATCHDOG_GRACE

    def __init__(
        self,
        opener: Callable[[], Any],
        *,
        key: Any,
        label: str = "mysql",
        session: DbSession | None = None,
    ) -> None:
        self.session = session or current()
        self.label = label
        self._open = opener
        self._key = key  # the user's connection: the schema cache's key
        self._con: Any = None
        self._thread_id: int | None = None
        self.mariadb: bool | None = None
        #: The connection's ``sql_mode`` reads double quotes as names (read with the
        #: connection, before the text modes are cleared; the schema carries it to the check).
        self.ansi_quotes = False
        self._cut = False
        self._control: RunControl | None = None
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, close_quietly, [None])

    # -- the agent's connection ---------------------------------------------------------
    def _connection(self) -> Any:
        if self._con is not None:
            return self._con
        con = self._open()
        try:
            known_driver(con)
            cur = con.cursor()
            try:
                use_utf8mb4(con, cur)
                cur.execute("SELECT CONNECTION_ID(), VERSION(), @@SESSION.sql_mode")
                thread_id, version, mode = cur.fetchone()
                ansi = reads_ansi_quotes(str(mode or ""))
                kept = [m for m in str(mode or "").split(",") if m and m.upper() not in TEXT_MODES]
                cur.execute("SET SESSION sql_mode = %s", (",".join(kept),))
                cur.execute("SET SESSION autocommit = 0")
            finally:
                cur.close()
        except BaseException:
            close_quietly([con])
            raise
        self._con, self._thread_id = con, int(thread_id)
        self.mariadb = "mariadb" in str(version).lower()
        self.ansi_quotes = ansi
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, close_quietly, [con])
        return con

    def _discard(self, cur: Any = None) -> None:
        """Closes the agent's connection (after an interrupt or a cut-short stream)."""
        result = getattr(cur, "_result", None)
        if result is not None and hasattr(result, "unbuffered_active"):
            result.unbuffered_active = False  # PyMySQL: do not drain it on garbage collection
        con, self._con, self._thread_id = self._con, None, None
        if con is not None:
            close_quietly([con])

    def close(self) -> None:
        """Closes the agent's connection; the user's connection is never touched."""
        self._discard()

    def kill_query(self, what: str = "QUERY") -> None:
        """``KILL QUERY`` (or ``KILL CONNECTION``) for the agent's running statement, from a
        second connection."""
        thread_id = self._thread_id
        if thread_id is None:
            return
        try:
            other = self._open()
        except Exception:  # noqa: BLE001 - the server's own time limit still holds
            return
        try:
            cur = other.cursor()
            cur.execute(f"KILL {what} {int(thread_id)}")
            cur.close()
        except Exception:  # noqa: BLE001 - already finished
            pass
        finally:
            close_quietly([other])

    def kill_connection(self) -> None:
        """Ends the agent's connection under a statement that ignored ``KILL QUERY``: ``KILL
        CONNECTION`` on the server, and the socket shut down on this side (so the blocked
        read returns even when no second connection can be opened)."""
        con = self._con
        self.kill_query("CONNECTION")
        if con is not None:
            shutdown_socket(con)

    @contextlib.contextmanager
    def _transaction(self, timeout: float, unbuffered: bool = False) -> Iterator[Any]:
        """A cursor in a READ ONLY transaction on the agent's connection, rolled back after."""
        con = self._connection()
        cur = driver_cursor(con, unbuffered)
        self._cut = False
        clean = False
        try:
            if not self.mariadb:  # MySQL: the session's limit, in milliseconds
                cur.execute(f"SET SESSION max_execution_time = {max(1, int(timeout * 1000))}")
            cur.execute("START TRANSACTION READ ONLY")
            yield cur
            clean = not self._cut
        except Exception:
            clean = not self._cut  # the server's error ends the statement: the stream is clean
            raise
        finally:
            if clean:
                try:
                    cur.close()
                    con.rollback()
                except Exception:  # noqa: BLE001 - a broken connection: open a new one next time
                    self._discard(cur)
            else:  # interrupted, or rows left unread: never read the rest of that stream
                self._discard(cur)

    def _statement(self, sql: str, timeout: float) -> str:
        if self.mariadb:
            return f"SET STATEMENT max_statement_time={max(timeout, 0.001):.3f} FOR {sql}"
        return sql

    # -- the run's hooks (the skeleton is BaseRunner.run) --------------------------------

    @contextlib.contextmanager
    def transaction(self, timeout: float, control: RunControl) -> Iterator[Any]:
        """The agent's connection, one statement at a time, in a READ ONLY transaction with an
        unbuffered cursor, rolled back after."""
        with self._lock, self._transaction(timeout, unbuffered=True) as cur:
            self._control = control
            try:
                yield cur
            finally:
                self._control = None

    def execute(
        self, handle: Any, sql: str | CheckedQuery, limit: int, control: RunControl
    ) -> Statement:
        from cadet_magic.sql.limit import add_limit

        handle.execute(self._statement(add_limit(sql, self.target, limit + 1), control.timeout))
        return Statement([d[0] for d in handle.description or ()], handle.fetchmany)

    def fetched(self, handle: Any, why: str) -> None:
        if why == "bytes":
            self._cut = True  # the rest of the stream is not read

    def cancel(self, handle: Any) -> None:
        """The deadline: ``KILL QUERY``; when that has not taken :data:`KILL_MARGIN` seconds
        later (a statement that does not check for it between rounds), ``KILL CONNECTION``
        and the agent's socket shut down (the next run opens a new connection)."""
        self.kill_query()
        control = self._control
        if control is not None:
            self.session.watchdog.schedule(KILL_MARGIN, lambda: control.fire(self._hard_stop))

    def _hard_stop(self) -> None:
        self._cut = True  # never read from that connection again
        self.kill_connection()

    def interrupt(self, handle: Any) -> None:
        self._cut = True
        self.kill_query()

    def timed_out(self, error: BaseException, control: RunControl) -> bool:
        code = mysql_errno(error)
        fired = control.fired.is_set()
        if fired and code in LOST_ERRORS:
            self._cut = True  # the connection was lost at the deadline: not read from again
            return True
        return code in TIME_LIMIT_ERRORS or (code in KILLED_ERRORS and fired)

    def out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, MemoryError) or mysql_errno(error) in (1038, 5)

    def engine_error(self, error: BaseException) -> EngineError:
        return mysql_error(error)

    def schema(self) -> Schema:
        """Tables, views, columns, keys and comments of the connection's database (with sample
        values and the function catalog), cached while the catalog's fingerprint is unchanged;
        its ``ansi_quotes`` is this connection's (the mode is read when the connection opens,
        which reading the fingerprint or the schema does first)."""
        schema = self.session.schema_cache.get(self._key, self._fingerprint, self._read_schema)
        if schema.ansi_quotes != self.ansi_quotes:  # the server's mode changed since the read
            schema = replace(schema, ansi_quotes=self.ansi_quotes)
        return schema

    def _fingerprint(self) -> tuple | None:
        try:
            with self._lock, self._transaction(5.0) as cur:
                cur.execute(self._statement(FINGERPRINT_SQL, 5.0))
                return tuple(cur.fetchone())
        except Exception:  # noqa: BLE001 - cannot tell: read the schema again
            return None

    def _read_schema(self, time_budget: float = TIME_BUDGET) -> Schema:
        with self._lock, self._transaction(time_budget + 30.0) as cur:
            cur.execute(TABLES_SQL)
            table_rows = cur.fetchall()
            cur.execute(COLUMNS_SQL)
            col_rows = cur.fetchall()
            cur.execute(KEYS_SQL)
            key_rows = cur.fetchall()
            schema, views = mysql_schema_from_rows(table_rows, col_rows, key_rows)
            functions = mysql_functions(cur)
            cur.execute(VIEWS_SQL)
            definitions = {name: sql or "" for name, sql in cur.fetchall()}

            def fetch(sql: str) -> list:
                cur.execute(self._statement(sql, 5.0))
                return list(cur.fetchall())

            schema = replace(with_functions(schema, functions), ansi_quotes=self.ansi_quotes)
            schema = without_withheld(schema, definitions)
            return read_samples(schema, fetch, skip=views, time_budget=time_budget)


def runner_for_pymysql(con: Any, label: str | None = None) -> MySQLRunner:
    """A runner for a raw PyMySQL connection (the connection itself is never used)."""
    host = con.unix_socket or f"{con.host}:{con.port}"
    db = con.db.decode() if isinstance(con.db, bytes) else (con.db or "")
    user = con.user.decode() if isinstance(con.user, bytes) else con.user
    return MySQLRunner(
        pymysql_opener(con), key=con, label=label or f"mysql (PyMySQL) {user}@{host}/{db}"
    )


def runner_for_engine(connection: Any, label: str) -> MySQLRunner:
    """A runner for a SQLAlchemy connection to MySQL/MariaDB (the connection is never used:
    with PyMySQL its parameters are read, else the engine's pool recipe is copied)."""
    raw = connection.connection.dbapi_connection
    opener = pymysql_opener(raw) if is_pymysql(raw) else sqlalchemy_opener(connection.engine)
    return MySQLRunner(opener, key=connection, label=label)
