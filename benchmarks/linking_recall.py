"""Spider dev linking recall at the prompt budget (the figures of ``benchmarks.linking``).

Part of ``python -m benchmarks`` (:mod:`benchmarks.perf`).
"""

from __future__ import annotations

import statistics

from benchmarks.linking import load_cases, load_catalog, measure
from benchmarks.measure import Measure


def linking_recall(budget: int = 6000) -> Measure:
    """Spider dev linking recall at ``budget`` (as in ``benchmarks.linking``)."""

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
        owner="linking",
    )
