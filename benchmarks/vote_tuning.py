"""``python -m benchmarks.vote_tuning``: three changes to the vote chosen on the tuning
questions, before the fixed sample measures them (no model is called).

The runs (``python -m benchmarks.eval --set tuning``, targeted mode, the product's default
candidates, the whole pipeline: first attempt, corrections, the vote) are in two folders:
``first``, the candidates answering the SQL phase's first prompt again, and ``answer``, the
candidates answering the prompt that gave the SQL phase's answer (after a correction, the
conversation that led to it). On each, the warning under test is computed from the lines:
:func:`unconfirmed_correction`, an answer the SQL phase found only after a correction that no
other candidate gave (every other candidate gave no answer: the vote's own warning stays
silent then). The ``answer`` run's change (each candidate sampled from the prompt of the
attempt that gave the answer: the first prompt and the attempts before that one, as a
correction's prompt holds them) was run from a branch; not chosen, it is not in the product,
and its folder keeps the lines it gave.

The rule, written before the figures were read:

- the candidates answer the answer's prompt if, on the questions both runs hold, its final
  answers are right at least as often as with the first prompt (paired difference at least 0);
- the warning is shown if, on the chosen run, it fires on at least :data:`MIN_FIRES` answers,
  at least :data:`MIN_PRECISION` of them are wrong and the lower end of that share's interval
  is above the share of wrong answers among all answers given (the rule the result's shape
  signs pass, ``benchmarks.eval_signs``).

The third change, with its rule: an answer another answer competed with, whose lead over it is
clear by the vote's own stop rule (``vote_phase.RULE``: the leading answer ahead of the
runner-up with a probability at least its threshold; 3 candidates to 1 is clear, 3 to 2 is
not), shows its agreement and the competing answers without the disagreement warning, unless
those warnings pass the warning's test above on all 200 tuning questions (run ``clear``: the
whole pipeline with the product that drops them, whose lines keep the competing answers' votes,
so both ways can be counted from them); :func:`clear_lead`. This rule was written after reading
the first 120 tuning questions' warnings by agreement (the answers 3 of 4 candidates gave: 10,
4 of them wrong), before questions 121-200 were run.

    .venv/bin/python -m benchmarks.vote_tuning [--first DIR] [--answer DIR] [--clear DIR]
        [--no-write]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.eval_change import results
from benchmarks.report import shown, write_section
from benchmarks.vote_report import gain_text, paired, share
from cadet_magic.agent.vote_phase import RULE
from cadet_magic.eval.stats import gain, wilson
from cadet_magic.vote.stopping import BetaStop, leads

HERE = Path(__file__).resolve().parent
TUNING_DIR = HERE / "eval" / "tuning-38"
#: The rule (see the module's text).
MIN_FIRES = 5
MIN_PRECISION = 0.5
#: Tuning questions whose warnings were read before the clear-lead rule was written.
SEEN = 120
#: A warning under test: whether it fires on a results line.
Sign = Callable[[dict], bool]


def given(rec: dict) -> bool:
    return rec.get("final_sql") is not None and rec.get("final_match") is not None


def unconfirmed_correction(rec: dict) -> bool:
    """Whether the answer needed a correction (the SQL phase made more than one attempt) and
    no other candidate gave it, every other one giving none.

    Example:
        >>> line = {"final_sql": "S", "final_match": False, "fallback": False,
        ...         "attempts": [{"outcome": "error"}, {"outcome": "ok"}],
        ...         "agreement": [1, 3], "candidates": [{"outcome": "error"}] * 2}
        >>> unconfirmed_correction(line), unconfirmed_correction({**line, "attempts": [{}]})
        (True, False)
    """
    agreement = rec.get("agreement")
    return (
        given(rec)
        and not rec.get("fallback")
        and len(rec.get("attempts") or ()) > 1
        and bool(agreement)
        and agreement[0] == 1
        and agreement[1] >= 2
        and not any(c.get("outcome") == "ok" for c in rec.get("candidates") or ())
    )


def clear_lead(rec: dict) -> bool:
    """Whether another answer competed with the answer and the answer's lead over it is clear
    by the vote's stop rule (the product then gives no disagreement warning).

    Example:
        >>> line = {"final_sql": "S", "final_match": True, "agreement": [3, 4],
        ...         "competing_votes": [1]}
        >>> clear_lead(line), clear_lead({**line, "agreement": [3, 5], "competing_votes": [2]})
        (True, False)
    """
    agreement, others = rec.get("agreement"), rec.get("competing_votes") or []
    if not (given(rec) and agreement and others and isinstance(RULE, BetaStop)):
        return False
    return leads(agreement[0], max(others)) >= RULE.threshold


def warned_share(
    recs: Sequence[dict], right: bool, with_sign: bool, sign: Sign | None = None
) -> str:
    sign = sign or unconfirmed_correction
    answers = [r for r in recs if given(r) and bool(r["final_match"]) == right]
    k = sum(1 for r in answers if r.get("warnings") or (with_sign and sign(r)))
    return share(k, len(answers))


def sign_verdict(recs: Sequence[dict], sign: Sign | None = None) -> tuple[bool, str]:
    """Whether the warning ``sign`` (:func:`unconfirmed_correction` by default) pays on
    ``recs`` under the rule, and why (one line)."""
    sign = sign or unconfirmed_correction
    answers = [r for r in recs if given(r)]
    fired = [r for r in answers if sign(r)]
    wrong = sum(not r["final_match"] for r in fired)
    base = sum(not r["final_match"] for r in answers) / len(answers) if answers else 1.0
    if len(fired) < MIN_FIRES:
        return False, f"fires on {len(fired)} answers (< {MIN_FIRES})"
    precision, (low, _) = wrong / len(fired), wilson(wrong, len(fired))
    checks = [
        (precision >= MIN_PRECISION, f"{wrong} of the {len(fired)} it fires on wrong "
         f"({precision:.0%}, >= {MIN_PRECISION:.0%})"),
        (low > base, f"the interval's lower end {low:.1%} (> {base:.1%} wrong among all answers)"),
    ]  # fmt: skip
    ok = all(passed for passed, _ in checks)
    whys = [why for passed, why in checks if ok or not passed]
    return ok, ("" if ok else "fails: ") + "; ".join(whys)


def report(first: Path, answer: Path) -> str:
    ff, aa = paired(first, answer, "targeted")
    if not ff:
        return "No tuning question in both runs yet."
    g = gain([bool(r["final_match"]) for r in ff], [bool(r["final_match"]) for r in aa])
    right = [sum(bool(r["final_match"]) for r in s) for s in (ff, aa)]
    rows = [
        ("final answer right", *(share(k, len(ff)) for k in right)),
        ("wrong answers with a warning", *(warned_share(s, False, False) for s in (ff, aa))),
        ("right answers with a warning", *(warned_share(s, True, False) for s in (ff, aa))),
        ("answers the warning under test fires on", *(str(sum(map(unconfirmed_correction, s))) for s in (ff, aa))),
        ("wrong answers warned, with it", *(warned_share(s, False, True) for s in (ff, aa))),
        ("right answers warned, with it", *(warned_share(s, True, True) for s in (ff, aa))),
        ("candidates drawn beside the answer (mean)", *(f"{sum(len(r.get('candidates') or ()) for r in s) / len(s):.2f}" for s in (ff, aa))),
    ]  # fmt: skip
    use_answer = g.diff >= 0
    source = "the answer's prompt" if use_answer else "the first prompt"
    chosen = aa if use_answer else ff
    ok, why = sign_verdict(chosen)
    return "\n".join(
        [
            f"Tuning questions in both runs: {len(ff)} (`{shown(first)}`: candidates answer the "
            f"first prompt; `{shown(answer)}`: the answer's prompt); targeted mode, the "
            "product's default candidates, the real local model.",
            "",
            "| | first prompt | answer's prompt |",
            "|---|---|---|",
            *(f"| {a} | {b} | {c} |" for a, b, c in rows),
            "",
            f"The answer's prompt against the first (final answer): {gain_text(g)}.",
            "",
            "Under the rule written before these figures (`benchmarks/vote_tuning.py`):",
            f"- candidates answer {source} "
            f"(paired difference {100 * g.diff:+.1f} pts, {'>=' if use_answer else '<'} 0);",
            f"- the warning on an answer found after a correction that no other candidate gave "
            f"is {'shown' if ok else 'not shown'}: {why}.",
        ]
    )


def clear_report(clear: Path) -> str:
    """The third change: the disagreement warning on a clear lead, counted both ways."""
    recs = [r for r in results(clear, "targeted").values() if r.get("final_match") is not None]
    if not recs:
        return f"The run `{shown(clear)}` has no line yet."
    answers = [r for r in recs if given(r)]
    fired = [r for r in answers if clear_lead(r)]
    by_share: dict[str, list[int]] = {}
    for r in fired:
        key = f"{r['agreement'][0]} of {r['agreement'][1]}"
        by_share.setdefault(key, [0, 0])[0 if r["final_match"] else 1] += 1
    ok, why = sign_verdict(recs, clear_lead)
    rows = [
        ("answers a clear lead gave, another answer competing", str(len(fired))),
        *((f"of them, {k} candidates (right, wrong)", f"{a}, {b}") for k, (a, b) in sorted(by_share.items())),
        ("wrong answers warned, without the warning on a clear lead", warned_share(recs, False, False)),
        ("right answers warned, without it", warned_share(recs, True, False)),
        ("wrong answers warned, with it", warned_share(recs, False, True, clear_lead)),
        ("right answers warned, with it", warned_share(recs, True, True, clear_lead)),
    ]  # fmt: skip
    return "\n".join(
        [
            f"The disagreement warning on a clear lead (`{shown(clear)}`: {len(recs)} tuning "
            "questions, targeted mode, the whole pipeline with the product that drops it; "
            f"the lead is clear by the vote's stop rule, {RULE}):",
            "",
            "| | tuning questions |",
            "|---|---|",
            *(f"| {a} | {b} |" for a, b in rows),
            "",
            f"Under the rule written before questions 121-200 were run: the warning on a clear "
            f"lead is {'kept' if ok else 'dropped'}: {why}.",
            "",
            f"Where it fired: {split(recs[:SEEN])} on questions 1-{SEEN} (whose warnings by "
            f"agreement were read before the rule was written), {split(recs[SEEN:])} on "
            f"questions {SEEN + 1}-{len(recs)}.",
        ]
    )


def split(recs: Sequence[dict]) -> str:
    fired = [r for r in recs if clear_lead(r)]
    return f"{len(fired)} answers ({sum(not r['final_match'] for r in fired)} wrong)"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.vote_tuning")
    p.add_argument("--first", type=Path, default=TUNING_DIR / "first")
    p.add_argument("--answer", type=Path, default=TUNING_DIR / "answer")
    p.add_argument("--clear", type=Path, default=TUNING_DIR / "clear")
    p.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    args = p.parse_args(argv)
    body = report(args.first, args.answer) + "\n\n" + clear_report(args.clear)
    print(body)
    if not args.no_write:
        write_section(
            "vote_tuning",
            "The vote's candidates and warnings, chosen on the tuning questions",
            body,
            packages=("llama_cpp_python", "sqlglot"),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
