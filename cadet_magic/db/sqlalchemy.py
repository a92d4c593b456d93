"""Runner for SQLAlchemy engines and connections (edge: SQLAlchemy imported lazily).

DuckDB and SQLite connections are handed to their native runners (through the
DBAPI connection underneath), so every engine gets its own safeguards. Other
dialects (PostgreSQL first) run in a transaction that is READ ONLY where the
dialect supports it, with a statement timeout, and always rolled back.
"""

from __future__ import annotations

import time
from typing import Any

from cadet_magic.db.base import RunResult
from cadet_magic.errors import QueryTimeout
from cadet_magic.schema.model import Column, ForeignKey, Schema, Table


def sqlglot_dialect(name: str) -> str:
    """SQLAlchemy's dialect name as sqlglot's (the safety check's own mapping)."""
    from cadet_magic.sql.validate import resolve_dialect

    return resolve_dialect(name) or name


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
    return SQLAlchemyRunner(connection, label=label)


class SQLAlchemyRunner:
    """Runs checked SQL on a SQLAlchemy Connection (PostgreSQL and others)."""

    def __init__(self, connection: Any, label: str = "") -> None:
        self.connection = connection
        self.dialect = sqlglot_dialect(connection.engine.dialect.name)
        self.label = label or _label(connection.engine)
        self._schema: Schema | None = None

    def run(self, sql: str, *, limit: int, timeout: float) -> RunResult:
        from cadet_magic.sql.limit import add_limit

        conn = self.connection
        raw = native_dbapi(conn)
        autocommit = bool(getattr(raw, "autocommit", False))
        # SQLAlchemy may report a transaction on an AUTOCOMMIT connection: the driver decides.
        nested = not autocommit and conn.in_transaction()
        pg = self.dialect == "postgres"
        cur = raw.cursor()
        t0 = time.perf_counter()
        try:
            if nested:
                cur.execute("SAVEPOINT cadet_magic")
            elif autocommit:
                cur.execute("BEGIN READ ONLY" if pg else "BEGIN")
            elif pg:
                cur.execute("SET TRANSACTION READ ONLY")
            if pg:
                cur.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
            try:
                cur.execute(add_limit(sql, self.dialect, limit + 1))
                rows = cur.fetchmany(limit + 1)
                columns = [d[0] for d in cur.description or ()]
            except KeyboardInterrupt:
                _cancel(raw)
                raise
            except Exception as e:
                if getattr(e, "sqlstate", None) == "57014" or getattr(e, "pgcode", None) == "57014":
                    if time.perf_counter() - t0 >= timeout * 0.9:
                        raise QueryTimeout(timeout) from e
                raise
        finally:
            _end(raw, cur, nested, autocommit)
        return RunResult(
            columns,
            [tuple(r) for r in rows[:limit]],
            len(rows) > limit,
            time.perf_counter() - t0,
            sql,
        )

    def schema(self) -> Schema:
        return sqlalchemy_schema(self.connection, self.dialect)


def _cancel(raw: Any) -> None:
    cancel = getattr(raw, "cancel", None)
    if cancel is not None:
        try:
            cancel()
        except Exception:  # noqa: BLE001
            pass


def _end(raw: Any, cur: Any, nested: bool, autocommit: bool) -> None:
    """Rolls back what the run did, leaving the connection as it was."""
    try:
        if nested:
            cur.execute("ROLLBACK TO SAVEPOINT cadet_magic")
            cur.execute("RELEASE SAVEPOINT cadet_magic")
        elif autocommit:
            cur.execute("ROLLBACK")
        else:
            raw.rollback()
    except Exception:  # noqa: BLE001 - fall back to the driver's rollback
        try:
            raw.rollback()
        except Exception:  # noqa: BLE001
            pass
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
