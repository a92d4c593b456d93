"""Runner for SQLAlchemy engines and connections (edge: SQLAlchemy imported lazily).

DuckDB and SQLite connections are handed to their native runners (through the
DBAPI connection underneath), so every engine gets its own safeguards. Other
dialects (PostgreSQL first) run in a transaction that is READ ONLY where the
dialect supports it, with a statement timeout, and always rolled back.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cadet_magic.db.base import BaseRunner, RunControl, Statement, read_exception
from cadet_magic.db.fetch import column_sizer, rows_bytes
from cadet_magic.db.functions import postgres_functions, with_functions
from cadet_magic.db.session import DbSession, current
from cadet_magic.errors import (
    EngineError,
    FailedTransactionError,
    ResultTooLarge,
    exception_chain,
)
from cadet_magic.options import RESULT_BYTES
from cadet_magic.schema.model import Column, ForeignKey, Schema, Table
from cadet_magic.schema.samples import TIME_BUDGET, read_samples
from cadet_magic.sql.dialect import resolve_dialect
from cadet_magic.sql.query import CheckedQuery

# PostgreSQL catalog queries: the relations visible through the session's search_path
# (what an unqualified name resolves to, temporary tables included), not the system catalogs.
_PG_RELATIONS = (
    "relkind IN ('r', 'v', 'm', 'p', 'f') AND NOT relispartition "
    "AND relnamespace NOT IN (SELECT oid FROM pg_namespace "
    "WHERE nspname IN ('pg_catalog', 'information_schema')) AND pg_table_is_visible(oid)"
)
#: One row that changes with every table, column, key or comment visible through the
#: search_path: the path itself, row counts and xmin sums of the catalog rows.
PG_FINGERPRINT_SQL = f"""
WITH cls AS (SELECT oid, xmin FROM pg_class WHERE {_PG_RELATIONS})
SELECT current_setting('search_path'), current_schemas(true)::text,
  (SELECT count(*) || ':' || coalesce(sum(xmin::text::bigint), 0) FROM cls),
  (SELECT count(*) || ':' || coalesce(sum(a.xmin::text::bigint), 0)
     FROM pg_attribute a WHERE a.attrelid IN (SELECT oid FROM cls)),
  (SELECT count(*) || ':' || coalesce(sum(d.xmin::text::bigint), 0)
     FROM pg_description d WHERE d.objoid IN (SELECT oid FROM cls)),
  (SELECT count(*) || ':' || coalesce(sum(k.xmin::text::bigint), 0)
     FROM pg_constraint k WHERE k.conrelid IN (SELECT oid FROM cls))
"""
_PG_COLUMNS = f"""
SELECT c.oid, c.relname, c.relkind, obj_description(c.oid, 'pg_class'), a.attnum, a.attname,
       format_type(a.atttypid, a.atttypmod), col_description(c.oid, a.attnum)
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
WHERE c.oid IN (SELECT oid FROM pg_class WHERE {_PG_RELATIONS})
  AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum
"""
_PG_KEYS = f"""
SELECT k.conrelid, k.contype, k.conkey, k.confkey, k.confrelid, r.relname,
       pg_table_is_visible(r.oid), n.nspname
FROM pg_constraint k
LEFT JOIN pg_class r ON r.oid = k.confrelid
LEFT JOIN pg_namespace n ON n.oid = r.relnamespace
WHERE k.contype IN ('p', 'f')
  AND k.conrelid IN (SELECT oid FROM pg_class WHERE {_PG_RELATIONS})
ORDER BY k.conrelid, k.conname
"""


#: libpq transaction states (``connection.info.transaction_status`` in psycopg 3 and psycopg2).
PG_IDLE, PG_INERROR = 0, 3

#: Inside the agent's transaction, the settings that change how SQL text is read or
#: resolved, pinned to what the safety check assumes (one round trip, undone by the
#: rollback): backslashes are literal in '...' strings; ``x = NULL`` is never rewritten
#: to ``IS NULL``; array literals read NULL; dates read and print as ISO, month before day;
#: intervals in PostgreSQL style; built-in functions resolve before any schema's.
PG_PINS = (
    "SELECT set_config('standard_conforming_strings', 'on', true), "
    "set_config('backslash_quote', 'safe_encoding', true), "
    "set_config('transform_null_equals', 'off', true), "
    "set_config('array_nulls', 'on', true), "
    "set_config('DateStyle', 'ISO, MDY', true), "
    "set_config('IntervalStyle', 'postgres', true), "
    "set_config('search_path', concat_ws(', ', 'pg_catalog', "
    "nullif(current_setting('search_path'), '')), true)"
)


def pg_transaction_status(raw: Any) -> int | None:
    """libpq's transaction status of a psycopg (3 or 2) connection, or None for other drivers."""
    info = getattr(raw, "info", None)
    status = getattr(info, "transaction_status", None)
    return None if status is None else int(status)


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
        if self.dialect == "postgres" and _server_cursors(raw):
            rows_cur = raw.cursor(name="cadet_magic_rows")
        close = rows_cur.close if rows_cur is not cur else None
        limited = add_limit(sql, self.dialect, limit + 1)
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
            _without_guard(rows_cur.fetchmany),
            column_sizer([pg_kind(d[1]) for d in description]),
            close,
        )

    def cancel(self, handle: Any) -> None:
        _cancel(handle[1])

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
            cur.execute(_PG_COLUMNS)
            col_rows = cur.fetchall()
            cur.execute(_PG_KEYS)
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
            schema = read_samples(schema, fetch, skip=views, time_budget=time_budget)
            return with_functions(schema, functions)


def pg_schema_from_rows(col_rows: list, key_rows: list) -> tuple[Schema, set[str]]:
    """The schema (and the names of its views) from the rows of the pg_catalog queries."""
    names: dict[int, dict[int, str]] = {}
    info: dict[int, tuple[str, str, str | None]] = {}
    columns: dict[int, list[tuple[str, str, str | None]]] = {}
    for oid, rel, kind, comment, attnum, att, typ, col_comment in col_rows:
        info[oid] = (rel, kind, comment)
        names.setdefault(oid, {})[attnum] = att
        columns.setdefault(oid, []).append((att, typ, col_comment))
    pks: dict[int, set[str]] = {}
    fks: dict[int, list[ForeignKey]] = {}
    for rel, kind, conkey, confkey, ref_oid, ref_name, same_ns, ref_ns in key_rows:
        own = [names.get(rel, {}).get(n, "") for n in conkey or ()]
        if kind == "p":
            pks.setdefault(rel, set()).update(own)
        elif ref_name:
            ref_cols = names.get(ref_oid)
            if ref_cols is None:  # another schema: its column names are not loaded
                ref = tuple(str(n) for n in confkey or ())
            else:
                ref = tuple(ref_cols.get(n, "") for n in confkey or ())
            target = ref_name if same_ns else f"{ref_ns}.{ref_name}"
            fks.setdefault(rel, []).append(ForeignKey(tuple(own), target, ref))
    tables = tuple(
        Table(
            name=info[oid][0],
            columns=tuple(
                Column(c, typ or "", c in pks.get(oid, ()), cc or None) for c, typ, cc in cols
            ),
            foreign_keys=tuple(fks.get(oid, ())),
            comment=info[oid][2] or None,
        )
        for oid, cols in columns.items()
    )
    views = {info[oid][0] for oid in columns if info[oid][1] in ("v", "m")}
    return Schema(tables=tables, dialect="postgres"), views


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


#: PostgreSQL type OIDs of small fixed-size values (bool, integers, floats, oid, dates and
#: times, interval, uuid) and of text and binary values.
_PG_FIXED = frozenset({16, 20, 21, 23, 26, 700, 701, 1082, 1083, 1114, 1184, 1186, 1266, 2950})
_PG_TEXT = frozenset({17, 18, 19, 25, 1042, 1043})


#: The marker of the server's refusal of a row larger than the byte budget, and its one line.
ROW_TOO_LARGE = "cadet_magic_row_larger_than_the_result_budget"
ROW_TOO_LARGE_LINE = (
    "A row of the result is larger than the result budget: ask for fewer or shorter values, "
    "or raise %config AskMagic.result_bytes."
)
#: PostgreSQL's own errors for a value beyond its 1 GB limit (raised while the guard measures
#: or copies such a row).
PG_VALUE_TOO_LARGE = ("invalid memory alloc request size", "Cannot enlarge string buffer")
#: Columns :func:`pg_bounded_sql` adds after the query's own (stripped before anything sees them).
GUARD_COLUMNS = 2


def pg_bounded_sql(sql: str, budget: int) -> str:
    """``sql`` wrapped so that the server itself bounds what it sends: a row whose values
    take more than ``budget`` bytes (``pg_column_size`` of the row as the query produced it,
    values decompressed) fails (:data:`ROW_TOO_LARGE`) before it is sent, and no row
    is sent once the rows before it hold more than ``budget`` bytes (so the client receives
    at most about twice the budget, however large the values the query builds; the byte
    budget of the fetch then cuts the answer). Two columns are added after the query's own
    (:data:`GUARD_COLUMNS`); the row order is the query's.

    Example:
        >>> print(pg_bounded_sql("SELECT 1 LIMIT 2", 100))  # doctest: +NORMALIZE_WHITESPACE
        SELECT * FROM (SELECT cadet_m.*, sum(cadet_magic_size) OVER (ROWS BETWEEN UNBOUNDED
        PRECEDING AND 1 PRECEDING) AS cadet_magic_before FROM (SELECT cadet_r.*,
        pg_column_size(cadet_r) AS cadet_magic_size FROM (
        SELECT 1 LIMIT 2
        ) AS cadet_r) AS cadet_m) AS cadet_s WHERE coalesce(cadet_magic_before, 0) <= 100 AND
        CAST(CASE WHEN cadet_magic_size > 100 THEN 'cadet_magic_row_larger_than_the_result_budget'
        ELSE '0' END AS int) = 0
    """
    budget = int(budget)
    return (
        "SELECT * FROM (SELECT cadet_m.*, sum(cadet_magic_size) OVER (ROWS BETWEEN UNBOUNDED "
        "PRECEDING AND 1 PRECEDING) AS cadet_magic_before FROM (SELECT cadet_r.*, "
        f"pg_column_size(cadet_r) AS cadet_magic_size FROM (\n{sql}\n) AS cadet_r) "
        f"AS cadet_m) AS cadet_s WHERE coalesce(cadet_magic_before, 0) <= {budget} AND "
        f"CAST(CASE WHEN cadet_magic_size > {budget} THEN '{ROW_TOO_LARGE}' "
        "ELSE '0' END AS int) = 0"
    )


def _without_guard(fetchmany: Any) -> Any:
    """``fetchmany`` returning the rows without :func:`pg_bounded_sql`'s added columns."""

    def fetch(n: int) -> list:
        return [tuple(r)[:-GUARD_COLUMNS] for r in fetchmany(n)]

    return fetch


def pg_kind(type_oid: object) -> str:
    """A PostgreSQL result column's type OID as ``"fixed"``, ``"text"`` or ``"other"``."""
    if type_oid in _PG_FIXED:
        return "fixed"
    return "text" if type_oid in _PG_TEXT else "other"


def _server_cursors(raw: Any) -> bool:
    """Whether the driver offers server-side (named) cursors here: psycopg 3 always,
    psycopg2 only outside autocommit (it refuses a named cursor there)."""
    module = type(raw).__module__
    if module.startswith("psycopg2"):
        return not getattr(raw, "autocommit", False)
    return module.startswith("psycopg")


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


def postgres_error(error: BaseException) -> EngineError:
    """A psycopg (3 or 2) error, raw or SQLAlchemy-wrapped, as an :class:`EngineError`: its
    SQLSTATE (``sqlstate`` / ``pgcode``), PostgreSQL's HINT and the statement position
    (``diag``); other drivers' errors by their words and classes."""
    sqlstate = hint = position = None
    for e in exception_chain(error):
        state = getattr(e, "sqlstate", None) or getattr(e, "pgcode", None)
        if isinstance(state, str) and re.fullmatch(r"[0-9A-Z]{5}", state) and sqlstate is None:
            sqlstate = state
        diag = getattr(e, "diag", None)
        if diag is not None:
            hint = getattr(diag, "message_hint", None) or hint
            pos = getattr(diag, "statement_position", None)
            if pos:
                try:
                    position = int(pos)
                except (TypeError, ValueError):
                    pass
    return read_exception(
        error, sqlstate=sqlstate, suggestion=str(hint) if hint else None, position=position
    )
