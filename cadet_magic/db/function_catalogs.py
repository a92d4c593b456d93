"""Reads each engine's function catalog (edge); the decision is in :mod:`cadet_magic.sql.functions`.

The catalog is read with the schema and cached with it (it rides on
:attr:`Schema.functions <cadet_magic.schema.structure.Schema>`): PostgreSQL's ``pg_proc``,
DuckDB's ``duckdb_functions()``, SQLite's ``pragma_function_list``. Where a catalog cannot
be read the schema carries None and the safety check applies its fixed rules only.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from cadet_magic.schema.structure import Schema
from cadet_magic.sql.functions import FunctionCatalog

log = logging.getLogger("cadet_magic")

#: Each function with whether it is PostgreSQL's own: in ``pg_catalog`` or
#: ``information_schema``, or installed by an extension (code of the server's installation);
#: any other is defined by the database itself.
PG_FUNCTIONS_SQL = (
    "SELECT p.proname, p.provolatile, p.prokind, "
    "n.nspname IN ('pg_catalog', 'information_schema') OR EXISTS ("
    "SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_catalog.pg_proc'::regclass "
    "AND d.objid = p.oid AND d.deptype = 'e') "
    "FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
)
#: The operators the database defines (outside ``pg_catalog``, installed by no extension).
PG_OPERATORS_SQL = (
    "SELECT DISTINCT o.oprname FROM pg_catalog.pg_operator o "
    "JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace "
    "WHERE n.nspname <> 'pg_catalog' AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d "
    "WHERE d.classid = 'pg_catalog.pg_operator'::regclass AND d.objid = o.oid "
    "AND d.deptype = 'e')"
)
DUCKDB_FUNCTIONS_SQL = (
    "SELECT function_name, function_type, stability, has_side_effects, internal, "
    "extension_name FROM duckdb_functions()"
)
#: The same without ``extension_name`` (DuckDB before 1.2 lists no extension): an extension's
#: function then counts as defined, as a registered Python function does.
DUCKDB_FUNCTIONS_OLD_SQL = (
    "SELECT function_name, function_type, stability, has_side_effects, internal, NULL "
    "FROM duckdb_functions()"
)
#: The functions DuckDB itself has, read from a new in-memory database.
DUCKDB_CORE_SQL = "SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE internal"
SQLITE_FUNCTIONS_SQL = "SELECT name, builtin, type, flags FROM pragma_function_list"


def with_functions(schema: Schema, catalog: FunctionCatalog | None) -> Schema:
    """``schema`` carrying ``catalog`` (a copy; schemas are frozen)."""
    return dataclasses.replace(schema, functions=catalog)


def postgres_functions(cur: Any) -> FunctionCatalog | None:
    """PostgreSQL's catalog, read on ``cur`` (a driver cursor inside the runner's transaction)."""
    try:
        cur.execute(PG_FUNCTIONS_SQL)
        rows = cur.fetchall()
        cur.execute(PG_OPERATORS_SQL)
        return FunctionCatalog.from_postgres(rows, [r[0] for r in cur.fetchall()])
    except Exception as e:  # noqa: BLE001 - the fixed rules still apply
        log.warning("[schema] PostgreSQL's function catalog could not be read: %s", e)
        return None


_DUCKDB_CORE: frozenset[str] | None = None


def duckdb_core_functions() -> frozenset[str]:
    """The names of DuckDB's own functions (not an extension's), read once per process from a
    new in-memory database: a name the user's connection lists as internal but that neither
    DuckDB nor an extension has is a Python function registered on that connection."""
    global _DUCKDB_CORE
    if _DUCKDB_CORE is None:
        import duckdb

        con = duckdb.connect(":memory:")
        try:
            _DUCKDB_CORE = frozenset(r[0] for r in con.execute(DUCKDB_CORE_SQL).fetchall())
        finally:
            con.close()
    return _DUCKDB_CORE


def duckdb_catalog_rows(rows: Any, core: frozenset[str]) -> list[tuple]:
    """``duckdb_functions()`` rows as :meth:`FunctionCatalog.from_duckdb` takes them, each with
    whether it is DuckDB's own or an extension's (else the database or the connection defines
    it: a file's macro, a Python function registered on the connection).

    Example:
        >>> rows = [("lower", "scalar", "CONSISTENT", False, True, None),
        ...         ("json_valid", "scalar", "CONSISTENT", False, True, "json"),
        ...         ("pyf", "scalar", "CONSISTENT", False, True, None),
        ...         ("fmt", "macro", None, False, False, None)]
        >>> [r[-1] for r in duckdb_catalog_rows(rows, frozenset({"lower"}))]
        [True, True, False, False]
    """
    out = []
    for name, kind, stability, side_effects, internal, extension in rows:
        own = bool(internal) and (extension is not None or str(name).lower() in core)
        out.append((name, kind, stability, side_effects, internal, own))
    return out


def duckdb_functions(con: Any) -> FunctionCatalog | None:
    """DuckDB's catalog, read on a sibling cursor of ``con``."""
    cur = con.cursor()
    try:
        try:
            rows = cur.execute(DUCKDB_FUNCTIONS_SQL).fetchall()
        except Exception:  # noqa: BLE001 - an older DuckDB: no extension_name column
            rows = cur.execute(DUCKDB_FUNCTIONS_OLD_SQL).fetchall()
        return FunctionCatalog.from_duckdb(duckdb_catalog_rows(rows, duckdb_core_functions()))
    except Exception as e:  # noqa: BLE001 - the fixed rules still apply
        log.warning("[schema] DuckDB's function catalog could not be read: %s", e)
        return None
    finally:
        cur.close()


def sqlite_functions(con: Any) -> FunctionCatalog | None:
    """SQLite's catalog (``pragma_function_list``, SQLite 3.30 and later)."""
    try:
        return FunctionCatalog.from_sqlite(con.execute(SQLITE_FUNCTIONS_SQL).fetchall())
    except Exception as e:  # noqa: BLE001 - the fixed rules still apply
        log.warning("[schema] SQLite's function catalog could not be read: %s", e)
        return None


_SQLITE_BUILTINS: frozenset[str] | None = None


def sqlite_function_allowed(name: str | None) -> bool:
    """Whether SQLite's authorizer lets a query call ``name``: the built-ins this SQLite library
    marks deterministic (read once per process from a fresh in-memory database), aggregates,
    window functions and the harmless volatile ones; never an application-defined function,
    ``load_extension`` or another never-listed one."""
    global _SQLITE_BUILTINS
    if _SQLITE_BUILTINS is None:
        import sqlite3

        con = sqlite3.connect(":memory:")
        try:
            catalog = sqlite_functions(con)
        finally:
            con.close()
        _SQLITE_BUILTINS = catalog.allowed if catalog is not None else frozenset()
    if not name:
        return False
    lowered = name.lower()
    if _SQLITE_BUILTINS:
        return lowered in _SQLITE_BUILTINS
    from cadet_magic.sql.functions import never_reason

    return never_reason(lowered) is None
