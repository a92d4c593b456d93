"""Runner for DuckDB connections (edge: imports nothing from duckdb at module import).

The query runs in its own transaction that is always rolled back, which also
clears DuckDB 2.0's aborted-transaction state after a failure. A timer thread
calls ``interrupt()`` at the deadline; a KeyboardInterrupt does the same.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from cadet_magic.db.base import RunResult
from cadet_magic.errors import QueryTimeout
from cadet_magic.schema.model import Column, ForeignKey, Schema, Table


def _is_interrupt(error: BaseException) -> bool:
    return type(error).__name__ == "InterruptException" or "INTERRUPT" in str(error)


class DuckDBRunner:
    """Runs checked SQL on a native ``duckdb.DuckDBPyConnection``."""

    dialect = "duckdb"

    def __init__(self, connection: Any, label: str = "duckdb (native connection)") -> None:
        self.connection = connection
        self.label = label

    def _begin(self) -> tuple[Any, bool]:
        """The connection to run on and whether we opened (and must roll back) its transaction."""
        con = self.connection
        # Inside an explicit transaction txid_current() stays the same; a failing BEGIN would
        # abort the user's transaction on DuckDB 2.0, so look before starting ours.
        first = con.execute("SELECT txid_current()").fetchone()
        if con.execute("SELECT txid_current()").fetchone() != first:
            con.execute("BEGIN TRANSACTION")
            return con, True
        # The user has a transaction open: leave it alone and use a sibling connection.
        cur = con.cursor()
        cur.execute("BEGIN TRANSACTION")
        return cur, True

    def run(self, sql: str, *, limit: int, timeout: float) -> RunResult:
        from cadet_magic.sql.limit import add_limit

        con, owns = self._begin()
        fired = threading.Event()

        def stop() -> None:
            fired.set()
            con.interrupt()

        timer = threading.Timer(timeout, stop)
        timer.daemon = True
        t0 = time.perf_counter()
        user_stop = threading.Event()
        restore = _on_ctrl_c(lambda: (user_stop.set(), con.interrupt()))
        timer.start()
        try:
            try:
                rel = con.execute(add_limit(sql, "duckdb", limit + 1))
                rows = rel.fetchmany(limit + 1)
                columns = [d[0] for d in rel.description or ()]
            except KeyboardInterrupt:
                con.interrupt()
                raise
            except Exception as e:
                if user_stop.is_set():
                    raise KeyboardInterrupt from e
                if fired.is_set() and _is_interrupt(e):
                    raise QueryTimeout(timeout) from e
                if "query interrupted" in str(e).lower():
                    # DuckDB turns a Ctrl-C (SIGINT) during a query into this error.
                    raise KeyboardInterrupt from e
                raise
        finally:
            timer.cancel()
            restore()
            if owns:
                _rollback(con)
            if con is not self.connection:
                con.close()
        return RunResult(columns, rows[:limit], len(rows) > limit, time.perf_counter() - t0, sql)

    def schema(self) -> Schema:
        return duckdb_schema(self.connection)


def _on_ctrl_c(callback: Any) -> Any:
    """Routes SIGINT to ``callback`` while a query runs (main thread only); returns the undo."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda signum, frame: callback())
    return lambda: signal.signal(signal.SIGINT, previous)


def _rollback(con: Any) -> None:
    try:
        con.execute("ROLLBACK")
    except Exception:  # noqa: BLE001 - no transaction left to roll back
        pass


def duckdb_schema(con: Any) -> Schema:
    """The user's tables and views, read from DuckDB's catalog functions."""
    cur = con.cursor()
    try:
        cols = cur.execute(
            "SELECT schema_name, table_name, column_name, data_type, comment "
            "FROM duckdb_columns() WHERE database_name = current_database() AND NOT internal "
            "AND schema_name NOT IN ('information_schema', 'pg_catalog') "
            "ORDER BY schema_name, table_name, column_index"
        ).fetchall()
        cons = cur.execute(
            "SELECT schema_name, table_name, constraint_type, constraint_column_names, "
            "referenced_table, referenced_column_names FROM duckdb_constraints() "
            "WHERE database_name = current_database() "
            "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
        ).fetchall()
        comments = dict(
            ((s, t), c)
            for s, t, c in cur.execute(
                "SELECT schema_name, table_name, comment FROM duckdb_tables() "
                "WHERE database_name = current_database()"
            ).fetchall()
        )
    finally:
        cur.close()
    pks: dict[tuple, set] = {}
    fks: dict[tuple, list] = {}
    for s, t, kind, colnames, ref_table, ref_cols in cons:
        if kind == "PRIMARY KEY":
            pks.setdefault((s, t), set()).update(colnames or ())
        elif ref_table:
            fks.setdefault((s, t), []).append(
                ForeignKey(tuple(colnames or ()), ref_table, tuple(ref_cols or ()))
            )
    grouped: dict[tuple, list[Column]] = {}
    for s, t, c, typ, comment in cols:
        grouped.setdefault((s, t), []).append(
            Column(c, typ or "", c in pks.get((s, t), ()), comment or None)
        )
    tables = tuple(
        Table(
            name=t if s == "main" else f"{s}.{t}",
            columns=tuple(columns),
            foreign_keys=tuple(fks.get((s, t), ())),
            comment=comments.get((s, t)) or None,
            schema=s,
        )
        for (s, t), columns in grouped.items()
    )
    return Schema(tables=tables, dialect="duckdb")
