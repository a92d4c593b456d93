"""The corruption benchmark on MariaDB: Spider dev loaded into a throwaway server, and BIRD
mini-dev's MySQL gold queries over empty tables built from its ``dev_tables.json``.

The mutations, scoring and report are :mod:`benchmarks.corruption`'s; this module loads the
data into MariaDB (through PyMySQL) and registers the engine name ``mariadb`` (sqlglot dialect
``mysql``). BIRD ships DDL only, so its tables are empty: enough for the server to reject
wrong names (binder errors), and every gold query is first checked to bind and run.

Run ``python -m benchmarks.corruption_mariadb`` (``--limit N`` gold queries per database,
``--no-write`` to print only); it writes its page ``docs/benchmarks/corruption_mariadb.md`` and its rows of BENCHMARKS.md.

Example:
    >>> mysql_type("integer"), mysql_type("DOUBLE"), mysql_type("text"), mysql_type("datetime")
    ('BIGINT', 'DOUBLE', 'TEXT', 'DATETIME')
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from benchmarks import corruption, corruption_mutate
from benchmarks.corruption_data import DATA, Database, Source, _load, spider_sources
from benchmarks.report import write_page
from cadet_magic.schema.structure import Column, Schema, Table

ENGINE = "mariadb"
BIRD = DATA / "bird-minidev"
# The benchmark's engine name -> sqlglot dialect, next to the three engines of corruption_data.
corruption.SQLGLOT.setdefault(ENGINE, "mysql")
corruption_mutate.SQLGLOT.setdefault(ENGINE, "mysql")
# Other dialects' functions MariaDB lacks (it has NVL, IFNULL, DATE_FORMAT, TO_CHAR and YEAR).
corruption_mutate.FOREIGN_FUNCTIONS.setdefault(
    ENGINE,
    [
        ("strftime", "'%Y', {c}"),
        ("date_trunc", "'month', {c}"),
        ("len", "{c}"),
        ("charindex", "'a', {c}"),
        ("split_part", "{c}, ',', 1"),
        ("julianday", "{c}"),
    ],
)

_TYPES = {
    "integer": "BIGINT",
    "double": "DOUBLE",
    "real": "DOUBLE",
    "number": "DOUBLE",
    "text": "TEXT",
    "date": "DATE",
    "datetime": "DATETIME",
}


def mysql_type(name: str) -> str:
    """A column type of the sources (Spider's inferred ones, BIRD's ``column_types``)."""
    return _TYPES.get(name.lower(), "TEXT")


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class _Connection:
    """A PyMySQL connection with the ``execute(sql) -> cursor`` shape the benchmark uses."""

    def __init__(self, con: Any) -> None:
        self.con = con

    def execute(self, sql: str) -> Any:
        cur = self.con.cursor()
        cur.execute(sql)
        return cur

    def close(self) -> None:
        self.con.close()


def _schema(cur: Any) -> Schema:
    cur.execute(
        "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION"
    )
    by: dict[str, list[Column]] = {}
    for t, c, typ in cur.fetchall():
        by.setdefault(t, []).append(Column(c, str(typ).upper()))
    return Schema(tuple(Table(t, tuple(cs)) for t, cs in by.items()), "mysql")


def _connect(url: str, db: str) -> Any:
    import pymysql

    from workloads.mariadb import connect_args

    admin = pymysql.connect(**connect_args(url), autocommit=True)
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {_q(db)}")
        cur.execute(f"CREATE DATABASE {_q(db)} CHARACTER SET utf8mb4")
    admin.close()
    con = pymysql.connect(**connect_args(url), database=db, autocommit=True, charset="utf8mb4")
    with con.cursor() as cur:
        cur.execute("SET SESSION max_statement_time = 10")
    return con


def open_spider_mariadb(url: str, db: str) -> Database:
    """The Spider database ``db`` copied (schema and rows) from its SQLite file into MariaDB."""
    con = _connect(url, f"spider_{db}")
    with con.cursor() as cur:
        for table, cols, types, rows in _load(
            DATA / "spider-dev" / "database" / db / f"{db}.sqlite"
        ):
            decl = ", ".join(f"{_q(c)} {mysql_type(t)}" for c, t in zip(cols, types, strict=True))
            cur.execute(f"CREATE TABLE {_q(table)} ({decl})")
            if rows:
                marks = ", ".join(["%s"] * len(cols))
                clean = [tuple(_value(v, t) for v, t in zip(r, types, strict=True)) for r in rows]
                cur.executemany(f"INSERT INTO {_q(table)} VALUES ({marks})", clean)
        schema = _schema(cur)
    database = Database(db)
    database.connections[ENGINE] = _Connection(con)
    database.schemas[ENGINE] = schema
    return database


def _value(v: Any, kind: str) -> Any:
    if v is None:
        return None
    if kind == "TEXT":
        return str(v)
    return v


def open_bird_mariadb(url: str, db: str) -> Database:
    """Empty tables of the BIRD database ``db`` on MariaDB."""
    from workloads.mariadb import bird_ddl

    con = _connect(url, f"bird_{db}")
    with con.cursor() as cur:
        for statement in bird_ddl(BIRD)[db]:
            cur.execute(statement)
        schema = _schema(cur)
    database = Database(db)
    database.connections[ENGINE] = _Connection(con)
    database.schemas[ENGINE] = schema
    return database


def bird_sources() -> list[Source]:
    """BIRD mini-dev's 500 MySQL gold queries."""
    items = json.loads((BIRD / "mini_dev_mysql.json").read_text())
    return [Source(f"bird-{q['question_id']}", q["db_id"], q["SQL"], "mysql") for q in items]


def run_benchmark(url: str, limit: int | None = None, bird: bool = True) -> corruption.Result:
    """Every mutation of every gold query that runs on MariaDB, scored per category."""
    t0 = time.perf_counter()
    result = corruption.Result()
    by_db: dict[str, list[Source]] = defaultdict(list)
    for s in spider_sources():
        by_db[s.db].append(s)
    for name, sources in sorted(by_db.items()):
        db = open_spider_mariadb(url, name)
        try:
            corruption.run_database(db, sources[:limit] if limit else sources, result, [ENGINE])
        finally:
            db.connections[ENGINE].close()
    if bird:
        by_bird: dict[str, list[Source]] = defaultdict(list)
        for s in bird_sources():
            by_bird[s.db].append(s)
        for name, sources in sorted(by_bird.items()):
            db = open_bird_mariadb(url, name)
            try:
                corruption.run_database(db, sources[:limit] if limit else sources, result, [ENGINE])
            finally:
                db.connections[ENGINE].close()
    result.seconds = time.perf_counter() - t0
    return result


def report(result: corruption.Result, server: str) -> str:
    """The page's body: the benchmark's table for MariaDB, with what was loaded."""
    body = corruption.report(result, [ENGINE]).split("\n\n", 1)[1]
    total = result.total(ENGINE)
    ok = (total.accuracy or 0) >= corruption.TARGET_OVERALL and (
        total.hit_rate or 0
    ) >= corruption.TARGET_HITS
    intro = (
        f"Gold queries: Spider dev (19 SQLite databases copied with their rows into {server}) "
        "and BIRD mini-dev's 500 MySQL gold queries (11 databases; BIRD ships no rows, so its "
        "tables are created empty from dev_tables.json), read and mutated in sqlglot's mysql "
        "dialect. The server's errors are read through PyMySQL (error number -> category). "
        f"Targets: category ≥ {corruption.TARGET_OVERALL:.0%}, right name in the top 3 ≥ "
        f"{corruption.TARGET_HITS:.0%}: {'met' if ok else 'NOT met'}. MariaDB's default "
        "sql_mode has no ONLY_FULL_GROUP_BY, and a type mismatch or a division by zero is a "
        "warning and NULL, not an error: those mutants are accepted silently."
    )
    return intro + "\n\n" + body


def _server_version(url: str) -> str:
    import pymysql

    from workloads.mariadb import connect_args

    con = pymysql.connect(**connect_args(url))
    try:
        with con.cursor() as cur:
            cur.execute("SELECT VERSION()")
            return "MariaDB " + str(cur.fetchone()[0]).split("-")[0]
    finally:
        con.close()


def main(argv: Iterable[str] | None = None) -> None:
    from workloads.mariadb import mariadb_server

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="gold queries per database")
    parser.add_argument("--no-bird", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--examples", action="store_true", help="print failing examples")
    args = parser.parse_args(list(argv) if argv is not None else None)
    with mariadb_server() as url:
        server = _server_version(url)
        result = run_benchmark(url, limit=args.limit, bird=not args.no_bird)
    if args.examples:
        for key, s in sorted(result.cells.items()):
            for ex in s.examples:
                print(key, ex)
    body = report(result, server)
    if args.no_write:
        print(body)
    else:
        write_page(
            "corruption_mariadb",
            f"Error diagnosis: corruption benchmark on {server}",
            body,
            corruption.overall_figures(result, server, "python -m benchmarks.corruption_mariadb"),
            packages=("sqlglot", "PyMySQL"),
        )


if __name__ == "__main__":
    main()
