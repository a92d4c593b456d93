"""Sources and engines for the corruption benchmark: Spider dev and TPC-H on three engines.

Spider's SQLite databases are copied (schema and data) into DuckDB and PostgreSQL; TPC-H's
DDL is created empty on all three (empty tables are enough to raise binder errors).

Example:
    >>> from benchmarks.corruption_data import column_type
    >>> column_type([1, 2, None]), column_type([1.5, 2]), column_type(["a", 1])
    ('INTEGER', 'DOUBLE', 'TEXT')
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cadet_magic.schema.structure import Column, Schema, Table
from workloads.gold import DATA

SPIDER = DATA / "spider-dev"
TPCH = DATA / "tpch"
ENGINES = ("duckdb", "sqlite", "postgresql")
SQLGLOT = {"duckdb": "duckdb", "sqlite": "sqlite", "postgresql": "postgres"}
SQLGLOT["spark"] = "spark"  # Spark SQL: a classic local session, Spider as temporary views


@dataclass
class Source:
    """One gold query: where it comes from, its database and its dialect."""

    id: str
    db: str
    sql: str
    dialect: str  # sqlglot dialect the gold SQL is written in


@dataclass
class Database:
    """One database on the three engines, with its live schema per engine."""

    name: str
    connections: dict[str, Any] = field(default_factory=dict)
    schemas: dict[str, Schema] = field(default_factory=dict)

    def run(self, engine: str, sql: str) -> BaseException | None:
        """Runs ``sql`` on ``engine``; returns the raised exception or None."""
        con = self.connections[engine]
        try:
            if engine == "spark":
                con.sql(sql).limit(50).collect()
            elif engine == "postgresql":
                with con.cursor() as cur:
                    cur.execute(sql)
                    if cur.description is not None:
                        cur.fetchmany(50)
            else:
                cur = con.execute(sql)
                cur.fetchmany(50)
        except Exception as e:  # noqa: BLE001 - the benchmark wants every engine error
            return e
        return None


def column_type(values: Iterable[Any]) -> str:
    """The narrowest of INTEGER, DOUBLE, TEXT that holds every (non-null) value."""
    kind = "INTEGER"
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool) or isinstance(v, int):
            continue
        if isinstance(v, float):
            kind = "DOUBLE"
            continue
        return "TEXT"
    return kind


def spider_sources(dbs: Iterable[str] | None = None) -> list[Source]:
    """Spider dev gold queries of the databases present (all 19 unless ``dbs``)."""
    present = {p.name for p in (SPIDER / "database").iterdir() if p.is_dir()}
    wanted = set(dbs) & present if dbs is not None else present
    out = []
    for i, item in enumerate(json.loads((SPIDER / "dev.json").read_text())):
        if item["db_id"] in wanted:
            out.append(Source(f"spider-{i}", item["db_id"], item["query"], "sqlite"))
    return out


def tpch_sources() -> list[Source]:
    """The 22 TPC-H queries (DuckDB dialect)."""
    return [
        Source(f"tpch-{p.stem}", "tpch", p.read_text().strip().rstrip(";"), "duckdb")
        for p in sorted((TPCH / "queries").glob("q*.sql"))
    ]


def _sqlite_tables(con: sqlite3.Connection) -> list[str]:
    rows = con.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
    )
    return [r[0] for r in rows]


def _load(path: Path) -> Iterator[tuple[str, list[str], list[str], list[tuple]]]:
    """(table, columns, types, rows) of a Spider SQLite database."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    for t in _sqlite_tables(con):
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
        rows = con.execute(f'SELECT * FROM "{t}"').fetchall()
        types = [column_type(r[i] for r in rows) for i in range(len(cols))]
        yield t, cols, types, rows
    con.close()


def _coerce(rows: list[tuple], types: list[str]) -> list[tuple]:
    out = []
    for r in rows:
        out.append(
            tuple(
                None if v is None else (str(v) if t == "TEXT" else v)
                for v, t in zip(r, types, strict=True)
            )
        )
    return out


def _duck_type(t: str) -> str:
    return {"INTEGER": "BIGINT"}.get(t, t)


def _pg_type(t: str) -> str:
    return {"INTEGER": "BIGINT", "DOUBLE": "DOUBLE PRECISION"}.get(t, "TEXT")


def _schema_sqlite(con: sqlite3.Connection) -> Schema:
    tables = []
    for t in _sqlite_tables(con):
        cols = tuple(
            Column(r[1], (r[2] or "").upper()) for r in con.execute(f'PRAGMA table_info("{t}")')
        )
        tables.append(Table(t, cols))
    return Schema(tuple(tables), "sqlite")


def _schema_info(rows: Iterable[tuple[str, str, str]], dialect: str) -> Schema:
    by: dict[str, list[Column]] = {}
    for t, c, typ in rows:
        by.setdefault(t, []).append(Column(c, str(typ).upper()))
    return Schema(tuple(Table(t, tuple(cs)) for t, cs in by.items()), dialect)


def _duck_schema(con: Any) -> Schema:
    rows = con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position"
    ).fetchall()
    return _schema_info(rows, "duckdb")


def _pg_schema(con: Any, schema: str) -> Schema:
    with con.cursor() as cur:
        cur.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s ORDER BY table_name, ordinal_position",
            (schema,),
        )
        return _schema_info(cur.fetchall(), "postgresql")


def _pg_ident(name: str) -> str:
    return '"' + name.lower().replace('"', '""') + '"'


def open_spider(
    db: str, pg_url: str | None, engines: Iterable[str] = ENGINES, spark: Any = None
) -> Database:
    """The Spider database ``db`` on the requested engines (copied from its SQLite file)."""
    import duckdb
    import pandas as pd

    engines = list(engines)
    path = SPIDER / "database" / db / f"{db}.sqlite"
    database = Database(db)
    loaded = list(_load(path))
    if "sqlite" in engines:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        con.text_factory = lambda b: b.decode("utf-8", "replace")
        database.connections["sqlite"] = con
        database.schemas["sqlite"] = _schema_sqlite(con)
    if "duckdb" in engines:
        dcon = duckdb.connect()
        for t, cols, types, rows in loaded:
            decl = ", ".join(f'"{c}" {_duck_type(typ)}' for c, typ in zip(cols, types, strict=True))
            dcon.execute(f'CREATE TABLE "{t}" ({decl})')
            if rows:
                frame = pd.DataFrame(_coerce(rows, types), columns=cols, dtype=object)
                dcon.register("frame_in", frame)
                casts = ", ".join(
                    f'CAST("{c}" AS {_duck_type(typ)})' for c, typ in zip(cols, types, strict=True)
                )
                dcon.execute(f'INSERT INTO "{t}" SELECT {casts} FROM frame_in')
                dcon.unregister("frame_in")
        database.connections["duckdb"] = dcon
        database.schemas["duckdb"] = _duck_schema(dcon)
    if "postgresql" in engines and pg_url:
        database.connections["postgresql"] = _pg_load(pg_url, db, loaded)
        database.schemas["postgresql"] = _pg_schema(database.connections["postgresql"], db.lower())
    if "spark" in engines and spark is not None:
        database.connections["spark"] = spark
        database.schemas["spark"] = _spark_load(spark, loaded)
    return database


def _spark_load(spark: Any, loaded: list) -> Schema:
    """Spider's tables as temporary views of ``spark`` (earlier ones dropped); their schema."""
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    for t in spark.catalog.listTables():
        if t.isTemporary:
            spark.catalog.dropTempView(t.name)
    kinds = {"INTEGER": LongType(), "DOUBLE": DoubleType()}
    rows_info = []
    for t, cols, types, rows in loaded:
        struct = StructType(
            [StructField(c, kinds.get(k, StringType())) for c, k in zip(cols, types, strict=True)]
        )
        data = [
            tuple(
                float(v) if k == "DOUBLE" and v is not None else v
                for v, k in zip(r, types, strict=True)
            )
            for r in _coerce(rows, types)
        ]
        spark.createDataFrame(data, struct).createOrReplaceTempView(t)
        rows_info += [(t, c, {"INTEGER": "bigint", "DOUBLE": "double"}.get(k, "string"))
                      for c, k in zip(cols, types, strict=True)]  # fmt: skip
    return _schema_info(rows_info, "spark")


def _pg_load(pg_url: str, schema: str, loaded: list) -> Any:
    import psycopg

    con = psycopg.connect(pg_url, autocommit=True)
    con.execute(f"DROP SCHEMA IF EXISTS {_pg_ident(schema)} CASCADE")
    con.execute(f"CREATE SCHEMA {_pg_ident(schema)}")
    con.execute(f"SET search_path TO {_pg_ident(schema)}")
    con.execute("SET statement_timeout = '10s'")
    for t, cols, types, rows in loaded:
        decl = ", ".join(
            f"{_pg_ident(c)} {_pg_type(typ)}" for c, typ in zip(cols, types, strict=True)
        )
        con.execute(f"CREATE TABLE {_pg_ident(t)} ({decl})")
        if rows:
            with con.cursor() as cur:
                names = ", ".join(_pg_ident(c) for c in cols)
                with cur.copy(f"COPY {_pg_ident(t)} ({names}) FROM STDIN") as copy:
                    for r in _coerce(rows, types):
                        copy.write_row(tuple(_pg_clean(v) for v in r))
    return con


def _pg_clean(v: Any) -> Any:
    return v.replace("\x00", "") if isinstance(v, str) else v


def open_tpch(pg_url: str | None, engines: Iterable[str] = ENGINES) -> Database:
    """Empty TPC-H tables on the requested engines."""
    import duckdb

    engines = list(engines)
    ddl = (TPCH / "schema_from_test_fk_tpch.sql").read_text()
    statements = [s.strip() for s in ddl.split(";") if s.strip()]
    database = Database("tpch")
    if "sqlite" in engines:
        con = sqlite3.connect(":memory:")
        for s in statements:
            con.execute(s)
        database.connections["sqlite"] = con
        database.schemas["sqlite"] = _schema_sqlite(con)
    if "duckdb" in engines:
        dcon = duckdb.connect()
        for s in statements:
            dcon.execute(s)
        database.connections["duckdb"] = dcon
        database.schemas["duckdb"] = _duck_schema(dcon)
    if "postgresql" in engines and pg_url:
        import psycopg

        con = psycopg.connect(pg_url, autocommit=True)
        con.execute("DROP SCHEMA IF EXISTS tpch CASCADE")
        con.execute("CREATE SCHEMA tpch")
        con.execute("SET search_path TO tpch")
        con.execute("SET statement_timeout = '10s'")
        for s in statements:
            con.execute(re.sub(r"\s+", " ", s))
        database.connections["postgresql"] = con
        database.schemas["postgresql"] = _pg_schema(con, "tpch")
    return database


def close(database: Database) -> None:
    """Closes every connection of ``database``."""
    for engine, con in database.connections.items():
        if engine == "spark":
            continue  # the session is the caller's
        try:
            con.close()
        except Exception:  # noqa: BLE001
            pass
