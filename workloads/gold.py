"""The SQL workloads as datasets: our safety corpus and the public gold queries.

The safety corpus (``workloads/corpus/``: statements the check must refuse, queries it must
accept, written for this repository over the sample shop's tables) is part of the repository.
The public data sets (Spider dev, BIRD mini-dev in SQLite, PostgreSQL and MySQL flavours, TPC-H
and TPC-DS) are not ours to copy in: they are read in place from the folder named by the
``CADET_DATA`` environment variable (default: ``../shared/data`` beside the repository, when it
exists); see CONTRIBUTING.md, "Public data sets". Each is a :class:`Dataset` of :class:`Case` s with
the verdict the safety check must reach. The test suite and the benchmarks both read them here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1]
#: The environment variable naming the folder of the public data sets.
DATA_VAR = "CADET_DATA"
#: The folders it holds (CONTRIBUTING.md, "Public data sets").
DATA_SETS = ("spider-dev", "bird-minidev", "tpch", "tpcds")
#: Where they are looked for when the variable is unset: a ``shared/data`` folder beside the
#: repository (the layout of this project's development machines and CI).
DEFAULT_DATA = ROOT.parent / "shared" / "data"
#: The public data sets' folder: ``$CADET_DATA``, else :data:`DEFAULT_DATA` (which may not exist:
#: see :func:`data_missing`).
DATA = Path(os.environ[DATA_VAR]).expanduser() if os.environ.get(DATA_VAR) else DEFAULT_DATA
#: The safety corpus: repository files, always present.
CORPUS = ROOT / "workloads" / "corpus"
#: The sample shop's tables: the allow-list of the safety corpus.
SHOP = ("customers", "products", "orders", "order_items")
#: Spider's ``concert_singer`` tables (the allow-list of tests/sql/cases.json).
CONCERT_SINGER = ("singer", "concert", "stadium", "singer_in_concert")
#: The dialects a must_refuse entry marked ``any`` is checked in.
ANY_DIALECTS = ("duckdb", "sqlite", "postgres", "mysql", "snowflake", "bigquery", "spark", "trino")
#: The dialects a must_accept entry marked ``any`` is checked in (the corpus's own dialects:
#: some entries are not valid MySQL or BigQuery, e.g. a bare VALUES or UNION without DISTINCT).
ANY_ACCEPT_DIALECTS = ("duckdb", "sqlite", "postgres")
#: The ``why`` of must_refuse entries about tables outside the allowed schema.
OUTSIDE = "a table outside the schema"


def data_missing(data: Path = DATA, sets: tuple[str, ...] = DATA_SETS) -> str | None:
    """Why the public data sets cannot be used (naming the variable), or None when they can.

    >>> data_missing(Path("/nowhere"), ("tpch",)).startswith("public data sets not found")
    True
    """
    where = f"{DATA_VAR}={data}" if os.environ.get(DATA_VAR) else f"{DATA_VAR} unset, {data}"
    if not data.is_dir():
        return (
            f"public data sets not found ({where}): set {DATA_VAR} to the folder holding "
            f"{', '.join(s + '/' for s in sets)} (CONTRIBUTING.md: Public data sets)"
        )
    absent = [s for s in sets if not (data / s).is_dir()]
    if absent:
        return f"{', '.join(absent)} missing from {data} ({DATA_VAR}; CONTRIBUTING.md: Public data sets)"
    return None


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


def must_refuse(corpus: Path = CORPUS) -> Dataset:
    """Every must_refuse entry, in each of its dialects, with the shop's tables as the
    allow-list, and again with the allow-list off unless the entry is about a table outside
    the schema."""
    cases = []
    for e in json.loads((corpus / "must_refuse.json").read_text()):
        for d in _corpus_dialects(e):
            cases.append(Case(f"{e['id']}/{d}", e["sql"], d, SHOP, False))
            if e["why"] != OUTSIDE:
                cases.append(Case(f"{e['id']}/{d}/no-list", e["sql"], d, None, False))
    return Dataset("must_refuse corpus", cases)


def must_accept(corpus: Path = CORPUS) -> Dataset:
    """Every must_accept entry, in each of its dialects, with the allow-list off and with the
    shop's tables as the allow-list."""
    cases = []
    for e in json.loads((corpus / "must_accept.json").read_text()):
        for d in _corpus_dialects(e, ANY_ACCEPT_DIALECTS):
            cases.append(Case(f"{e['id']}/{d}", e["sql"], d, SHOP, True))
            cases.append(Case(f"{e['id']}/{d}/no-list", e["sql"], d, None, True))
    return Dataset("must_accept corpus", cases)


def gold(data: Path) -> Iterator[Dataset]:
    """All gold-query datasets."""
    yield spider(data)
    for flavour in ("sqlite", "postgresql", "mysql"):
        yield bird(data, flavour)
    yield tpch(data)
    yield tpcds(data)


def all_datasets(data: Path = DATA) -> list[Dataset]:
    """The corpus, and the gold queries when the public data sets are present."""
    corpus = [must_refuse(), must_accept()]
    return corpus if data_missing(data) else [*corpus, *gold(data)]
