"""The shared SQL workloads as datasets: the refusal/acceptance corpus and the gold queries.

Spider dev, BIRD mini-dev (SQLite, PostgreSQL, MySQL flavours), TPC-H and TPC-DS, each a
:class:`Dataset` of :class:`Case` s with the verdict the safety check must reach. The test suite
and the benchmarks both read them from here (the data stays where it is, next to the repository).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CONCERT_SINGER = ("singer", "concert", "stadium", "singer_in_concert")
#: Table names ``must_accept.json`` uses besides the ``concert_singer`` ones.
EXTRA_ACCEPT_TABLES = ("flags", "audit", "stats", "t")
#: The dialects a must_refuse entry marked ``any`` is checked in.
ANY_DIALECTS = ("duckdb", "sqlite", "postgres", "mysql", "snowflake", "bigquery", "spark", "trino")
#: The dialects a must_accept entry marked ``any`` is checked in (the corpus's own dialects:
#: some entries are not valid MySQL or BigQuery, e.g. a bare VALUES or UNION without DISTINCT).
ANY_ACCEPT_DIALECTS = ("duckdb", "sqlite", "postgres")


@dataclass(frozen=True)
class Case:
    """One query to check: where it comes from, its dialect, the allowed tables, the verdict."""

    id: str
    sql: str
    dialect: str
    tables: tuple[str, ...] | None
    expect_ok: bool


@dataclass(frozen=True)
class Dataset:
    name: str
    cases: list[Case]


def _ddl_tables(paths: list[Path]) -> tuple[str, ...]:
    names = []
    for p in paths:
        for tree in sqlglot.parse(p.read_text(), read="duckdb"):
            if isinstance(tree, exp.Create) and tree.find(exp.Table) is not None:
                names.append(tree.find(exp.Table).name.lower())
    return tuple(sorted(set(names)))


def spider(data: Path) -> Dataset:
    """Spider dev: 1034 gold queries (SQLite), allowed tables from tables.json."""
    root = data / "spider-dev"
    schemas = {
        s["db_id"]: tuple(s["table_names_original"])
        for s in json.loads((root / "tables.json").read_text())
    }
    items = json.loads((root / "dev.json").read_text())
    return Dataset(
        "Spider dev (sqlite)",
        [
            Case(f"spider-{i}", q["query"], "sqlite", schemas[q["db_id"]], True)
            for i, q in enumerate(items)
        ],
    )


def bird(data: Path, flavour: str) -> Dataset:
    """BIRD mini-dev gold queries in ``flavour`` (sqlite, postgresql, mysql)."""
    root = data / "bird-minidev"
    schemas = {
        s["db_id"]: tuple(s["table_names_original"])
        for s in json.loads((root / "dev_tables.json").read_text())
    }
    dialect = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql"}[flavour]
    items = json.loads((root / f"mini_dev_{flavour}.json").read_text())
    return Dataset(
        f"BIRD mini-dev ({dialect})",
        [
            Case(f"bird-{flavour}-{q['question_id']}", q["SQL"], dialect, schemas[q["db_id"]], True)
            for q in items
        ],
    )


def tpch(data: Path) -> Dataset:
    """TPC-H 22 queries (DuckDB), allowed tables from the schema DDL."""
    root = data / "tpch"
    tables = _ddl_tables([root / "schema_from_test_fk_tpch.sql"])
    return Dataset(
        "TPC-H (duckdb)",
        [
            Case(f"tpch-{p.stem}", p.read_text(), "duckdb", tables, True)
            for p in sorted((root / "queries").glob("*.sql"))
        ],
    )


def tpcds(data: Path) -> Dataset:
    """TPC-DS 99 queries (DuckDB), allowed tables from the 24 table DDLs."""
    root = data / "tpcds"
    tables = _ddl_tables(sorted((root / "schema").glob("*.sql")))
    return Dataset(
        "TPC-DS (duckdb)",
        [
            Case(f"tpcds-{p.stem}", p.read_text(), "duckdb", tables, True)
            for p in sorted((root / "queries").glob("*.sql"))
        ],
    )


def _corpus_dialects(entry: dict, any_: tuple[str, ...] = ANY_DIALECTS) -> tuple[str, ...]:
    return any_ if entry["dialect"] == "any" else (entry["dialect"],)


def must_refuse(corpus: Path) -> Dataset:
    """Every must_refuse entry, in each of its dialects, with the concert_singer allow-list,
    and again with the allow-list off unless the entry is about a table outside the schema."""
    cases = []
    for e in json.loads((corpus / "must_refuse.json").read_text()):
        for d in _corpus_dialects(e):
            cases.append(Case(f"{e['id']}/{d}", e["sql"], d, CONCERT_SINGER, False))
            if "outside the allowed schema" not in e["why"]:
                cases.append(Case(f"{e['id']}/{d}/no-list", e["sql"], d, None, False))
    return Dataset("must_refuse corpus", cases)


def must_accept(corpus: Path) -> Dataset:
    """Every must_accept entry, in each of its dialects, with the allow-list off and with an
    allow-list naming concert_singer's tables and the extra names the corpus uses."""
    cases = []
    allowed = CONCERT_SINGER + EXTRA_ACCEPT_TABLES
    for e in json.loads((corpus / "must_accept.json").read_text()):
        for d in _corpus_dialects(e, ANY_ACCEPT_DIALECTS):
            cases.append(Case(f"{e['id']}/{d}", e["sql"], d, allowed, True))
            cases.append(Case(f"{e['id']}/{d}/no-list", e["sql"], d, None, True))
    return Dataset("must_accept corpus", cases)


def gold(data: Path) -> Iterator[Dataset]:
    """All gold-query datasets."""
    yield spider(data)
    for flavour in ("sqlite", "postgresql", "mysql"):
        yield bird(data, flavour)
    yield tpch(data)
    yield tpcds(data)


def all_datasets(shared: Path = SHARED) -> list[Dataset]:
    return [must_refuse(shared / "corpus"), must_accept(shared / "corpus"), *gold(shared / "data")]
