"""The evaluation's summary: figures per feedback mode from the results lines, as Markdown
(printed, and written with ``--report``) and an SVG chart of the three accuracies.

Figures (questions that could not run are counted apart, never as wrong):

- execution accuracy of the first attempt, after self-correction (the SQL phase's answer) and
  with the fallback (the answer the user got), each with its 95% Wilson interval;
- the gains (after correction − first; with fallback − after correction) with a 95% paired
  bootstrap interval, the questions gained and lost, and McNemar's exact p-value; between
  modes, the same on the questions both ran;
- where answers are lost: first attempts that ran but were wrong (nothing for the loop to
  see), failures by the first attempt's category and what became of them, answers that were
  right at first and wrong in the end, answers with warnings and how many were wrong;
- calls, tokens and seconds per question (median, p90).

Example:
    >>> rec = lambda first, final, fb=False, cat=None: {
    ...     "first_match": first, "final_match": final, "fallback": fb, "final_sql": "SELECT 1",
    ...     "attempts": [{"category": cat, "outcome": "ok" if cat is None else "error"}],
    ...     "warnings": [], "calls": 1, "input_tokens": 100, "output_tokens": 9, "seconds": 2.0,
    ...     "error": None}
    >>> f = figures([rec(True, True), rec(False, True, cat="column_not_found"), rec(False, False)])
    >>> f.n, f.first.k, f.corrected.k, f.final.k, f.ran_wrong
    (3, 1, 2, 2, 1)
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cadet_magic.eval.stats import Gain, gain, percentile, wilson

if TYPE_CHECKING:
    from cadet_magic.eval.run import Evaluation

#: The three accuracies, in order, with their labels.
LEVELS = (
    ("first", "first attempt"),
    ("corrected", "after self-correction"),
    ("final", "with the fallback"),
)
#: How a first attempt that ran but was wrong is named in the category table.
RAN_WRONG = "ran, wrong answer"


@dataclass(frozen=True)
class Accuracy:
    k: int
    n: int

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    def text(self) -> str:
        """E.g. ``45.0% [39.5–50.6] (135/300)``."""
        if not self.n:
            return "–"
        lo, hi = self.interval
        return f"{100 * self.rate:.1f}% [{100 * lo:.1f}–{100 * hi:.1f}] ({self.k}/{self.n})"


@dataclass
class Figures:
    """One mode's figures (see the module's description)."""

    n: int
    errors: Counter
    first: Accuracy
    corrected: Accuracy
    final: Accuracy
    correction_gain: Gain
    fallback_gain: Gain
    answered: int
    warned: int
    warned_wrong: int
    ran_wrong: int
    made_worse: int
    #: Why the runs that ended with a wrong answer stopped (``stop_reason``), by count.
    wrong_stops: Counter = field(default_factory=Counter)
    by_category: dict[str, Counter] = field(default_factory=dict)
    cost: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)


def valid(records: Sequence[dict]) -> list[dict]:
    """The lines of questions that ran (no ``error``)."""
    return [r for r in records if not r.get("error")]


def corrected(r: dict) -> bool:
    """Right after self-correction: the SQL phase answered right (no fallback ran)."""
    return bool(r.get("final_match")) and not r.get("fallback")


def _first_kind(r: dict) -> str:
    attempts = r.get("attempts") or []
    if not attempts:
        return "no attempt"
    first = attempts[0]
    if first.get("outcome") == "ok":
        return RAN_WRONG
    return str(first.get("category") or first.get("outcome") or "unknown")


def _reason(error: str) -> str:
    return error.split(":", 1)[0].strip()


def figures(records: Sequence[dict], seed: int = 0) -> Figures:
    """The figures of one mode's results lines."""
    ok = valid(records)
    errors = Counter(_reason(str(r["error"])) for r in records if r.get("error"))
    first = [bool(r.get("first_match")) for r in ok]
    corr = [corrected(r) for r in ok]
    final = [bool(r.get("final_match")) for r in ok]
    by_category: dict[str, Counter] = {}
    for r in ok:
        if r.get("first_match"):
            continue
        kind = _first_kind(r)
        c = by_category.setdefault(kind, Counter())
        c["questions"] += 1
        if corrected(r):
            c["fixed by correction"] += 1
        elif r.get("final_match"):
            c["fixed by the fallback"] += 1
        else:
            c["not fixed"] += 1
    answered = [r for r in ok if r.get("final_sql") is not None]
    warned = [r for r in answered if r.get("warnings")]
    cost = {}
    for key in ("calls", "input_tokens", "output_tokens", "seconds", "model_seconds"):
        values = [r[key] for r in ok if isinstance(r.get(key), int | float)]
        cost[key] = (percentile(values, 50), percentile(values, 90))
    return Figures(
        n=len(ok),
        errors=errors,
        first=Accuracy(sum(first), len(ok)),
        corrected=Accuracy(sum(corr), len(ok)),
        final=Accuracy(sum(final), len(ok)),
        correction_gain=gain(first, corr, seed=seed),
        fallback_gain=gain(corr, final, seed=seed),
        answered=len(answered),
        warned=len(warned),
        warned_wrong=sum(1 for r in warned if not r.get("final_match")),
        ran_wrong=sum(1 for r in ok if _first_kind(r) == RAN_WRONG and not r.get("first_match")),
        made_worse=sum(1 for r in ok if r.get("first_match") and not r.get("final_match")),
        by_category=by_category,
        wrong_stops=Counter(
            str(r["stop_reason"]) for r in ok if not r.get("final_match") and r.get("stop_reason")
        ),
        cost=cost,
    )


def paired(a: Sequence[dict], b: Sequence[dict], level: str, seed: int = 0) -> Gain:
    """The gain of mode ``a`` over mode ``b`` at ``level`` (``corrected`` or ``final``) on the
    questions both ran."""
    key = lambda r: (r["db_id"], r["question"], r["gold"])  # noqa: E731
    pick = corrected if level == "corrected" else (lambda r: bool(r.get(f"{level}_match")))
    other = {key(r): r for r in valid(b)}
    both = [(pick(other[key(r)]), pick(r)) for r in valid(a) if key(r) in other]
    return gain([x for x, _ in both], [y for _, y in both], seed=seed)


def first_differences(runs: dict) -> str:
    """How often the first attempt's SQL differs between modes on the same question: its
    prompt is the same in every mode, so a difference is the model's own variation (a local
    server's prompt cache changes the arithmetic even at temperature 0), and part of any
    difference between the modes.

    Example:
        >>> from types import SimpleNamespace as R
        >>> line = lambda sql: {"db_id": "d", "question": "q", "gold": "g", "first_sql": sql}
        >>> first_differences({"a": R(records=[line("SELECT 1")]),
        ...                    "b": R(records=[line("SELECT 2")])})
        'First attempts (same prompt in every mode) that differ between modes: 1 of 1 questions.'
    """
    key = lambda r: (r["db_id"], r["question"], r["gold"])  # noqa: E731
    firsts: dict[tuple, list] = {}
    for run in runs.values():
        for r in valid(run.records):
            firsts.setdefault(key(r), []).append(r.get("first_sql"))
    both = [sqls for sqls in firsts.values() if len(sqls) == len(runs)]
    differ = sum(1 for sqls in both if len(set(sqls)) > 1)
    return (
        "First attempts (same prompt in every mode) that differ between modes: "
        f"{differ} of {len(both)} questions."
    )


def gain_text(g: Gain) -> str:
    """E.g. ``+5.0 pts [+2.3, +7.7]; +17/−2; p=0.001``."""
    if not g.n:
        return "–"
    p = f"{g.p_value:.3f}" if g.p_value >= 0.001 else "<0.001"
    return (
        f"{100 * g.diff:+.1f} pts [{100 * g.low:+.1f}, {100 * g.high:+.1f}]; "
        f"+{g.gained}/−{g.lost}; p={p}"
    )


def _num(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "–"
    return f"{v:.{digits}f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def summary_markdown(
    evaluation: Evaluation, chart: Path | None = None, relative_to: Any = None
) -> str:
    """The summary in Markdown: settings, the accuracy table, losses, categories, costs."""
    runs = evaluation.runs
    modes = list(runs)
    figs = {m: figures(runs[m].records) for m in modes}
    scripted = " (**scripted stand-in, not a real model**)" if evaluation.scripted else ""
    temp = (
        "n/a (a model object keeps its own)"
        if evaluation.temperature is None
        else (f"{evaluation.temperature:g}")
    )
    sample = (
        f"a sample of {evaluation.questions} drawn with seed {evaluation.seed} over every database"
        if evaluation.seed is not None
        else f"{evaluation.questions} questions"
    )
    lines = [
        f"Model `{evaluation.model}`{scripted}, temperature {temp}; data `{evaluation.data}`, "
        f"{sample}; feedback modes: {', '.join(modes)}.",
    ]
    lines += [f"{note}" for note in evaluation.notes]
    lines.append("")
    rows: list[list[Any]] = []

    def row(label: str, cell: Any) -> None:
        rows.append([label, *(cell(figs[m]) for m in modes)])

    row(
        "questions run (could not run)",
        lambda f: f"{f.n} ({sum(f.errors.values())})",
    )
    for attr, label in LEVELS:
        row(f"execution accuracy, {label}", lambda f, a=attr: getattr(f, a).text())
    row("gain of self-correction", lambda f: gain_text(f.correction_gain))
    row("gain of the fallback", lambda f: gain_text(f.fallback_gain))
    row("first attempt ran but was wrong (nothing to correct)", lambda f: f.ran_wrong)
    row("right at first, wrong in the end (made worse)", lambda f: f.made_worse)
    row("answered", lambda f: f.answered)
    row("answered with warnings (of those wrong)", lambda f: f"{f.warned} ({f.warned_wrong})")
    for key, label, digits in (
        ("calls", "model calls per question, median / p90", 0),
        ("input_tokens", "input tokens per question, median / p90", 0),
        ("output_tokens", "output tokens per question, median / p90", 0),
        ("seconds", "seconds per question, median / p90", 1),
        ("model_seconds", "of which waiting for the model, median / p90", 1),
    ):
        row(
            label,
            lambda f, k=key, d=digits: f"{_num(f.cost[k][0], d)} / {_num(f.cost[k][1], d)}",
        )
    lines.append(_table(["", *modes], rows))
    if chart is not None:
        target = chart
        if relative_to is not None:
            try:
                target = chart.resolve().relative_to(Path(relative_to).resolve().parent)
            except ValueError:
                target = chart
        lines += ["", f"![execution accuracy per feedback mode]({target.as_posix()})"]
    if len(modes) > 1:
        lines += ["", "Between modes, on the questions both ran (paired):", ""]
        pairs = [(a, b) for i, a in enumerate(modes) for b in modes[i + 1 :]]
        lines.append(
            _table(
                ["", "after self-correction", "with the fallback"],
                [
                    [
                        f"{a} − {b}",
                        gain_text(paired(runs[a].records, runs[b].records, "corrected")),
                        gain_text(paired(runs[a].records, runs[b].records, "final")),
                    ]
                    for a, b in pairs
                ],
            )
        )
        lines += ["", first_differences(runs)]
    kinds = sorted(
        {k for f in figs.values() for k in f.by_category},
        key=lambda k: -max(figs[m].by_category.get(k, Counter())["questions"] for m in modes),
    )
    if kinds:
        lines += [
            "",
            "Questions whose first attempt was not right, by what the first attempt did "
            "(its diagnosis category, or it ran and gave a wrong answer), and what became of "
            "them: fixed by self-correction / fixed by the fallback / not fixed, of all:",
            "",
        ]

        def cell(f: Figures, kind: str) -> str:
            c = f.by_category.get(kind)
            if not c:
                return "–"
            return (
                f"{c['fixed by correction']} / {c['fixed by the fallback']} / "
                f"{c['not fixed']} of {c['questions']}"
            )

        lines.append(
            _table(
                ["first attempt", *modes], [[k, *(cell(figs[m], k) for m in modes)] for k in kinds]
            )
        )
    lines += ["", *losses_markdown(figs)]
    errors: Counter = Counter()
    for f in figs.values():
        errors.update(f.errors)
    if errors:
        lines += [
            "",
            "Could not run (not counted): "
            + "; ".join(f"{why}: {n}" for why, n in errors.most_common())
            + ".",
        ]
    return "\n".join(lines) + "\n"


def _share(k: int, n: int) -> str:
    return f"{k} of {n}" + (f" ({100 * k / n:.0f}%)" if n else "")


def losses_markdown(figs: dict[str, Figures]) -> list[str]:
    """Where answers are lost, per mode, in counts: first attempts that ran but were wrong
    (no error, so nothing for the loop to correct), first attempts that failed and what became
    of them, answers made worse, answers with warnings.

    Example:
        >>> rec = lambda first, final, cat=None: {"first_match": first, "final_match": final,
        ...     "fallback": False, "final_sql": "S", "warnings": [], "error": None,
        ...     "attempts": [{"category": cat, "outcome": "ok" if cat is None else "error"}]}
        >>> f = figures([rec(True, True), rec(False, False), rec(False, True, "syntax_error")])
        >>> for line in losses_markdown({"targeted": f}):
        ...     print(line)
        Where answers are lost (counts):
        <BLANKLINE>
        - targeted, 3 questions: the first attempt ran without error but answered wrong on 1 of 3 (33%) (nothing for the loop to see); it failed on 1 of 3 (33%), of which self-correction fixed 1, the fallback 0, and 0 stayed wrong; 0 right at first were wrong in the end; 0 answered with warnings (0 of them wrong).
    """
    out = ["Where answers are lost (counts):", ""]
    for mode, f in figs.items():
        failed: Counter = Counter()
        for kind, c in f.by_category.items():
            if kind != RAN_WRONG:
                failed.update(c)
        out.append(
            f"- {mode}, {f.n} questions: the first attempt ran without error but answered "
            f"wrong on {_share(f.ran_wrong, f.n)} (nothing for the loop to see); it failed on "
            f"{_share(failed['questions'], f.n)}, of which self-correction fixed "
            f"{failed['fixed by correction']}, the fallback {failed['fixed by the fallback']}, "
            f"and {failed['not fixed']} stayed wrong; {f.made_worse} right at first were wrong "
            f"in the end; {f.warned} answered with warnings ({f.warned_wrong} of them wrong)."
            + (
                " Wrong answers by why the run stopped: "
                + ", ".join(f"{why} {k}" for why, k in f.wrong_stops.most_common())
                + "."
                if f.wrong_stops
                else ""
            )
        )
    return out


# --------------------------------------------------------------------------- the chart

_COLOURS = ("#9bb7d4", "#3d7ab8", "#1d3f66")


def chart_svg(evaluation: Evaluation) -> str:
    """Grouped bars: per mode, the three accuracies with their 95% intervals."""
    modes = list(evaluation.runs)
    figs = {m: figures(evaluation.runs[m].records) for m in modes}
    bar, gap, group_gap = 34, 6, 40
    left, top, height = 56, 40, 240
    group = 3 * bar + 2 * gap
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
