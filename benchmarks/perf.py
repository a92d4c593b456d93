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

Run: ``python -m benchmarks`` (add ``--quick`` for small sizes, ``--no-write`` to
leave BENCHMARKS.md alone, ``--all`` to re-run the validate and corruption
benchmarks too).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.report import ROOT, table, write_section

SPIDER = ROOT.parent / "shared" / "data" / "spider-dev"


@dataclass
class Measure:
    """One row of the summary: cadet_magic's figure against its baseline."""

    name: str
    ours: str
    baseline: str
    ratio: str
    target: str
    met: bool | None
    notes: list[str] = field(default_factory=list)


def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _rss() -> int | None:
    try:
        import psutil
    except ImportError:
        return None
    return psutil.Process().memory_info().rss


# --------------------------------------------------------------------------- agent overhead


class _Reply:
    def __init__(self, content: str) -> None:
        self.content = content


class _InstantModel:
    """Replies with the SQL it was given, at once."""

    def __init__(self) -> None:
        self.sql = ""

    def invoke(self, messages: Any) -> _Reply:
        return _Reply(f"```sql\n{self.sql}\n```")


class _InstantRunner:
    """Returns one row at once, or raises the error it was given."""

    dialect = "sqlite"
    label = "instant"

    def __init__(self) -> None:
        self.error: Exception | None = None

    def run(self, sql: str, *, limit: int, timeout: float) -> Any:
        from cadet_magic.db.base import RunResult

        if self.error is not None:
            raise self.error
        return RunResult(["x"], [(1,)], False, 0.0, sql)

    def schema(self) -> Any:  # pragma: no cover - the benchmark passes the schema in
        raise NotImplementedError


def spider_gold(limit: int | None = None) -> list[dict]:
    """Spider dev questions with their gold SQL and database (``limit``: every k-th).

    Questions on ``wta_1``, whose SQLite file is not in the dev set, are left out.
    """
    items = [
        d for d in json.loads((SPIDER / "dev.json").read_text()) if _spider_db(d["db_id"]).exists()
    ]
    if limit is not None and limit < len(items):
        step = len(items) / limit
        items = [items[int(i * step)] for i in range(limit)]
    return items


def _spider_db(db_id: str) -> Path:
    return SPIDER / "database" / db_id / f"{db_id}.sqlite"


def agent_overhead(n_queries: int | None = None, reps: int = 3) -> Measure:
    """Agent work per attempt (no model, no query) against a bare sqlglot parse of the SQL.

    The nodes of one attempt run as the agent runs them, with a model that
    answers at once and a runner that returns (or fails) at once: the success
    path is generate (prompt + reply parsing), check, execute, finish; the
    failure path adds the diagnosis of a ``no such column`` error and the
    feedback for the next attempt.
    """
    import sqlglot

    from cadet_magic.agent import nodes
    from cadet_magic.agent.state import AskState, initial_state
    from cadet_magic.db.sqlite import sqlite_schema

    items = spider_gold(n_queries)
    schemas: dict[str, Any] = {}
    for d in items:
        if d["db_id"] not in schemas:
            con = sqlite3.connect(f"file:{_spider_db(d['db_id'])}?mode=ro", uri=True)
            schemas[d["db_id"]] = sqlite_schema(con, samples=True)
            con.close()
    model, runner = _InstantModel(), _InstantRunner()
    prepared = []
    for d in items:
        ctx = nodes.Context(model=model, runner=runner, schema=schemas[d["db_id"]])
        state = initial_state(d["question"], dialect="sqlite")
        state = AskState(**{**state, **nodes.read_schema(state, ctx)})
        prepared.append((d["query"], state, ctx))

    def attempt(sql: str, state: Any, ctx: Any, fail: bool) -> float:
        model.sql = sql
        runner.error = sqlite3.OperationalError("no such column: amout") if fail else None
        steps = (
            (nodes.generate, nodes.check, nodes.execute, nodes.diagnose, nodes.next_attempt)
            if fail
            else (nodes.generate, nodes.check, nodes.execute, nodes.finish)
        )
        t0 = time.perf_counter()
        s = state
        for step in steps:
            s = AskState(**{**s, **step(s, ctx)})
        return time.perf_counter() - t0

    parse: list[list[float]] = [[] for _ in prepared]
    ok: list[list[float]] = [[] for _ in prepared]
    failed: list[list[float]] = [[] for _ in prepared]
    for _ in range(reps):
        for i, (sql, state, ctx) in enumerate(prepared):
            t0 = time.perf_counter()
            sqlglot.parse_one(sql, read="sqlite")
            parse[i].append(time.perf_counter() - t0)
            ok[i].append(attempt(sql, state, ctx, False))
            failed[i].append(attempt(sql, state, ctx, True))
    p = [min(x) for x in parse]
    a = [min(x) for x in ok]
    f = [min(x) for x in failed]
    ratio_ok = _median([x / y for x, y in zip(a, p, strict=True)])
    ratio_fail = _median([x / y for x, y in zip(f, p, strict=True)])
    m = Measure(
        "agent overhead per attempt (Spider dev gold, sqlite)",
        f"{_median(a) * 1e6:,.0f} µs success / {_median(f) * 1e6:,.0f} µs failed",
        f"{_median(p) * 1e6:,.0f} µs sqlglot.parse_one",
        f"{ratio_ok:.1f}x / {ratio_fail:.1f}x",
        "reported",
        None,
    )
    m.notes.append(
        f"{len(prepared)} gold queries × {reps} interleaved repetitions, best per query, median "
        "over queries; ratio = median of per-query ratios. Success attempt = prompt building, "
        "reply parsing, safety check (parse, tree checks, generation), execute bookkeeping, "
        "attempt record with SQL diff; failed attempt adds the diagnosis (classification, "
        "nearest names from the schema) and the feedback."
    )
    return m


# --------------------------------------------------------------------------- fetching


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
    from cadet_magic.db.duckdb import _on_ctrl_c, _rollback, first_rows_sql
    from cadet_magic.db.watchdog import WATCHDOG

    cur = con.cursor()
    cur.begin()
    restore = _on_ctrl_c(cur.interrupt)
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
    from cadet_magic.db.duckdb import DuckDBRunner

    sql = FETCH_QUERIES["scan"]
    with _big_duckdb(n) as con:
        runner = DuckDBRunner(con)

        def now() -> list:
            return runner.run(sql, limit=1000, timeout=600).rows

        def before() -> list:
            return _previous_duckdb_run(con, sql, 1000, 600)

        assert now() == before()
        a, b = [], []
        for i in range(reps):
            pair = ((now, a), (before, b)) if i % 2 == 0 else ((before, b), (now, a))
            for func, into in pair:
                t0 = time.perf_counter()
                func()
                into.append(time.perf_counter() - t0)
        ours, prev = _median(a), _median(b)
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
        f"`benchmarks/perf.py`), {reps} alternating repetitions, medians. Now adds: "
        "`BEGIN TRANSACTION READ ONLY`, `extract_statements` (DuckDB's own parse, and the "
        "parsed statement is what runs), `fetchmany` in chunks (64 rows, then up to 512) "
        "with the values' bytes counted, and an `interrupt()` before the rollback."
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


# --------------------------------------------------------------------------- cancellation

RUNAWAY = {
    "duckdb": "SELECT count(*) FROM range(1000000000) a, range(1000000000) b",
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT count(*) FROM c",
    "postgres": "SELECT count(*) FROM generate_series(1, 1000000000) a, "
    "generate_series(1, 1000000000) b",
}


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
                "stopped at the timeout",
                bool(xs) and len(xs) == reps and max(xs) < 1.5,
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


# --------------------------------------------------------------------------- %load_ext

_LOAD_SCRIPT = """
import contextlib, io, sys, time
t0 = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
sh = InteractiveShell.instance()
t1 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    sh.run_line_magic("load_ext", sys.argv[1])
    t2 = time.perf_counter()
    sh.run_line_magic("sql", "duckdb://")
    t3 = time.perf_counter()
print("CADET_TIMES", t2 - t1, t3 - t1, t1 - t0, flush=True)
"""


def load_ext(reps: int = 7) -> list[Measure]:
    """``%load_ext cadet_magic`` against ``%load_ext sql`` in fresh interpreters, alternated."""
    env = {**os.environ, "PLOOMBER_STATS_ENABLED": "false"}
    results: dict[str, list[tuple[float, float]]] = {"sql": [], "cadet_magic": []}
    for _ in range(reps):
        for ext in ("sql", "cadet_magic"):
            out = subprocess.run(
                [sys.executable, "-c", _LOAD_SCRIPT, ext],
                capture_output=True,
                text=True,
                env=env,
                cwd=str(ROOT),
                timeout=300,
            )
            if out.returncode != 0:
                raise RuntimeError(out.stderr[-2000:])
            line = next(x for x in out.stdout.splitlines() if x.startswith("CADET_TIMES"))
            load, first_sql, _ = (float(x) for x in line.split()[1:])
            results[ext].append((load, first_sql))
    ours = _median([x[0] for x in results["cadet_magic"]])
    theirs = _median([x[0] for x in results["sql"]])
    ours_sql = _median([x[1] for x in results["cadet_magic"]])
    theirs_sql = _median([x[1] for x in results["sql"]])
    m = Measure(
        "`%load_ext cadet_magic` vs `%load_ext sql`",
        f"{ours * 1e3:,.0f} ms",
        f"{theirs * 1e3:,.0f} ms",
        f"{ours / theirs:.2f}x",
        "no slower (≤ 1x)",
        ours <= theirs,
    )
    m2 = Measure(
        "… then the first `%sql duckdb://`",
        f"{ours_sql * 1e3:,.0f} ms",
        f"{theirs_sql * 1e3:,.0f} ms",
        f"{ours_sql / theirs_sql:.2f}x",
        "reported",
        None,
    )
    m.notes.append(
        f"Fresh `python -c` processes with an IPython InteractiveShell, {reps} of each, "
        "alternated; medians of the in-process time of `%load_ext` (and of `%load_ext` plus "
        "the first `%sql duckdb://`). cadet_magic declares jupysql's magics lazily: jupysql is "
        "imported by the first `%sql`, `%%sql` or `%config`, so its cost moves there."
    )
    return [m, m2]


# --------------------------------------------------------------------------- 1,000 tables

_DOMAINS = (
    "sales hr inventory finance marketing support shipping billing crm payroll audit legal "
    "procurement warehouse retail web mobile analytics research training"
).split()
_ENTITIES = (
    "orders customers invoices payments employees products suppliers shipments tickets "
    "campaigns accounts contracts assets budgets claims events leads visits reviews returns "
    "refunds stores regions teams projects tasks vendors items prices discounts sessions "
    "devices users roles skills courses grades departments locations schedules shifts "
    "licenses"
).split()
_STATUSES = ("open", "closed", "pending", "cancelled", "shipped", "active")


def synthetic_catalog(n_tables: int = 1000) -> list[tuple[str, str]]:
    """``(name, CREATE TABLE ... AS SELECT ...)`` for ``n_tables`` tables with keys and 20 rows."""
    rng = random.Random(7)
    names = []
    for d in _DOMAINS:
        for e in _ENTITIES:
            names.append(f"{d}_{e}")
    rng.shuffle(names)
    while len(names) < n_tables:
        names += [f"{n}_{len(names)}" for n in names[: n_tables - len(names)]]
    names = names[:n_tables]
    out = []
    for i, name in enumerate(names):
        noun = name.split("_")[1].rstrip("s")
        status = rng.choice(_STATUSES)
        cols = (
            f"CAST(i AS INTEGER) AS id, '{noun} ' || i AS {noun}_name, "
            f"CASE WHEN i % 3 = 0 THEN '{status}' ELSE 'new' END AS status, "
            f"i * 1.5 AS amount, DATE '2024-01-01' + CAST(i AS INTEGER) AS created_on"
        )
        parent = names[rng.randrange(i)] if i else None
        if parent is not None:
            cols += ", CAST(i AS INTEGER) AS parent_id"
        out.append((name, cols, parent))
    return out


def _build_duckdb(path: str, n_tables: int) -> None:
    import duckdb

    con = duckdb.connect(path)
    for name, cols, parent in synthetic_catalog(n_tables):
        fk = f", FOREIGN KEY (parent_id) REFERENCES {parent} (id)" if parent else ""
        con.execute(
            f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, {name.split('_')[1].rstrip('s')}_name "
            f"VARCHAR, status VARCHAR, amount DOUBLE, created_on DATE"
            f"{', parent_id INTEGER' if parent else ''}{fk})"
        )
        con.execute(f"INSERT INTO {name} SELECT {cols} FROM range(20) t(i)")
    con.close()


def _build_sqlite(path: str, n_tables: int) -> None:
    con = sqlite3.connect(path)
    for name, cols, parent in synthetic_catalog(n_tables):
        fk = f", FOREIGN KEY (parent_id) REFERENCES {parent} (id)" if parent else ""
        noun = name.split("_")[1].rstrip("s")
        con.execute(
            f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, {noun}_name TEXT, status TEXT, "
            f"amount REAL, created_on DATE{', parent_id INTEGER' if parent else ''}{fk})"
        )
        sqlite_cols = cols.replace("CAST(i AS INTEGER)", "i").replace(
            "DATE '2024-01-01' + i", "date('2024-01-01', '+' || i || ' days')"
        )
        con.execute(
            f"INSERT INTO {name} SELECT {sqlite_cols} FROM (WITH RECURSIVE r(i) AS "
            f"(SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 19) SELECT i FROM r)"
        )
    con.commit()
    con.close()


def large_catalog(n_tables: int = 1000, reps: int = 5, budget: int = 6000) -> list[Measure]:
    """Schema read (cache miss) plus linking, and the cache-hit path, on ``n_tables`` tables."""
    import duckdb

    from cadet_magic.db.cache import SCHEMA_CACHE
    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.schema.link import link

    tables = [name for name, _, _ in synthetic_catalog(n_tables)]
    rng = random.Random(3)
    questions = [
        f"How many {t.split('_')[0]} {t.split('_')[1]} are {rng.choice(_STATUSES)}?"
        for t in rng.sample(tables, min(10, len(tables)))
    ]
    out = []
    with tempfile.TemporaryDirectory(prefix="cadet-perf-") as tmp:
        for engine in ("duckdb", "sqlite"):
            path = str(Path(tmp) / f"cat.{engine}")
            (_build_duckdb if engine == "duckdb" else _build_sqlite)(path, n_tables)
            con = duckdb.connect(path) if engine == "duckdb" else sqlite3.connect(path)
            miss, hit, read_only, chars, linked = [], [], [], [], 0
            for r in range(reps):
                q = questions[r % len(questions)]
                SCHEMA_CACHE.clear()
                t0 = time.perf_counter()
                schema = resolve_runner(con).schema()
                t1 = time.perf_counter()
                result = link(schema, q, budget)
                t2 = time.perf_counter()
                miss.append(t2 - t0)
                read_only.append(t1 - t0)
                t0 = time.perf_counter()
                again = resolve_runner(con).schema()
                result = link(again, q, budget)
                hit.append(time.perf_counter() - t0)
                assert again is schema
                chars.append(len(result.text))
                target = tables[tables.index(q.split()[2] + "_" + q.split()[3])]
                linked += target in result.schema.table_names()
            sampled = sum(1 for t in schema.tables for c in t.columns if c.samples)
            con.close()
            m = Measure(
                f"schema read + linking, {n_tables:,} tables ({engine})",
                f"{_median(miss) * 1e3:,.0f} ms miss / {_median(hit) * 1e3:,.0f} ms hit",
                f"read alone {_median(read_only) * 1e3:,.0f} ms",
                "",
                "< 1 s together",
                _median(miss) < 1.0,
            )
            m.notes.append(
                f"{engine}: {n_tables:,} tables × 5–6 columns with primary and foreign keys and "
                f"20 rows each; {sampled} columns got sample values (bounded: 200 columns, 0.3 s); "
                f"link text {_median(chars):,.0f} chars at budget {budget:,}; the named table was "
                f"linked for {linked}/{reps} questions. Miss = cache cleared, catalog read with "
                "samples, index built, question linked; hit = fingerprint query + linking."
            )
            out.append(m)
    return out


# --------------------------------------------------------------------------- model calls


def model_calls(n_questions: int | None = None) -> Measure:
    """Model calls per answered question when the first SQL is right (scripted gold SQL)."""
    import cadet_magic
    from cadet_magic.db.cache import SCHEMA_CACHE
    from cadet_magic.llm import ScriptedModel

    items = spider_gold(n_questions)
    cons: dict[str, sqlite3.Connection] = {}
    answered, calls, asked = 0, [], 0
    SCHEMA_CACHE.clear()
    for d in items:
        con = cons.get(d["db_id"])
        if con is None:
            con = cons[d["db_id"]] = sqlite3.connect(
                f"file:{_spider_db(d['db_id'])}?mode=ro", uri=True
            )
        model = ScriptedModel({d["question"]: [f"```sql\n{d['query']}\n```"]})
        r = cadet_magic.ask(d["question"], con=con, model=model, timeout=30)
        asked += 1
        if r.ok:
            answered += 1
            calls.append(r.model_calls)
    reads = SCHEMA_CACHE.reads
    for con in cons.values():
        con.close()
    mean = statistics.mean(calls) if calls else float("nan")
    m = Measure(
        "model calls per answered question",
        f"{mean:.2f} (max {max(calls) if calls else 0})",
        f"{answered}/{asked} answered",
        "",
        "exactly 1",
        bool(calls) and max(calls) == 1 and min(calls) == 1,
    )
    m.notes.append(
        f"Spider dev questions on their SQLite databases, each with its gold SQL as the scripted "
        f"reply, through `cadet_magic.ask` (schema read {reads} times for {len(cons)} "
        "connections: once per connection)."
    )
    return m


# --------------------------------------------------------------------------- linking recall


def linking_recall(budget: int = 6000) -> Measure:
    """Spider dev linking recall at ``budget`` (as in ``benchmarks.linking``)."""
    from benchmarks.linking import load_cases, load_catalog, measure

    catalog = load_catalog()
    cases = load_cases()
    o = measure(catalog, cases, budget)
    return Measure(
        f"linking recall, Spider dev (20 DBs, {len(catalog.tables)} tables, one catalog)",
        f"{o.recall:.1%} at {statistics.mean(o.chars):,.0f} chars (mean)",
        f"budget {budget:,} chars",
        "",
        "≥ 98% at ≤ 6,000 chars",
        o.recall >= 0.98 and max(o.chars) <= 6000,
    )


# --------------------------------------------------------------------------- report

HEADERS = ["measure", "cadet_magic", "baseline", "ratio", "target", "met"]


def _mark(met: bool | None) -> str:
    return "–" if met is None else ("yes" if met else "**no**")


def render(measures: Sequence[Measure], elapsed: float) -> str:
    rows = [[m.name, m.ours, m.baseline, m.ratio, m.target, _mark(m.met)] for m in measures]
    notes = [n for m in measures for n in m.notes]
    return (
        table(HEADERS, rows)
        + "\n\n"
        + "\n".join(f"- {n}" for n in notes)
        + f"\n\nCommand: `python -m benchmarks`; run time {elapsed:.0f} s{_load_note()}."
    )


def _load_note() -> str:
    """The machine's load average at the end of the run (the machine is shared: absolute
    times grow with it, the side-by-side ratios much less)."""
    try:
        one, five, _ = os.getloadavg()
    except (AttributeError, OSError):
        return ""
    return f"; load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores"


def machine_details() -> str:
    """CPU model, cores and RAM, for the section header."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        ram = f", {kb / 1024**2:.0f} GB RAM"
    return f"{cpu}, {os.cpu_count()} cores{ram}"


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
    from benchmarks import isolation

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
    parser.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL")
    parser.add_argument(
        "--all", action="store_true", help="also re-run the validate and corruption benchmarks"
    )
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    measures = run_all(quick=args.quick, pg=not args.no_pg)
    body = render(measures, time.perf_counter() - t0)
    packages = ["duckdb", "sqlglot", "jupysql", "ipython", "sqlalchemy", "psycopg"]
    if args.no_write or args.quick:
        print(body)
    else:
        write_section(
            "perf",
            "Performance against baselines",
            f"_Machine: {machine_details()}._\n\n{body}",
            packages,
        )
        from benchmarks import linking

        linking.main([])
        if args.all:
            from benchmarks import corruption, validate

            validate.main()
            corruption.main([])


if __name__ == "__main__":
    main()
