"""DataFrames asked as tables: the kernel's memory while a question runs over a large frame.

A fresh process (as a kernel) builds a pandas frame of :data:`ROWS` rows (an integer, a float
and a text column), reads its peak resident memory (``VmHWM``), asks one question over it
through ``ask()`` (a scripted model: its SQL groups every row), and reads the peak again: what
the question added. On DuckDB the frame is registered and scanned in place, so the question
should add little beside it; the SQLite copy JupyterLite uses (forced here in CPython, its size
bound lifted) copies it, and is measured beside it as what a copy costs.

Run: ``python -m benchmarks.frames`` (writes its page and its row of BENCHMARKS.md;
``--no-write`` prints only).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from benchmarks.report import ROOT, Row, row, table, write_page

#: Rows of the frame.
ROWS = 5_000_000
#: What the question may add to the kernel's peak memory on DuckDB, as a share of the frame's
#: own size (written before the first figures: a copy would add about 1x).
BUDGET = 0.25
QUESTION = "What is the total amount per city?"
SQL = "SELECT city, sum(amount) AS total, count(*) AS n FROM sales GROUP BY city ORDER BY city"


def _status_mb(key: str) -> float:
    """A figure of ``/proc/self/status`` (``VmHWM``, ``VmRSS``) in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> float:
    """The peak resident memory set back to what the process holds now (Linux: ``5`` written
    to ``/proc/self/clear_refs``), which it returns: the frame's building is not the
    question's."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_mb("VmRSS")


def child(engine: str, rows: int) -> dict:
    """In a fresh process: the frame, then one question over it on ``engine``."""
    import numpy as np
    import pandas as pd

    import cadet_magic
    from cadet_magic.db import frames
    from cadet_magic.llm import ScriptedModel

    rng = np.random.default_rng(7)
    cities = np.array(["Oslo", "Lyon", "Porto", "Turin", "Ghent", "Brno"], dtype=object)
    sales = pd.DataFrame(
        {
            "id": np.arange(rows, dtype=np.int64),
            "amount": rng.random(rows) * 100,
            "city": cities[rng.integers(0, len(cities), rows)],
        }
    )
    size = sales.memory_usage(index=False, deep=True).sum() / 2**20
    if engine == "sqlite":  # JupyterLite's copy, its bound lifted for the measurement
        frames.IN_BROWSER = True
        frames.SQLITE_COPY_BYTES = 2**40
    # a first question over ten rows: the imports and DuckDB's own start are not the frame's
    warm = ScriptedModel({QUESTION: [f"```sql\n{SQL}\n```"]})
    cadet_magic.ask(QUESTION, con={"sales": sales.head(10)}, model=warm, candidates=1)
    before = _reset_peak()
    model = ScriptedModel({QUESTION: [f"```sql\n{SQL}\n```"]})
    started = time.perf_counter()
    result = cadet_magic.ask(QUESTION, con={"sales": sales}, model=model, candidates=1)
    seconds = time.perf_counter() - started
    assert result.ok and sum(r[2] for r in result.rows) == rows, result.message
    return {
        "engine": engine,
        "rows": rows,
        "frame_mb": size,
        "before_mb": before,
        "after_mb": _status_mb("VmHWM"),
        "seconds": seconds,
    }


def measure(rows: int) -> tuple[list[dict], list[float]]:
    loads = [os.getloadavg()[0]]
    out = []
    for engine in ("duckdb", "sqlite"):
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.frames", "--child", engine, str(rows)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
        loads.append(os.getloadavg()[0])
    return out, loads


def added(r: dict) -> float:
    """What the question added to the peak, as a share of the frame's size."""
    return (r["after_mb"] - r["before_mb"]) / r["frame_mb"]


def report(results: list[dict], loads: list[float]) -> str:
    """The detail page's body.

    >>> r = {"engine": "duckdb", "rows": 10, "frame_mb": 100.0, "before_mb": 300.0,
    ...      "after_mb": 310.0, "seconds": 1.5}
    >>> "| duckdb (in place) | 100 MB | +10 MB | 0.10x | 1.5 s |" in report([r], [0.5, 0.7])
    True
    """
    lines = [
        [
            "duckdb (in place)"
            if r["engine"] == "duckdb"
            else "sqlite (the copy JupyterLite makes)",
            f"{r['frame_mb']:.0f} MB",
            f"+{r['after_mb'] - r['before_mb']:.0f} MB",
            f"{added(r):.2f}x",
            f"{r['seconds']:.1f} s",
        ]
        for r in results
    ]
    worst = max(loads)
    under = (
        " **Taken under load**: the seconds are slower than the product's; the memory does not depend on the load."
        if worst > 1.5
        else ""
    )
    return (
        f"Load average (1 min) before, between and after: {', '.join(f'{x:.2f}' for x in loads)}.{under}\n\n"
        f"Each row: a fresh process builds a pandas frame of {results[0]['rows']:,} rows "
        "(an int64, a float64 and a text column; its size as pandas counts it, text included), "
        "asks a first question over ten of its rows (the imports and DuckDB's start are not the frame's), then one question over all of it through `ask()` with a scripted model (stored SQL "
        f"grouping every row: `{SQL}`), the schema read, the safety check, the read-only run and "
        "the result check as for any question. What the question added to the process's peak "
        "resident memory (VmHWM, set back to the resident memory before the question), in MB and as a share of the frame's size, and its seconds.\n\n"
        + table(["engine", "frame", "added to the peak", "share of the frame", "seconds"], lines)
    )


def figures(results: list[dict]) -> list[Row]:
    """The row of BENCHMARKS.md: what a question over a frame adds on DuckDB."""
    duck = next(r for r in results if r["engine"] == "duckdb")
    share = added(duck)
    return [
        row(
            f"DataFrames as tables: a question over a {duck['rows']:,}-row pandas frame adds to the kernel's peak memory",
            f"{share:.2f}x the frame ({duck['after_mb'] - duck['before_mb']:.0f} MB of {duck['frame_mb']:.0f} MB)",
            f"≤ {BUDGET}x (no copy)",
            share <= BUDGET,
            "python -m benchmarks.frames",
        )
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "ROWS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return
    results, loads = measure(args.rows)
    body = report(results, loads)
    if args.no_write:
        print(body)
    else:
        write_page(
            "frames",
            "DataFrames as tables: the kernel's memory over a large frame",
            body,
            figures(results),
            packages=("duckdb", "pandas"),
        )


if __name__ == "__main__":
    main()
