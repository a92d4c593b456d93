"""Cost of running the fallback's pandas code in the isolated worker, against in-process.

The fallback tutorial's question (notebooks/fallback.ipynb with the scripted replies of
notebooks/fallback_replies.json): its fallback SELECT runs once on the sample shop (as the tutorial builds it),
then its pandas code runs

* **first run of a session**: in a fresh interpreter (pandas already imported, as in a
  notebook that used it), the first isolated run (starting the warm worker: a ``python -I``
  process importing pandas, numpy and pyarrow) against the first in-process run, alternated
  across ``sessions`` fresh interpreters;
* **later runs**: in one interpreter with the worker warm, isolated runs (fork, confine, Arrow
  both ways) against in-process runs, interleaved.

Targets: the first run adds at most 1.5 s, later runs at most 100 ms (medians); code stuck in C
(holding the GIL) is stopped at most 1 s after the time limit.

Run: ``python -m benchmarks.isolation`` (writes its page and its rows of BENCHMARKS.md; ``--no-write``
prints only); ``python -m benchmarks`` includes it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.measure import Measure, measure_rows, render
from benchmarks.report import ROOT, write_page

NOTEBOOKS = ROOT / "notebooks"
FIRST_TARGET = 1.5
LATER_TARGET = 0.100


def quickstart_fallback() -> tuple[str, str, str]:
    """The fallback tutorial's question, its SELECT and its pandas code (the quickstart's
    until it ran the local model by default). The SELECT is the product's own, as the agent
    writes it for the tables the tutorial's SQL attempts read; the code is the tutorial's
    fallback reply."""
    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.examples.shop import create_shop
    from cadet_magic.fallback.rows_select import fetch_select
    from cadet_magic.sql.target import Target

    replies = json.loads((NOTEBOOKS / "fallback_replies.json").read_text())["replies"]
    for question, answers in replies.items():
        for reply in answers:
            code = re.search(r"```python\n(.*?)```", reply, re.S)
            if code:
                con = create_shop()
                try:
                    schema = resolve_runner(con).schema()
                finally:
                    con.close()
                plan = fetch_select(
                    schema, ("order_items", "products", "orders"), Target.named("duckdb")
                )
                if plan is None:  # pragma: no cover - the shop has these tables
                    raise LookupError("the shop has no order_items, products or orders")
                return question, plan.sql, code.group(1)
    raise LookupError("the fallback tutorial's replies have no fallback reply")


def quickstart_frame() -> Any:
    """The fallback SELECT's rows on the quickstart database, as the agent builds ``df``."""
    from cadet_magic.examples.shop import create_shop
    from cadet_magic.fallback.in_process import make_frame

    _, sql, _ = quickstart_fallback()
    # The deterministic shop the quickstart builds into shop.duckdb, here in memory.
    con = create_shop()
    try:
        cur = con.execute(sql)
        columns = [d[0] for d in cur.description]
        return make_frame(columns, cur.fetchall())
    finally:
        con.close()


_FIRST_SCRIPT = """
import sys, time
from benchmarks.isolation import quickstart_fallback, quickstart_frame
from cadet_magic.fallback.in_process import run_code
from cadet_magic.fallback.worker import run_isolated
_, _, code = quickstart_fallback()
df = quickstart_frame()
runner = run_isolated if sys.argv[1] == "isolated" else run_code
t = time.perf_counter()
r = runner(code, df, timeout=60)
elapsed = time.perf_counter() - t
assert r.ok, r.error
print("CADET_FIRST", elapsed, len(r.result))
"""


def first_run(sessions: int) -> tuple[float, float]:
    """Median seconds of the first isolated and the first in-process run, fresh interpreters."""
    times: dict[str, list[float]] = {"isolated": [], "in_process": []}
    for _ in range(sessions):
        for mode in ("isolated", "in_process"):
            out = subprocess.run(
                [sys.executable, "-c", _FIRST_SCRIPT, mode],
                capture_output=True,
                text=True,
                cwd=str(ROOT),
                timeout=300,
            )
            if out.returncode != 0:
                raise RuntimeError(out.stderr[-2000:])
            line = next(x for x in out.stdout.splitlines() if x.startswith("CADET_FIRST"))
            times[mode].append(float(line.split()[1]))
    return statistics.median(times["isolated"]), statistics.median(times["in_process"])


def later_runs(reps: int) -> tuple[float, float, int]:
    """Median seconds of warm isolated runs and of in-process runs, interleaved."""
    from cadet_magic.fallback.in_process import run_code
    from cadet_magic.fallback.worker import run_isolated, shutdown

    _, _, code = quickstart_fallback()
    df = quickstart_frame()
    assert run_isolated(code, df, timeout=60).ok  # warm the worker
    isolated, in_process = [], []
    try:
        for _ in range(reps):
            t = time.perf_counter()
            r = run_isolated(code, df, timeout=60)
            isolated.append(time.perf_counter() - t)
            assert r.ok, r.error
            t = time.perf_counter()
            r = run_code(code, df, timeout=60)
            in_process.append(time.perf_counter() - t)
            assert r.ok, r.error
    finally:
        shutdown()
    return statistics.median(isolated), statistics.median(in_process), len(df)


def stop_latency(reps: int, limit: float = 1.0) -> float:
    """Median seconds past the time limit until code holding the GIL in C is stopped."""
    from cadet_magic.fallback.worker import run_isolated, worker

    df = quickstart_frame()
    worker()
    late = []
    for _ in range(reps):
        t = time.perf_counter()
        r = run_isolated("result = 7 ** (3 * 10**7)", df, timeout=limit)
        late.append(time.perf_counter() - t - limit)
        assert r.error is not None and r.error.kind == "timeout", r.error
    return statistics.median(late)


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except (OSError, AttributeError):
        return "n/a"


def measures(sessions: int = 5, reps: int = 30) -> list[Any]:
    """The rows for the performance table (and the page of its own)."""
    load_before = _load()
    first_iso, first_in = first_run(sessions)
    later_iso, later_in, rows = later_runs(reps)
    question, _, _ = quickstart_fallback()
    first_added, later_added = first_iso - first_in, later_iso - later_in
    m1 = Measure(
        "fallback code, first run of a session (isolated vs in-process)",
        f"{first_iso * 1e3:,.0f} ms",
        f"{first_in * 1e3:,.0f} ms",
        f"+{first_added * 1e3:,.0f} ms",
        f"adds ≤ {FIRST_TARGET * 1e3:,.0f} ms",
        first_added <= FIRST_TARGET,
    )
    m2 = Measure(
        "fallback code, later runs (isolated vs in-process)",
        f"{later_iso * 1e3:,.1f} ms",
        f"{later_in * 1e3:,.1f} ms",
        f"+{later_added * 1e3:,.1f} ms",
        f"adds ≤ {LATER_TARGET * 1e3:,.0f} ms",
        later_added <= LATER_TARGET,
    )
    m1.notes.append(
        f"Fallback isolation: the quickstart's fallback question ({question!r}), its pandas "
        f"code on the {rows} rows of its SELECT (the sample shop). First run: medians "
        f"over {sessions} fresh interpreters per mode, alternated (the isolated one starts the "
        "warm worker: `python -I`, importing pandas, numpy and pyarrow). Later runs: medians "
        f"of {reps} interleaved runs with the worker warm (two pipes passed to the template, "
        "fork, resource limits, Landlock, capability drop, seccomp, Arrow IPC both ways "
        "straight between the kernel and the child, the result bounded by its decoded size). "
        "In-process is the old runner (syntax check, settrace "
        "deadline, worker thread). The machine is shared: load average (1 min) "
        f"{load_before} at the start, {_load()} at the end; the first run is dominated by "
        "importing pandas in the new process, which slows down in proportion. In the agent the "
        "worker starts in the background at the first failed SQL attempt, while the model "
        "writes its next replies, so with a real model most of that start is hidden."
    )
    late = stop_latency(max(1, reps // 10))
    m3 = Measure(
        "fallback code stuck in C (`7 ** (3 * 10**7)`): stopped after the limit",
        f"+{late * 1e3:,.0f} ms",
        "–",
        "–",
        "≤ 1,000 ms past the limit",
        late <= 1.0,
    )
    m3.notes.append(
        f"Stop latency: median over {max(1, reps // 10)} runs with a 1 s limit of the time from "
        "the limit until the runner returned (the child is killed with SIGKILL at the limit)."
    )
    for m in (m1, m2, m3):
        m.owner = "isolation"  # its own page's rows, also when python -m benchmarks runs it
    return [m1, m2, m3]


def write(ms: Sequence[Measure], elapsed: float) -> None:
    """Writes the page and rows of these measures (its own run's, or ``python -m benchmarks``'s)."""
    body = render(ms, elapsed).replace("`python -m benchmarks`", "`python -m benchmarks.isolation`")
    write_page(
        "isolation",
        "Fallback code in an isolated worker: added time",
        body,
        measure_rows(ms, "python -m benchmarks.isolation"),
        ["pandas", "numpy", "pyarrow", "landlock", "pyseccomp"],
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print the figures only")
    parser.add_argument("--quick", action="store_true", help="few repetitions (a smoke run)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    ms = measures(1, 3) if args.quick else measures()
    if args.no_write or args.quick:
        print(render(ms, time.perf_counter() - t0))
        return
    write(ms, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
