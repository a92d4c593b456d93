"""``python -m benchmarks.conversation``: follow-ups, kept examples and sharing levels, measured
with the real local model on Spider dev databases (read in place from ``CADET_DATA``).

Three parts, each question once per mode, results appended to
``benchmarks/conversation/results.jsonl`` (one line per question and mode; a rerun skips what the
file holds, so an interrupted run resumes with the same command):

* ``follow``: the chains of ``benchmarks/conversation/chains.json`` (2-3 questions each, written
  for this repository, gold SQL by hand). Each later step is asked ``follow`` (with the previous
  step's answer, as ``%%ask --follow`` sends it) and ``alone`` (the words alone).
* ``examples``: Spider dev questions of the chains' databases, split per database by a seeded
  shuffle into kept pairs (question and gold SQL, held apart: never measured) and measured
  questions, each asked ``kept`` (the kept pairs in ``.cadet/examples.jsonl`` form, the 3 most
  similar within 1,500 characters) and ``none``.
* ``share``: the same measured questions at ``schema``, ``stats`` and ``samples``.

Figures: first-attempt and final execution match (Wilson 95% intervals), prompt tokens per
question, with n. ``--minutes`` stops after that long (the figures say how many ran). The model
is the project's local one (``scripts/setup_llm.sh``) served by :func:`workloads.llm.llm_server`
unless ``--base-url`` names a running server::

    nice -n 10 .venv/bin/python -m benchmarks.conversation --minutes 20
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.eval import server
from benchmarks.report import table, write_page

HERE = Path(__file__).resolve().parent / "conversation"
CHAINS = HERE / "chains.json"
RESULTS = HERE / "results.jsonl"
#: One line per run: when it started, its parts and the load average then.
RUNS_LOG = HERE / "runs.log"
#: Measured questions per database in the examples and share parts (the rest are kept pairs).
MEASURED_PER_DB = 4
#: Kept pairs per database (held apart from the measured questions).
KEPT_PER_DB = 12
SEED = 0
MODEL_TIMEOUT = 600.0


def spider() -> Any:
    from cadet_magic.eval.data import load
    from workloads.gold import DATA

    return load(DATA / "spider-dev")


def chains() -> list[dict]:
    return json.loads(CHAINS.read_text())["chains"]


def split(dataset: Any, db_ids: Sequence[str]) -> tuple[list, list]:
    """Per database, a seeded shuffle of its Spider questions: (kept pairs, measured)."""
    kept, measured = [], []
    for db_id in db_ids:
        qs = [q for q in dataset.questions if q.db_id == db_id]
        random.Random(f"{SEED}:{db_id}").shuffle(qs)
        measured += qs[:MEASURED_PER_DB]
        kept += qs[MEASURED_PER_DB : MEASURED_PER_DB + KEPT_PER_DB]
    return kept, measured


def done(path: Path) -> set[tuple[str, str, str]]:
    if not path.exists():
        return set()
    keys = set()
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        keys.add((r["part"], r["mode"], r["question"]))
    return keys


def record(
    part: str, mode: str, db_id: str, question: str, gold_rows: list, result: Any, db: Any
) -> dict:
    from cadet_magic.eval.rows import answer_rows, first_rows
    from cadet_magic.vote.execution_match import execution_match, has_outer_order

    ordered = has_outer_order(result.final_sql or "") if result.final_sql else False
    final = answer_rows(result, db, 30.0)
    first = first_rows(result, db, 30.0)
    tokens = result.tokens
    return {
        "part": part,
        "mode": mode,
        "db_id": db_id,
        "question": question,
        "first_match": first is not None and execution_match(gold_rows, first, ordered=ordered),
        "final_match": final is not None and execution_match(gold_rows, final, ordered=ordered),
        "attempts": len(result.all_attempts),
        "input_tokens": None if tokens is None else tokens.input,
        "calls": result.model_calls,
        "seconds": round(result.elapsed, 2),
        "error": None if result.ok else (result.message or "")[:200],
    }


class Runner:
    """Asks through :func:`cadet_magic.ask` with the local model and appends each record."""

    def __init__(self, url: str, deadline: float, out: Path) -> None:
        self.url, self.deadline, self.out = url, deadline, out
        self.seen = done(out)
        self.dbs: dict[str, Any] = {}
        self.dataset = spider()

    def db(self, db_id: str) -> Any:
        from cadet_magic.eval.rows import Database

        if db_id not in self.dbs:
            path, engine = self.dataset.database(db_id)
            self.dbs[db_id] = Database(path, engine)
        return self.dbs[db_id]

    def time_left(self) -> bool:
        return time.monotonic() < self.deadline

    def ask(
        self, part: str, mode: str, db_id: str, question: str, gold: str, **options: Any
    ) -> Any:
        from cadet_magic import ask
        from cadet_magic.eval.rows import run_rows

        db = self.db(db_id)
        result = ask(
            question,
            con=db.connection(),
            model="openai:qwen",
            base_url=self.url,
            api_key="local",
            temperature=0.0,
            model_timeout=MODEL_TIMEOUT,
            **options,
        )
        if (part, mode, question) not in self.seen:
            rec = record(part, mode, db_id, question, run_rows(db, gold, 30.0), result, db)
            with self.out.open("a") as f:
                f.write(json.dumps(rec) + "\n")
            self.seen.add((part, mode, question))
            print(json.dumps(rec), file=sys.stderr, flush=True)
        return result

    def close(self) -> None:
        for db in self.dbs.values():
            db.close()


def run_follow(r: Runner) -> None:
    for chain in chains():
        steps = chain["steps"]
        if all(
            ("follow", m, s["question"]) in r.seen for s in steps[1:] for m in ("follow", "alone")
        ):
            continue
        if not r.time_left():
            return
        previous = r.ask(
            "follow",
            "first",
            chain["db_id"],
            steps[0]["question"],
            steps[0]["gold"],
            examples_path=None,
        )
        for step in steps[1:]:
            if not r.time_left():
                return
            r.ask(
                "follow",
                "alone",
                chain["db_id"],
                step["question"],
                step["gold"],
                examples_path=None,
            )
            previous = r.ask(
                "follow",
                "follow",
                chain["db_id"],
                step["question"],
                step["gold"],
                examples_path=None,
                follow=previous if previous.ok else None,
            )


def write_kept(pairs: Sequence[Any], r: Runner, folder: Path) -> Path:
    """The kept pairs as an examples file, each with its database's fingerprint, signed with
    the user's key as ``%cadet keep`` signs them (only signed pairs enter a prompt)."""
    from cadet_magic.kept_answers import FORMAT, line, signature, user_key
    from cadet_magic.provenance import database_fingerprint, public_url

    path = folder / "examples.jsonl"
    key = user_key()
    with path.open("w") as f:
        for q in pairs:
            runner = r.db(q.db_id).runner()
            fp = database_fingerprint(runner.dialect, public_url(runner.label), runner.schema())
            pair = {"format": FORMAT, "question": q.question, "sql": q.gold, "database": fp}
            pair["signature"] = signature(key, path, pair)
            f.write(line(pair) + "\n")
    return path


def run_examples_and_share(r: Runner, parts: Sequence[str]) -> None:
    db_ids = sorted({c["db_id"] for c in chains()})
    kept, measured = split(r.dataset, db_ids)
    with tempfile.TemporaryDirectory() as folder:
        path = write_kept(kept, r, Path(folder))
        modes = []
        if "examples" in parts:
            modes += [
                ("examples", "kept", {"examples_path": str(path)}),
                ("examples", "none", {"examples_path": None}),
            ]
        if "share" in parts:
            modes += [
                ("share", level, {"examples_path": None, "share": level})
                for level in ("schema", "stats", "samples")
            ]
        for q in measured:
            for part, mode, options in modes:
                if (part, mode, q.question) in r.seen:
                    continue
                if not r.time_left():
                    return
                r.ask(part, mode, q.db_id, q.question, q.gold, **options)


def summary(path: Path) -> str:
    from cadet_magic.eval.significance import wilson

    records = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    rows = []
    for part, modes in (
        ("follow", ("follow", "alone")),
        ("examples", ("kept", "none")),
        ("share", ("schema", "stats", "samples")),
    ):
        for mode in modes:
            rs = [x for x in records if x["part"] == part and x["mode"] == mode]
            if not rs:
                continue
            n = len(rs)
            cells = []
            for key in ("first_match", "final_match"):
                k = sum(1 for x in rs if x[key])
                lo, hi = wilson(k, n)
                cells.append(f"{k}/{n} ({100 * k / n:.0f}%, {100 * lo:.0f}-{100 * hi:.0f}%)")
            tokens = [x["input_tokens"] for x in rs if x["input_tokens"] is not None]
            per_q = f"{sum(tokens) / len(tokens):.0f}" if tokens else "n/a"
            rows.append([part, mode, str(n), *cells, per_q])
    return table(["part", "mode", "n", "first attempt", "final", "prompt tokens / question"], rows)


def planned(path: Path) -> str:
    """How much of the planned measurement the results file holds (runs are partial when a
    time budget ended them)."""
    steps = sum(len(c["steps"]) - 1 for c in chains())
    measured = MEASURED_PER_DB * len({c["db_id"] for c in chains()})
    lines = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    have = {
        p: sum(1 for r in lines if r["part"] == p and r["mode"] != "first")
        for p in ("follow", "examples", "share")
    }
    plan = {"follow": 2 * steps, "examples": 2 * measured, "share": 3 * measured}
    counts = (
        f"follow {have['follow']} of {plan['follow']} (question, mode) pairs, examples "
        f"{have['examples']} of {plan['examples']}, share {have['share']} of {plan['share']}"
    )
    if all(have[p] >= plan[p] for p in plan):
        return f"Complete: {counts}."
    return f"**Partial**: {counts}; the run resumes where it stopped."


def starts() -> list[str]:
    """The load averages at the starts of the runs (``runs.log``)."""
    if not RUNS_LOG.exists():
        return []
    return [ln.rsplit("load average ", 1)[1] for ln in RUNS_LOG.read_text().splitlines()]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.conversation")
    p.add_argument("--parts", default="follow,examples,share")
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--base-url")
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--out", type=Path, default=RESULTS, help="results file")
    p.add_argument("--no-write", action="store_true", help="print the figures, write no page")
    args = p.parse_args(argv)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    if not args.report_only:
        parts = args.parts.split(",")
        if args.out == RESULTS:
            stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            with RUNS_LOG.open("a") as f:
                f.write(f"{stamp} parts {args.parts} load average {load}\n")
        with server(args.base_url) as url:
            r = Runner(url, time.monotonic() + 60 * args.minutes, args.out)
            try:
                if "follow" in parts:
                    run_follow(r)
                run_examples_and_share(r, parts)
            finally:
                r.close()
    end = " ".join(f"{x:.1f}" for x in os.getloadavg())
    body = "\n".join(
        [
            "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, llama-cpp-python server, 2 threads), temperature 0, "
            "through `cadet_magic.ask` with the product's options; execution match as in the "
            "evaluation harness. `follow`: the later steps of the chains in "
            "`benchmarks/conversation/chains.json` asked with the previous step's answer (`follow`) "
            "and alone; `examples`: Spider dev questions of the chains' databases with "
            f"{KEPT_PER_DB} held-apart kept pairs per database (`kept`) or none; `share`: the same "
            "questions at each sharing level. Wilson 95% intervals; at these n the intervals "
            "overlap widely: read them as a first look, not a verdict.",
            "",
            planned(args.out),
            "",
            summary(args.out),
            "",
            f"Load average (1, 5, 15 min) at each run's start: {'; '.join(starts()) or load}; "
            f"at the end: {end} "
            "(**taken under load**: the machine was shared; accuracy does not depend on it at "
            "temperature 0, time does). Command: `nice -n 10 .venv/bin/python -m "
            "benchmarks.conversation --minutes N` (resumes from "
            "`benchmarks/conversation/results.jsonl`).",
        ]
    )
    if args.no_write:
        print(summary(args.out))
        return 0
    write_page(  # reported with intervals, no budget
        "conversation",
        "Follow-ups, kept examples and sharing levels (real model)",
        body,
        packages=("sqlglot", "llama_cpp_python"),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
