"""What every performance benchmark shares: the :class:`Measure` row and small helpers."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

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
