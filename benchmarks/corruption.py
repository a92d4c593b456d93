"""Corruption benchmark: inject model mistakes into gold queries, run them, score the diagnosis.

Takes the Spider dev gold queries (19 databases), BIRD mini-dev's 500 and the 22 TPC-H
queries, applies every mutation of :mod:`benchmarks.corruption_mutate` to each, runs the
result on DuckDB, SQLite and PostgreSQL and scores :func:`cadet_magic.diagnose.diagnose`
per engine and mistake kind: the diagnosis accuracy over the mutants the engine rejects (for
the realistic mistakes, category and advice), the suggestion hit rate (the original
identifier among the top 3 suggestions) and the words of guidance. Mutants an engine accepts
silently are counted apart. Queries whose gold version fails on an engine are skipped there.

Run ``python -m benchmarks.corruption`` (add ``--no-postgres`` or ``--limit N``); it prints
the table and writes its page, ``docs/benchmarks/corruption.md``, and its rows of BENCHMARKS.md.

Example:
    >>> s = Score()
    >>> s.add(raised=True, correct=True, hit=None); s.add(raised=False, correct=False, hit=None)
    >>> s.errors, s.silent, s.accuracy
    (1, 1, 1.0)
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import sqlglot

from benchmarks.corruption_bird import bird_sources, open_bird
from benchmarks.corruption_data import (
    ENGINES,
    SPIDER,
    SQLGLOT,
    TPCH,
    Database,
    Source,
    close,
    open_spider,
    open_tpch,
    spider_sources,
    tpch_sources,
)
from benchmarks.corruption_mutate import MUTATIONS, REALISTIC, Mutant
from benchmarks.report import Row, row, table, write_page
from cadet_magic.db.driver_errors import diagnose_error
from cadet_magic.schema.structure import ForeignKey, Schema

TARGET_OVERALL = 0.97
TARGET_CATEGORY = 0.90
TARGET_HITS = 0.95
#: Per mistake kind and engine (the realistic mistakes): category and top-3 hits.
TARGET_KIND = 0.97
TARGET_KIND_HITS = 0.95
#: The guidance after the failed query, at most.
MAX_WORDS = 60


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
    category: str = ""
    words: list = field(default_factory=list)

    def add(
        self, *, raised: bool, correct: bool, hit: bool | None, got: str = "", words: int = 0
    ) -> None:
        self.generated += 1
        if raised:
            self.words.append(words)
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
    """Scores per (engine, mistake kind), plus totals."""

    cells: dict[tuple[str, str], Score] = field(default_factory=lambda: defaultdict(Score))
    skipped_gold: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    #: the engines' own versions (SQLite library, PostgreSQL server)
    versions: dict = field(default_factory=dict)

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
                out.words.extend(s.words)
        return out


def _hit(suggestions: list[str], targets: tuple[str, ...]) -> bool:
    top = [s.lower() for s in suggestions[:3]]
    bare = [s.rsplit(".", 1)[-1] for s in top]  # an unqualified original: any qualifier
    return any(t in top or ("." not in t and t in bare) for t in targets)


def guidance(feedback: str) -> str:
    """The feedback without the failed query in front of it."""
    return feedback.split("```\n", 2)[-1] if "```" in feedback else feedback


def _found(d, detail: str | None) -> bool:
    """Whether the diagnosis recognised the mistake's kind (not only its category)."""
    if detail is None:
        return True
    mistake = getattr(d.details, "mistake", None)
    return bool(getattr(d.details, detail, None)) or getattr(mistake, "kind", None) == detail


def score_mutant(db: Database, engine: str, mutant: Mutant, result: Result) -> None:
    """Runs one mutant and records how the diagnosis did."""
    error = db.run(engine, mutant.sql)
    if engine == "postgresql" and error is not None:
        db.connections[engine].rollback() if not db.connections[engine].autocommit else None
    cell = result.cells[(engine, mutant.kind)]
    cell.category = mutant.category
    if error is None:
        cell.add(raised=False, correct=False, hit=None)
        return
    d = diagnose_error(error, engine=engine, sql=mutant.sql, schema=db.schemas[engine])
    correct = d.category.value == mutant.category and _found(d, mutant.detail)
    hit = _hit(d.suggestions, mutant.targets) if mutant.targets and correct else None
    if mutant.targets and not correct:
        hit = False
    got = (
        d.category.value if d.category.value != mutant.category else f"{d.category.value} (advice)"
    )
    words = len(guidance(d.feedback).split())
    cell.add(raised=True, correct=correct, hit=hit, got=got, words=words)
    if (not correct or hit is False or words > MAX_WORDS) and len(cell.examples) < 5:
        cell.examples.append(
            (mutant.kind, mutant.sql[:160], str(error)[:200], d.category.value, d.suggestions[:3])
        )


def _sqlite_foreign_keys(con: sqlite3.Connection) -> dict[str, tuple[ForeignKey, ...]]:
    out: dict[str, tuple[ForeignKey, ...]] = {}
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for t in tables:
        groups: dict[int, list] = {}
        for fk in con.execute(f'PRAGMA foreign_key_list("{t}")'):
            groups.setdefault(fk[0], []).append(fk)
        out[t.lower()] = tuple(
            ForeignKey(tuple(r[3] for r in rows), rows[0][2], tuple(r[4] or r[3] for r in rows))
            for rows in groups.values()
        )
    return out


def add_foreign_keys(db: Database, path: Path | None) -> None:
    """Gives every engine's schema the foreign keys declared in the SQLite original (the
    copies into DuckDB and PostgreSQL do not declare them), as the runners read them from
    a real database."""
    if path is not None:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    else:
        con = sqlite3.connect(":memory:")
        for s in (TPCH / "schema_from_test_fk_tpch.sql").read_text().split(";"):
            if s.strip():
                con.execute(s)
    try:
        fks = _sqlite_foreign_keys(con)
    finally:
        con.close()
    for engine, schema in list(db.schemas.items()):
        tables = tuple(replace(t, foreign_keys=fks.get(t.name.lower(), ())) for t in schema.tables)
        db.schemas[engine] = Schema(tables, schema.dialect, functions=schema.functions)


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
    bird: bool | None = None,
    spark: Any = None,
) -> Result:
    """Runs the benchmark; ``limit`` caps the gold queries per database (a quick sample);
    BIRD's databases are included unless ``bird`` is False (default: when ``dbs`` is None)."""
    engines = [e for e in engines if e != "postgresql" or pg_url]
    t0 = time.perf_counter()
    result = Result()
    by_db: dict[str, list[Source]] = defaultdict(list)
    for s in spider_sources(dbs):
        by_db[s.db].append(s)
    result.versions["SQLite"] = sqlite3.sqlite_version
    if pg_url and "postgresql" in engines:
        import psycopg

        with psycopg.connect(pg_url) as con:
            result.versions["PostgreSQL"] = con.execute("SHOW server_version").fetchone()[0]
    for name, sources in sorted(by_db.items()):
        db = open_spider(name, pg_url, engines, spark=spark)
        add_foreign_keys(db, SPIDER / "database" / name / f"{name}.sqlite")
        try:
            run_database(db, sources[:limit] if limit else sources, result, engines)
        finally:
            close(db)
    if bird if bird is not None else dbs is None:
        by_bird: dict[str, list[Source]] = defaultdict(list)
        for s in bird_sources():
            by_bird[s.db].append(s)
        for name, sources in sorted(by_bird.items()):
            db = open_bird(name, pg_url, engines)
            try:
                run_database(db, sources[:limit] if limit else sources, result, engines)
            finally:
                close(db)
    if tpch:
        db = open_tpch(pg_url, engines)
        add_foreign_keys(db, None)
        try:
            run_database(db, tpch_sources(), result, engines)
        finally:
            close(db)
    result.seconds = time.perf_counter() - t0
    return result


def figures(result: Result, engines: Iterable[str], label: str, command: str) -> list[Row]:
    """The rows of BENCHMARKS.md: the worst mistake kind and engine, diagnosed and with the
    right name among the suggestions, and the longest guidance."""
    cells = {k: s for k, s in result.cells.items() if k[0] in set(engines)}
    diagnosed = min((s.accuracy, k) for k, s in cells.items() if s.accuracy is not None)
    hits = min((s.hit_rate, k) for k, s in cells.items() if s.hit_rate is not None)
    words = [w for s in cells.values() for w in s.words]
    most = max(words, default=0)
    return [
        row(
            f"Error diagnosis ({label}): mutants diagnosed, worst mistake and engine",
            f"{diagnosed[0]:.1%} ({' '.join(diagnosed[1])})",
            f"≥ {TARGET_KIND:.0%} each",
            diagnosed[0] >= TARGET_KIND,
            command,
        ),
        row(
            f"Error diagnosis ({label}): the right name in the top 3 suggestions, worst "
            "mistake and engine",
            f"{hits[0]:.1%} ({' '.join(hits[1])})",
            f"≥ {TARGET_KIND_HITS:.0%} each",
            hits[0] >= TARGET_KIND_HITS,
            command,
        ),
        row(
            f"Error diagnosis ({label}): words of guidance after the failed query, longest",
            f"{most} (median {statistics.median(words) if words else 0:.0f})",
            f"≤ {MAX_WORDS}",
            most <= MAX_WORDS,
            command,
        ),
    ]


def overall_figures(result: Result, label: str, command: str) -> list[Row]:
    """The rows of BENCHMARKS.md for one more engine: mutants diagnosed overall and per
    expected category, and the right name among the suggestions overall."""
    total = result.total()
    categories: dict[str, Score] = defaultdict(Score)
    for s in result.cells.values():
        c = categories[s.category]
        c.errors += s.errors
        c.correct += s.correct
    worst = min((c.accuracy, name) for name, c in categories.items() if c.accuracy is not None)
    overall, hit_rate = total.accuracy or 0.0, total.hit_rate or 0.0
    return [
        row(
            f"Error diagnosis ({label}): mutants diagnosed, overall and worst category",
            f"{overall:.1%}; {worst[0]:.1%} ({worst[1]})",
            f"≥ {TARGET_OVERALL:.0%}; ≥ {TARGET_CATEGORY:.0%} each",
            overall >= TARGET_OVERALL and worst[0] >= TARGET_CATEGORY,
            command,
        ),
        row(
            f"Error diagnosis ({label}): the right name in the top 3 suggestions",
            f"{hit_rate:.1%} ({total.hit_total})",
            f"≥ {TARGET_HITS:.0%}",
            hit_rate >= TARGET_HITS,
            command,
        ),
    ]


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _words(s: Score) -> str:
    if not s.words:
        return "–"
    return f"{statistics.median(s.words):.0f} / {max(s.words)}"


def report(result: Result, engines: Iterable[str]) -> str:
    """The Markdown body: a table per engine x mistake kind, totals and the misclassifications."""

    engines = [e for e in engines if any(k[0] == e for k in result.cells)]
    kinds = sorted({k for _, k in result.cells}, key=lambda k: (k in REALISTIC, k))
    rows = []
    for engine in engines:
        for kind in kinds:
            s = result.cells.get((engine, kind))
            if s is None:
                continue
            name = f"*{kind}*" if kind in REALISTIC else kind
            rows.append(
                [engine, name, s.category, s.generated, s.silent, s.errors, _pct(s.accuracy),
                 f"{_pct(s.hit_rate)} ({s.hit_total})" if s.hit_total else "–", _words(s)]
            )  # fmt: skip
        t = result.total(engine)
        rows.append(
            [f"**{engine}**", "**all**", "", t.generated, t.silent, t.errors,
             f"**{_pct(t.accuracy)}**", f"**{_pct(t.hit_rate)}** ({t.hit_total})", _words(t)]
        )  # fmt: skip
    t = result.total()
    rows.append(
        ["**all engines**", "", "", t.generated, t.silent, t.errors, f"**{_pct(t.accuracy)}**",
         f"**{_pct(t.hit_rate)}** ({t.hit_total})", _words(t)]
    )  # fmt: skip
    headers = [
        "engine", "mistake", "expected category", "mutants", "accepted silently", "errors",
        "diagnosed correctly", "suggestion hit (top 3)", "guidance words (median / max)",
    ]  # fmt: skip
    body = [
        "Gold queries: Spider dev (19 SQLite databases copied into DuckDB and PostgreSQL, with "
        "the foreign keys the SQLite files declare), BIRD mini-dev (500 SQLite gold queries on "
        "its 11 databases as empty tables with the foreign keys of dev_tables.json) and TPC-H "
        "(22 queries, empty tables). Each "
        "mutation is applied once per gold query that runs on the engine; accuracy counts only "
        "mutants the engine rejects (silently accepted ones are listed apart). The mistakes in "
        "*italics* are the ones real models make (measured on predictions of text-to-SQL "
        "systems): for them *diagnosed correctly* also requires the right advice (the missing "
        "join, the kind of aggregation mistake, the cut-off or the placeholder recognised), "
        "not only the category. Suggestion hit: the original column/table (GROUP BY, "
        "ambiguity, joins: the table-qualified column; a cut-off name: its completion) among "
        f"the top 3 suggestions. Targets: per mistake and engine ≥ {TARGET_KIND:.0%} "
        f"diagnosed, hits ≥ {TARGET_KIND_HITS:.0%}; guidance (the feedback after the failed "
        f"query) ≤ {MAX_WORDS} words. A cut-off reply is cut inside a name, at least two "
        "letters before its end (a name one letter short reads as a typo or a plural slip and "
        "is diagnosed as such), or after a keyword, comma or operator. A table of another "
        "database is one of the other Spider databases' table names. "
        f"DuckDB 1.5 is covered by recorded messages in tests "
        "only. Each mutant carries exactly one clean mistake, so these numbers are an upper "
        "bound for real model errors (which can stack several mistakes).",
        "",
        table(headers, rows),
        "",
        "Gold queries skipped (fail on the engine before mutation): "
        + ", ".join(f"{e} {n}" for e, n in sorted(result.skipped_gold.items()))
        + f". Run time {result.seconds:.0f} s. Engines: "
        + ", ".join(f"{k} {v}" for k, v in result.versions.items())
        + ".",
    ]
    confusions = []
    for (engine, kind), s in sorted(result.cells.items()):
        for got, n in s.confusions.most_common():
            confusions.append(f"{engine}: {kind} -> {got} ({n})")
    if confusions:
        body += ["", "Misdiagnosed: " + "; ".join(confusions) + "."]
    return "\n".join(body)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="gold queries per database")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--examples", action="store_true", help="print failing examples")
    parser.add_argument(
        "--spark",
        action="store_true",
        help="Spark SQL only (a local classic session; Spider as temporary views), written to "
        "its own page",
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
        write_page(
            "corruption",
            "Error diagnosis: corruption benchmark",
            body,
            figures(
                result, engines, "DuckDB, SQLite, PostgreSQL", "python -m benchmarks.corruption"
            ),
            packages=("duckdb", "sqlglot", "psycopg"),
        )


def _main_spark(args: argparse.Namespace) -> None:
    """The benchmark on Spark alone (its own page, ``corruption_spark``)."""
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
        write_page(
            "corruption_spark",
            "Error diagnosis: corruption benchmark on Spark SQL",
            body,
            overall_figures(result, "Spark SQL", "python -m benchmarks.corruption --spark"),
            packages=("pyspark", "sqlglot"),
        )


if __name__ == "__main__":
    main()
