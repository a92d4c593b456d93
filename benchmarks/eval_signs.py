"""``python -m benchmarks.eval_signs``: how often each sign of a wrong answer is right when it
fires, on the real model's answers that ran (no model is called).

Three sets of answers, each SQL run again read-only (the evaluation's own check and runner) on
its database, and asked which signs it shows (:func:`benchmarks.signs.signs`, and the shape
signs of :mod:`cadet_magic.result_check.shape`):

- ``held-out``: the first attempts of the prompt experiment on its tuning set (Spider dev
  questions outside the fixed sample and the sample shop's questions; every prompt variant's
  distinct SQL that ran: ``benchmarks/prompt_tuning/tuning.*.jsonl``). The shape signs are
  judged on this set only (:func:`verdict`);
- ``fixed``: the evaluation's answers on the fixed sample (``benchmarks/eval/spider.*.jsonl``:
  the first attempt's and the final SQL), reported apart, never used to judge a sign;
- ``gold``: Spider dev gold queries outside the fixed sample (right answers by definition):
  how often each sign would raise a false alarm on a right answer.

Per sign: how many answers it fires on, its precision (the share of those that are wrong) and
its recall (the share of the wrong answers it fires on), with Wilson intervals.

The rule a shape sign must pass to be shown as a warning (written before its figures were
read): on the held-out set it fires on at least :data:`MIN_FIRES` answers, its precision is
at least :data:`MIN_PRECISION`, the lower end of its interval is above the share of wrong
answers among all held-out answers (it tells more than chance), and it fires on at most
:data:`MAX_FALSE_ALARMS` of the gold queries.

    .venv/bin/python -m benchmarks.eval_signs [--fixed FOLDER ...] [--held-out FOLDER]
        [--no-write]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.report import shown, write_section
from benchmarks.signs import SIGNS, signs
from cadet_magic.eval.stats import wilson
from cadet_magic.result_check.shape import SHAPE_SIGNS, shape_signs

HERE = Path(__file__).resolve().parent
FIXED_DIR = HERE / "eval"
HELD_OUT_DIR = HERE / "prompt_tuning"
#: Seconds one query may run.
TIMEOUT = 30.0
#: The rule (see the module's text).
MIN_FIRES = 5
MIN_PRECISION = 0.5
MAX_FALSE_ALARMS = 0.02
ALL_SIGNS = SIGNS + SHAPE_SIGNS


@dataclass
class Answer:
    """One distinct SQL answer to a question, whether it was right, and the signs it shows."""

    db_id: str
    question: str
    sql: str
    right: bool
    signs: tuple[str, ...] = field(default=())


def _distinct(items: Iterable[tuple[str, str, str | None, object]]) -> list[Answer]:
    seen: dict[tuple[str, str, str], Answer] = {}
    for db_id, question, sql, right in items:
        if sql and right is not None:
            key = (db_id, question, sql.strip())
            seen.setdefault(key, Answer(db_id, question, key[2], bool(right)))
    return list(seen.values())


def fixed_answers(folders: Sequence[Path]) -> list[Answer]:
    """Distinct answers of the evaluation's results files: the first attempt's, and the final
    SQL when the fallback did not answer."""

    def items() -> Iterable[tuple[str, str, str | None, object]]:
        for folder in folders:
            for path in sorted(folder.glob("spider.*.jsonl")):
                for line in path.read_text(encoding="utf-8").splitlines():
                    rec = json.loads(line)
                    yield (
                        rec["db_id"],
                        rec["question"],
                        rec.get("first_sql"),
                        rec.get("first_match"),
                    )
                    if not rec.get("fallback"):
                        yield (
                            rec["db_id"],
                            rec["question"],
                            rec.get("final_sql"),
                            rec.get("final_match"),
                        )

    return _distinct(items())


def held_out_answers(folder: Path) -> list[Answer]:
    """Distinct answers that ran in the prompt experiment's tuning-set files (``oneshot`` is a
    peer's prompt, left out)."""

    def items() -> Iterable[tuple[str, str, str | None, object]]:
        for path in sorted(folder.glob("tuning.*.jsonl")):
            if path.stem.endswith(".oneshot"):
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                if rec.get("ran"):
                    yield rec["db_id"], rec["question"], rec.get("sql"), rec.get("match")

    return _distinct(items())


def gold_answers() -> list[Answer]:
    """Spider dev gold queries outside the fixed sample, as right answers."""
    from benchmarks.eval import N_QUESTIONS, SEED, questions

    dataset, fixed = questions(N_QUESTIONS, SEED)
    taken = {q.key for q in fixed}
    return [
        Answer(q.db_id, q.question, q.gold, True)
        for q in dataset.questions  # type: ignore[attr-defined]
        if q.key not in taken
    ]


def places(answers: Sequence[Answer]) -> dict[str, tuple[Path, str]]:
    """Where each answer's database is (Spider's, and the sample shop's DuckDB file)."""
    from benchmarks.prompt_tuning import shop_database, spider

    dataset = spider()
    out: dict[str, tuple[Path, str]] = {}
    for db_id in {a.db_id for a in answers}:
        try:
            out[db_id] = (shop_database(), "duckdb") if db_id == "shop" else dataset.database(db_id)
        except LookupError:
            continue  # a database the data folder lacks: its answers are left out
    return out


def measure(answers: list[Answer]) -> list[Answer]:
    """The answers that run again here, each with its signs."""
    import sqlglot

    from benchmarks.peer_runs import Databases
    from cadet_magic.eval.rows import checked, run_rows

    where = places(answers)
    dbs = Databases(where)
    out = []
    try:
        for a in answers:
            if a.db_id not in where:
                continue
            db = dbs.get(a.db_id)
            try:
                rows = run_rows(db, a.sql, TIMEOUT)
                tree = sqlglot.parse_one(checked(db, a.sql), read=db.runner().dialect)
            except Exception:  # noqa: BLE001 - it does not run here: no answer to judge
                continue
            con = db.connection()

            def fetch(sql: str, con: object = con) -> list:
                return con.execute(sql).fetchall()  # type: ignore[attr-defined]

            old = signs(a.question, a.sql, rows, db.runner().dialect, fetch)
            a.signs = (*old, *shape_signs(a.question, tree, rows))
            out.append(a)
    finally:
        dbs.close()
    return out


def _share(k: int, n: int) -> str:
    return f"{k}/{n}" + (" ({:.0%}, {:.0%}-{:.0%})".format(k / n, *wilson(k, n)) if n else "")


def table(measured: list[Answer], title: str) -> str:
    """Per sign: fires, precision and recall on ``measured``."""
    wrong = sum(not a.right for a in measured)
    lines = [
        f"{title}: {len(measured)} distinct SQL answers that ran ({wrong} wrong, "
        f"{len(measured) - wrong} right).",
        "",
        "| sign | fires | wrong when it fires (precision) | wrong answers it finds (recall) |",
        "|---|---|---|---|",
    ]
    for sign in ALL_SIGNS:
        fired = [a for a in measured if sign in a.signs]
        hits = sum(not a.right for a in fired)
        lines.append(
            f"| {sign} | {len(fired)} | {_share(hits, len(fired))} | {_share(hits, wrong)} |"
        )
    return "\n".join(lines)


def gold_table(measured: list[Answer]) -> str:
    lines = [
        f"On {len(measured)} Spider dev gold queries outside the fixed sample that run (right "
        "answers): false alarms per sign.",
        "",
        "| sign | fires on a right answer |",
        "|---|---|",
    ]
    for sign in ALL_SIGNS:
        k = sum(sign in a.signs for a in measured)
        lines.append(f"| {sign} | {_share(k, len(measured))} |")
    return "\n".join(lines)


def verdict(held_out: list[Answer], gold: list[Answer], sign: str) -> tuple[bool, str]:
    """Whether ``sign`` pays as a warning under the rule, and why (one line)."""
    n = len(held_out)
    base = sum(not a.right for a in held_out) / n if n else 1.0
    fired = [a for a in held_out if sign in a.signs]
    hits = sum(not a.right for a in fired)
    alarms = sum(sign in a.signs for a in gold) / len(gold) if gold else 1.0
    if len(fired) < MIN_FIRES:
        return False, f"fires on {len(fired)} held-out answers (< {MIN_FIRES})"
    precision, (low, _) = hits / len(fired), wilson(hits, len(fired))
    checks = [
        (precision >= MIN_PRECISION, f"precision {precision:.0%} (>= {MIN_PRECISION:.0%})"),
        (low > base, f"its lower end {low:.0%} (> {base:.0%} wrong among all)"),
        (
            alarms <= MAX_FALSE_ALARMS,
            f"false alarms on gold {alarms:.1%} (<= {MAX_FALSE_ALARMS:.0%})",
        ),
    ]
    ok = all(passed for passed, _ in checks)
    failed = [why for passed, why in checks if not passed]
    return ok, "; ".join(why for _, why in checks) if ok else "fails: " + "; ".join(failed)


def verdicts(held_out: list[Answer], gold: list[Answer]) -> str:
    lines = ["| shape sign | shown as a warning | why |", "|---|---|---|"]
    for sign in SHAPE_SIGNS:
        ok, why = verdict(held_out, gold, sign)
        lines.append(f"| {sign} | {'yes' if ok else 'no'} | {why} |")
    return "\n".join(lines)


def report(
    fixed_folders: Sequence[Path],
    held_out_folder: Path,
    measure_fn: Callable[[list[Answer]], list[Answer]] = measure,
) -> str:
    held_out = measure_fn(held_out_answers(held_out_folder))
    gold = measure_fn(gold_answers())
    fixed = measure_fn(fixed_answers(fixed_folders))
    return "\n\n".join(
        [
            f"Held-out answers: {shown(held_out_folder)}; fixed sample: "
            + ", ".join(shown(f) for f in fixed_folders)
            + ".",
            "The shape signs of an answer contradicting its question (a LIMIT not asked for, "
            "one row for a question per X, an order asked for and not given, a listed entity "
            "without the figure asked for) become a warning only if, on the held-out answers, "
            f"a sign fires on at least {MIN_FIRES}, at least {MIN_PRECISION:.0%} of those are "
            "wrong, the lower end of that share's interval is above the share of wrong answers "
            f"among all, and it fires on at most {MAX_FALSE_ALARMS:.0%} of the gold queries "
            "(the rule was written before these figures were read). Which are shown, judged on "
            "the held-out answers and the gold queries only:",
            verdicts(held_out, gold),
            table(held_out, "Held-out answers (tuning set, every prompt variant)"),
            gold_table(gold),
            table(fixed, "Fixed sample (reported apart, not used to choose)"),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.eval_signs")
    p.add_argument("--fixed", nargs="*", type=Path, default=[FIXED_DIR], help="results folders")
    p.add_argument("--held-out", type=Path, default=HELD_OUT_DIR, help="tuning-set results")
    p.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    args = p.parse_args(argv)
    body = report(args.fixed, args.held_out)
    print(body)
    if not args.no_write:
        write_section(
            "eval_signs",
            "Signs of a wrong answer that ran: precision and recall on the real model's answers",
            body,
            packages=("sqlglot",),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
