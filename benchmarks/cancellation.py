"""Cancellation latency of a runaway query past the configured timeout (DuckDB, SQLite, PostgreSQL).

Part of ``python -m benchmarks`` (:mod:`benchmarks.perf`).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from benchmarks.measure import Measure, _median

RUNAWAY = {
    "duckdb": "SELECT count(*) FROM range(1000000000) a, range(1000000000) b",
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT count(*) FROM c",
    "postgres": "SELECT count(*) FROM generate_series(1, 1000000000) a, "
    "generate_series(1, 1000000000) b",
}


#: Seconds past its time limit a runaway query may take to stop.
LATE = 1.5


def cancellation(timeout: float = 1.0, reps: int = 3, pg_url: str | None = None) -> list[Measure]:
    """Time from the configured timeout to QueryTimeout, per engine (a runaway cross join)."""
    import duckdb

    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.errors import QueryTimeout

    runners: dict[str, Any] = {
        "duckdb": resolve_runner(duckdb.connect()),
        "sqlite": resolve_runner(sqlite3.connect(":memory:")),
    }
    closers = []
    if pg_url is not None:
        import sqlalchemy as sa

        engine = sa.create_engine(pg_url)
        conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        runners["postgres"] = resolve_runner(conn)
        closers += [conn.close, engine.dispose]
    late: dict[str, list[float]] = {k: [] for k in runners}
    for _ in range(reps):
        for name, runner in runners.items():
            t0 = time.perf_counter()
            try:
                runner.run(RUNAWAY[name], limit=5, timeout=timeout)
            except QueryTimeout:
                late[name].append(time.perf_counter() - t0 - timeout)
    for close in closers:
        close()
    out = []
    for name, xs in late.items():
        med = _median(xs)
        out.append(
            Measure(
                f"cancellation after the timeout ({name})",
                f"+{med * 1e3:,.0f} ms (max +{max(xs) * 1e3:,.0f} ms)" if xs else "no timeout",
                f"timeout {timeout:g} s",
                f"{(timeout + med) / timeout:.2f}x" if xs else "",
                f"stopped ≤ {LATE:g} s past the limit, every run",
                bool(xs) and len(xs) == reps and max(xs) < LATE,
            )
        )
    out[0].notes.append(
        f"Runaway queries (cross joins of 10^9 × 10^9 rows, SQLite an endless recursive CTE) with "
        f"timeout={timeout:g} s, {reps} interleaved repetitions; latency = time to QueryTimeout "
        "minus the timeout. DuckDB: the runner's watchdog thread calls interrupt(); SQLite: a progress handler; "
        "PostgreSQL: SET LOCAL statement_timeout."
        + ("" if pg_url else " PostgreSQL not measured (no server binaries).")
    )
    return out
