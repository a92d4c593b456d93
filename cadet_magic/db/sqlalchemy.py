"""Runner for SQLAlchemy engines and connections (edge: SQLAlchemy imported lazily).

DuckDB and SQLite connections are handed to their native runners (through the
DBAPI connection underneath), so every engine gets its own safeguards. Other
dialects (PostgreSQL first) run in a transaction that is READ ONLY where the
dialect supports it, with a statement timeout, and always rolled back. What is particular to
PostgreSQL (its catalog, pinned settings, the server-side bound on what a query sends, and
psycopg's errors) is in :mod:`cadet_magic.db.postgres`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cadet_magic.db.base import BaseRunner, RunControl, Statement
from cadet_magic.db.bounded_fetch import column_sizer, rows_bytes
from cadet_magic.db.function_catalogs import postgres_functions, with_functions
from cadet_magic.db.postgres import (
    FILE_FDW,
    GUARD_COLUMNS,
    PG_COLUMNS_SQL,
    PG_FINGERPRINT_SQL,
    PG_IDLE,
    PG_INERROR,
    PG_KEYS_SQL,
    PG_PINS,
    PG_VALUE_TOO_LARGE,
    PG_VIEWS_SQL,
    ROW_TOO_LARGE,
    ROW_TOO_LARGE_LINE,
    pg_bounded_sql,
    pg_cancel,
    pg_kind,
    pg_schema_from_rows,
    pg_transaction_status,
    postgres_error,
    server_cursors,
    without_guard,
)
from cadet_magic.db.session import DbSession, current
from cadet_magic.errors import (
    EngineError,
    FailedTransactionError,
    ResultTooLarge,
)
from cadet_magic.options import RESULT_BYTES
from cadet_magic.schema.samples import TIME_BUDGET, read_samples
from cadet_magic.schema.structure import Column, ForeignKey, Schema, Table
from cadet_magic.sql.dialect import resolve_dialect
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.views import without_withheld


def _label(engine: Any) -> str:
    try:
        return engine.url.render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001
        return str(getattr(engine, "url", "sqlalchemy"))


def native_dbapi(connection: Any) -> Any:
    """The driver's own connection object under a SQLAlchemy Connection."""
    raw = connection.connection.dbapi_connection
    # duckdb-engine wraps the duckdb connection
    return getattr(raw, "_ConnectionWrapper__c", raw)


def runner_for_sqlalchemy(obj: Any) -> Any:
    """A runner for a SQLAlchemy Engine or Connection, chosen by dialect."""
    import sqlalchemy as sa

    connection = obj.connect() if isinstance(obj, sa.engine.Engine) else obj
    engine = connection.engine
    label = _label(engine)
    name = engine.dialect.name
    if name == "duckdb":
        from cadet_magic.db.duckdb import DuckDBRunner

        return DuckDBRunner(native_dbapi(connection), label=label)
    if name == "sqlite":
        from cadet_magic.db.sqlite import SQLiteRunner

        return SQLiteRunner(native_dbapi(connection), label=label)
    if name in ("mysql", "mariadb"):
        from cadet_magic.db.mysql import runner_for_engine

        return runner_for_engine(connection, label)
    return SQLAlchemyRunner(connection, label=label)


class SQLAlchemyRunner(BaseRunner):
    """Runs checked SQL on a SQLAlchemy Connection (PostgreSQL and others)."""

    def __init__(self, connection: Any, label: str = "", session: DbSession | None = None) -> None:
        self.session = session or current()
        self.connection = connection
        self.dialect = (
            resolve_dialect(connection.engine.dialect.name) or connection.engine.dialect.name
        )
        self.label = label or _label(connection.engine)
        self._schema: Schema | None = None

    @contextmanager
    def _transaction(self, timeout: float) -> Iterator[tuple[Any, Any]]:
        """A driver cursor in a read-only transaction (or savepoint) that is rolled back.

        PostgreSQL: with the user's transaction open, a savepoint inside it made READ ONLY
        (``SET TRANSACTION READ ONLY`` is allowed in a subtransaction and undone by
        ``ROLLBACK TO SAVEPOINT``, like every ``SET LOCAL``), so the user's uncommitted rows
        are visible and the transaction goes on unchanged; with the user's transaction
        failed, a connection of the agent's own (see :meth:`_own_connection`). The settings
        that change how SQL text is read are pinned with ``SET LOCAL`` (:data:`PG_PINS`).
        """
        conn = self.connection
        raw = native_dbapi(conn)
        own = None
        pg = self.dialect == "postgres"
        status = pg_transaction_status(raw) if pg else None
        if status == PG_INERROR:
            own = self._own_connection(raw)
            raw = own.dbapi_connection
            status = pg_transaction_status(raw)
        try:
            autocommit = bool(getattr(raw, "autocommit", False))
            if status is not None:
                nested = status != PG_IDLE
            else:
                # SQLAlchemy may report a transaction on an AUTOCOMMIT connection: the driver decides.
                nested = not autocommit and conn.in_transaction()
            cur = raw.cursor()
            try:
                if nested:
                    cur.execute("SAVEPOINT cadet_magic")
                    if pg:
                        cur.execute("SET TRANSACTION READ ONLY")
                elif autocommit:
                    cur.execute("BEGIN READ ONLY" if pg else "BEGIN")
                elif pg:
                    cur.execute("SET TRANSACTION READ ONLY")
                if pg:
                    cur.execute(
                        PG_PINS + f", set_config('statement_timeout', "
                        f"'{max(1, int(timeout * 1000))}', true)"
                    )
                yield cur, raw
            finally:
                _end(raw, cur, nested, autocommit)
        finally:
            if own is not None:
                own.close()

    def _own_connection(self, user_raw: Any) -> Any:
        """A new connection of the agent's own (same URL, credentials and pool events),
        never the user's failed one nor one taken from the user's pool.

        Raises:
            FailedTransactionError: when no second connection can be opened.
        """
        try:
            pool = self.connection.engine.pool.recreate()
            own = pool.connect()
        except Exception as e:
            raise FailedTransactionError() from e
        if own.dbapi_connection is user_raw:  # pragma: no cover - a pool sharing one connection
            raise FailedTransactionError()
        return _OwnConnection(own, pool)

    def transaction(self, timeout: float, control: RunControl) -> Any:
        return self._transaction(timeout)

    def execute(
        self, handle: Any, sql: str | CheckedQuery, limit: int, control: RunControl
    ) -> Statement:
        """On PostgreSQL the query runs through a server-side cursor (``DECLARE ... CURSOR
        FOR``), so rows cross the network chunk by chunk and the server itself refuses
        anything that is not a query (COPY, SET, DDL, data-modifying WITH); every FETCH is
        bounded by ``statement_timeout`` and the whole run by the watchdog's cancel."""
        from cadet_magic.sql.limit import add_limit

        cur, raw = handle
        rows_cur = cur
        if self.dialect == "postgres" and server_cursors(raw):
            rows_cur = raw.cursor(name="cadet_magic_rows")
        close = rows_cur.close if rows_cur is not cur else None
        limited = add_limit(sql, self.target, limit + 1)
        try:
            if self.dialect == "postgres":
                # The server bounds what it sends: a row past the byte budget fails there.
                budget = RESULT_BYTES if control.max_bytes is None else control.max_bytes
                rows_cur.execute(pg_bounded_sql(limited, budget))
            else:
                rows_cur.execute(limited)
        except BaseException:
            if close is not None:
                close()
            raise
        if self.dialect != "postgres":
            description = rows_cur.description or ()
            return Statement([d[0] for d in description], rows_cur.fetchmany, rows_bytes, close)
        description = (rows_cur.description or ())[:-GUARD_COLUMNS]
        return Statement(
            [d[0] for d in description],
            without_guard(rows_cur.fetchmany),
            column_sizer([pg_kind(d[1]) for d in description]),
            close,
        )

    def cancel(self, handle: Any) -> None:
        pg_cancel(handle[1])

    def timed_out(self, error: BaseException, control: RunControl) -> bool:
        if (
            getattr(error, "sqlstate", None) != "57014"
            and getattr(error, "pgcode", None) != "57014"
        ):
            return False
        return (
            control.fired.is_set() or time.perf_counter() - control.started >= control.timeout * 0.9
        )

    def out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, MemoryError) or "out of memory" in str(error).lower()

    def failure(self, error: BaseException, control: RunControl) -> BaseException:
        if any(m in str(error) for m in (ROW_TOO_LARGE, *PG_VALUE_TOO_LARGE)):
            return ResultTooLarge(ROW_TOO_LARGE_LINE)  # past the server-side byte bound
        return super().failure(error, control)

    def engine_error(self, error: BaseException) -> EngineError:
        return postgres_error(error)

    def schema(self) -> Schema:
        """The schema (with samples on PostgreSQL), cached per connection while it is unchanged.

        PostgreSQL is read from ``pg_catalog`` in a read-only transaction that is rolled
        back; other dialects through SQLAlchemy's inspector, without a cache.
        """
        if self.dialect != "postgres":
            return sqlalchemy_schema(self.connection, self.dialect)
        return self.session.schema_cache.get(
            native_dbapi(self.connection), self._pg_fingerprint, self._pg_schema
        )

    def _pg_fingerprint(self) -> tuple | None:
        try:
            with self._transaction(5.0) as (cur, _):
                cur.execute(PG_FINGERPRINT_SQL)
                return tuple(cur.fetchone())
        except Exception:  # noqa: BLE001 - cannot tell: read the schema again
            return None

    def _pg_schema(self, time_budget: float = TIME_BUDGET) -> Schema:
        with self._transaction(time_budget + 30.0) as (cur, _):
            cur.execute(PG_COLUMNS_SQL)
            col_rows = cur.fetchall()
            cur.execute(PG_KEYS_SQL)
            key_rows = cur.fetchall()
            schema, views = pg_schema_from_rows(col_rows, key_rows)

            def fetch(sql: str) -> list:
                cur.execute("SAVEPOINT cadet_magic_sample")
                try:
                    cur.execute(sql)
                    rows = cur.fetchall()
                except Exception:
                    cur.execute("ROLLBACK TO SAVEPOINT cadet_magic_sample")
                    raise
                cur.execute("RELEASE SAVEPOINT cadet_magic_sample")
                return rows

            functions = postgres_functions(cur)
            cur.execute(PG_VIEWS_SQL)
            rows = cur.fetchall()
            definitions = {name: sql for name, sql in rows if sql is not None}
            foreign = {name: FILE_FDW for name, sql in rows if sql is None}
            schema = without_withheld(with_functions(schema, functions), definitions, foreign)
            skip = views | set(definitions) | set(foreign)
            return read_samples(schema, fetch, skip=skip, time_budget=time_budget)


class _OwnConnection:
    """The agent's own pooled connection and its private pool, closed together."""

    def __init__(self, fairy: Any, pool: Any) -> None:
        self.fairy, self.pool = fairy, pool
        self.dbapi_connection = fairy.dbapi_connection

    def close(self) -> None:
        try:
            self.fairy.close()
        finally:
            self.pool.dispose()


def _end(raw: Any, cur: Any, nested: bool, autocommit: bool) -> None:
    """Rolls back what the run did, leaving the connection as it was."""
    try:
        if nested:
            try:
                cur.execute("ROLLBACK TO SAVEPOINT cadet_magic")
            except Exception:  # noqa: BLE001 - a late cancel of ours hit it: once more
                cur.execute("ROLLBACK TO SAVEPOINT cadet_magic")
            cur.execute("RELEASE SAVEPOINT cadet_magic")
        elif autocommit:
            cur.execute("ROLLBACK")
        else:
            raw.rollback()
    except Exception:  # noqa: BLE001
        if not nested:  # our own transaction: the driver's rollback ends it
            try:
                raw.rollback()
            except Exception:  # noqa: BLE001
                pass
        # Inside the user's transaction never roll it back: that is theirs to decide.
    finally:
        try:
            cur.close()
        except Exception:  # noqa: BLE001
            pass


def sqlalchemy_schema(connection: Any, dialect: str | None = None) -> Schema:
    """Tables, columns, keys and comments through SQLAlchemy's inspector (default schema)."""
    import sqlalchemy as sa

    was_in_transaction = connection.in_transaction()
    insp = sa.inspect(connection)
    tables = []
    names = list(insp.get_table_names()) + list(insp.get_view_names())
    for name in names:
        try:
            pk = set(insp.get_pk_constraint(name).get("constrained_columns") or ())
        except Exception:  # noqa: BLE001 - views have none
            pk = set()
        cols = tuple(
            Column(c["name"], str(c.get("type", "")), c["name"] in pk, c.get("comment") or None)
            for c in insp.get_columns(name)
        )
        try:
            fks = tuple(
                ForeignKey(
                    tuple(f["constrained_columns"]),
                    f["referred_table"],
                    tuple(f["referred_columns"]),
                )
                for f in insp.get_foreign_keys(name)
            )
        except Exception:  # noqa: BLE001
            fks = ()
        try:
            comment = (insp.get_table_comment(name) or {}).get("text")
        except Exception:  # noqa: BLE001
            comment = None
        tables.append(Table(name=name, columns=cols, foreign_keys=fks, comment=comment))
    if not was_in_transaction and connection.in_transaction():
        connection.rollback()  # leave the connection as we found it
    return Schema(tables=tuple(tables), dialect=dialect)
