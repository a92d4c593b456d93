"""BIRD mini-dev for the corruption benchmark: its 11 databases as empty tables (BIRD ships
no contents; binding errors need none) on DuckDB, SQLite and PostgreSQL, with the foreign
keys of ``dev_tables.json``, and its 500 SQLite gold queries.

Example:
    >>> pg_name("CustomerID"), pg_name("Free Meal Count (K-12)")
    ('customerid', 'Free Meal Count (K-12)')
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from benchmarks.corruption_data import (
    DATA,
    ENGINES,
    Database,
    Source,
    _duck_schema,
    _pg_schema,
    _schema_sqlite,
)
from cadet_magic.schema.structure import ForeignKey, Schema

BIRD = DATA / "bird-minidev"
_TYPES = {"integer": "BIGINT", "real": "DOUBLE", "date": "DATE", "datetime": "TIMESTAMP"}
_PG_TYPES = {
    "integer": "BIGINT",
    "real": "DOUBLE PRECISION",
    "date": "DATE",
    "datetime": "TIMESTAMP",
}


def pg_name(name: str) -> str:
    """PostgreSQL folds unquoted names to lower case: plain names are created lower-cased
    (as the gold SQL writes them unquoted), names that must be quoted keep their spelling."""
    return name.lower() if name.isidentifier() else name


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def bird_sources() -> list[Source]:
    """The BIRD mini-dev gold queries in their SQLite dialect."""
    items = json.loads((BIRD / "mini_dev_sqlite.json").read_text())
    return [Source(f"bird-{i['question_id']}", i["db_id"], i["SQL"], "sqlite") for i in items]


def _tables(db: str) -> dict[str, Any]:
    spec = next(d for d in json.loads((BIRD / "dev_tables.json").read_text()) if d["db_id"] == db)
    tables: dict[str, Any] = {t: {"columns": [], "fks": []} for t in spec["table_names_original"]}
    names = spec["table_names_original"]
    cols = spec["column_names_original"]
    for (ti, col), typ in zip(cols, spec["column_types"], strict=True):
        if ti >= 0:
            tables[names[ti]]["columns"].append((col, typ))
    for src, dst in spec["foreign_keys"]:
        (st, sc), (dt, dc) = cols[src], cols[dst]
        tables[names[st]]["fks"].append(ForeignKey((sc,), names[dt], (dc,)))
    return tables


def _with_fks(schema: Schema, tables: dict[str, Any], fold: bool = False) -> Schema:
    from dataclasses import replace

    by = {k.lower(): v["fks"] for k, v in tables.items()}
    out = []
    for t in schema.tables:
        fks = by.get(t.name.lower(), [])
        if fold:
            fks = [
                ForeignKey(
                    tuple(pg_name(c) for c in f.columns),
                    pg_name(f.ref_table),
                    tuple(pg_name(c) for c in f.ref_columns),
                )
                for f in fks
            ]
        out.append(replace(t, foreign_keys=tuple(fks)))
    return Schema(tuple(out), schema.dialect)


def open_bird(db: str, pg_url: str | None, engines: Iterable[str] = ENGINES) -> Database:
    """The BIRD database ``db`` as empty tables on the requested engines."""
    engines = list(engines)
    tables = _tables(db)
    database = Database(db)

    def ddl(name: str, cols: list, types: dict, quote: Any) -> str:
        decl = ", ".join(f"{quote(c)} {types.get(t, 'TEXT')}" for c, t in cols)
        return f"CREATE TABLE {quote(name)} ({decl})"

    if "sqlite" in engines:
        con = sqlite3.connect(":memory:")
        for name, spec in tables.items():
            con.execute(ddl(name, spec["columns"], {"integer": "INTEGER", "real": "REAL"}, _q))
        database.connections["sqlite"] = con
        database.schemas["sqlite"] = _with_fks(_schema_sqlite(con), tables)
    if "duckdb" in engines:
        import duckdb

        dcon = duckdb.connect()
        for name, spec in tables.items():
            dcon.execute(ddl(name, spec["columns"], _TYPES, _q))
        database.connections["duckdb"] = dcon
        database.schemas["duckdb"] = _with_fks(_duck_schema(dcon), tables)
    if "postgresql" in engines and pg_url:
        import psycopg

        schema = f"bird_{db.lower()}"
        con = psycopg.connect(pg_url, autocommit=True)
        con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        con.execute(f"CREATE SCHEMA {schema}")
        con.execute(f"SET search_path TO {schema}")
        con.execute("SET statement_timeout = '10s'")
        for name, spec in tables.items():
            con.execute(ddl(name, spec["columns"], _PG_TYPES, lambda n: _q(pg_name(n))))
        database.connections["postgresql"] = con
        database.schemas["postgresql"] = _with_fks(_pg_schema(con, schema), tables, fold=True)
    return database
