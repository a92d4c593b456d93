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

from benchmarks.report import table, write_section
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


def measure(spark, kind: str) -> tuple[list[list], list[list]]:
    """(fetch rows, cancel rows) for one session."""
    runner = SparkRunner(spark, session=DbSession())
    fetch = []
    for name, q in QUERIES.items():
        ours = _median(lambda q=q: runner.run(q, limit=1000, timeout=120))
        base = _median(lambda q=q: spark.sql(q).limit(1000).collect())
        fetch.append(
            [kind, name, f"{base * 1000:.0f} ms", f"{ours * 1000:.0f} ms", f"{ours / base:.2f}x"]
        )
    cancel = []
    for limit in (1.0, 3.0):
        t0 = time.perf_counter()
        try:
            runner.run(RUNAWAY, limit=5, timeout=limit)
        except QueryTimeout:
            pass
        raised = time.perf_counter() - t0 - limit
        idle = "–"
        if not runner.connect:
            tracker = spark.sparkContext.statusTracker()
            while tracker.getActiveJobsIds():
                time.sleep(0.05)
            idle = f"{(time.perf_counter() - t0 - limit) * 1000:.0f} ms"
        else:
            time.sleep(5)  # let the server's executors wind down before the next run
        cancel.append([kind, f"{limit:g} s", f"{raised * 1000:.0f} ms", idle])
    return fetch, cancel


def main() -> None:
    from workloads.spark import classic_session, connect_server, connect_session

    fetch: list[list] = []
    cancel: list[list] = []
    with classic_session() as spark:
        spark.sparkContext.setLogLevel("OFF")
        f, c = measure(spark, "classic local[2]")
        fetch += f
        cancel += c
    with connect_server() as url:
        spark = connect_session(url)
        try:
            f, c = measure(spark, "Spark Connect (local[2] server)")
        finally:
            spark.stop()
        fetch += f
        cancel += c
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
    write_section(
        "spark", "Spark SQL: first 1000 rows and cancellation", body, packages=("pyspark",)
    )


if __name__ == "__main__":
    main()
