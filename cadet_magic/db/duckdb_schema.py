"""Reading a DuckDB database's schema from its catalog functions (edge: no duckdb import).

The tables, views, columns, keys and comments of the connection's current database, read on
a sibling cursor (the user's connection and its transaction are untouched), with sample values
read in a rolled-back transaction that the watchdog interrupts at its deadline; and the cheap
fingerprint that tells :class:`~cadet_magic.db.duckdb.DuckDBRunner`'s schema cache when to
read it again.

Example:
    >>> s = schema_from_rows(
    ...     [("main", "t", "id", "INTEGER", None)],
    ...     [("main", "t", "PRIMARY KEY", ["id"], None, None)],
    ...     {("main", "t"): "things"},
    ... )
    >>> s.table("t").comment, s.table("t").columns[0].primary_key
    ('things', True)
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from cadet_magic.db.duckdb_defined import engine_first
from cadet_magic.db.session import current
from cadet_magic.db.watchdog import Watchdog
from cadet_magic.schema.samples import TIME_BUDGET, read_samples
from cadet_magic.schema.structure import Column, ForeignKey, Schema, Table

#: One row that changes whenever a table, view, column, key or comment does.
FINGERPRINT_SQL = (
    "SELECT (SELECT count(*) || ':' || coalesce(sum(hash(table_oid, sql, comment)), 0) "
    "FROM duckdb_tables() WHERE database_name = current_database()), "
    "(SELECT count(*) || ':' || coalesce(sum(hash(view_oid, sql, comment)), 0) "
    "FROM duckdb_views() WHERE NOT internal AND database_name = current_database()), "
    "(SELECT count(*) || ':' || coalesce(sum(hash(table_oid, column_name, comment)), 0) "
    "FROM duckdb_columns() WHERE comment IS NOT NULL AND database_name = current_database()), "
    "current_database(), current_schema()"
)


def duckdb_fingerprint(con: Any) -> tuple | None:
    """A cheap summary of the catalog (~1 ms for 100 tables, ~25 ms for 1,000), or None."""
    cur = con.cursor()
    try:
        return tuple(cur.execute(FINGERPRINT_SQL).fetchone())
    except Exception:  # noqa: BLE001 - cannot tell: read the schema again
        return None
    finally:
        cur.close()


def duckdb_view_definitions(con: Any) -> dict[str, str]:
    """Each view of the current database (named as the schema names it) and its ``CREATE VIEW``
    statement as DuckDB's catalog keeps it, read on a sibling cursor."""
    cur = con.cursor()
    try:
        rows = cur.execute(
            "SELECT schema_name, view_name, sql FROM duckdb_views() "
            "WHERE NOT internal AND database_name = current_database()"
        ).fetchall()
    finally:
        cur.close()
    return {(v if s == "main" else f"{s}.{v}"): sql or "" for s, v, sql in rows}


def rollback_quietly(con: Any) -> None:
    try:
        con.rollback()
    except Exception:  # noqa: BLE001 - no transaction left to roll back
        pass


def duckdb_schema(
    con: Any,
    samples: bool = False,
    time_budget: float = TIME_BUDGET,
    watchdog: Watchdog | None = None,
    *,
    withheld: Collection[str] = (),
    own_functions_first: bool = False,
) -> Schema:
    """The user's tables and views, read from DuckDB's catalog functions.

    Everything is read on a sibling cursor, so the user's connection and its
    transaction are untouched. With ``samples``, low-cardinality text columns of
    tables (not views) get a few values, read in a transaction that is rolled
    back, within ``time_budget`` seconds (see :func:`~cadet_magic.schema.samples.read_samples`);
    never of the relations ``withheld`` names (they call functions the database defines). With
    ``own_functions_first`` the cursor binds names to DuckDB's own functions first
    (:func:`~cadet_magic.db.duckdb_defined.engine_first`).

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR); INSERT INTO t VALUES (1, 'a')")
        >>> _ = con.execute("COMMENT ON TABLE t IS 'things'")
        >>> t = duckdb_schema(con, samples=True).table("t")
        >>> t.comment, t.columns[1].samples
        ('things', ('a',))
    """
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
                "WHERE database_name = current_database() UNION ALL "
                "SELECT schema_name, view_name, comment FROM duckdb_views() "
                "WHERE NOT internal AND database_name = current_database()"
            ).fetchall()
        )
        views = {
            t if s == "main" else f"{s}.{t}"
            for s, t in cur.execute(
                "SELECT schema_name, view_name FROM duckdb_views() "
                "WHERE NOT internal AND database_name = current_database()"
            ).fetchall()
        }
        statements = {
            (s, t): sql
            for s, t, sql in cur.execute(
                "SELECT schema_name, table_name, sql FROM duckdb_tables() "
                "WHERE database_name = current_database()"
            ).fetchall()
        }
        schema = schema_from_rows(cols, cons, comments, statements)
        if samples:
            if own_functions_first:
                engine_first(cur)  # after the catalog's queries: it changes current_database()
            schema = with_samples(
                cur, schema, views | set(withheld), time_budget, watchdog or current().watchdog
            )
    finally:
        cur.close()
    return schema


def with_samples(
    cur: Any, schema: Schema, views: set[str], time_budget: float, watchdog: Watchdog
) -> Schema:
    """Samples read on ``cur`` inside a rolled-back transaction, interrupted at the deadline."""

    def fetch(sql: str) -> list:
        try:
            return cur.execute(sql).fetchall()
        except Exception:
            rollback_quietly(cur)  # DuckDB 2.0 aborts the transaction on any error
            cur.execute("BEGIN TRANSACTION")
            raise

    cur.execute("BEGIN TRANSACTION")
    timer = watchdog.schedule(time_budget + 1.0, cur.interrupt)
    try:
        return read_samples(schema, fetch, skip=views, time_budget=time_budget)
    finally:
        timer.cancel()
        rollback_quietly(cur)


def schema_from_rows(
    cols: list, cons: list, comments: dict, statements: dict | None = None
) -> Schema:
    """The schema from the rows of the catalog queries (``statements``: each table's
    ``CREATE`` statement as DuckDB keeps it, by ``(schema, table)``)."""
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
            ddl=(statements or {}).get((s, t)) or None,
        )
        for (s, t), columns in grouped.items()
    )
    return Schema(tables=tables, dialect="duckdb")
