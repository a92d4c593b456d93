"""``python -m benchmarks.vote_report``: the vote measured before and after on the fixed Spider
sample, in the three feedback modes, with the peers beside it (no model is called).

BEFORE and AFTER are results folders of ``python -m benchmarks.eval`` on the same questions,
seed and model: BEFORE without the vote (``--candidates 1``), AFTER with the product's default.
Per mode, on the questions both sides ran: the final answer's execution accuracy and the paired
gain of after over before (bootstrap interval, McNemar), the answers given that were wrong and
right and the shares of each that carry a warning, calls and seconds per question. Then the
peers of ``python -m benchmarks.peers`` against the answers after, and the goals, each met or
not:

- at least half of the answers that ran and were wrong carry a warning, at most 15% of the
  right ones (after, targeted mode);
- the final answers (targeted) at least 3 points above before, the paired interval excluding
  zero;
- the median seconds per question at most twice before's (measured side by side without the
  reply store by :mod:`benchmarks.vote_seconds` where it ran, ``--seconds``).

    .venv/bin/python -m benchmarks.vote_report --before benchmarks/eval/before-38 \\
        --after benchmarks/eval [--no-write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.eval_change import MODES, results
from benchmarks.report import shown, write_section
from cadet_magic.eval.figures import corrected, voted
from cadet_magic.eval.stats import Gain, gain, wilson

HERE = Path(__file__).resolve().parent
#: The goals (issue 38).
WARN_WRONG, WARN_RIGHT, GAIN_POINTS, SLOWER = 0.5, 0.15, 0.03, 2.0


def share(k: int, n: int) -> str:
    if not n:
        return "-"
    lo, hi = wilson(k, n)
    return f"{k}/{n} ({k / n:.0%}, {lo:.0%}-{hi:.0%})"


def gain_text(g: Gain) -> str:
    if not g.n:
        return "-"
    return (
        f"{100 * g.diff:+.1f} pts [{100 * g.low:+.1f}, {100 * g.high:+.1f}]; "
        f"+{g.gained}/-{g.lost}; p={g.p_value:.3f}"
    )


def warned(recs: Sequence[dict], right: bool) -> tuple[int, int]:
    """(warned, all) among the answers given that were ``right`` (or wrong)."""
    given = [r for r in recs if r.get("final_sql") is not None and bool(r["final_match"]) == right]
    return sum(1 for r in given if r.get("warnings")), len(given)


def disagreed(rec: dict) -> bool:
    """Whether the candidates drawn did not all give the answer (another answer, or none;
    wider than the vote's warning, which a results line keeps as ``uncertain``)."""
    agreement = rec.get("agreement")
    return bool(agreement) and agreement[0] < agreement[1]


def vote_warned(recs: Sequence[dict], right: bool) -> tuple[int, int]:
    """(warned by the vote, all) among the answers given that were ``right`` (or wrong)."""
    given = [r for r in recs if r.get("final_sql") is not None and bool(r["final_match"]) == right]
    return sum(1 for r in given if disagreed(r)), len(given)


def drawn(recs: Sequence[dict]) -> str:
    """Candidates drawn per question beside the answer (mean)."""
    return f"{sum(len(r.get('candidates') or ()) for r in recs) / len(recs):.2f}"


def vote_seconds(rec: dict) -> float:
    """The model seconds of the candidates the vote drew on one question."""
    return sum(c.get("model_seconds") or 0.0 for c in rec.get("candidates") or ())


def charged(bb: Sequence[dict], aa: Sequence[dict]) -> list[dict]:
    """The lines after with the seconds the product would take: before's seconds (the same
    requests and replies up to the vote; the run after got the replies it shared with before
    from the reply store, at once) plus the model seconds of the vote's candidates."""
    return [
        {**a, "seconds": b["seconds"] + vote_seconds(a)}
        for b, a in zip(bb, aa, strict=True)
        if isinstance(b.get("seconds"), int | float)
    ]


def seconds(recs: Sequence[dict]) -> float | None:
    values = [r["seconds"] for r in recs if isinstance(r.get("seconds"), int | float)]
    return statistics.median(values) if values else None


def paired(before: Path, after: Path, mode: str) -> tuple[list[dict], list[dict]]:
    """The lines of both sides on the questions both ran, in the same order."""
    b, a = results(before, mode), results(after, mode)
    keys = [
        k
        for k in a
        if k in b and b[k].get("final_match") is not None and a[k].get("final_match") is not None
    ]
    return [b[k] for k in keys], [a[k] for k in keys]


def mode_table(before: Path, after: Path, mode: str) -> str:
    bb, aa = paired(before, after, mode)
    if not aa:
        return ""
    g = gain([bool(r["final_match"]) for r in bb], [bool(r["final_match"]) for r in aa])
    rows = [
        ("final answer right", *(share(sum(bool(r["final_match"]) for r in s), len(s)) for s in (bb, aa))),
        ("wrong answers with a warning", *(share(*warned(s, False)) for s in (bb, aa))),
        ("right answers with a warning", *(share(*warned(s, True)) for s in (bb, aa))),
        ("wrong answers not every candidate gave (another answer, or none)", *(share(*vote_warned(s, False)) for s in (bb, aa))),
        ("right answers not every candidate gave", *(share(*vote_warned(s, True)) for s in (bb, aa))),
        ("candidates drawn beside the answer (mean)", *(drawn(s) for s in (bb, aa))),
        ("the fallback ran", *(str(sum(bool(r.get("fallback")) for r in s)) for s in (bb, aa))),
        ("model calls per question (mean)", *(f"{sum(r.get('calls') or 0 for r in s) / len(s):.2f}" for s in (bb, aa))),
        ("seconds per question (median), as measured", *(f"{seconds(s) or 0:.1f}" for s in (bb, aa))),
        ("seconds per question (median): before's plus the vote's candidates", f"{seconds(bb) or 0:.1f}", f"{seconds(charged(bb, aa)) or 0:.1f}"),
    ]  # fmt: skip
    lines = [f"**{mode}** ({len(aa)} questions on both sides)", "", "| | before | after |",
             "|---|---|---|", *(f"| {a} | {b} | {c} |" for a, b, c in rows), "",
             f"Paired gain of after over before (final answer): {gain_text(g)}."]  # fmt: skip
    if any(r.get("sql_match") is not None for r in aa):
        inner = gain([corrected(r) for r in aa], [voted(r) for r in aa])
        lines.append(
            "Within the run after, the same questions and replies: the vote's answer against the "
            f"SQL phase's own answer before it (no fallback): {gain_text(inner)}."
        )
    return "\n".join(lines)


def measured_seconds(folder: Path | None) -> tuple[float, float, int] | None:
    """The median seconds per question without and with the vote as
    :mod:`benchmarks.vote_seconds` measured them (its folders ``one`` and ``vote``, paired on
    the questions both ran), and how many; None when it has not run."""
    if folder is None:
        return None
    one, vote = paired(folder / "one", folder / "vote", "targeted")
    timed = [
        (a["seconds"], b["seconds"])
        for a, b in zip(one, vote, strict=True)
        if isinstance(a.get("seconds"), int | float) and isinstance(b.get("seconds"), int | float)
    ]
    if not timed:
        return None
    return (
        statistics.median(a for a, _ in timed),
        statistics.median(b for _, b in timed),
        len(timed),
    )


def seconds_goal(bb: Sequence[dict], aa: Sequence[dict], folder: Path | None) -> str:
    """The seconds goal: measured side by side without the reply store where
    :mod:`benchmarks.vote_seconds` ran (``folder``), else estimated from the runs."""
    estimate = f"{seconds(bb) or 0.0:.1f} -> {seconds(charged(bb, aa)) or 0.0:.1f} s"
    head = f"- Median seconds per question at most {SLOWER:g} times before's"
    measured = measured_seconds(folder)
    if measured is None:
        sb, sa = seconds(bb) or 0.0, seconds(charged(bb, aa)) or 0.0
        return (
            f"{head} (after: before's seconds on the question plus the vote's candidates'): "
            f"{estimate}: {verdict(sa <= SLOWER * sb)}."
        )
    sb, sa, n = measured
    return (
        f"{head}, measured as a user pays them (`python -m benchmarks.vote_seconds`: the "
        f"first {n} questions of the sample, targeted mode, without and with the vote, side by "
        f"side in one run, no reply shared): {sb:.1f} -> {sa:.1f} s ({sa / sb:.2f}x): "
        f"{verdict(sa <= SLOWER * sb)}. The whole runs' seconds are not the product's: the run "
        f"after took the replies it shared with earlier runs from the reply store, at once "
        f"(before's seconds plus the candidates' model seconds as that run took them: "
        f"{estimate})."
    )


def verdict(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def goals(before: Path, after: Path, seconds_dir: Path | None = None) -> str:
    bb, aa = paired(before, after, "targeted")
    if not aa:
        return "No targeted-mode questions on both sides yet."
    ww, wn = warned(aa, False)
    rw, rn = warned(aa, True)
    g = gain([bool(r["final_match"]) for r in bb], [bool(r["final_match"]) for r in aa])

    return "\n".join(
        [
            f"- At least {WARN_WRONG:.0%} of the answers that ran and were wrong carry a warning: "
            f"{share(ww, wn)}: {verdict(bool(wn) and ww / wn >= WARN_WRONG)}.",
            f"- At most {WARN_RIGHT:.0%} of the right answers do: {share(rw, rn)}: "
            f"{verdict(bool(rn) and rw / rn <= WARN_RIGHT)}.",
            f"- Final answers at least {100 * GAIN_POINTS:.0f} points above before, the paired "
            f"interval excluding zero: {gain_text(g)}: "
            f"{verdict(g.diff >= GAIN_POINTS and g.low > 0)}.",
            seconds_goal(bb, aa, seconds_dir),
        ]
    )


def peers_table(after: Path) -> str:
    """The peers against the answers after (the peers benchmark's own table and goals)."""
    from benchmarks import eval as bench
    from benchmarks.peers import OUT_DIR as PEERS_DIR
    from benchmarks.peers_report import figures

    chosen = bench.questions(bench.N_QUESTIONS, bench.SEED)[1]
    return figures(chosen, PEERS_DIR, eval_dir=after)


def report(
    before: Path,
    after: Path,
    with_peers: bool = True,
    note: str = "",
    seconds_dir: Path | None = None,
) -> str:
    parts = [
        f"Before: `{shown(before)}` (no vote); after: `{shown(after)}` (the product's vote); the "
        "same fixed sample, seed, model and temperature; paired on the questions both sides "
        "ran." + (f" {note}" if note else ""),
        *(t for t in (mode_table(before, after, m) for m in MODES) if t),
        "The goals (targeted mode, after against before):",
        goals(before, after, seconds_dir),
    ]
    if with_peers:
        parts += ["The peers against the answers after:", peers_table(after)]
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.vote_report")
    p.add_argument("--before", type=Path, default=HERE / "eval" / "before-38")
    p.add_argument("--after", type=Path, default=HERE / "eval")
    p.add_argument("--no-peers", action="store_true", help="leave the peers out")
    p.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    p.add_argument("--note", default="", help="a sentence on the runs (how far, under what load)")
    p.add_argument(
        "--seconds",
        type=Path,
        default=HERE / "eval" / "seconds-38",
        help="python -m benchmarks.vote_seconds's folder (the seconds goal measured)",
    )
    args = p.parse_args(argv)
    seconds_dir = args.seconds if (args.seconds / "vote").is_dir() else None
    body = report(
        args.before, args.after, not args.no_peers, note=args.note, seconds_dir=seconds_dir
    )
    print(body)
    if not args.no_write:
        write_section(
            "vote",
            "Candidates and the vote: before and after on the fixed Spider sample, with the peers",
            body,
            packages=("llama_cpp_python", "sqlglot"),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
