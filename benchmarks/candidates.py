"""``python -m benchmarks.candidates``: candidate answers drawn for each question of a set, with
the real model, kept so that every way of voting on them is measured without the model.

For each question the product's first prompt (its current representation and place, as
:mod:`benchmarks.prompt_tuning` builds it) is answered once greedily (temperature 0: the
product's first attempt, the same request as the prompt experiment's, so the reply store
answers it) and ``--count`` times sampled at ``--temperature``, candidate ``i`` with seed
``i`` (:mod:`cadet_magic.llm.sampling`: one request asking for all of them, then one by one
where the server answers one, as llama-cpp-python's does; the same prompt each time, so the
server reads it once). Every candidate's SQL is scored by the evaluation's rule and run again
read-only; candidates are grouped by their result as the agent's vote groups them
(:mod:`cadet_magic.vote.tally`), and each keeps the number of its group (the first candidate
giving that result), so :mod:`benchmarks.candidates_report` can replay any stopping rule and
budget up to ``--count`` offline.

Questions: the prompt experiment's tuning set (Spider dev outside the fixed sample, and the
sample shop), never the fixed sample the product's figures are reported on.

    setsid nohup .venv/bin/python -m benchmarks.candidates --base-url http://127.0.0.1:PORT/v1 \\
        >> .cache/candidates.log 2>&1 < /dev/null &
    .venv/bin/python -m benchmarks.candidates --report-only
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.peer_runs import (
    MODEL_ERROR,
    QUERY_TIMEOUT,
    REPLIES,
    REPLY_CHARS,
    Databases,
    Line,
    model_url,
    run_set,
    score,
    timer,
)
from cadet_magic.eval.data import Question
from cadet_magic.text import first_line

#: Where the results files go.
OUT_DIR = Path(__file__).resolve().parent / "candidates"
#: Candidates sampled per question, and their temperature.
COUNT = 8
TEMPERATURE = 0.7
#: Seconds one model call may take.
MODEL_TIMEOUT = 600.0


def product_variant(name: str | None = None) -> Any:
    """The product's first prompt as a variant of the prompt experiment (or the experiment's
    variant ``name``)."""
    from benchmarks.prompt_tuning import VARIANTS, Variant
    from cadet_magic.agent import prompts
    from cadet_magic.schema import render

    if name is not None:
        return VARIANTS[name]
    return Variant("product", render.REPRESENTATION, prompts.PLACE)


def results_path(set_name: str, temperature: float, out_dir: Path | None = None) -> Path:
    return (out_dir or OUT_DIR) / f"{set_name}.t{temperature:g}.jsonl"


def candidate(
    dbs: Databases, q: Question, text: str, seconds: float, output_tokens: int | None
) -> dict:
    """One candidate's record: its SQL, whether it ran and matched, its rows (for grouping,
    dropped before writing), tokens and seconds."""
    from cadet_magic.agent.reply import extract_sql
    from cadet_magic.eval.rows import run_rows

    sql = extract_sql(text)
    s = score(dbs, q, sql)
    rows = None
    if s.ran and sql:
        try:
            rows = run_rows(dbs.get(q.db_id), sql, QUERY_TIMEOUT)
        except Exception:  # noqa: BLE001 - scored as ran, but gives nothing to compare here
            rows = None
    return {"sql": sql, "ran": s.ran, "match": s.match, "rows": rows, "seconds": seconds,
            "output_tokens": output_tokens, "reply": text[:REPLY_CHARS]}  # fmt: skip


def grouped(records: list[dict]) -> list[dict]:
    """The records with ``group``: the index of the first record giving the same result (as
    the vote compares results), None for one that did not run; rows dropped."""
    from cadet_magic.vote.tally import Ballot, same_answer

    firsts: list[Ballot] = []
    out = []
    for i, rec in enumerate(records):
        rows = rec.pop("rows", None)
        group = None
        if rows is not None:
            ballot = Ballot(i, rec["sql"] or "", tuple(map(tuple, rows)))
            group = next((b.index for b in firsts if same_answer(b, ballot)), None)
            if group is None:
                firsts.append(ballot)
                group = i
        out.append({**rec, "group": group})
    return out


def answerer(
    model: Any,
    dbs: Databases,
    count: int,
    temperature: float,
    budget: int,
    variant_name: str | None = None,
) -> Callable[[Question], Line]:
    from benchmarks.prompt_tuning import catalog, first_messages
    from cadet_magic.agent.reply import content_text, usage_of
    from cadet_magic.agent.steps import call_model
    from cadet_magic.llm.sampling import sampler_for

    variant = product_variant(variant_name)
    prompt = f"{variant.representation}, instructions in the {variant.place} message"
    sample = sampler_for(model)
    assert sample is not None, "the benchmark talks to an OpenAI-compatible server"
    cache: dict[str, Any] = {}

    def answer(q: Question) -> Line:
        schema, dialect = catalog(dbs, q.db_id, cache)
        messages = first_messages(variant, q.question, schema, dialect, budget)
        try:
            elapsed = timer()
            greedy = call_model(model, messages, MODEL_TIMEOUT)
            out = greedy.tokens.output if greedy.tokens else None
            records = [candidate(dbs, q, greedy.text, elapsed(), out)]
            for i in range(1, count + 1):  # one at a time: each with its own time
                elapsed = timer()
                (reply,) = sample(messages, count=1, seed=i, temperature=temperature)
                tokens = usage_of(reply)
                text = content_text(reply.content)
                out = tokens.output if tokens else None
                records.append(candidate(dbs, q, text, elapsed(), out))
        except Exception as e:  # noqa: BLE001 - the server failed: the question runs again
            return Line(*q.key, error=f"{MODEL_ERROR}: {first_line(str(e), 300)}")
        records = grouped(records)
        head = records[0]
        return Line(
            *q.key,
            sql=head["sql"],
            ran=head["ran"],
            match=head["match"],
            calls=len(records),
            seconds=round(sum(r["seconds"] for r in records), 3),
            reply=head["reply"],
            extra={"temperature": temperature, "prompt": prompt, "candidates": records},
        )

    return answer


def shuffled(chosen: Sequence[Question], seed: int, chunk: int | None = None) -> list[Question]:
    """The questions in a random order drawn with ``seed``, so that a run stopped early holds a
    random part of the set; with ``chunk``, each run of ``chunk`` questions is then ordered by
    database (a stopped run still holds a random part, chunk by chunk, and a server caching the
    prompt's prefix reads a database's schema once per chunk instead of once per question).

    >>> qs = [Question(i, db, f"q{i}", "") for i, db in enumerate("abcabcabca")]
    >>> [q.db_id for q in shuffled(qs, 1, chunk=5)]
    ['a', 'a', 'b', 'c', 'c', 'a', 'a', 'b', 'b', 'c']
    """
    out = list(chosen)
    random.Random(seed).shuffle(out)
    if chunk:
        out = [q for i in range(0, len(out), chunk)
               for q in sorted(out[i : i + chunk], key=lambda q: q.db_id)]  # fmt: skip
    return out


def run(
    set_name: str,
    base_url: str | None,
    count: int = COUNT,
    temperature: float = TEMPERATURE,
    replies: Path | None = REPLIES,
    out_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    shuffle: int | None = None,
    variant: str | None = None,
    chunk: int | None = None,
) -> None:
    """Runs (or resumes) the candidates of every question of the set (in a random order
    drawn with seed ``shuffle`` when given)."""
    from benchmarks.prompt_tuning import question_set

    chosen, where = question_set(set_name)
    if shuffle is not None:
        chosen = shuffled(chosen, shuffle, chunk)
    run_questions(
        set_name, chosen, where, base_url, count, temperature, replies, out_dir, progress, variant
    )


def run_questions(
    set_name: str,
    chosen: Sequence[Question],
    where: dict[str, tuple[Path, str]],
    base_url: str | None,
    count: int = COUNT,
    temperature: float = TEMPERATURE,
    replies: Path | None = REPLIES,
    out_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    variant: str | None = None,
) -> None:
    """:func:`run` on given questions (``where``: each database's file and engine)."""
    from benchmarks.peers import chat_model
    from cadet_magic.options import AskOptions

    dbs = Databases(where)
    try:
        with model_url(base_url, replies, MODEL_TIMEOUT) as url:
            model = chat_model(url, MODEL_TIMEOUT)
            budget = AskOptions().schema_budget
            answer = answerer(model, dbs, count, temperature, budget, variant)
            run_set(chosen, results_path(set_name, temperature, out_dir), answer, progress)
    finally:
        dbs.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.candidates")
    p.add_argument("--set", default="tuning", help="tuning, tuning-spider or shop")
    p.add_argument("--count", type=int, default=COUNT, help=f"sampled candidates ({COUNT})")
    p.add_argument("--temperature", type=float, default=TEMPERATURE)
    p.add_argument("--base-url", help="a running OpenAI-compatible server (default: start one)")
    p.add_argument("--replies", type=Path, default=REPLIES, help="the reply store")
    p.add_argument(
        "--shuffle",
        type=int,
        metavar="SEED",
        help="questions in a random order (a run stopped early: a random part)",
    )
    p.add_argument(
        "--chunk",
        type=int,
        metavar="K",
        help="with --shuffle: each K questions ordered by database",
    )
    p.add_argument(
        "--variant",
        help="a prompt variant of benchmarks.prompt_tuning instead of the product's first prompt",
    )
    p.add_argument("--report-only", action="store_true", help="print the figures, run nothing")
    p.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    args = p.parse_args(argv)
    if args.set == "fixed":
        p.error("candidates are measured on the tuning set, never on the fixed sample")
    if not args.report_only:
        run(
            args.set,
            args.base_url,
            args.count,
            args.temperature,
            args.replies,
            progress=lambda s: print(s, file=sys.stderr, flush=True),
            shuffle=args.shuffle,
            variant=args.variant,
            chunk=args.chunk,
        )
    from benchmarks.candidates_report import main as report

    return report([str(results_path(args.set, args.temperature))] +
                  (["--no-write"] if args.no_write else []))  # fmt: skip


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted: the same command resumes the run.", file=sys.stderr)
        sys.exit(130)
