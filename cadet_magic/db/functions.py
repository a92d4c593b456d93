"""Reads each engine's function catalog (edge); the decision is in :mod:`cadet_magic.sql.functions`.

The catalog is read with the schema and cached with it (it rides on
:attr:`Schema.functions <cadet_magic.schema.model.Schema>`): PostgreSQL's ``pg_proc``,
DuckDB's ``duckdb_functions()``, SQLite's ``pragma_function_list``. Where a catalog cannot
be read the schema carries None and the safety check applies its fixed rules only.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from cadet_magic.schema.model import Schema
from cadet_magic.sql.functions import FunctionCatalog

log = logging.getLogger("cadet_magic")

PG_FUNCTIONS_SQL = "SELECT proname, provolatile, prokind FROM pg_catalog.pg_proc"
DUCKDB_FUNCTIONS_SQL = (
    "SELECT function_name, function_type, stability, has_side_effects, internal "
    "FROM duckdb_functions()"
)
SQLITE_FUNCTIONS_SQL = "SELECT name, builtin, type, flags FROM pragma_function_list"


def with_functions(schema: Schema, catalog: FunctionCatalog | None) -> Schema:
    """``schema`` carrying ``catalog`` (a copy; schemas are frozen)."""
    return dataclasses.replace(schema, functions=catalog)


def postgres_functions(cur: Any) -> FunctionCatalog | None:
    """PostgreSQL's catalog, read on ``cur`` (a driver cursor inside the runner's transaction)."""
    try:
        cur.execute(PG_FUNCTIONS_SQL)
        return FunctionCatalog.from_postgres(cur.fetchall())
    except Exception as e:  # noqa: BLE001 - the fixed rules still apply
        log.warning("[schema] PostgreSQL's function catalog could not be read: %s", e)
        return None


def duckdb_functions(con: Any) -> FunctionCatalog | None:
    """DuckDB's catalog, read on a sibling cursor of ``con``."""
    cur = con.cursor()
    try:
        return FunctionCatalog.from_duckdb(cur.execute(DUCKDB_FUNCTIONS_SQL).fetchall())
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
