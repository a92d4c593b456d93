"""Performance of cadet_magic against its baselines, side by side in one run.

Each measure is a ratio against the bare operation it wraps, with repetitions
interleaved (the machine is shared and noisy) and medians reported:

* **agent overhead** per attempt, without the model and the query (prompt, reply
  parsing, safety check, diagnosis, feedback, bookkeeping), against a bare
  ``sqlglot.parse_one`` of the same SQL, over the Spider dev gold queries;
* **first 1000 rows** of a large result (10^5 and 10^7 rows) through the DuckDB
  runner against DuckDB's own ``execute(sql).fetchmany(1000)``, with peak memory;
* **cancellation latency** of a runaway query on DuckDB, SQLite and PostgreSQL
  beyond the configured timeout;
* **``%load_ext cadet_magic``** against ``%load_ext sql`` (jupysql) in fresh processes;
* **schema read and linking** of a synthetic 1,000-table catalog (cache miss and hit);
* **model calls per answered question** on the success path (Spider dev questions
  with their gold SQL as scripted replies, on the Spider SQLite databases);
* **linking recall** on all 20 Spider dev databases in one catalog (``benchmarks.linking``);
* **fallback isolation**: the time the isolated worker adds to the fallback's pandas code, first
  run of a session and later runs, against running it in-process (``benchmarks.isolation``).

Each benchmark is a module of its own (``benchmarks.agent_overhead``, ``fetching``,
``cancellation``, ``load_ext``, ``large_catalog``, ``model_calls``, ``linking_recall``,
``isolation``) returning :class:`~benchmarks.measure.Measure` rows; this module runs them in
order and renders the table.

Run: ``python -m benchmarks`` (add ``--quick`` for small sizes, ``--no-write`` to
write no page, ``--all`` to re-run the validate, corruption and result-check
(``benchmarks.literal_check``) benchmarks too).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator, Sequence

from benchmarks import corruption, isolation, linking, literal_check, validate
from benchmarks.agent_overhead import agent_overhead
from benchmarks.cancellation import cancellation
from benchmarks.fetching import bounded_fetch_before_after, fetch_first_rows, fetch_first_rows_pg
from benchmarks.large_catalog import large_catalog
from benchmarks.linking_recall import linking_recall
from benchmarks.load_ext import load_ext
from benchmarks.measure import SPIDER, Measure, machine_details, measure_rows, render
from benchmarks.model_calls import model_calls
from benchmarks.report import write_page

__all__ = [
    "SPIDER",
    "Measure",
    "agent_overhead",
    "bounded_fetch_before_after",
    "cancellation",
    "fetch_first_rows",
    "fetch_first_rows_pg",
    "large_catalog",
    "linking_recall",
    "load_ext",
    "machine_details",
    "main",
    "model_calls",
    "render",
    "run_all",
]


def run_all(quick: bool = False, pg: bool = True) -> list[Measure]:
    """Every measure (``quick``: tiny sizes, for the smoke test)."""
    measures: list[Measure] = []
    measures.append(agent_overhead(20 if quick else None, reps=1 if quick else 3))
    sizes = (10**3, 10**4) if quick else (10**5, 10**7)
    measures += fetch_first_rows(sizes, reps=3 if quick else 15)
    measures += bounded_fetch_before_after(sizes[-1], reps=3 if quick else 31)
    with _pg() if pg else contextlib.nullcontext() as url:
        if url is not None:
            pg_sizes = (10**3, 10**4) if quick else (10**5, 10**6)
            measures += fetch_first_rows_pg(url, pg_sizes, reps=1 if quick else 7)
        measures += cancellation(0.3 if quick else 1.0, reps=1 if quick else 3, pg_url=url)
    measures += load_ext(1 if quick else 7)
    measures += large_catalog(30 if quick else 1000, reps=2 if quick else 5)
    measures.append(model_calls(10 if quick else None))
    measures += isolation.measures(1 if quick else 5, 3 if quick else 30)
    if not quick:
        measures.append(linking_recall())
    return measures


@contextlib.contextmanager
def _pg() -> Iterator[str | None]:
    """A throwaway PostgreSQL cluster's SQLAlchemy URL, or None without server or driver."""
    from workloads.postgres import pg_bin, pg_cluster

    try:
        import psycopg  # noqa: F401
    except ImportError:
        yield None
        return
    if pg_bin() is None:
        yield None
        return
    with pg_cluster() as url:
        yield url.replace("postgresql://", "postgresql+psycopg://", 1)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--no-write", action="store_true", help="print the figures, write no page")
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL")
    parser.add_argument(
        "--all",
        action="store_true",
        help="also re-run the validate, corruption and result-check benchmarks",
    )
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    measures = run_all(quick=args.quick, pg=not args.no_pg)
    elapsed = time.perf_counter() - t0
    body = render(measures, elapsed)
    packages = ["duckdb", "sqlglot", "jupysql", "ipython", "sqlalchemy", "psycopg"]
    if args.no_write or args.quick:
        print(body)
    else:
        own = [m for m in measures if not m.owner]
        write_page(
            "perf",
            "Performance against baselines",
            f"_Machine: {machine_details()}._\n\n{body}",
            measure_rows(own, "python -m benchmarks"),
            packages,
        )
        isolation.write([m for m in measures if m.owner == "isolation"], elapsed)
        linking.main([])
        if args.all:
            validate.main()
            corruption.main([])
            literal_check.main([])


if __name__ == "__main__":
    main()
