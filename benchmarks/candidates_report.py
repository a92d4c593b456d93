"""The vote replayed offline on the candidates :mod:`benchmarks.candidates` kept (no model).

For every stopping rule and budget, each question's candidates are drawn in the order they
were sampled (the greedy answer first) until the agent's own rule
(:func:`cadet_magic.vote.stopping.stop`) says the outcome is clear, and the vote's winner
(:mod:`cadet_magic.vote.tally`) is scored. Per setting: execution accuracy against the greedy
first attempt on the same questions (paired: gained/lost, bootstrap interval, McNemar),
candidates drawn per question (the cost: each is one model call reading a cached prompt), and
how well "the candidates disagree" works as a warning on the answers given (precision: wrong
among the warned; recall: warned among the wrong; false alarms: warned among the right).

Varied prompts instead of sampling: the prompt experiment's variants of the first prompt
(``benchmarks/prompt_tuning/tuning.VARIANT.jsonl``, each a greedy answer) voted on in the same
way, in the experiment's variant order (the product's prompt first).

    .venv/bin/python -m benchmarks.candidates_report [FILE ...] [--variants FOLDER] [--no-write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.peer_runs import read_lines
from benchmarks.report import shown, write_section
from cadet_magic.eval.stats import Gain, gain, wilson
from cadet_magic.vote.stopping import BetaStop, FirstAgree, Rule, stop
from cadet_magic.vote.tally import Ballot, Tally

#: The settings replayed: rules and budgets (candidates at most, the greedy one included).
RULES: tuple[Rule, ...] = (FirstAgree(2), FirstAgree(3), BetaStop(0.8), BetaStop(0.9))
BUDGETS = (3, 5, 7, 9)


@dataclass(frozen=True)
class Outcome:
    """One question's vote: the winner's match (False without a winner), candidates drawn,
    whether a winner exists, and the two warnings (``split``: not all drawn gave the winner;
    ``contested``: another answer competed); the winner's votes; the seconds the candidates
    after the first took."""

    right: bool
    drawn: int
    answered: bool
    split: bool
    contested: bool
    votes: int = 0
    added_seconds: float = 0.0

    def warned(self, how: str) -> bool:
        """Whether the answer warns under the warning ``how`` (:data:`WARNINGS`)."""
        if how == "split":
            return self.split
        if how == "contested":
            return self.contested
        return self.votes / self.drawn <= float(how.removeprefix("share<="))


WARNING_NAMES = {
    "split": "not all agree",
    "contested": "another answer competed",
    "share<=0.5": "winner at most half",
    "share<=0.6": "winner at most 60%",
    "share<=0.75": "winner at most 75%",
}
#: The warnings compared: not all drawn agree, another answer competed, the winner's share of
#: the drawn at most s.
WARNINGS = ("split", "contested", "share<=0.5", "share<=0.6", "share<=0.75")


def replay(records: Sequence[dict], rule: Rule, budget: int) -> Outcome:
    """The vote on ``records`` (each with ``group``: None for a candidate that gave no answer;
    ``match``), drawn in order until ``rule`` stops or ``budget`` is spent."""
    t = Tally()
    for i, rec in enumerate(records[:budget]):
        group = rec.get("group")
        t = t.add(None if group is None else Ballot(i, str(group), ((group,),), extra=rec))
        if stop(rule, t, min(budget, len(records))):
            break
    added = sum(float(r.get("seconds") or 0.0) for r in records[1 : t.drawn])
    w = t.winner
    if w is None:
        return Outcome(False, t.drawn, False, False, False, 0, added)
    right = bool(w.first.extra["match"])
    return Outcome(right, t.drawn, True, t.split, t.contested, w.votes, added)


def question_records(paths: Sequence[Path]) -> list[list[dict]]:
    """Each question's candidate records (questions whose model could not be called left out)."""
    out = []
    for path in paths:
        for line in read_lines(path).values():
            records = line.extra.get("candidates") if line.finished else None
            if records:
                out.append(records)
    return out


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "0/0"


def warning_cells(outcomes: Sequence[Outcome], how: str) -> str:
    """``precision; recall; false alarms`` of one warning over the answers given."""
    given = [o for o in outcomes if o.answered]
    warned = [o for o in given if o.warned(how)]
    wrong = [o for o in given if not o.right]
    right = [o for o in given if o.right]
    hits = sum(not o.right for o in warned)
    low, high = wilson(hits, len(warned))
    return (
        f"{_pct(hits, len(warned))} [{low:.0%}-{high:.0%}]; "
        f"{_pct(sum(o.warned(how) for o in wrong), len(wrong))}; "
        f"{_pct(sum(o.warned(how) for o in right), len(right))}"
    )


def setting_row(questions: list[list[dict]], rule: Rule, budget: int) -> str:
    outcomes = [replay(recs, rule, budget) for recs in questions]
    greedy = [bool(recs[0]["match"]) for recs in questions]
    voted = [o.right for o in outcomes]
    g = gain(greedy, voted, seed=0)
    drawn = [o.drawn for o in outcomes]
    added = statistics.median(o.added_seconds for o in outcomes)
    return (
        f"| {rule}, at most {budget} | {sum(voted)}/{len(voted)} | {g.diff * 100:+.1f} pts "
        f"[{g.low * 100:+.1f}, {g.high * 100:+.1f}]; +{g.gained}/−{g.lost}; p={g.p_value:.3f} | "
        f"{statistics.mean(drawn):.2f} / {statistics.median(drawn):g} / {max(drawn)} | "
        f"{added:.1f} | " + " | ".join(warning_cells(outcomes, how) for how in WARNINGS) + " |"
    )


def vote_table(questions: list[list[dict]], budgets: Sequence[int] = BUDGETS) -> str:
    n = len(questions)
    greedy = sum(bool(r[0]["match"]) for r in questions)
    oracle = sum(any(c["match"] for c in r) for r in questions)
    lines = [
        f"{n} questions; greedy first attempt right on {greedy}; some candidate right on "
        f"{oracle} (the most any vote could reach). Each warning: precision (wrong among the "
        "warned answers, 95% interval); recall (warned among the wrong answers); false alarms "
        "(warned among the right answers).",
        "",
        "| rule, budget | right | against greedy (paired) | drawn: mean / median / max | "
        "added seconds per question, median | "
        + " | ".join(f"warning '{WARNING_NAMES[h]}'" for h in WARNINGS)
        + " |",
        "|" + "---|" * (5 + len(WARNINGS)),
    ]
    longest = max(len(r) for r in questions)
    for rule in RULES:
        for budget in sorted({min(b, longest) for b in budgets}):
            lines.append(setting_row(questions, rule, budget))
    return "\n".join(lines)


#: The added model seconds per question a setting may cost (median): the product's median
#: seconds per question in targeted mode before the vote (5.4 s on the fixed sample), so that
#: with the vote it stays within twice that.
SECONDS_BUDGET = 5.4
#: A tie between two settings' gains: within one question.
TIE_QUESTIONS = 1
#: The share of right answers a warning may fall on (point estimate).
MAX_FALSE_ALARMS = 0.15
#: How many more questions per 100 varied prompts must gain than sampling to be chosen.
VARIED_MARGIN = 3.0


@dataclass(frozen=True)
class Setting:
    """One setting replayed: its rule and budget, the paired gain over the greedy first
    attempt, candidates drawn (mean, median), the added seconds the rules charge (candidates
    drawn beyond the first, median, times a sampled candidate's median seconds) and the
    outcomes."""

    rule: Rule
    budget: int
    gain: Gain
    mean_drawn: float
    added: float
    outcomes: tuple[Outcome, ...]


def settings(questions: list[list[dict]], budgets: Sequence[int] = BUDGETS) -> list[Setting]:
    longest = max(len(r) for r in questions)
    sampled = [c["seconds"] for r in questions for c in r[1:] if c.get("seconds")]
    each = statistics.median(sampled) if sampled else 0.0
    greedy = [bool(recs[0]["match"]) for recs in questions]
    out = []
    for rule in RULES:
        for budget in sorted({min(b, longest) for b in budgets}):
            outcomes = tuple(replay(recs, rule, budget) for recs in questions)
            g = gain(greedy, [o.right for o in outcomes], seed=0)
            drawn = [o.drawn for o in outcomes]
            added = (statistics.median(drawn) - 1) * each
            out.append(Setting(rule, budget, g, statistics.mean(drawn), added, outcomes))
    return out


def warning_choice(outcomes: Sequence[Outcome]) -> tuple[str | None, str]:
    """Rule 3: among :data:`WARNINGS`, the highest recall on wrong answers whose false alarms
    on right answers are at most :data:`MAX_FALSE_ALARMS`; a tie: the higher precision."""
    given = [o for o in outcomes if o.answered]
    wrong = [o for o in given if not o.right]
    right = [o for o in given if o.right]
    best: tuple[float, float, str] | None = None
    lines = []
    for how in WARNINGS:
        warned = [o for o in given if o.warned(how)]
        recall = sum(o.warned(how) for o in wrong) / len(wrong) if wrong else 0.0
        alarms = sum(o.warned(how) for o in right) / len(right) if right else 0.0
        precision = sum(not o.right for o in warned) / len(warned) if warned else 0.0
        ok = alarms <= MAX_FALSE_ALARMS
        lines.append(f"'{WARNING_NAMES[how]}' recall {recall:.0%}, false alarms {alarms:.0%}"
                     f"{'' if ok else ' (too many)'}")  # fmt: skip
        if ok and (best is None or (recall, precision) > best[:2]):
            best = (recall, precision, how)
    return (best[2] if best else None), "; ".join(lines)


def choice(sampled: list[list[dict]], varied: list[list[dict]]) -> str:
    """The vote's settings chosen by the rules written before these figures were read."""
    if not sampled:
        return ""
    rows = settings(sampled)
    within = [s for s in rows if s.added <= SECONDS_BUDGET]
    lines = [
        f"The rules (written before the figures): on the tuning set only ({len(sampled)} "
        "questions here), the default is the setting with the largest paired gain over the "
        f"greedy first attempt whose added seconds (median candidates beyond the first, times "
        f"a sampled candidate's median seconds) stay within {SECONDS_BUDGET} s; a tie (within "
        f"{TIE_QUESTIONS} question) goes to fewer candidates drawn; with no gain whose "
        "interval's lower end is above zero the default stays 1 (no vote)."
    ]
    best = None
    if within:
        top = max(s.gain.gained - s.gain.lost for s in within)
        tied = [s for s in within if s.gain.gained - s.gain.lost >= top - TIE_QUESTIONS]
        best = min(tied, key=lambda s: (s.mean_drawn, -(s.gain.gained - s.gain.lost)))
    if best is None:
        lines.append(f"- No setting stays within {SECONDS_BUDGET} s added: the default stays 1.")
        best = max(rows, key=lambda s: s.gain.diff)
        how, why = warning_choice(best.outcomes)
        lines.append(f"- The warning at the setting gaining most ({best.rule}, at most "
                     f"{best.budget}), for the record: {why}.")  # fmt: skip
    else:
        g = best.gain
        shown_gain = (f"{g.diff * 100:+.1f} pts [{g.low * 100:+.1f}, {g.high * 100:+.1f}], "
                      f"+{g.gained}/−{g.lost}")  # fmt: skip
        where = f"{best.rule}, at most {best.budget}"
        if g.low > 0:
            lines.append(f"- Chosen: {where} ({shown_gain}; {best.mean_drawn:.2f} candidates "
                         f"drawn on average, {best.added:.1f} s added): the default "
                         f"`candidates` is {best.budget}.")  # fmt: skip
        else:
            lines.append(f"- The best setting within the time, {where} ({shown_gain}; "
                         f"{best.added:.1f} s added), has an interval reaching zero or below: "
                         "the default stays 1 (no vote).")  # fmt: skip
        how, why = warning_choice(best.outcomes)
        lines.append(f"- The warning at that setting: {why}: "
                     f"{repr(WARNING_NAMES[how]) if how else 'none qualifies'}.")  # fmt: skip
    if varied and best is not None:
        vrows = [s for s in settings(varied, budgets=(3, len(varied[0])))]
        v = max(vrows, key=lambda s: s.gain.diff)
        margin = (v.gain.diff - best.gain.diff) * 100
        fits = v.added <= SECONDS_BUDGET
        verdict = "chosen instead" if margin >= VARIED_MARGIN and fits else "not chosen"
        lines.append(
            f"- Varied prompts: their best, {v.rule}, at most {v.budget}, gains "
            f"{v.gain.diff * 100:+.1f} pts ({margin:+.1f} per 100 against the sampled setting "
            f"above; {VARIED_MARGIN:g} needed) and adds {v.added:.1f} s (each variant's prompt "
            f"read in full): {verdict}."
        )
    return "\n".join(lines)


def seconds_line(questions: list[list[dict]]) -> str:
    first = [r[0]["seconds"] for r in questions if r[0].get("seconds")]
    more = [c["seconds"] for r in questions for c in r[1:] if c.get("seconds")]
    if not (first and more):
        return ""
    return (
        f"Seconds per model call, median: the greedy first answer {statistics.median(first):.1f}, "
        f"a sampled candidate {statistics.median(more):.1f} (its prompt read from the server's "
        "cache; under whatever load the run had)."
    )


def variant_order(folder: Path) -> list[str]:
    """The variants whose file in ``folder`` answers every question the product's prompt
    answers there: the product's first, then the experiment's order."""
    from benchmarks.candidates import product_variant
    from benchmarks.prompt_tuning import VARIANTS

    product = product_variant()
    names = sorted(
        (n for n in VARIANTS if (folder / f"tuning.{n}.jsonl").is_file()),
        key=lambda n: (
            (VARIANTS[n].representation, VARIANTS[n].place)
            != (product.representation, product.place)
        ),
    )
    if not names:
        return []
    done = [{k for k, v in read_lines(folder / f"tuning.{n}.jsonl").items() if v.finished}
            for n in names]  # fmt: skip
    return [n for n, keys in zip(names, done, strict=True) if keys >= done[0]]


def variant_questions(folder: Path) -> list[list[dict]]:
    """The prompt experiment's variants as candidates of each question (its variant order, the
    product's prompt first), grouped by result after running each SQL again."""
    from benchmarks.candidates import grouped
    from benchmarks.eval_signs import places
    from benchmarks.peer_runs import QUERY_TIMEOUT, Databases
    from cadet_magic.eval.rows import run_rows

    lines = [read_lines(folder / f"tuning.{name}.jsonl") for name in variant_order(folder)]
    if len(lines) < 2:
        return []
    keys = [k for k in lines[0] if all(k in d for d in lines)]
    dbs = Databases(places([type("A", (), {"db_id": k[0]})() for k in keys]))  # type: ignore[misc]
    out = []
    try:
        for key in keys:
            records = []
            for d in lines:
                line = d[key]
                rows = None
                if line.ran and line.sql and key[0] in dbs.places:
                    try:
                        rows = run_rows(dbs.get(key[0]), line.sql, QUERY_TIMEOUT)
                    except Exception:  # noqa: BLE001 - nothing to compare
                        rows = None
                records.append({"sql": line.sql, "match": line.match, "rows": rows,
                                "seconds": line.seconds})  # fmt: skip
            out.append(grouped(records))
    finally:
        dbs.close()
    return out


def report(paths: Sequence[Path], variants: Path | None) -> str:
    parts = []
    questions = question_records(paths)
    if questions:
        parts += [
            f"Sampled candidates: {', '.join(shown(p) for p in paths)}; the same model and "
            "server as the prompt experiment, the product's first prompt, temperature 0.7, "
            "seeds 1-4 (a run stopped early holds a seeded random part of the tuning set: "
            "`--shuffle SEED --chunk K`, whole chunks kept).",
            vote_table(questions),
            seconds_line(questions),
        ]
    varied = variant_questions(variants) if variants is not None else []
    parts.append(choice(questions, varied))
    if varied:
        budget = len(varied[0])
        parts += [
            f"Varied prompts instead (each variant a greedy answer; {shown(variants)}: "
            f"{', '.join(variant_order(variants))}, drawn in that order); every variant's "
            "prompt is read in full by the server (no shared prefix):",
            vote_table(varied, budgets=(3, budget)),
        ]
    return "\n\n".join(p for p in parts if p)


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.candidates import OUT_DIR
    from benchmarks.prompt_tuning import OUT_DIR as VARIANTS_DIR

    p = argparse.ArgumentParser(prog="python -m benchmarks.candidates_report")
    p.add_argument("files", nargs="*", type=Path, help="candidates files")
    p.add_argument("--variants", type=Path, default=VARIANTS_DIR, help="prompt experiment")
    p.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    args = p.parse_args(argv)
    files = args.files or sorted(OUT_DIR.glob("*.jsonl"))
    body = report(files, args.variants)
    print(body)
    if body and not args.no_write:
        write_section(
            "candidates",
            "Candidates and the execution vote, replayed on the tuning set",
            body,
            packages=("sqlglot", "llama_cpp_python"),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
