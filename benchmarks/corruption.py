"""Corruption benchmark: inject model mistakes into gold queries, run them, score the diagnosis.

Takes the Spider dev gold queries (19 databases) and the 22 TPC-H queries, applies every
mutation of :mod:`benchmarks.corruption_mutate` to each, runs the result on DuckDB, SQLite
and PostgreSQL and scores :func:`cadet_magic.diagnose.diagnose_error` per engine and
category: classification accuracy over the mutants the engine rejects, and the suggestion
hit rate (the original identifier among the top 3 suggestions). Mutants an engine accepts
silently are counted apart. Queries whose gold version fails on an engine are skipped there.

Run ``python -m benchmarks.corruption`` (add ``--no-postgres`` or ``--limit N``); it prints
the table and writes it into BENCHMARKS.md (section ``corruption``).

Example:
    >>> s = Score()
    >>> s.add(raised=True, correct=True, hit=None); s.add(raised=False, correct=False, hit=None)
    >>> s.errors, s.silent, s.accuracy
    (1, 1, 1.0)
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlglot

from benchmarks.corruption_data import (
    ENGINES,
    SQLGLOT,
    Database,
    Source,
    close,
    open_spider,
    open_tpch,
    spider_sources,
    tpch_sources,
)
from benchmarks.corruption_mutate import MUTATIONS, Mutant
from cadet_magic.diagnose import diagnose_error

TARGET_OVERALL = 0.97
TARGET_CATEGORY = 0.90
TARGET_HITS = 0.95


@dataclass
class Score:
    """Counts for one (engine, category) cell."""

    generated: int = 0
    errors: int = 0
    silent: int = 0
    correct: int = 0
    hit_total: int = 0
    hits: int = 0
    confusions: Counter = field(default_factory=Counter)
    examples: list = field(default_factory=list)

    def add(self, *, raised: bool, correct: bool, hit: bool | None, got: str = "") -> None:
        self.generated += 1
        if not raised:
            self.silent += 1
            return
        self.errors += 1
        self.correct += int(correct)
        if not correct:
            self.confusions[got] += 1
        if hit is not None:
            self.hit_total += 1
            self.hits += int(hit)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.errors if self.errors else None

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.hit_total if self.hit_total else None


@dataclass
class Result:
    """Scores per (engine, expected category), plus totals."""

    cells: dict[tuple[str, str], Score] = field(default_factory=lambda: defaultdict(Score))
    skipped_gold: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def total(self, engine: str | None = None) -> Score:
        out = Score()
        for (eng, _), s in self.cells.items():
            if engine is None or eng == engine:
                out.generated += s.generated
                out.errors += s.errors
                out.silent += s.silent
                out.correct += s.correct
                out.hit_total += s.hit_total
                out.hits += s.hits
                out.confusions.update(s.confusions)
        return out


def _hit(suggestions: list[str], targets: tuple[str, ...]) -> bool:
    top = [s.lower() for s in suggestions[:3]]
    bare = [s.rsplit(".", 1)[-1] for s in top]  # an unqualified original: any qualifier
    return any(t in top or ("." not in t and t in bare) for t in targets)


def score_mutant(db: Database, engine: str, mutant: Mutant, result: Result) -> None:
    """Runs one mutant and records how the diagnosis did."""
    error = db.run(engine, mutant.sql)
    if engine == "postgresql" and error is not None:
        db.connections[engine].rollback() if not db.connections[engine].autocommit else None
    cell = result.cells[(engine, mutant.category)]
    if error is None:
        cell.add(raised=False, correct=False, hit=None)
        return
    d = diagnose_error(error, sql=mutant.sql, dialect=engine, schema=db.schemas[engine])
    correct = d.category.value == mutant.category
    hit = _hit(d.suggestions, mutant.targets) if mutant.targets and correct else None
    if mutant.targets and not correct:
        hit = False
    cell.add(raised=True, correct=correct, hit=hit, got=d.category.value)
    if (not correct or hit is False) and len(cell.examples) < 5:
        cell.examples.append(
            (mutant.kind, mutant.sql[:160], str(error)[:200], d.category.value, d.suggestions[:3])
        )


def mutants_for(source: Source, db: Database, engine: str, seed: int = 0) -> list[Mutant]:
    """Every applicable mutant of one gold query for one engine (deterministic)."""
    try:
        tree = sqlglot.parse_one(source.sql, read=source.dialect)
    except sqlglot.errors.ParseError:
        return []
    out = []
    for i, (name, mutate) in enumerate(MUTATIONS.items()):
        rng = random.Random(f"{seed}:{source.id}:{engine}:{i}")
        try:
            mutant = mutate(tree.copy(), db.schemas[engine], rng, engine)
        except Exception as e:
            raise RuntimeError(f"mutation {name} failed on {source.id}: {e}") from e
        if mutant is not None:
            out.append(mutant)
    return out


def run_database(
    db: Database, sources: Iterable[Source], result: Result, engines: Iterable[str]
) -> None:
    """Scores every mutant of ``sources`` on ``db``'s engines."""
    for source in sources:
        for engine in engines:
            if engine not in db.connections:
                continue
            try:
                gold = sqlglot.transpile(source.sql, read=source.dialect, write=SQLGLOT[engine])[0]
            except Exception:  # noqa: BLE001
                result.skipped_gold[engine] += 1
                continue
            if db.run(engine, gold) is not None:
                result.skipped_gold[engine] += 1
                continue
            for mutant in mutants_for(source, db, engine):
                score_mutant(db, engine, mutant, result)


def run_benchmark(
    *,
    pg_url: str | None,
    engines: Iterable[str] = ENGINES,
    dbs: Iterable[str] | None = None,
    limit: int | None = None,
    tpch: bool = True,
    spark: Any = None,
) -> Result:
    """Runs the benchmark; ``limit`` caps the gold queries per database (a quick sample)."""
    engines = [e for e in engines if e != "postgresql" or pg_url]
    t0 = time.perf_counter()
    result = Result()
    by_db: dict[str, list[Source]] = defaultdict(list)
    for s in spider_sources(dbs):
        by_db[s.db].append(s)
    for name, sources in sorted(by_db.items()):
        db = open_spider(name, pg_url, engines, spark=spark)
        try:
            run_database(db, sources[:limit] if limit else sources, result, engines)
        finally:
            close(db)
    if tpch:
        db = open_tpch(pg_url, engines)
        try:
            run_database(db, tpch_sources(), result, engines)
        finally:
            close(db)
    result.seconds = time.perf_counter() - t0
    return result


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def report(result: Result, engines: Iterable[str]) -> str:
    """The Markdown body: a table per engine x category, totals and the misclassifications."""
    from benchmarks.report import table

    engines = [e for e in engines if any(k[0] == e for k in result.cells)]
    categories = sorted({c for _, c in result.cells})
    rows = []
    for engine in engines:
        for cat in categories:
            s = result.cells.get((engine, cat))
            if s is None:
                continue
            rows.append(
                [engine, cat, s.generated, s.silent, s.errors, _pct(s.accuracy),
                 f"{_pct(s.hit_rate)} ({s.hit_total})" if s.hit_total else "–"]
            )  # fmt: skip
        t = result.total(engine)
        rows.append(
            [f"**{engine}**", "**all**", t.generated, t.silent, t.errors,
             f"**{_pct(t.accuracy)}**", f"**{_pct(t.hit_rate)}** ({t.hit_total})"]
        )  # fmt: skip
    t = result.total()
    rows.append(
        ["**all engines**", "", t.generated, t.silent, t.errors, f"**{_pct(t.accuracy)}**",
         f"**{_pct(t.hit_rate)}** ({t.hit_total})"]
    )  # fmt: skip
    headers = [
        "engine", "expected category", "mutants", "accepted silently", "errors",
        "classified correctly", "suggestion hit (top 3)",
    ]  # fmt: skip
    body = [
        "Gold queries: Spider dev (19 SQLite databases copied into DuckDB and PostgreSQL) and "
        "TPC-H (22 queries, empty tables). Each mutation is applied once per gold query that "
        "runs on the engine; accuracy counts only mutants the engine rejects (silently "
        "accepted ones are listed apart). Suggestion hit: the original column/table (for "
        "GROUP BY and ambiguity: the table-qualified column) among the top 3 suggestions. "
        f"Targets: accuracy ≥ {TARGET_OVERALL:.0%} overall and ≥ {TARGET_CATEGORY:.0%} per "
        f"category, hits ≥ {TARGET_HITS:.0%} (the design target for classification is > 85%). "
        "DuckDB 1.5 is covered by recorded messages in tests only. Each mutant carries "
        "exactly one clean mistake, so these numbers are an upper bound for real model "
        "errors (which can stack several mistakes); for joins and GROUP BY the candidates "
        "come from the query's own tables, which makes those hits easy.",
        "",
        table(headers, rows),
        "",
        "Gold queries skipped (fail on the engine before mutation): "
        + ", ".join(f"{e} {n}" for e, n in sorted(result.skipped_gold.items()))
        + f". Run time {result.seconds:.0f} s.",
    ]
    confusions = []
    for (engine, cat), s in sorted(result.cells.items()):
        for got, n in s.confusions.most_common():
            confusions.append(f"{engine}: {cat} -> {got} ({n})")
    if confusions:
        body += ["", "Misclassified: " + "; ".join(confusions) + "."]
    return "\n".join(body)


def main(argv: list[str] | None = None) -> None:
    from benchmarks.report import write_section

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="gold queries per database")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--examples", action="store_true", help="print failing examples")
    parser.add_argument(
        "--spark",
        action="store_true",
        help="Spark SQL only (a local classic session; Spider as temporary views), written to "
        "its own section",
    )
    args = parser.parse_args(argv)
    if args.spark:
        _main_spark(args)
        return
    engines = [e for e in ENGINES if not (args.no_postgres and e == "postgresql")]
    if "postgresql" in engines:
        from workloads.postgres import pg_cluster

        with pg_cluster() as url:
            result = run_benchmark(pg_url=url, engines=engines, limit=args.limit)
    else:
        result = run_benchmark(pg_url=None, engines=engines, limit=args.limit)
    if args.examples:
        for key, s in sorted(result.cells.items()):
            for ex in s.examples:
                print(key, ex)
    body = report(result, engines)
    if args.no_write:
        print(body)
    else:
        write_section(
            "corruption",
            "Error diagnosis: corruption benchmark",
            body,
            packages=("duckdb", "sqlglot", "psycopg"),
        )


def _main_spark(args: argparse.Namespace) -> None:
    """The benchmark on Spark alone (section ``corruption-spark`` of BENCHMARKS.md)."""
    from benchmarks.report import write_section
    from workloads.spark import classic_session

    with classic_session() as spark:
        spark.sparkContext.setLogLevel("OFF")
        result = run_benchmark(
            pg_url=None, engines=["spark"], limit=args.limit, tpch=False, spark=spark
        )
    if args.examples:
        for key, s in sorted(result.cells.items()):
            for ex in s.examples:
                print(key, ex)
    body = report(result, ["spark"]).replace(
        "Gold queries: Spider dev (19 SQLite databases copied into DuckDB and PostgreSQL) and "
        "TPC-H (22 queries, empty tables).",
        "Gold queries: Spider dev (19 SQLite databases loaded into a local classic Spark session "
        "as temporary views; TPC-H is not run on Spark).",
    )
    if args.no_write:
        print(body)
    else:
        write_section(
            "corruption-spark",
            "Error diagnosis: corruption benchmark on Spark SQL",
            body,
            packages=("pyspark", "sqlglot"),
        )


if __name__ == "__main__":
    main()
