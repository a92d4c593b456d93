"""Accuracy and speed of the SQL safety check on our corpus and the public gold queries.

Run ``python -m benchmarks.validate``: prints one row per dataset (queries, accepted,
refused, what was expected, mean µs per query) and writes the section "validate" of
BENCHMARKS.md. The datasets come from :mod:`workloads.gold`, shared with the test suite.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import sqlglot

from benchmarks.report import Row, row, table, write_page
from cadet_magic.sql.limit import add_limit
from cadet_magic.sql.target import Target
from cadet_magic.sql.validate import validate_sql
from workloads.gold import (  # noqa: F401 - re-exported: the benchmark's datasets
    ANY_ACCEPT_DIALECTS,
    ANY_DIALECTS,
    CONCERT_SINGER,
    CORPUS,
    DATA,
    ROOT,
    SHOP,
    Case,
    Dataset,
    all_datasets,
    bird,
    data_missing,
    gold,
    must_accept,
    must_refuse,
    spider,
    tpcds,
    tpch,
)

#: Timings are the best of this many passes over a dataset (the machine is shared).
REPEATS = 3


#: The Spider gold queries' databases (SQLite).
SQLITE = Target.named("sqlite")


def _mean_us(func, args: list[tuple]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for a in args:
            func(*a)
        best = min(best, time.perf_counter() - start)
    return best / max(len(args), 1) * 1e6


def limit_on_spider(data: Path) -> tuple[int, int, int, float]:
    """``add_limit`` on every Spider gold query with a SQLite database, N in (1, 3, rows + 1).

    Returns (queries, comparisons, equal, mean µs per limited execution). Equal means: the
    first N rows of the unlimited result for an ordered query, the same rows (as a multiset)
    when N exceeds the row count, N rows drawn from the result otherwise.
    """
    import sqlite3
    from collections import Counter

    root = data / "spider-dev"
    cons: dict[Path, sqlite3.Connection] = {}
    queries = comparisons = equal = 0
    elapsed = 0.0
    for q in json.loads((root / "dev.json").read_text()):
        db = root / "database" / q["db_id"] / f"{q['db_id']}.sqlite"
        if not db.exists():
            continue
        if db not in cons:
            cons[db] = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            cons[db].text_factory = lambda b: b.decode(errors="replace")
        con = cons[db]
        queries += 1
        full = con.execute(q["query"]).fetchall()
        ordered = sqlglot.parse_one(q["query"], read="sqlite").args.get("order") is not None
        for n in (1, 3, len(full) + 1):
            start = time.perf_counter()
            got = con.execute(add_limit(q["query"], SQLITE, n)).fetchall()
            elapsed += time.perf_counter() - start
            comparisons += 1
            if ordered:
                equal += got == full[:n]
            elif n > len(full):
                equal += Counter(got) == Counter(full)
            else:
                equal += len(got) == n and not Counter(got) - Counter(full)
    for con in cons.values():
        con.close()
    return queries, comparisons, equal, elapsed / max(comparisons, 1) * 1e6


#: Interleaved passes for the side-by-side timing with and without the function catalog.
CATALOG_REPEATS = 7
#: The time the engine's function catalog may add: its ratio to the fixed rules' at most.
CATALOG_BUDGET = 1.10
#: The command that reproduces the figures.
COMMAND = "python -m benchmarks.validate"


def engine_catalogs() -> dict[str, object]:
    """The real function catalogs: SQLite's and DuckDB's in memory, PostgreSQL's from a
    throwaway cluster when the server binaries are installed."""
    import sqlite3

    import duckdb

    from cadet_magic.db.function_catalogs import (
        duckdb_functions,
        postgres_functions,
        sqlite_functions,
    )

    catalogs: dict[str, object] = {
        "sqlite": sqlite_functions(sqlite3.connect(":memory:")),
        "duckdb": duckdb_functions(duckdb.connect()),
    }
    try:
        import psycopg

        from workloads.postgres import pg_bin, pg_cluster

        if pg_bin() is not None:
            with pg_cluster() as url, psycopg.connect(url) as con:
                catalogs["postgres"] = postgres_functions(con.cursor())
                version = con.execute("SHOW server_version").fetchone()[0]
                catalogs["postgres_version"] = version.split()[0]
    except Exception as e:  # noqa: BLE001 - the PostgreSQL row is left out, saying why
        print(f"PostgreSQL catalog not measured: {e}")
    return catalogs


def catalog_overhead(data: Path) -> tuple[str, float]:
    """``validate_sql`` per gold query without and with its engine's function catalog,
    measured side by side (interleaved passes, best of each), as a Markdown table, and the
    largest ratio of the two times."""
    import sqlite3

    catalogs = engine_catalogs()
    rows = []
    ratios = []
    for ds in gold(data):
        dialect = ds.cases[0].dialect
        catalog = catalogs.get(dialect)
        if catalog is None:
            continue
        plain = with_catalog = 0.0
        accepted = 0
        for c in ds.cases:
            # Per query, both ways in alternating order, best of each: load on the shared
            # machine hits both sides alike.
            best = [float("inf"), float("inf")]
            ok = False
            for rep in range(CATALOG_REPEATS):
                for side in (0, 1) if rep % 2 == 0 else (1, 0):
                    start = time.perf_counter()
                    if side:
                        ok = validate_sql(c.sql, c.dialect, c.tables, catalog).ok
                    else:
                        validate_sql(c.sql, c.dialect, c.tables)
                    best[side] = min(best[side], time.perf_counter() - start)
            plain += best[0]
            with_catalog += best[1]
            accepted += ok
        n = len(ds.cases)
        ratios.append(with_catalog / plain)
        rows.append(
            [
                ds.name,
                f"{len(catalog.allowed)} of {len(catalog.known)}",
                f"{accepted}/{n}",
                f"{plain / n * 1e6:.0f}",
                f"{with_catalog / n * 1e6:.0f}",
                f"{with_catalog / plain:.3f}",
            ]
        )
    versions = f"SQLite {sqlite3.sqlite_version}" + (
        f", PostgreSQL {catalogs['postgres_version']}" if "postgres_version" in catalogs else ""
    )
    text = f"Catalogs of {versions} and the DuckDB below.\n\n" + table(
        [
            "gold queries",
            "functions allowed (of the engine's)",
            "accepted with the catalog",
            "µs/query, fixed rules only",
            "µs/query, with the engine's catalog",
            "ratio",
        ],
        rows,
    )
    return text, max(ratios, default=float("nan"))


def main() -> None:
    missing = data_missing()
    if missing:
        raise SystemExit(f"benchmarks.validate: {missing}")
    rows = []
    wrong: list[str] = []
    #: (right, of) per side: the statements to refuse, the queries to accept
    verdict_counts = {False: [0, 0], True: [0, 0]}
    for ds in all_datasets():
        accepted = 0
        elapsed = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            verdicts = [validate_sql(c.sql, c.dialect, c.tables) for c in ds.cases]
            elapsed = min(elapsed, time.perf_counter() - start)
        for case, v in zip(ds.cases, verdicts, strict=True):
            accepted += v.ok
            if v.ok != case.expect_ok:
                wrong.append(f"{case.id}: expected {'accept' if case.expect_ok else 'refuse'}")
        limit_us = "n/a"
        if ds.cases[0].expect_ok:
            args = [
                (v.sql, v.sql.target, 1001) for c, v in zip(ds.cases, verdicts, strict=True) if v.ok
            ]
            limit_us = f"{_mean_us(add_limit, args):.0f}"
        n = len(ds.cases)
        expected = "all accepted" if ds.cases[0].expect_ok else "all refused"
        correct = accepted if ds.cases[0].expect_ok else n - accepted
        verdict_counts[ds.cases[0].expect_ok][0] += correct
        verdict_counts[ds.cases[0].expect_ok][1] += n
        rows.append(
            [
                ds.name,
                n,
                accepted,
                n - accepted,
                expected,
                f"{correct}/{n}",
                f"{elapsed / n * 1e6:.0f}",
                limit_us,
            ]
        )
    body = table(
        [
            "dataset",
            "checks",
            "accepted",
            "refused",
            "expected",
            "correct",
            "validate_sql µs/query",
            "add_limit µs/query",
        ],
        rows,
    )
    body += (
        "\n\nmust_refuse entries marked `any` are checked in "
        + ", ".join(ANY_DIALECTS)
        + ", must_accept ones in "
        + ", ".join(ANY_ACCEPT_DIALECTS)
        + "; the corpus (workloads/corpus/, written for this repository over the sample shop) "
        "is checked with the shop's tables as the allow-list and again with the allow-list off "
        "(must_refuse: except the entries about tables outside the schema). Gold queries (the "
        "public data sets, `CADET_DATA`) use their database's tables as the "
        "allow-list and their own dialect. Times are mean wall time per query, single-threaded, "
        f"best of {REPEATS} passes: "
        "`validate_sql` (parse, tree checks, SQL generation) and `add_limit(sql, dialect, 1001)` "
        "on the SQL it returned (parse, rewrite, generation)."
    )
    if wrong:
        body += "\n\nWrong verdicts:\n\n" + "\n".join(f"- {w}" for w in wrong)
    queries, comparisons, equal, us = limit_on_spider(DATA)
    body += (
        "\n\n**Row limit** (`add_limit`, on the tree): Spider dev gold queries on their SQLite "
        f"databases, {queries} queries × N in (1, 3, rows + 1): {equal}/{comparisons} limited "
        "results equal the first N rows of the unlimited result (ordered queries) or the same "
        f"rows (unordered); {us:.0f} µs per limited execution including the rewrite. The test "
        "suite repeats this on DuckDB and checks TPC-H/TPC-DS (DuckDB), BIRD SQLite and BIRD "
        "PostgreSQL gold queries still bind after the check and the limit."
    )
    body += (
        "\n\n**Function allow-list from the engine's catalog** (PostgreSQL `pg_proc` immutable/"
        "stable, DuckDB `duckdb_functions()` consistent, SQLite's deterministic built-ins, plus "
        "harmless volatile ones, minus the never-list). The same gold queries checked without "
        "and with the catalog, side by side in one run: each query both ways in alternating "
        f"order, best of {CATALOG_REPEATS} each, summed; target: ratio at most "
        f"{CATALOG_BUDGET:.2f}.\n\n"
    )
    catalog_text, worst = catalog_overhead(DATA)
    body += catalog_text
    write_page(
        "validate",
        "SQL safety check: accuracy and time",
        body,
        figures(verdict_counts, worst),
        packages=("sqlglot", "duckdb"),
    )


def figures(counts: dict[bool, list[int]], worst_ratio: float) -> list[Row]:
    """The rows of BENCHMARKS.md: ``counts`` the right verdicts and their number, on the
    statements to refuse (False) and the queries to accept (True).

    >>> [r.met for r in figures({False: [848, 848], True: [3366, 3367]}, 1.04)]
    [True, False, True]
    """
    (refused, to_refuse), (accepted, to_accept) = counts[False], counts[True]
    return [
        row(
            "SQL safety check: statements of the refuse corpus refused",
            f"{refused}/{to_refuse}",
            "all",
            refused == to_refuse,
            COMMAND,
        ),
        row(
            "SQL safety check: accept corpus and public gold queries accepted",
            f"{accepted}/{to_accept}",
            "all",
            accepted == to_accept,
            COMMAND,
        ),
        row(
            "SQL safety check: time with the engine's function catalog, against the fixed rules",
            f"{worst_ratio:.3f}x (the slowest data set)",
            f"≤ {CATALOG_BUDGET:.2f}x",
            worst_ratio <= CATALOG_BUDGET,
            COMMAND,
        ),
    ]


if __name__ == "__main__":
    main()
