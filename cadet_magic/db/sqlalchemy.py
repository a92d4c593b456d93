"""Runner for SQLAlchemy engines and connections (edge: SQLAlchemy imported lazily).

DuckDB and SQLite connections are handed to their native runners (through the
DBAPI connection underneath), so every engine gets its own safeguards. Other
dialects (PostgreSQL first) run in a transaction that is READ ONLY where the
dialect supports it, with a statement timeout, and always rolled back.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cadet_magic.db.base import RunResult
from cadet_magic.db.cache import SCHEMA_CACHE
from cadet_magic.db.functions import postgres_functions, with_functions
from cadet_magic.errors import QueryTimeout
from cadet_magic.schema.model import Column, ForeignKey, Schema, Table
from cadet_magic.schema.samples import TIME_BUDGET, read_samples

# PostgreSQL catalog queries, limited to the current schema (the first existing one on
# the search_path), like SQLAlchemy's inspector default.
_PG_NAMESPACE = "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"
_PG_RELATIONS = (
    f"relnamespace = {_PG_NAMESPACE} AND relkind IN ('r', 'v', 'm', 'p', 'f') "
    "AND NOT relispartition"
)
#: One row that changes with every table, column, key or comment of the current schema:
#: row counts and xmin sums of the catalog rows that describe them.
PG_FINGERPRINT_SQL = f"""
WITH cls AS (SELECT oid, xmin FROM pg_class WHERE {_PG_RELATIONS})
SELECT current_schema(),
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
       r.relnamespace = {_PG_NAMESPACE}, n.nspname
FROM pg_constraint k
LEFT JOIN pg_class r ON r.oid = k.confrelid
LEFT JOIN pg_namespace n ON n.oid = r.relnamespace
WHERE k.contype IN ('p', 'f')
  AND k.conrelid IN (SELECT oid FROM pg_class WHERE {_PG_RELATIONS})
ORDER BY k.conrelid, k.conname
"""


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

    @contextmanager
    def _transaction(self, timeout: float) -> Iterator[tuple[Any, Any]]:
        """A driver cursor in a read-only transaction (or savepoint) that is rolled back."""
        conn = self.connection
        raw = native_dbapi(conn)
        autocommit = bool(getattr(raw, "autocommit", False))
        # SQLAlchemy may report a transaction on an AUTOCOMMIT connection: the driver decides.
        nested = not autocommit and conn.in_transaction()
        pg = self.dialect == "postgres"
        cur = raw.cursor()
        try:
            if nested:
                cur.execute("SAVEPOINT cadet_magic")
            elif autocommit:
                cur.execute("BEGIN READ ONLY" if pg else "BEGIN")
            elif pg:
                cur.execute("SET TRANSACTION READ ONLY")
            if pg:
                cur.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
            yield cur, raw
        finally:
            _end(raw, cur, nested, autocommit)

    def run(self, sql: str, *, limit: int, timeout: float) -> RunResult:
        from cadet_magic.sql.limit import add_limit

        t0 = time.perf_counter()
        with self._transaction(timeout) as (cur, raw):
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
        return RunResult(
            columns,
            [tuple(r) for r in rows[:limit]],
            len(rows) > limit,
            time.perf_counter() - t0,
            sql,
        )

    def schema(self) -> Schema:
        """The schema (with samples on PostgreSQL), cached per connection while it is unchanged.

        PostgreSQL is read from ``pg_catalog`` in a read-only transaction that is rolled
        back; other dialects through SQLAlchemy's inspector, without a cache.
        """
        if self.dialect != "postgres":
            return sqlalchemy_schema(self.connection, self.dialect)
        return SCHEMA_CACHE.get(
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
