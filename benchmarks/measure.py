"""What every performance benchmark shares: the :class:`Measure` row and small helpers."""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.report import Row, row, table
from workloads.gold import DATA

SPIDER = DATA / "spider-dev"


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
    #: The benchmark whose page and rows carry it, when not the one that measured it (the
    #: performance run measures the isolated worker's rows and the linking recall too).
    owner: str = ""
    #: What the measure counted besides its time, as (right, of), where it counts something.
    counts: tuple[int, int] | None = None


def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _rss() -> int | None:
    try:
        import psutil
    except ImportError:
        return None
    return psutil.Process().memory_info().rss


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
    """CPU model, cores and RAM, for the page's header."""
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


def _short(text: str) -> str:
    """A figure without its parenthesised detail (the detail page keeps it).

    >>> _short("5.87 ms (peak Python 0.2 MB, RSS +0.0 MB)")
    '5.87 ms'
    """
    return text.split(" (", 1)[0]


def measure_rows(measures: Sequence[Measure], command: str) -> list[Row]:
    """The rows of BENCHMARKS.md: every measure held to a target (a measure only reported
    stays on the detail page).

    >>> m = Measure("fetch", "5.87 ms (peak 0.2 MB)", "4.49 ms fetchmany", "1.31x", "≤ 1.2x", False)
    >>> r = measure_rows([m, Measure("overhead", "1 µs", "-", "", "reported", None)], "cmd")
    >>> [(x.figure, x.value, x.budget, x.met) for x in r]
    [('fetch', '1.31x (5.87 ms against 4.49 ms fetchmany)', '≤ 1.2x', False)]
    """
    out = []
    for m in measures:
        if m.met is None:
            continue
        ratio = m.ratio.strip()
        if ratio and ratio not in ("–", "-"):
            value = f"{ratio} ({_short(m.ours)} against {_short(m.baseline)})"
        else:
            value = m.ours
        out.append(row(m.name, value, m.target, m.met, command))
    return out
