"""``python -m benchmarks.eval_signs``: how often each sign of a wrong answer is right when it
fires, on the real model's answers that ran (no model is called).

Reads the evaluation's results files (``benchmarks/eval/spider.MODE.jsonl`` and any folder
given), takes every distinct SQL answer that ran there (the first attempt's and the final
one, each with its execution match against the gold answer), runs it again read-only on its
Spider database, and asks :func:`benchmarks.signs.signs` which signs it shows.
Per sign: how many answers it fires on, its precision (the share of those that are wrong)
and its recall (the share of the wrong answers it fires on), with Wilson intervals. Then the
same signs on every Spider dev gold query (right answers by definition, held out from the
evaluation's sample only in that they are not the model's): how often each would raise a
false alarm on a right answer.

    .venv/bin/python -m benchmarks.eval_signs [FOLDER ...] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.report import shown, write_section
from benchmarks.signs import SIGNS, signs
from cadet_magic.eval.stats import wilson

OUT_DIR = Path(__file__).resolve().parent / "eval"
#: Rows read back per answer at most.
MAX_ROWS = 10_000


def answers(folders: Sequence[Path]) -> list[dict]:
    """Distinct (database, question, SQL) answers that ran, with whether each was right."""
    seen: dict[tuple[str, str, str], dict] = {}
    for folder in folders:
        for path in sorted(folder.glob("spider.*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                pairs = [(rec.get("first_sql"), rec.get("first_match"))]
                if not rec.get("fallback"):
                    pairs.append((rec.get("final_sql"), rec.get("final_match")))
                for sql, match in pairs:
                    if sql and match is not None:
                        key = (rec["db_id"], rec["question"], sql.strip())
                        seen.setdefault(key, {"db_id": key[0], "question": key[1], "sql": key[2],
                                              "right": bool(match)})  # fmt: skip
    return list(seen.values())


def database(db_id: str) -> sqlite3.Connection:
    from workloads.gold import DATA

    path = DATA / "spider-dev" / "database" / db_id / f"{db_id}.sqlite"
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def measure(items: list[dict]) -> tuple[list[dict], int, int]:
    """Each answer with its signs; the number that ran again and the wrong ones among them."""
    out = []
    for a in items:
        try:
            con = database(a["db_id"])
        except sqlite3.Error:
            continue  # a database without a file
        try:
            rows = con.execute(a["sql"]).fetchmany(MAX_ROWS)
        except sqlite3.Error:
            continue  # it did not run here (an answer the check had rewritten, say)

        def fetch(sql: str, con: sqlite3.Connection = con) -> list:
            return con.execute(sql).fetchall()

        out.append({**a, "signs": signs(a["question"], a["sql"], rows, "sqlite", fetch)})
        con.close()
    wrong = sum(not a["right"] for a in out)
    return out, len(out), wrong


def gold_answers() -> list[dict]:
    """Every Spider dev gold query, as a right answer."""
    from workloads.gold import DATA

    data = json.loads((DATA / "spider-dev" / "dev.json").read_text(encoding="utf-8"))
    return [
        {"db_id": q["db_id"], "question": q["question"], "sql": q["query"], "right": True}
        for q in data
    ]


def gold_table(measured: list[dict]) -> str:
    lines = [
        f"On {len(measured)} Spider dev gold queries that run (right answers): false alarms per sign.",
        "",
        "| sign | fires on a right answer |",
        "|---|---|",
    ]
    for sign in SIGNS:
        k = sum(sign in a["signs"] for a in measured)
        lo, hi = wilson(k, len(measured))
        lines.append(
            f"| {sign} | {k}/{len(measured)} ({k / len(measured):.1%}, {lo:.1%}-{hi:.1%}) |"
        )
    return "\n".join(lines)


def table(measured: list[dict], n: int, wrong: int) -> str:
    lines = [
        f"{n} distinct SQL answers that ran ({wrong} wrong, {n - wrong} right).",
        "",
        "| sign | fires | wrong when it fires (precision) | wrong answers it finds (recall) |",
        "|---|---|---|---|",
    ]
    for sign in SIGNS:
        fired = [a for a in measured if sign in a["signs"]]
        hits = sum(not a["right"] for a in fired)
        p = f"{hits}/{len(fired)}" + (
            " ({:.0%}, {:.0%}-{:.0%})".format(hits / len(fired), *wilson(hits, len(fired)))
            if fired
            else ""
        )
        r = f"{hits}/{wrong}" + (
            " ({:.0%}, {:.0%}-{:.0%})".format(hits / wrong, *wilson(hits, wrong)) if wrong else ""
        )
        lines.append(f"| {sign} | {len(fired)} | {p} | {r} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.eval_signs")
    p.add_argument(
        "folders", nargs="*", type=Path, help="results folders (default benchmarks/eval)"
    )
    p.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    args = p.parse_args(argv)
    folders = args.folders or [OUT_DIR]
    measured, n, wrong = measure(answers(folders))
    gold, _, _ = measure(gold_answers())
    body = table(measured, n, wrong) + "\n\n" + gold_table(gold)
    print(body)
    if not args.no_write:
        write_section(
            "eval_signs",
            "Signs of a wrong answer that ran: precision and recall on the real model's answers",
            f"Results folders: {', '.join(shown(f) for f in folders)}.\n\n{body}",
            packages=("sqlglot",),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
