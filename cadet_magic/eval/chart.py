"""The evaluation's chart: an SVG of grouped bars, per feedback mode the accuracies (first
attempt, after self-correction, after the vote, with the fallback) with their 95% Wilson
intervals as whiskers. Plain SVG text, no plotting library.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from cadet_magic.eval.figures import LEVELS, Accuracy, figures

if TYPE_CHECKING:
    from cadet_magic.eval.evaluation import Evaluation

_COLOURS = ("#9bb7d4", "#3d7ab8", "#2a5a8c", "#1d3f66")


def chart_svg(evaluation: Evaluation) -> str:
    """Grouped bars: per mode, the accuracies with their 95% intervals."""
    modes = list(evaluation.runs)
    figs = {m: figures(evaluation.runs[m].records) for m in modes}
    bar, gap, group_gap = 34, 6, 40
    left, top, height = 56, 40, 240
    group = len(LEVELS) * bar + (len(LEVELS) - 1) * gap
    width = left + len(modes) * (group + group_gap) + 160
    total = top + height + 50
    y = lambda rate: top + height * (1 - rate)  # noqa: E731
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total}" '
        f'viewBox="0 0 {width} {total}" font-family="sans-serif" font-size="12">',
        f'<text x="{left}" y="20" font-size="14">Execution accuracy by feedback mode '
        f"({html.escape(evaluation.model)}{', scripted' if evaluation.scripted else ''})</text>",
    ]
    for tick in range(0, 101, 20):
        ty = y(tick / 100)
        out.append(
            f'<line x1="{left}" x2="{width - 160}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#ddd"/>'
            f'<text x="{left - 8}" y="{ty + 4:.1f}" text-anchor="end">{tick}%</text>'
        )
    for i, m in enumerate(modes):
        x0 = left + 20 + i * (group + group_gap)
        f = figs[m]
        for j, (attr, _label) in enumerate(LEVELS):
            acc: Accuracy = getattr(f, attr)
            x = x0 + j * (bar + gap)
            out.append(
                f'<rect x="{x}" y="{y(acc.rate):.1f}" width="{bar}" '
                f'height="{height * acc.rate:.1f}" fill="{_COLOURS[j]}"/>'
            )
            lo, hi = acc.interval
            cx = x + bar / 2
            out.append(
                f'<line x1="{cx}" x2="{cx}" y1="{y(lo):.1f}" y2="{y(hi):.1f}" stroke="#000"/>'
                f'<line x1="{cx - 5}" x2="{cx + 5}" y1="{y(lo):.1f}" y2="{y(lo):.1f}" '
                f'stroke="#000"/><line x1="{cx - 5}" x2="{cx + 5}" y1="{y(hi):.1f}" '
                f'y2="{y(hi):.1f}" stroke="#000"/>'
                f'<text x="{cx}" y="{y(hi) - 4:.1f}" text-anchor="middle" font-size="10">'
                f"{100 * acc.rate:.0f}</text>"
            )
        out.append(
            f'<text x="{x0 + group / 2}" y="{top + height + 18}" text-anchor="middle">'
            f"{html.escape(m)} (n={f.n})</text>"
        )
    lx = width - 150
    for j, (_attr, label) in enumerate(LEVELS):
        ly = top + 10 + j * 20
        out.append(
            f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{_COLOURS[j]}"/>'
            f'<text x="{lx + 18}" y="{ly}">{html.escape(label)}</text>'
        )
    out.append(
        f'<text x="{left}" y="{total - 8}" font-size="10">bars: share of questions answered '
        "right; whiskers: 95% Wilson interval</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_chart(evaluation: Evaluation, path: Path) -> None:
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(chart_svg(evaluation), encoding="utf-8")
