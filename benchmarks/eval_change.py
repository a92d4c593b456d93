"""``python -m benchmarks.eval_change BEFORE AFTER``: a change measured on the real model's
Spider answers, before against after, on the questions both results folders hold (no model is
called).

BEFORE and AFTER are results folders of ``python -m benchmarks.eval`` (``spider.MODE.jsonl``;
a folder run in one mode may hold ``spider.jsonl``). Per feedback mode present on both sides,
on the questions both answered (the same questions, same model, seed and temperature 0): the
final and first-attempt execution accuracy with Wilson intervals, the paired gain (bootstrap
interval, McNemar's p), how the runs ended, the categories of the questions still wrong, and
the cost: calls, prompt tokens per model call, seconds per question (median, p90).

    .venv/bin/python -m benchmarks.eval_change benchmarks/eval/reference .cache/eval/change [--write]

``--write`` puts the tables into docs/benchmarks-history.md, in a section of its own per pair
of folders (``eval_change-BEFORE-AFTER``, from the folders' names): a change measured is history.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from benchmarks.report import shown, write_history
from cadet_magic.eval.significance import gain, percentile, wilson

MODES = ("targeted", "raw", "none")


def results(folder: Path, mode: str) -> dict[tuple[str, str], dict]:
    """A folder's lines of one mode by (database, question)."""
    path = folder / f"spider.{mode}.jsonl"
    if not path.is_file() and mode == "targeted":
        path = folder / "spider.jsonl"
    out: dict[tuple[str, str], dict] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            out[(rec["db_id"], rec["question"])] = rec
    return out


def _share(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n} ({k / n:.0%}, {lo:.0%}-{hi:.0%})" if n else "0/0"


def _seconds(recs: Sequence[dict]) -> str:
    vals = [r["seconds"] for r in recs if r.get("seconds") is not None]
    med, p90 = percentile(vals, 50), percentile(vals, 90)
    return f"{med:.0f} / {p90:.0f}" if med is not None and p90 is not None else "-"


def _tokens_per_call(recs: Sequence[dict]) -> str:
    calls = sum(r.get("calls") or 0 for r in recs)
    tokens = sum(r.get("input_tokens") or 0 for r in recs)
    return f"{tokens / calls:.0f}" if calls else "-"


def _retry_tokens(recs: Sequence[dict]) -> str:
    """Prompt tokens of retries (attempts after the first), when the lines list attempts'."""
    vals = [
        a["input_tokens"]
        for r in recs
        for a in r.get("attempts", [])[1:]
        if isinstance(a, dict) and a.get("input_tokens") is not None
    ]
    return f"{sum(vals) / len(vals):.0f} (n={len(vals)})" if vals else "not recorded"


def compare(before: Path, after: Path) -> str:
    lines: list[str] = []
    for mode in MODES:
        b, a = results(before, mode), results(after, mode)
        both = [k for k in a if k in b]
        # a question that could not run on one side (a model timeout, say) is left out
        keys = [
            k for k in both if b[k]["final_match"] is not None and a[k]["final_match"] is not None
        ]
        if not keys:
            continue
        bb, aa = [b[k] for k in keys], [a[k] for k in keys]
        n = len(keys)
        g = gain([r["final_match"] for r in bb], [r["final_match"] for r in aa])
        skipped = len(both) - n
        lines += [
            f"**{mode}** ({n} questions on both sides"
            + (f"; {skipped} more could not run on one side, left out" if skipped else "")
            + ")",
            "",
            "| | before | after |",
            "|---|---|---|",
            "| final answer right | "
            + " | ".join(_share(sum(bool(r["final_match"]) for r in s), n) for s in (bb, aa))
            + " |",
            "| first attempt right | "
            + " | ".join(_share(sum(bool(r["first_match"]) for r in s), n) for s in (bb, aa))
            + " |",
            "| the fallback ran | "
            + " | ".join(str(sum(bool(r.get("fallback")) for r in s)) for s in (bb, aa))
            + " |",
            "| how runs ended | "
            + " | ".join(
                ", ".join(f"{k} {v}" for k, v in Counter(r.get("stop_reason") for r in s).items())
                for s in (bb, aa)
            )
            + " |",
            "| model calls | "
            + " | ".join(str(sum(r["calls"] or 0 for r in s)) for s in (bb, aa))
            + " |",
            "| prompt tokens per call (whole prompt) | "
            + " | ".join(_tokens_per_call(s) for s in (bb, aa))
            + " |",
            "| prompt tokens per retry | " + " | ".join(_retry_tokens(s) for s in (bb, aa)) + " |",
            "| seconds per question, median / p90 | "
            + " | ".join(_seconds(s) for s in (bb, aa))
            + " |",
            "",
            f"Paired gain of after over before (final answer): {g.diff:+.1%} "
            f"(95% bootstrap {g.low:+.1%} to {g.high:+.1%}; {g.gained} gained, {g.lost} lost, "
            f"McNemar p = {g.p_value:.2f}).",
            "",
        ]
        wrong = Counter(
            (r["attempts"][-1].get("category") if r.get("attempts") else None) or "ran, wrong rows"
            for r in aa
            if not r["final_match"]
        )
        if wrong:
            lines += [
                "Questions still wrong after, by the last SQL attempt's category: "
                + ", ".join(f"{k} {v}" for k, v in wrong.most_common())
                + ".",
                "",
            ]
    return "\n".join(lines).rstrip() or "No questions on both sides."


def section_name(before: Path, after: Path) -> str:
    """The history section of one comparison, named after the two results folders.

    >>> section_name(Path("benchmarks/eval/reference"), Path(".cache/eval/change"))
    'eval_change-reference-change'
    """
    return f"eval_change-{before.resolve().name}-{after.resolve().name}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.eval_change")
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument(
        "--write", action="store_true", help="write the section into docs/benchmarks-history.md"
    )
    p.add_argument("--title", help="the section's title (default: the two folders)")
    p.add_argument("--note", default="", help="text put before the tables")
    args = p.parse_args(argv)
    body = compare(args.before, args.after)
    print(body)
    if args.write:
        write_history(
            section_name(args.before, args.after),
            args.title
            or f"Real local model on Spider dev: {shown(args.before)} against {shown(args.after)}",
            (args.note + "\n\n" if args.note else "") + body,
            packages=("llama_cpp_python", "sqlglot"),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
