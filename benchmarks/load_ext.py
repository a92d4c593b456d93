"""``%load_ext cadet_magic`` against ``%load_ext sql`` (jupysql), in fresh processes.

Part of ``python -m benchmarks`` (:mod:`benchmarks.perf`).
"""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks.measure import Measure, _median
from benchmarks.report import ROOT

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
