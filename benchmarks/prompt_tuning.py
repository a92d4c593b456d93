"""``python -m benchmarks.prompt_tuning``: the agent's first attempt with each prompt variant
(how the schema is written, where the instructions go) on a question set, with the real model.

The first prompt is chosen by measurement, on questions no reported figure uses:

- ``tuning``: Spider dev questions outside the evaluation's fixed sample, over the same
  databases (:func:`tuning_questions`: a sample drawn with :data:`TUNING_SEED`), and the sample
  shop's questions with gold SQL written for this experiment (``benchmarks/tuning/shop.json``,
  over :mod:`cadet_magic.examples.shop` in DuckDB);
- ``fixed``: the evaluation's fixed sample (``benchmarks.eval``), on which the chosen variant is
  reported once, never tuned.

A variant's first attempt is the product's own: the schema as the runner reads it (sample
values included), the variant's rows or the engine's statements added where it shows them,
linked within the prompt budget (:func:`cadet_magic.schema.link.link`) in the variant's
:class:`~cadet_magic.schema.render.Representation`, the messages of
:func:`cadet_magic.agent.prompts.build_messages` with the variant's place, one call; the SQL is
scored by the evaluation's rule (:mod:`benchmarks.peer_runs`). With the product's current
representation and place the request is byte for byte the first attempt ``cadet_magic.eval``
sends, so the two share the model's reply through the reply store. ``oneshot`` is the one-shot
peer's prompt (:mod:`benchmarks.peers_oneshot`), for reference.

Results: ``benchmarks/prompt_tuning/SET.VARIANT.jsonl`` (kept in the repository, resumed from);
the figures, paired against the product's current prompt, with ``--report-only`` at any time.
To try another variant (helper code may add one to :data:`VARIANTS`), run it by name::

    setsid nohup .venv/bin/python -m benchmarks.prompt_tuning --set tuning \\
        --variants create-rows >> .cache/prompt_tuning.log 2>&1 < /dev/null &
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.peer_runs import (
    MODEL_ERROR,
    REPLIES,
    REPLY_CHARS,
    Databases,
    Line,
    model_url,
    run_set,
    score,
    timer,
)
from benchmarks.report import ROOT
from cadet_magic.eval.data import Question
from cadet_magic.schema.render import Representation
from cadet_magic.text import first_line

#: Where the results files go.
OUT_DIR = Path(__file__).resolve().parent / "prompt_tuning"
#: The sample shop's questions and gold SQL (Spider's layout, ``db_id`` ``shop``).
SHOP_QUESTIONS = Path(__file__).resolve().parent / "tuning" / "shop.json"
#: Where the shop's DuckDB file is built (read-only afterwards).
SHOP_DB = ROOT / ".cache" / "tuning" / "shop.duckdb"
#: Spider questions in the tuning set, and the seed they are drawn with.
TUNING_N = 200
TUNING_SEED = 1
#: Seconds one model call may take.
MODEL_TIMEOUT = 600.0


@dataclass(frozen=True)
class Variant:
    """A first prompt: the schema's representation and the instructions' place."""

    name: str
    representation: Representation
    place: str = "system"


#: The variants, in the order a run takes them (the product's current prompt first).
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("compact", Representation("compact", "columns")),
        Variant("create-rows", Representation("create", "rows")),
        Variant("create-columns", Representation("create", "columns")),
        Variant("create-none", Representation("create", "none")),
        Variant("engine-rows", Representation("engine", "rows")),
        Variant("create-both", Representation("create", "both")),
        Variant("create-rows-user", Representation("create", "rows"), "user"),
        Variant("compact-user", Representation("compact", "columns"), "user"),
        Variant("compact-rows", Representation("compact", "rows")),
        Variant("create-rows-nokeys", Representation("create", "rows", keys=False)),
        Variant("create-rows-nocomments", Representation("create", "rows", comments=False)),
        Variant("engine-rows-nocomments", Representation("engine", "rows", comments=False)),
    )
}
#: The one-shot peer's prompt, run as a variant for reference.
ONESHOT = "oneshot"
#: The variant figures are paired against (the product's prompt before this experiment).
BASELINE = "compact"
#: The variant chosen on the tuning set by the rule written before any figure was seen (most
#: first attempts right of all 235; within 2 questions of it the form rebuilt from the catalog,
#: then fewer tokens; it replaces the baseline only if its paired difference is positive): the
#: product's prompt since (``schema.render.REPRESENTATION``, ``agent.prompts.PLACE``).
CHOSEN = "engine-rows-nocomments"


# --------------------------------------------------------------------------- question sets


def spider() -> Any:
    from benchmarks.eval import spider_dir
    from cadet_magic.eval import load

    return load(spider_dir())


def tuning_questions(n: int = TUNING_N, seed: int = TUNING_SEED) -> list[Question]:
    """Spider dev questions outside the fixed sample, over the databases it covers: ``n``
    drawn with ``seed`` (grouped by database, as the sample is)."""
    from benchmarks.eval import N_QUESTIONS, SEED, questions
    from cadet_magic.eval import sample

    dataset, fixed = questions(N_QUESTIONS, SEED)
    taken = {q.key for q in fixed}
    dbs = {q.db_id for q in fixed}
    rest = [q for q in dataset.questions if q.db_id in dbs and q.key not in taken]
    return sample(rest, n, seed)


def shop_questions() -> list[Question]:
    """The sample shop's questions (``benchmarks/tuning/shop.json``)."""
    from cadet_magic.eval.data import question_of

    records = json.loads(SHOP_QUESTIONS.read_text(encoding="utf-8"))
    return [question_of(r, 10_000 + i) for i, r in enumerate(records)]


def shop_database() -> Path:
    """The sample shop in a DuckDB file (built once)."""
    if not SHOP_DB.is_file():
        from cadet_magic.examples.shop import create_shop

        SHOP_DB.parent.mkdir(parents=True, exist_ok=True)
        create_shop(SHOP_DB).close()
    return SHOP_DB


def question_set(name: str, n: int | None = None) -> tuple[list[Question], dict]:
    """The questions of set ``name`` (``tuning``, ``tuning-spider``, ``shop``, ``fixed``) and
    where each database is."""
    dataset = spider()
    if name == "fixed":
        from benchmarks.eval import N_QUESTIONS, SEED, questions

        chosen = questions(N_QUESTIONS, SEED)[1]
    elif name in ("tuning", "tuning-spider", "shop"):
        chosen = [] if name == "shop" else tuning_questions(n or TUNING_N)
        chosen += shop_questions() if name != "tuning-spider" else []
    else:
        raise ValueError(f"unknown question set {name!r}")
    where = {db: dataset.database(db) for db in {q.db_id for q in chosen} if db != "shop"}
    if any(q.db_id == "shop" for q in chosen):
        where["shop"] = (shop_database(), "duckdb")
    return chosen, where


# --------------------------------------------------------------------------- the first attempt


def catalog(dbs: Databases, db_id: str, cache: dict[str, Any]) -> Any:
    """The schema as the product's runner reads it, with three rows per table and the engine's
    own statements added (a variant shows them or not)."""
    if db_id not in cache:
        from benchmarks.peers_oneshot import engine_tables
        from cadet_magic.schema.sample_rows import read_rows

        db = dbs.get(db_id)
        runner = db.runner()
        con = db.connection()
        schema = read_rows(runner.schema(), lambda sql: con.execute(sql).fetchall(), time_budget=60)
        ddl = {name.lower(): text for name, text in engine_tables(con, db.engine)}
        tables = tuple(
            dataclasses.replace(t, ddl=ddl.get(t.name.lower()) or None) for t in schema.tables
        )
        cache[db_id] = (dataclasses.replace(schema, tables=tables, _index={}), runner.dialect)
    return cache[db_id]


def first_messages(
    variant: Variant, question: str, schema: Any, dialect: str, budget: int | None
) -> list[tuple[str, str]]:
    """The first attempt's messages with ``variant`` (the product's own functions)."""
    from cadet_magic.agent.prompts import build_messages
    from cadet_magic.schema.link import link
    from cadet_magic.schema.render import prompt_representation, with_shown_comments
    from cadet_magic.schema.share import shared_schema

    rep = variant.representation
    shown = with_shown_comments(shared_schema(schema, "samples"), rep)
    text = link(shown, question, budget, prompt_representation(rep)).text
    return build_messages(question, dialect, text, [], "", variant.place)


def answerer(
    variant: str, model: Any, dbs: Databases, budget: int | None
) -> Callable[[Question], Line]:
    from cadet_magic.agent.reply import extract_sql
    from cadet_magic.agent.steps import call_model

    if variant == ONESHOT:
        from benchmarks.peers import oneshot_answerer

        return oneshot_answerer(model, dbs)
    v = VARIANTS[variant]
    cache: dict[str, Any] = {}

    def answer(q: Question) -> Line:
        schema, dialect = catalog(dbs, q.db_id, cache)
        messages = first_messages(v, q.question, schema, dialect, budget)
        elapsed = timer()
        try:
            reply = call_model(model, messages, MODEL_TIMEOUT)
        except Exception as e:  # noqa: BLE001 - the server failed: the question runs again
            return Line(*q.key, error=f"{MODEL_ERROR}: {first_line(str(e), 300)}", calls=1)
        seconds = elapsed()
        sql = extract_sql(reply.text)
        s = score(dbs, q, sql)
        tokens = reply.tokens
        return Line(
            *q.key,
            sql=sql,
            ran=s.ran,
            match=s.match,
            error=s.error,
            calls=1,
            input_tokens=tokens.input if tokens else None,
            output_tokens=tokens.output if tokens else None,
            seconds=seconds,
            reply=reply.text[:REPLY_CHARS],
            extra={"schema_chars": sum(len(text) for _, text in messages)},
        )

    return answer


def results_path(set_name: str, variant: str, out_dir: Path | None = None) -> Path:
    return (out_dir or OUT_DIR) / f"{set_name}.{variant}.jsonl"


def run(
    set_name: str,
    variants: Sequence[str],
    base_url: str | None,
    replies: Path | None = REPLIES,
    budget: int | None = None,
    n: int | None = None,
    out_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Runs (or resumes) each variant's first attempt on the set's questions."""
    chosen, where = question_set(set_name, n)
    run_questions(set_name, chosen, where, variants, base_url, replies, budget, out_dir, progress)


def run_questions(
    set_name: str,
    chosen: Sequence[Question],
    where: dict[str, tuple[Path, str]],
    variants: Sequence[str],
    base_url: str | None,
    replies: Path | None = REPLIES,
    budget: int | None = None,
    out_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> None:
    """:func:`run` on given questions (``where``: each database's file and engine)."""
    from benchmarks.peers import chat_model
    from cadet_magic.options import AskOptions

    budget = AskOptions().schema_budget if budget is None else budget
    dbs = Databases(where)
    try:
        with model_url(base_url, replies, MODEL_TIMEOUT) as url:
            model = chat_model(url, MODEL_TIMEOUT)
            for variant in variants:
                answer = answerer(variant, model, dbs, budget)
                run_set(chosen, results_path(set_name, variant, out_dir), answer, progress)
    finally:
        dbs.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.prompt_tuning", description=__doc__.split("\n")[0]
    )
    p.add_argument("--set", default="tuning", help="tuning, tuning-spider, shop or fixed")
    p.add_argument("--variants", default=",".join(VARIANTS), help="names, comma-separated")
    p.add_argument("--n", type=int, help=f"Spider questions in the tuning set ({TUNING_N})")
    p.add_argument("--budget", type=int, help="schema budget in characters (the product's)")
    p.add_argument("--base-url", help="a running OpenAI-compatible server (default: start one)")
    p.add_argument("--no-shared-replies", action="store_true", help="ask the server every time")
    p.add_argument("--report-only", action="store_true", help="print the figures, run nothing")
    p.add_argument(
        "--write",
        action="store_true",
        help="with --set tuning: write the first_prompt section of BENCHMARKS.md (the tuning "
        "figures, the choice and the chosen prompt on the fixed sample); runs nothing",
    )
    args = p.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS and v != ONESHOT]
    if unknown:
        p.error(f"unknown variants: {', '.join(unknown)} (known: {', '.join(VARIANTS)}, oneshot)")
    if not (args.report_only or args.write):
        run(
            args.set,
            variants,
            args.base_url,
            None if args.no_shared_replies else REPLIES,
            args.budget,
            args.n,
            progress=lambda s: print(s, file=sys.stderr, flush=True),
        )
    from benchmarks.prompt_report import report, write_report

    if args.write and args.set == "tuning":
        from benchmarks.eval import OUT_DIR as EVAL_DIR

        write_report(CHOSEN, EVAL_DIR / "before-36", EVAL_DIR)
    else:
        print(report(args.set, args.n))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted: the same command resumes the run.", file=sys.stderr)
        sys.exit(130)
