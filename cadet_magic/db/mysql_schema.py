"""Reading a MySQL/MariaDB database's schema and function catalog from its own catalog.

The ``information_schema`` queries :class:`~cadet_magic.db.mysql.MySQLRunner` runs in its
read-only transaction, the fingerprint that tells when the cached schema is stale, and the
server's function catalog (built-ins from its help tables; stored and loadable functions known
but never allowed).

Example:
    >>> schema, views = mysql_schema_from_rows(
    ...     [("t", "BASE TABLE", ""), ("v", "VIEW", "")],
    ...     [("t", "id", "int", "PRI", None), ("v", "id", "int", "", None)],
    ...     [],
    ... )
    >>> [t.name for t in schema.tables], views
    (['t', 'v'], {'v'})
"""

from __future__ import annotations

from typing import Any

from cadet_magic.schema.structure import Column, ForeignKey, Schema, Table
from cadet_magic.sql.functions import FunctionCatalog

TABLES_SQL = """
SELECT TABLE_NAME, TABLE_TYPE, TABLE_COMMENT FROM information_schema.TABLES
WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME
"""
#: Each view of the current database and its query (:mod:`cadet_magic.sql.views`).
VIEWS_SQL = """
SELECT TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE()
"""
COLUMNS_SQL = """
SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, COLUMN_KEY, COLUMN_COMMENT
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
ORDER BY TABLE_NAME, ORDINAL_POSITION
"""
KEYS_SQL = """
SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME,
       REFERENCED_COLUMN_NAME
FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL
ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION
"""
#: One row that changes with every table, column or comment of the current database.
FINGERPRINT_SQL = """
SELECT DATABASE(), COUNT(*),
  COALESCE(SUM(CRC32(CONCAT_WS('|', TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, COLUMN_KEY,
                               COLUMN_COMMENT))), 0),
  (SELECT COALESCE(SUM(CRC32(CONCAT_WS('|', TABLE_NAME, TABLE_COMMENT))), 0)
     FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()),
  (SELECT COUNT(*) FROM information_schema.ROUTINES)
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
"""
#: The server's built-in functions (its help tables) and the functions that are not built in:
#: stored functions of every database visible and loadable (UDF) functions.
HELP_SQL = "SELECT name FROM mysql.help_topic"
ROUTINES_SQL = "SELECT ROUTINE_NAME FROM information_schema.ROUTINES"
UDF_SQL = "SELECT name FROM mysql.func"


def mysql_functions(cur: Any) -> FunctionCatalog | None:
    """The server's function catalog: built-ins from its help tables, stored and loadable
    functions as known but never allowed (they may write, sleep or lock)."""
    try:
        cur.execute(HELP_SQL)
        builtin = [r[0] for r in cur.fetchall()]
        cur.execute(ROUTINES_SQL)
        stored = [r[0] for r in cur.fetchall()]
        try:
            cur.execute(UDF_SQL)
            stored += [r[0] for r in cur.fetchall()]
        except Exception:  # noqa: BLE001 - no access to mysql.func: stored functions only
            pass
    except Exception:  # noqa: BLE001 - the fixed rules still apply
        return None
    if not builtin:  # help tables not loaded: the fixed rules still apply
        return None
    return FunctionCatalog.from_mysql(builtin, stored)


def mysql_schema_from_rows(
    table_rows: list, col_rows: list, key_rows: list
) -> tuple[Schema, set[str]]:
    """The schema (and the names of its views) from ``information_schema`` rows."""
    info = {name: (kind, comment) for name, kind, comment in table_rows}
    columns: dict[str, list[Column]] = {}
    for table, column, typ, key, comment in col_rows:
        columns.setdefault(table, []).append(
            Column(column, str(typ), key == "PRI", comment or None)
        )
    fks: dict[tuple[str, str], tuple[list[str], str, list[str]]] = {}
    for table, constraint, column, ref_schema, ref_table, ref_column in key_rows:
        entry = fks.setdefault((table, constraint), ([], ref_table, []))
        entry[0].append(column)
        entry[2].append(ref_column)
        del ref_schema
    tables = []
    for name, cols in columns.items():
        comment = info.get(name, ("", ""))[1] or None
        tables.append(
            Table(
                name=name,
                columns=tuple(cols),
                foreign_keys=tuple(
                    ForeignKey(tuple(own), ref, tuple(ref_cols))
                    for (t, _), (own, ref, ref_cols) in fks.items()
                    if t == name
                ),
                comment=comment,
            )
        )
    views = {name for name, (kind, _) in info.items() if "VIEW" in str(kind).upper()}
    return Schema(tables=tuple(tables), dialect="mysql"), views
