"""What every performance benchmark shares: the :class:`Measure` row and small helpers."""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.report import table
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
