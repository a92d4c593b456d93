"""Spark SQL through the runner against Spark's own fastest client path, classic and Connect.

First 1000 rows of a 10^7-row range (plain, sorted, grouped): the runner (Spark's plan check,
pinned settings, job group or tag, ``limit(1001).collect()``) against
``spark.sql(q).limit(1000).collect()``, median of 5 after a warm-up. Cancellation: how long after
the time limit fires the runner raises ``QueryTimeout`` on a runaway cross join, and how long
until the classic session has no active job left.

Run ``python -m benchmarks.spark_perf`` (writes section ``spark`` of BENCHMARKS.md).
"""

from __future__ import annotations

import statistics
import time

from benchmarks.cancellation import LATE
from benchmarks.report import Row, row, table, write_page
from cadet_magic.db.session import DbSession
from cadet_magic.db.spark import SparkRunner
from cadet_magic.errors import QueryTimeout

QUERIES = {
    "range 10^7": "SELECT id, id * 2 AS x FROM range(10000000)",
    "sorted": "SELECT id, id % 997 AS k FROM range(10000000) ORDER BY k DESC, id",
    "grouped": "SELECT id % 100000 AS g, count(*) AS n FROM range(10000000) GROUP BY id % 100000",
}
RUNAWAY = "SELECT count(*) AS n FROM range(1000000000) a CROSS JOIN range(1000000000) b"
REPEAT = 5


def _median(f) -> float:
    f()
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(spark, kind: str) -> tuple[list[list], list[list], list[float | None]]:
    """(fetch rows, cancel rows, seconds past each time limit: None where no QueryTimeout
    came) for one session."""
    runner = SparkRunner(spark, session=DbSession())
    fetch = []
    for name, q in QUERIES.items():
        ours = _median(lambda q=q: runner.run(q, limit=1000, timeout=120))
        base = _median(lambda q=q: spark.sql(q).limit(1000).collect())
        fetch.append(
            [kind, name, f"{base * 1000:.0f} ms", f"{ours * 1000:.0f} ms", f"{ours / base:.2f}x"]
        )
    cancel = []
    late: list[float | None] = []
    for limit in (1.0, 3.0):
        t0 = time.perf_counter()
        timed_out = False
        try:
            runner.run(RUNAWAY, limit=5, timeout=limit)
        except QueryTimeout:
            timed_out = True
        raised = time.perf_counter() - t0 - limit
        late.append(raised if timed_out else None)
        idle = "–"
        if not runner.connect:
            tracker = spark.sparkContext.statusTracker()
            while tracker.getActiveJobsIds():
                time.sleep(0.05)
            idle = f"{(time.perf_counter() - t0 - limit) * 1000:.0f} ms"
        else:
            time.sleep(5)  # let the server's executors wind down before the next run
        cancel.append([kind, f"{limit:g} s", f"{raised * 1000:.0f} ms", idle])
    return fetch, cancel, late


def figures(late: list[float | None]) -> list[Row]:
    """The row of BENCHMARKS.md: every runaway query stopped within :data:`LATE` seconds of
    its time limit.

    >>> figures([0.421, 0.845, 0.976, 0.892])[0].value, figures([0.4, None])[0].met
    ('976 ms at most (4 runs)', False)
    """
    got = [x for x in late if x is not None]
    return [
        row(
            "Spark SQL (classic and Connect): a runaway query stopped past its time limit",
            f"{max(got) * 1000:.0f} ms at most ({len(late)} runs)" if got else "never",
            f"≤ {LATE:g} s past the limit, every run",
            bool(got) and len(got) == len(late) and max(got) < LATE,
            "python -m benchmarks.spark_perf",
        )
    ]


def main() -> None:
    from workloads.spark import classic_session, connect_server, connect_session

    fetch: list[list] = []
    cancel: list[list] = []
    late: list[float | None] = []
    with classic_session() as spark:
        spark.sparkContext.setLogLevel("OFF")
        f, c, x = measure(spark, "classic local[2]")
        fetch += f
        cancel += c
        late += x
    with connect_server() as url:
        spark = connect_session(url)
        try:
            f, c, x = measure(spark, "Spark Connect (local[2] server)")
        finally:
            spark.stop()
        fetch += f
        cancel += c
        late += x
    body = "\n".join(
        [
            __doc__.split("\n\n")[1].replace("\n", " "),
            "",
            table(
                ["session", "query", "spark.sql(q).limit(1000).collect()", "runner", "ratio"], fetch
            ),
            "",
            table(
                [
                    "session",
                    "time limit",
                    "QueryTimeout raised after the limit",
                    "no active job after the limit",
                ],
                cancel,
            ),
        ]
    )
    write_page(
        "spark",
        "Spark SQL: first 1000 rows and cancellation",
        body + "\n\nThe first rows are reported against Spark's own `collect()`, not held to a "
        "budget; the time limit is a row of BENCHMARKS.md.",
        figures(late),
        packages=("pyspark",),
    )


if __name__ == "__main__":
    main()
