"""The first rows of a large result through the runners against the drivers' own ``fetchmany``, with peak memory.

Part of ``python -m benchmarks`` (:mod:`benchmarks.perf`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.measure import Measure, _median, _rss


@contextlib.contextmanager
def _big_duckdb(rows: int) -> Iterator[Any]:
    import duckdb

    with tempfile.TemporaryDirectory(prefix="cadet-perf-") as tmp:
        con = duckdb.connect(str(Path(tmp) / "big.duckdb"))
        con.execute("SET enable_progress_bar = false")
        con.execute(
            f"CREATE TABLE big AS SELECT i AS id, i * 2 AS amount, 'item ' || (i % 1000) AS "
            f"label, DATE '2020-01-01' + CAST(i % 2000 AS INTEGER) AS day FROM range({rows}) t(i)"
        )
        try:
            yield con
        finally:
            con.close()


#: The large results: a plain scan (streams in both paths) and a sorted one (a full sort
#: for fetchmany, a top-N for the runner, whose row limit is in the SQL).
FETCH_QUERIES = {
    "scan": "SELECT id, amount, label, day FROM big",
    "sorted": "SELECT id, amount, label, day FROM big ORDER BY amount DESC",
}


def _close_result(con: Any) -> None:
    """Ends the rest of a streaming result (DuckDB 2.0 ``abort()``), so that its cleanup is
    counted in the call that left it, not in whatever runs next on the connection."""
    abort = getattr(con, "abort", None)
    if abort is not None:
        abort()


def fetch_first_rows(sizes: Sequence[int] = (10**5, 10**7), reps: int = 15) -> list[Measure]:
    """The DuckDB runner's first 1000 rows against ``execute(sql).fetchmany(1000)``."""
    from cadet_magic.db.duckdb import DuckDBRunner
    from cadet_magic.db.duckdb import first_rows_sql as runner_sql

    times: dict[tuple[str, int], tuple[float, float]] = {}
    engine_limited: dict[tuple[str, int], float] = {}
    memory: dict[tuple[str, int], tuple[int, int, int | None, int | None]] = {}
    for n in sizes:
        with _big_duckdb(n) as con:
            runner = DuckDBRunner(con)
            for shape, sql in FETCH_QUERIES.items():

                def ours(runner: Any = runner, sql: str = sql) -> list:
                    return runner.run(sql, limit=1000, timeout=600).rows

                def bare(con: Any = con, sql: str = sql) -> list:
                    rows = con.execute(sql).fetchmany(1000)
                    _close_result(con)
                    return rows

                limited_sql = runner_sql(sql, 1001)

                def limited(con: Any = con, sql: str = limited_sql) -> list:
                    rows = con.execute(sql).fetchmany(1001)
                    _close_result(con)
                    return rows

                assert len(ours()) == len(bare()) == min(1000, n)
                a, b, c = [], [], []
                heavy = shape != "scan" and n > 10**5  # a full sort of 10^7 rows: fewer
                for _ in range(max(3, reps // 5) if heavy else reps):  # interleaved
                    t0 = time.perf_counter()
                    ours()
                    a.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    bare()
                    b.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    limited()
                    c.append(time.perf_counter() - t0)
                times[(shape, n)] = (_median(a), _median(b))
                engine_limited[(shape, n)] = _median(c)
                memory[(shape, n)] = (
                    _peak_python(ours),
                    _peak_python(bare),
                    _rss_growth(ours),
                    _rss_growth(bare),
                )
    out = []
    for shape in FETCH_QUERIES:
        for n in sizes:
            ours_t, bare_t = times[(shape, n)]
            py_ours, py_bare, rss_ours, rss_bare = memory[(shape, n)]
            m = Measure(
                f"first 1000 of 10^{len(str(n)) - 1} rows, {shape} (DuckDB)",
                f"{ours_t * 1e3:,.2f} ms (peak Python {_mb(py_ours)}, RSS +{_mb(rss_ours)})",
                f"{bare_t * 1e3:,.2f} ms fetchmany(1000) (peak Python {_mb(py_bare)}, "
                f"RSS +{_mb(rss_bare)})",
                f"{ours_t / bare_t:.2f}x (+{(ours_t - bare_t) * 1e3:,.2f} ms)",
                "≤ 1.2x",
                ours_t / bare_t <= 1.2,
            )
            m.notes.append(
                f"{shape}, 10^{len(str(n)) - 1} rows: the engine alone on the runner's SQL "
                f"({'`… LIMIT 1001`' if shape == 'sorted' else 'as written'}, no cursor or "
                f"transaction) takes {engine_limited[(shape, n)] * 1e3:,.2f} ms, "
                f"so the runner's own cost is {(ours_t - engine_limited[(shape, n)]) * 1e3:+,.2f} ms."
            )
            out.append(m)
        if len(sizes) >= 2:
            small, large = sizes[0], sizes[-1]
            flat_ours = times[(shape, large)][0] / times[(shape, small)][0]
            flat_bare = times[(shape, large)][1] / times[(shape, small)][1]
            out.append(
                Measure(
                    f"flatness, {shape}: time at 10^{len(str(large)) - 1} / 10^{len(str(small)) - 1}"
                    " rows",
                    f"{flat_ours:.2f}x",
                    f"{flat_bare:.2f}x",
                    "",
                    "≤ 1.5x or ≤ 1.2 × fetchmany's",
                    flat_ours <= max(1.5, 1.2 * flat_bare),
                )
            )
    out[0].notes.append(
        "Fetch: "
        + "; ".join(f"{k} = `{v}`" for k, v in FETCH_QUERIES.items())
        + f" on a DuckDB file table; runner = `DuckDBRunner.run(sql, limit=1000, timeout=600)` "
        "(a sibling cursor in a READ ONLY transaction of its own that is rolled back, DuckDB's "
        "own parse of the statement, `fetchmany` in chunks against the byte budget on the "
        "streaming result, the row limit put into the SQL with `add_limit` when it has "
        "an ORDER BY, a deadline on the watchdog thread, an `interrupt()` before the rollback); baseline = "
        "`con.execute(sql).fetchmany(1000)` then `con.abort()` (DuckDB 2.0 keeps the unread rest "
        "of a streaming result until then; without it, its cleanup lands in the next statement "
        f"on the connection, whichever path that is). {reps} interleaved repetitions "
        f"({max(3, reps // 5)} for the sort of the largest table); medians. Peak Python memory with tracemalloc; "
        "RSS growth (psutil) of one call in a warm process."
    )
    out[0].notes.append(
        "Where the fetch misses 1.2x: the runner has a fixed cost of about half a millisecond "
        "per query, measured almost entirely in DuckDB: a sibling cursor with BEGIN and "
        "ROLLBACK, which keep the user's connection untouched and writes from persisting even "
        "with the safety check off (the same cursor and transaction around a bare "
        "`fetchmany` cost the same). That is more than 20% of a 2 ms scan of 10^5 rows, and "
        "it does not grow with the result. A query without ORDER BY streams (no LIMIT is "
        "added, so no second parse); one with ORDER BY gets `LIMIT 1001` on its syntax tree. "
        "On the sorted 10^5-row result most of the gap is DuckDB itself: its top-N "
        "for `ORDER BY … LIMIT 1001` is slower than its full sort at that size (the engine-alone "
        "figures above), while at 10^7 rows the same limit makes the runner about ten times "
        "faster than `fetchmany(1000)` on the unlimited query."
    )
    return out


def _previous_duckdb_run(con: Any, sql: str, limit: int, timeout: float) -> list:
    """The DuckDB runner's run path before bounded results, step by step, for the side-by-side
    figure: a sibling cursor with a plain BEGIN, the SQL as given (row limit in the SQL only
    with ORDER BY), ``fetchmany(limit + 1)`` at once, the watchdog deadline, Ctrl-C routed to
    the cursor, then ROLLBACK and close."""
    from cadet_magic.db.base import on_ctrl_c
    from cadet_magic.db.duckdb import first_rows_sql
    from cadet_magic.db.duckdb_schema import rollback_quietly as _rollback
    from cadet_magic.db.watchdog import WATCHDOG

    cur = con.cursor()
    cur.begin()
    restore = on_ctrl_c(cur.interrupt)
    timer = WATCHDOG.schedule(timeout, cur.interrupt)
    try:
        rel = cur.execute(first_rows_sql(sql, limit + 1))
        rows = rel.fetchmany(limit + 1)
        _ = [d[0] for d in rel.description or ()]
    finally:
        timer.cancel()
        restore()
        _rollback(cur)
        cur.close()
    return rows[:limit]


def bounded_fetch_before_after(n: int = 10**7, reps: int = 31) -> list[Measure]:
    """First 1000 rows of the 10^7-row scan: the runner now (READ ONLY transaction, DuckDB's
    parser must see one SELECT, chunks against the byte budget, the rest interrupted before
    the cleanup) against its run path before, interleaved in one run."""
    from cadet_magic.db.base import BaseRunner
    from cadet_magic.db.duckdb import DuckDBRunner
    from cadet_magic.db.duckdb_memory import holds_state
    from cadet_magic.db.sqlite import heap_budget
    from cadet_magic.sql.validate import validate_sql

    # The runner gets the check's query, as in the agent (its tree says the scan keeps no
    # state across rows, so memory_limit is left alone).
    sql = validate_sql(FETCH_QUERIES["scan"], "duckdb").query
    assert sql is not None
    with _big_duckdb(n) as con:
        runner = DuckDBRunner(con)

        def now() -> list:
            return runner.run(sql, limit=1000, timeout=600).rows

        def before() -> list:
            return _previous_duckdb_run(con, sql, 1000, 600)

        def inline() -> list:
            # the same run in the caller's thread, without the data limit (what the run's own
            # thread and RLIMIT_DATA add is now() - inline())
            before_limit = runner.memory.lower(heap_budget(None)) if holds_state(sql) else None
            try:
                return BaseRunner.run(runner, sql, limit=1000, timeout=600).rows
            finally:
                runner.memory.restore(before_limit)

        assert now() == before() == inline()
        a, b, c = [], [], []
        sides = [(now, a), (before, b), (inline, c)]
        for i in range(reps):
            for func, into in sides[i % 3 :] + sides[: i % 3]:
                t0 = time.perf_counter()
                func()
                into.append(time.perf_counter() - t0)
        ours, prev, same_thread = _median(a), _median(b), _median(c)
        py_now, py_before = _peak_python(now), _peak_python(before)
    m = Measure(
        f"first 1000 of 10^{len(str(n)) - 1} rows, scan: bounded runner vs before (DuckDB)",
        f"{ours * 1e3:,.2f} ms (peak Python {_mb(py_now)})",
        f"{prev * 1e3:,.2f} ms before (peak Python {_mb(py_before)})",
        f"{ours / prev:.2f}x ({(ours - prev) * 1e3:+,.2f} ms)",
        "≤ 1.05x",
        ours / prev <= 1.05,
    )
    m.notes.append(
        "Bounded fetch, before/after: the same DuckDB file table and scan, the runner as it is "
        "now against its run path before bounded results (replicated step by step in "
        f"`benchmarks/fetching.py`), {reps} alternating repetitions, medians. Now adds: "
        "`BEGIN TRANSACTION READ ONLY`, `extract_statements` (DuckDB's own parse, and the "
        "parsed statement is what runs), `fetchmany` in chunks (64 rows, then up to 512) "
        "with the values' bytes counted, and an `interrupt()` before the rollback. "
        f"The same run in the caller's thread without the kernel's data limit: "
        f"{same_thread * 1e3:,.2f} ms (the run's own thread, which lets it return at the "
        f"time limit + 1 s, and holding RLIMIT_DATA cost {(ours - same_thread) * 1e3:+,.2f} ms; "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())})."
    )
    return [m]


def fetch_first_rows_pg(
    pg_url: str, sizes: Sequence[int] = (10**5, 10**6), reps: int = 7
) -> list[Measure]:
    """PostgreSQL: the runner's first 1000 rows against psycopg's client and server-side cursors.

    A plain psycopg cursor transfers the whole result before ``fetchmany`` returns;
    a named (server-side) cursor fetches only what is asked; the runner pushes the
    limit into the SQL instead.
    """
    import sqlalchemy as sa

    from cadet_magic.db.connect import resolve_runner

    engine = sa.create_engine(pg_url)
    out = []
    with engine.connect() as setup:
        setup.exec_driver_sql("DROP TABLE IF EXISTS big_pg")
        setup.exec_driver_sql("CREATE TABLE big_pg (id bigint, amount bigint, label text)")
        setup.commit()
    conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    raw = conn.connection.dbapi_connection
    runner = resolve_runner(conn)
    sql = "SELECT id, amount, label FROM big_pg"
    loaded = 0
    try:
        for n in sizes:
            conn.exec_driver_sql(
                f"INSERT INTO big_pg SELECT i, i * 2, 'item ' || mod(i, 1000) "
                f"FROM generate_series({loaded + 1}, {n}) i"
            )
            conn.exec_driver_sql("ANALYZE big_pg")
            loaded = n

            def ours() -> list:
                return runner.run(sql, limit=1000, timeout=600).rows

            def client() -> list:
                with raw.cursor() as cur:
                    cur.execute(sql)
                    return cur.fetchmany(1000)

            def server() -> list:
                with raw.transaction(), raw.cursor(name="cadet_bench") as cur:
                    cur.execute(sql)
                    return cur.fetchmany(1000)

            a, b, c = [], [], []
            for _ in range(reps):
                for func, acc in ((ours, a), (client, b), (server, c)):
                    t0 = time.perf_counter()
                    assert len(func()) == 1000
                    acc.append(time.perf_counter() - t0)
            ours_t, client_t, server_t = _median(a), _median(b), _median(c)
            out.append(
                Measure(
                    f"first 1000 of 10^{len(str(n)) - 1} rows, scan (PostgreSQL)",
                    f"{ours_t * 1e3:,.2f} ms (peak Python {_mb(_peak_python(ours))})",
                    f"{server_t * 1e3:,.2f} ms server-side cursor; {client_t * 1e3:,.2f} ms "
                    f"client cursor (peak Python {_mb(_peak_python(client))})",
                    f"{ours_t / server_t:.2f}x / {ours_t / client_t:.2f}x",
                    "reported",
                    None,
                )
            )
    finally:
        conn.exec_driver_sql("DROP TABLE IF EXISTS big_pg")
        conn.close()
        engine.dispose()
    out[0].notes.append(
        "PostgreSQL fetch: the runner (`BEGIN READ ONLY`, `SET LOCAL statement_timeout`, "
        "`… LIMIT 1001`, `ROLLBACK`) against psycopg 3 on the same connection: a named "
        "(server-side) cursor's `fetchmany(1000)` in a transaction, and a plain cursor, which "
        f"transfers the whole result first; {reps} interleaved repetitions, medians; ratios "
        "against the server-side and the client cursor."
    )
    return out


def _peak_python(func: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        func()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _rss_growth(func: Callable[[], Any]) -> int | None:
    before = _rss()
    if before is None:
        return None
    func()
    return max(0, (_rss() or before) - before)


def _mb(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 1e6:.1f} MB"
