"""MariaDB through the runner, side by side with PyMySQL's own fastest path, in one run.

- first 1000 rows: the runner (own connection, START TRANSACTION READ ONLY, the server's time
  limit, the row limit put into the query, an unbuffered cursor, the byte budget, rollback)
  against PyMySQL alone: an unbuffered ``SSCursor`` and ``fetchmany(1001)`` of the same query
  with ``LIMIT 1001`` on an open connection (no transaction, no limits, no check);
- cancellation: a runaway cross join stopped by the server's ``max_statement_time`` (time to
  :class:`~cadet_magic.errors.QueryTimeout` past the timeout), and a Ctrl-C (SIGINT to the main
  thread) stopped by ``KILL QUERY`` from a second connection (time to ``KeyboardInterrupt``,
  and until the server's process list no longer shows the query).

Run ``python -m benchmarks.mariadb`` (``--no-write`` to print only); it starts a throwaway
server (workloads/mariadb.py) and writes its page and its row of BENCHMARKS.md.

Example:
    >>> ratio(2.0, 1.0)
    '2.00x'
"""

from __future__ import annotations

import argparse
import signal
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from benchmarks.cancellation import LATE
from benchmarks.report import Row, row, table, write_page

QUERIES = {
    "range (10^7 rows)": "SELECT seq AS id, seq * 2 AS twice FROM seq_1_to_10000000",
    "table scan, 3 columns": "SELECT id, name, amount FROM t",
    "sorted (2·10^5 rows)": "SELECT id, name, amount FROM t ORDER BY amount DESC, id",
    "grouped (2·10^5 rows)": "SELECT name, COUNT(*), SUM(amount) FROM t GROUP BY name",
}
RUNAWAY = "SELECT COUNT(*) FROM seq_1_to_1000000000 a, seq_1_to_1000000000 b"
N = 1000


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def _ms(x: float) -> str:
    return f"{x * 1e3:,.1f} ms"


def _best(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _setup(args: dict) -> None:
    import pymysql

    con = pymysql.connect(**args, autocommit=True)
    with con.cursor() as cur:
        cur.execute("DROP DATABASE IF EXISTS bench")
        cur.execute("CREATE DATABASE bench")
        cur.execute("USE bench")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40), amount DOUBLE)")
        cur.execute(
            "INSERT INTO t SELECT seq, CONCAT('customer ', seq % 4999), (seq * 7919) % 10007 "
            "FROM seq_1_to_200000"
        )
    con.close()


def fetch_rows(args: dict, reps: int) -> list[list[str]]:
    """Per query: runner (reused), runner made per question, PyMySQL SSCursor, ratios."""
    import pymysql
    from pymysql.cursors import SSCursor

    from cadet_magic.db.connect import resolve_runner

    user = pymysql.connect(**args, database="bench")
    plain = pymysql.connect(**args, database="bench")
    runner = resolve_runner(user)
    rows = []
    for label, sql in QUERIES.items():

        def native(sql: str = sql) -> None:
            cur = plain.cursor(SSCursor)
            cur.execute(f"{sql} LIMIT {N + 1}")
            got = cur.fetchmany(N + 1)
            cur.close()
            assert len(got) == N + 1

        def ours(sql: str = sql) -> None:
            r = runner.run(sql, limit=N, timeout=30)
            assert len(r.rows) == N

        def fresh(sql: str = sql) -> None:
            r = resolve_runner(user)
            r.run(sql, limit=N, timeout=30)
            r.close()

        native(), ours(), fresh()  # warm the caches of both paths alike
        t_native, t_ours, t_fresh = (_best(f, reps) for f in (native, ours, fresh))
        rows.append(
            [label, _ms(t_native), _ms(t_ours), ratio(t_ours, t_native), _ms(t_fresh),
             ratio(t_fresh, t_native)]
        )  # fmt: skip
    runner.close()
    user.close()
    plain.close()
    return rows


def _running(args: dict) -> bool:
    import pymysql

    con = pymysql.connect(**args)
    try:
        with con.cursor() as cur:
            cur.execute(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                "WHERE INFO LIKE '%seq_1_to_1000000000%' AND ID <> CONNECTION_ID()"
            )
            return bool(cur.fetchone()[0])
    finally:
        con.close()


def _interrupt_main(sent: list[float]) -> None:
    """A Ctrl-C as the kernel gets it: SIGINT delivered to the main thread."""
    sent.append(time.perf_counter())
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)


def cancellation(args: dict, reps: int, timeout: float = 1.0) -> tuple[list[list[str]], Row]:
    """The server's time limit and Ctrl-C: latency past the deadline / after the signal; and
    the row of BENCHMARKS.md (the time limit)."""
    import pymysql

    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.errors import QueryTimeout

    user = pymysql.connect(**args, database="bench")
    late, ctrl_c, gone = [], [], []
    for _ in range(reps):
        runner = resolve_runner(user)
        t0 = time.perf_counter()
        try:
            runner.run(RUNAWAY, limit=5, timeout=timeout)
        except QueryTimeout:
            late.append(time.perf_counter() - t0 - timeout)
        sent: list[float] = []
        timer = threading.Timer(0.5, _interrupt_main, (sent,))
        timer.start()
        try:
            runner.run(RUNAWAY, limit=5, timeout=60)
        except KeyboardInterrupt:
            ctrl_c.append(time.perf_counter() - sent[0])
            while _running(args):
                time.sleep(0.001)
            gone.append(time.perf_counter() - sent[0])
        runner.close()
    user.close()
    figure = row(
        "MariaDB: a runaway query stopped past its time limit",
        f"+{_ms(statistics.median(late))} (max +{_ms(max(late))})" if late else "never",
        f"≤ {LATE:g} s past the limit, every run",
        len(late) == reps and max(late) < LATE,
        "python -m benchmarks.mariadb",
    )
    return [
        ["time limit (max_statement_time)", f"timeout {timeout:g} s",
         f"+{_ms(statistics.median(late))} (max +{_ms(max(late))})"],
        ["Ctrl-C -> KeyboardInterrupt", "SIGINT to the kernel's thread",
         f"{_ms(statistics.median(ctrl_c))} (max {_ms(max(ctrl_c))})"],
        ["Ctrl-C -> query gone from the server (KILL QUERY)", "process list polled",
         f"{_ms(statistics.median(gone))} (max {_ms(max(gone))})"],
    ], figure  # fmt: skip


def body(fetch: list[list[str]], cancel: list[list[str]], server: str, reps: int) -> str:
    return "\n".join(
        [
            f"{server} started by workloads/mariadb.py on 127.0.0.1 (TCP), PyMySQL. First "
            f"{N} rows, median of {reps} runs after one warm-up each: PyMySQL's fastest path "
            f"(SSCursor, `LIMIT {N + 1}`, fetchmany) on an open connection against the runner "
            "on its own connection (reused across questions, as within one question's attempts) "
            "and a runner made per question (it opens its connection: connect + session set-up "
            "included). The runner's extra work: parsing and regenerating the query with the "
            "row limit, START TRANSACTION READ ONLY, SET STATEMENT max_statement_time, the "
            "byte budget, ROLLBACK.",
            "",
            table(
                [
                    "query",
                    "PyMySQL SSCursor",
                    "runner (own connection reused)",
                    "ratio",
                    "runner made per question",
                    "ratio",
                ],
                fetch,
            ),  # fmt: skip
            "",
            f"Cancellation (runaway cross join of 10^9 × 10^9 rows, {reps} runs):",
            "",
            table(["what", "setting", "latency (median)"], cancel),
        ]
    )


def _server(args: dict) -> str:
    import pymysql

    con = pymysql.connect(**args)
    try:
        with con.cursor() as cur:
            cur.execute("SELECT VERSION()")
            return "MariaDB " + str(cur.fetchone()[0]).split("-")[0]
    finally:
        con.close()


def main(argv: Iterable[str] | None = None) -> None:
    from workloads.mariadb import connect_args, mariadb_server

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print only")
    opts = parser.parse_args(list(argv) if argv is not None else None)
    with mariadb_server() as url:
        args: dict[str, Any] = connect_args(url)
        _setup(args)
        server = _server(args)
        fetch = fetch_rows(args, opts.reps)
        cancel, figure = cancellation(args, max(3, opts.reps // 2))
    text = body(fetch, cancel, server, opts.reps)
    if opts.no_write:
        print(text)
    else:
        write_page(
            "mariadb",
            f"MariaDB: first {N} rows and cancellation",
            text + "\n\nThe first rows are reported against PyMySQL's fastest path, not held to a "
            "budget; the time limit is a row of BENCHMARKS.md.",
            [figure],
            packages=("PyMySQL", "sqlglot"),
        )


if __name__ == "__main__":
    main()
