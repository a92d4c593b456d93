"""``python -m benchmarks.readings``: readings instead of a silent pick, scored on the fixed Spider
sample without a model.

The reference run of the shipped defaults (``benchmarks/eval/reference/``, the real local
model) recorded every candidate the vote drew. :mod:`benchmarks.replay` answers the product's
requests with those recorded replies (candidate ``k`` with recorded candidate ``k``), so the
product's code as it is now runs the same questions on the same candidates, with readings on
(the default), and no model is called. Each results line then records ``asks`` and the
``readings`` (each one's SQL, votes, summary and whether its result is the gold query's), and
the question is scored twice (:mod:`cadet_magic.eval.figures`): the leading reading as the
answer ("right without choosing") and the reading matching the gold query as a user who knows
what was meant would choose it ("right after choosing").

When the answer asks is the vote's own stop rule (``BetaStop(0.8)``, chosen on the tuning
questions for the vote's warning before readings existed): no threshold of the readings was
chosen, on the fixed sample or elsewhere, so the tuning questions are not needed here.

The replay's results carry no timings of the real model: the median seconds per question is
not measured by it. What readings add to a question is no model call and no query: the
summaries' derivation from the syntax trees, timed here on the readings the replay gave.

Use::

    python -m benchmarks.readings                    # replay (a few minutes), page and rows
    python -m benchmarks.readings --replayed DIR     # from a replay folder written before
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from benchmarks.replay import replay
from benchmarks.report import Row, Stamp, commit, row, table, write_history, write_page
from benchmarks.sample import REFERENCE, spider_dir
from cadet_magic.eval.figures import Figures, asks, figures, right_after_choosing, silent_wrong

COMMAND = "python -m benchmarks.readings"
MODE = "targeted"
#: The goals on the fixed sample (shares of all questions, of the right answers).
SILENT_GOAL = 0.06
WITHOUT_GOAL = 0.70
AFTER_GOAL = 0.75
ASKS_GOAL = 0.15
FLAGGED_GOAL = 0.10


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def replayed(out: Path, data: Path, limit: int | None) -> Path:
    """Replays the reference run's targeted mode into ``out`` (its results file)."""
    replay(out, data, modes=(MODE,), limit=limit)
    return out / f"results.{MODE}.jsonl"


def share(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.1%})" if n else "–"


def derivation_ms(records: Sequence[dict]) -> list[float]:
    """Milliseconds the summaries of each asking question take to derive (the readings' cost)."""
    from cadet_magic.sql.dialect import dialect_of
    from cadet_magic.vote.readings import summaries

    out = []
    for r in records:
        if not asks(r):
            continue
        sqls = [x["sql"] for x in r["readings"]]
        t0 = time.perf_counter()
        summaries(sqls, dialect_of("sqlite"))
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _cut(text: str, width: int = 70) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def body(now: Figures, before: Figures, records: Sequence[dict], ms: list[float], same: int) -> str:
    """The detail page's text."""
    n = now.n
    asked = [r for r in records if asks(r)]
    lead_right = sum(1 for r in asked if r.get("final_match"))
    other_right = sum(1 for r in asked if not r.get("final_match") and right_after_choosing(r))
    none_right = len(asked) - lead_right - other_right
    unanimous_silent = sum(
        1
        for r in records
        if silent_wrong(r)
        and (r.get("agreement") or [0, 1])[0] == (r.get("agreement") or [0, 1])[1]
    )
    lines = [
        "Readings instead of a silent pick, scored on the fixed 300-question Spider sample: the "
        "reference run's recorded candidates replayed through the product's code at commit "
        f"{commit()} with readings on (`benchmarks.replay`: candidate k is answered with the "
        "recorded candidate k; no model is called). A question asks when the vote's answer has "
        "no clear lead by the vote's own stop rule (BetaStop 0.8, chosen for the vote's warning "
        "before readings existed): no threshold was chosen for readings, on these questions or "
        "on the tuning ones.",
        "",
        f"The replay reproduces the recorded run: {same} of {n} final answers are the recorded "
        f"run's SQL, {now.final.k} right against the recorded {before.final.k}.",
        "",
        table(
            ["figure", "reference run (no readings)", "replayed with readings", "goal", "met"],
            [
                [
                    "wrong answers with neither a warning nor a question, of all",
                    share(before.silent_wrong, before.n),
                    share(now.silent_wrong, n),
                    f"≤ {SILENT_GOAL:.0%}",
                    _met(now.silent_wrong <= SILENT_GOAL * n),
                ],
                [
                    "right without choosing (the leading reading)",
                    share(before.final.k, before.n),
                    share(now.final.k, n),
                    f"≥ {WITHOUT_GOAL:.0%}",
                    _met(now.final.k >= WITHOUT_GOAL * n),
                ],
                [
                    "right after choosing (the reading matching the gold)",
                    share(before.final.k, before.n),
                    share(now.after_choosing.k, n),
                    f"≥ {AFTER_GOAL:.0%}",
                    _met(now.after_choosing.k >= AFTER_GOAL * n),
                ],
                [
                    "questions that ask",
                    "0",
                    share(now.asked, n),
                    f"≤ {ASKS_GOAL:.0%}",
                    _met(now.asked <= ASKS_GOAL * n),
                ],
                [
                    "right answers that warn or ask",
                    share(before.right_flagged, before.final.k),
                    share(now.right_flagged, now.final.k),
                    f"≤ {FLAGGED_GOAL:.0%}",
                    _met(now.right_flagged <= FLAGGED_GOAL * max(now.final.k, 1)),
                ],
            ],
        ),
        "",
        f"Intervals (95% Wilson): right without choosing {now.final.text()}; right after "
        f"choosing {now.after_choosing.text()}.",
        "",
        "## The questions that ask",
        "",
        f"{len(asked)} questions ask. The leading reading is the gold query's on {lead_right}, "
        f"another reading on {other_right} (the user's choice makes them right), none on "
        f"{none_right}. Each reading's summary, its votes and whether it matches the gold query:",
        "",
        table(
            ["question", "readings (votes, matches the gold: ✓)"],
            [
                [
                    _cut(r["question"], 60),
                    "; ".join(
                        f"{_cut(x.get('summary') or '', 40)} ({x['votes']}{', ✓' if x['match'] else ''})"
                        for x in r["readings"]
                    ),
                ]
                for r in asked
            ],
        ),
        "",
        _summary_words(asked),
        "",
        "## Where a goal is not met, and why",
        "",
        _why(now, n, unanimous_silent, records),
        "",
        "## Cost",
        "",
        "Readings add no model call and no query: the readings' rows are the candidates' own. "
        "Deriving the summaries from the syntax trees took "
        + (
            f"{statistics.median(ms):.1f} ms at the median and {max(ms):.1f} ms at most per asking "
            f"question ({len(ms)} questions; load average {Stamp.now().load})"
            if ms
            else "no time (no question asked)"
        )
        + ". The median seconds per question (goal: at most 1.2x the reference run's) needs the "
        "real model and is not measured by a replay.",
        "",
        f"Reproduce: `{COMMAND}` (about {max(1, n // 100)} minute(s) on 2 idle cores; the data "
        "from `CADET_DATA`).",
    ]
    return "\n".join(lines)


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _summary_words(asked: Sequence[dict]) -> str:
    """How often each aspect names a reading (the first word of each part of its summary)."""
    counts: Counter = Counter()
    for r in asked:
        for x in r["readings"]:
            for part in (x.get("summary") or "").split("; "):
                counts[" ".join(part.split()[:1])] += 1
    if not counts:
        return ""
    named = ", ".join(f"{word!r} {k}" for word, k in counts.most_common())
    return f"What the summaries name (the first word of each part, over every reading): {named}."


def _why(now: Figures, n: int, unanimous_silent: int, records: Sequence[dict]) -> str:
    parts = []
    if now.silent_wrong > SILENT_GOAL * n:
        parts.append(
            f"Silent wrong answers: {now.silent_wrong} of {n} remain, {unanimous_silent} of them "
            "from a unanimous vote, where no candidate read the question another way: readings "
            "cannot reach them. The issue's other points (grounding the question's words and "
            "values, a decomposed candidate for questions combining two sets, a reading check by "
            "the model, candidates from a varied prompt) are what could, and need real-model runs."
        )
    if now.final.k < WITHOUT_GOAL * n:
        parts.append(
            "Right without choosing: readings do not change which answer is shown (the leading "
            "reading is the vote's answer), so this is the reference run's accuracy; raising it "
            "needs better candidates (the same points, measured with the real model)."
        )
    if now.after_choosing.k < AFTER_GOAL * n:
        parts.append(
            "Right after choosing: only questions whose candidates disagree without a clear lead "
            "ask, and a choice helps only where one candidate had the right answer."
        )
    if now.asked > ASKS_GOAL * n:
        parts.append("Questions that ask: more than the goal.")
    if now.right_flagged > FLAGGED_GOAL * max(now.final.k, 1):
        right = [r for r in records if r.get("final_match")]
        asking = sum(1 for r in right if asks(r))
        unwarned = sum(1 for r in right if asks(r) and not r.get("warnings"))
        parts.append(
            f"Right answers that warn or ask: {now.right_flagged} of {len(right)}; {asking} of "
            f"them ask, {unwarned} of those without a warning already (a question is asked only "
            "where the vote warns: no clear lead). The rest are the result check's and the "
            "vote's warnings, which readings leave as they were."
        )
    return "\n\n".join(parts) or "Every goal is met."


def rows(now: Figures, stamp: Stamp) -> list[Row]:
    n = now.n
    return [
        row(
            "Spider dev, readings on (the reference run replayed): wrong answers with neither a "
            "warning nor a question",
            share(now.silent_wrong, n),
            f"≤ {SILENT_GOAL:.0%} of all",
            now.silent_wrong <= SILENT_GOAL * n,
            COMMAND,
            stamp,
        ),
        row(
            "Spider dev, readings on: right without choosing / right after choosing",
            f"{now.final.k / n:.1%} / {now.after_choosing.k / n:.1%}",
            f"≥ {WITHOUT_GOAL:.0%} / ≥ {AFTER_GOAL:.0%}",
            now.final.k >= WITHOUT_GOAL * n and now.after_choosing.k >= AFTER_GOAL * n,
            COMMAND,
            stamp,
        ),
        row(
            "Spider dev, readings on: questions that ask which reading was meant",
            share(now.asked, n),
            f"≤ {ASKS_GOAL:.0%}",
            now.asked <= ASKS_GOAL * n,
            COMMAND,
            stamp,
        ),
        row(
            "Spider dev, readings on: right answers that warn or ask",
            share(now.right_flagged, now.final.k),
            f"≤ {FLAGGED_GOAL:.0%}",
            now.right_flagged <= FLAGGED_GOAL * max(now.final.k, 1),
            COMMAND,
            stamp,
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, help="Spider dev's folder (default $CADET_DATA/spider-dev)")
    p.add_argument("--out", type=Path, help="the replay's folder (default: a temporary one)")
    p.add_argument("--replayed", type=Path, help="a replay folder written before: no replay")
    p.add_argument("--limit", type=int, help="only the first K questions (a trial)")
    args = p.parse_args(argv)
    stamp = Stamp.now()
    if args.replayed is not None:
        results = args.replayed / f"results.{MODE}.jsonl"
    else:
        data = args.data or spider_dir()
        out = args.out or Path(tempfile.mkdtemp(prefix="cadet-readings-"))
        results = replayed(out, data, args.limit)
    records = read_lines(results)
    recorded = read_lines(REFERENCE / f"spider.{MODE}.jsonl")
    keys = {(r["db_id"], r["question"], r["gold"]) for r in records}
    before_records = [r for r in recorded if (r["db_id"], r["question"], r["gold"]) in keys]
    by_question = {r["question"]: r for r in before_records}
    same = sum(
        1
        for r in records
        if by_question.get(r["question"], {}).get("final_sql") == r.get("final_sql")
    )
    now, before = figures(records), figures(before_records)
    text = body(now, before, records, derivation_ms(records), same)
    if args.limit:
        print(text)  # a trial: no page, no rows
        return 0
    comparison = text.split("\n\n## The questions that ask")[0]
    write_history(
        "readings",
        "Readings instead of a silent pick: before and after, on the fixed Spider sample",
        comparison + "\n\nThe page: [readings](benchmarks/readings.md).",
        ["sqlglot"],
    )
    write_page(
        "readings",
        "Readings instead of a silent pick (Spider dev, the reference run replayed)",
        text,
        rows(now, stamp),
        ["sqlglot"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
