"""The evaluation's summary in Markdown (printed, and written with ``--report``): the settings,
the accuracy table, the gains, where answers are lost, the categories and the costs, from the
figures :mod:`cadet_magic.eval.figures` counts; the SVG chart is :mod:`cadet_magic.eval.chart`'s.

Example:
    >>> from cadet_magic.eval.significance import gain
    >>> gain_text(gain([False, True], [True, True]))[:9]
    '+50.0 pts'
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cadet_magic.eval.chart import chart_svg, write_chart  # noqa: F401 - importable here
from cadet_magic.eval.figures import (  # noqa: F401 - the figures stay importable here
    LEVELS,
    RAN_WRONG,
    Accuracy,
    Figures,
    corrected,
    figures,
    paired,
    valid,
)
from cadet_magic.eval.significance import Gain

if TYPE_CHECKING:
    from cadet_magic.eval.evaluation import Evaluation


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


def data_label(
    path: str | os.PathLike, base: str | os.PathLike | None = None, data_root: str | None = None
) -> str:
    """How a report names its data: relative to the folder named by ``CADET_DATA`` (or
    ``data_root``) when the data lies there, written ``$CADET_DATA/...``; else relative to
    ``base`` (default: the current folder, unless that is the file system's root) when it lies
    below it; else the data folder's own name and the file. Never a path of the machine that
    ran the report, which would mean nothing to its reader (and would tell them about that
    machine).

    Example:
        >>> data_label("/srv/sets/spider-dev/dev.json", base="/home/me", data_root="/srv/sets")
        '$CADET_DATA/spider-dev/dev.json'
        >>> data_label("/home/me/runs/bird/dev.json", base="/home/me", data_root="")
        'runs/bird/dev.json'
        >>> data_label("/srv/elsewhere/spider-dev/dev.json", base="/home/me", data_root="")
        'spider-dev/dev.json'
    """
    where = Path(os.path.abspath(path))
    root = os.environ.get("CADET_DATA", "") if data_root is None else data_root
    if root and where.is_relative_to(os.path.abspath(root)):
        return "$CADET_DATA/" + where.relative_to(os.path.abspath(root)).as_posix()
    home = Path(os.path.abspath(base if base is not None else os.getcwd()))
    if home != Path(home.anchor) and where.is_relative_to(home):
        return where.relative_to(home).as_posix()
    return "/".join(where.parts[-2:])


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
        f"Model `{evaluation.model}`{scripted}, temperature {temp}; data `{data_label(evaluation.data)}`, "
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
    row("gain of the vote", lambda f: gain_text(f.vote_gain))
    row("gain of the fallback", lambda f: gain_text(f.fallback_gain))
    row("first attempt ran but was wrong (nothing to correct)", lambda f: f.ran_wrong)
    row("right at first, wrong in the end (made worse)", lambda f: f.made_worse)
    row("answered", lambda f: f.answered)
    row("answered with warnings (of those wrong)", lambda f: f"{f.warned} ({f.warned_wrong})")
    row("wrong answers with a warning", lambda f: share_text(f.warned_wrong, f.answered_wrong))
    row(
        "right answers with a warning",
        lambda f: share_text(f.warned - f.warned_wrong, f.answered - f.answered_wrong),
    )
    row("questions that ask which reading was meant", lambda f: share_text(f.asked, f.n))
    row("right without choosing (the leading reading)", lambda f: f.final.text())
    row("right after choosing (the reading matching the gold)", lambda f: f.after_choosing.text())
    row(
        "wrong answers with neither a warning nor a question, of all",
        lambda f: share_text(f.silent_wrong, f.n),
    )
    row(
        "right answers that warn or ask",
        lambda f: share_text(f.right_flagged, f.final.k),
    )
    row(
        "candidates disagreed, of the answers voted on (of those wrong)",
        lambda f: f"{f.uncertain} of {f.voted_on} ({f.uncertain_wrong})" if f.voted_on else "–",
    )
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
                ["", "after self-correction", "after the vote", "with the fallback"],
                [
                    [
                        f"{a} − {b}",
                        gain_text(paired(runs[a].records, runs[b].records, "corrected")),
                        gain_text(paired(runs[a].records, runs[b].records, "voted")),
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
            "them: fixed by self-correction / fixed by the vote / fixed by the fallback / not "
            "fixed, of all:",
            "",
        ]

        def cell(f: Figures, kind: str) -> str:
            c = f.by_category.get(kind)
            if not c:
                return "–"
            return (
                f"{c['fixed by correction']} / {c['fixed by the vote']} / "
                f"{c['fixed by the fallback']} / {c['not fixed']} of {c['questions']}"
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


def share_text(k: int, n: int) -> str:
    """E.g. ``18 of 82: 22.0% [14.4–32.0]``, with the 95% Wilson interval.

    Example:
        >>> share_text(1, 4)
        '1 of 4: 25.0% [4.6–69.9]'
    """
    if not n:
        return "–"
    lo, hi = Accuracy(k, n).interval
    return f"{k} of {n}: {100 * k / n:.1f}% [{100 * lo:.1f}–{100 * hi:.1f}]"


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
        - targeted, 3 questions: the first attempt ran without error but answered wrong on 1 of 3 (33%) (nothing for the loop to see); it failed on 1 of 3 (33%), of which self-correction fixed 1, the vote 0, the fallback 0, and 0 stayed wrong; 0 right at first were wrong in the end; 0 answered with warnings (0 of them wrong).
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
            f"{failed['fixed by correction']}, the vote {failed['fixed by the vote']}, the "
            f"fallback {failed['fixed by the fallback']}, "
            f"and {failed['not fixed']} stayed wrong; {f.made_worse} right at first were wrong "
            f"in the end; {f.warned} answered with warnings ({f.warned_wrong} of them wrong)."
            + (
                " Wrong answers by why the run stopped: "
                + ", ".join(f"{why} {k}" for why, k in f.wrong_stops.most_common())
                + "."
                if f.wrong_stops
                else ""
            )
            + (
                f" The fallback, on the {sum(f.fallback_ends.values())} questions whose line "
                "records its attempts, ended: "
                + ", ".join(f"{end} {k}" for end, k in f.fallback_ends.most_common())
                + "."
                if f.fallback_ends
                else ""
            )
        )
    return out
