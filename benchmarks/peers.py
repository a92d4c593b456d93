"""``python -m benchmarks.peers``: the product beside the approaches a new user would try, on the
evaluation's fixed sample with the same local model and the same match rule.

The peers, each run on the 300 questions of ``benchmarks.eval`` (Spider dev, seed 0):

- ``oneshot``: the prompt text-to-SQL papers use (every ``CREATE TABLE`` statement, three rows
  per table, the question; one call, no retry), :mod:`benchmarks.peers_oneshot`;
- ``chain``: LangChain's ``create_sql_query_chain`` over ``SQLDatabase``, as its documentation
  teaches it; its output run as returned, and its SQL taken out of the reply;
- ``agent``: LangChain's SQL agent (``create_sql_agent`` with ``SQLDatabaseToolkit``), scored by
  the SQL of its last query call that ran (:mod:`benchmarks.peers_langchain`);
- the product's ``raw`` and ``none`` modes, from the evaluation's reference run
  (``benchmarks/eval/reference/spider.MODE.jsonl``).

Each is paired with the product's final answers in targeted mode on the same questions (gained
and lost questions, the paired bootstrap interval, McNemar's test), with its model calls,
tokens and seconds per question. Results go to ``benchmarks/peers/spider.PEER.jsonl`` (kept in
the repository); an interrupted run resumes from them. The model's replies are kept in the
evaluation's reply store (:data:`benchmarks.peer_runs.REPLIES`).

Run it in the background (hours on 2 cores)::

    setsid nohup .venv/bin/python -m benchmarks.peers >> .cache/peers.log 2>&1 < /dev/null &
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import peers_langchain, peers_oneshot
from benchmarks.peer_runs import (
    MODEL_ERROR,
    REPLIES,
    Databases,
    Line,
    model_url,
    run_set,
    score,
    timer,
)
from benchmarks.peers_report import COMMAND, write_report
from benchmarks.peers_report import PEERS_DIR as OUT_DIR
from benchmarks.sample import N_QUESTIONS, SEED, questions
from cadet_magic.eval.data import Question
from cadet_magic.text import first_line

__all__ = ["COMMAND", "OUT_DIR", "PEERS", "main", "run"]
#: The peers this module runs, in the order they run and are shown.
PEERS = ("oneshot", "chain", "agent")
#: The product's modes read from the evaluation's results files.
PRODUCT_MODES = ("raw", "none")
#: Seconds one model call may take.
MODEL_TIMEOUT = 600.0


def results_path(peer: str, out_dir: Path | None = None) -> Path:
    return (out_dir or OUT_DIR) / f"spider.{peer}.jsonl"


def chat_model(base_url: str, timeout: float = MODEL_TIMEOUT) -> Any:
    """The local model as the product loads it (``openai:qwen``, temperature 0)."""
    from cadet_magic.llm import load_model

    return load_model(
        "openai:qwen", base_url=base_url, api_key="local", timeout=timeout, temperature=0.0
    )


def oneshot_answerer(model: Any, dbs: Databases) -> Callable[[Question], Line]:
    schemas: dict[str, str] = {}

    def answer(q: Question) -> Line:
        elapsed = timer()
        db = dbs.get(q.db_id)
        try:
            got = peers_oneshot.answer(model, q, db.connection(), db.engine, schemas)
        except Exception as e:  # noqa: BLE001 - the model's server failed: runs again later
            return Line(*q.key, error=f"{MODEL_ERROR}: {first_line(str(e), 300)}", calls=1)
        seconds = elapsed()
        s = score(dbs, q, got["sql"])
        return Line(
            *q.key,
            sql=got["sql"],
            ran=s.ran,
            match=s.match,
            error=s.error,
            calls=got["calls"],
            input_tokens=got["input_tokens"],
            output_tokens=got["output_tokens"],
            seconds=seconds,
            reply=got["reply"][:4000],
        )

    return answer


def answerer(peer: str, model: Any, dbs: Databases, base_url: str) -> Callable[[Question], Line]:
    if peer == "oneshot":
        return oneshot_answerer(model, dbs)

    if peer == "chain":
        return peers_langchain.chain_answerer(model, dbs)
    if peer.startswith("agent"):
        return peers_langchain.agent_answerer(model, dbs, tools=peer == "agent-tools")
    raise ValueError(f"unknown peer {peer!r}")


def fixed_sample(limit: int | None = None) -> tuple[Any, list[Question]]:
    """The evaluation's dataset and fixed sample (its first ``limit`` questions)."""
    return questions(N_QUESTIONS, SEED, limit)


def places(dataset: Any, chosen: Sequence[Question]) -> dict[str, tuple[Path, str]]:
    return {db: dataset.database(db) for db in {q.db_id for q in chosen}}


def run(
    peers: Sequence[str],
    chosen: Sequence[Question],
    where: dict[str, tuple[Path, str]],
    base_url: str | None,
    replies: Path | None,
    out_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Runs (or resumes) each peer on ``chosen``."""
    dbs = Databases(where)
    try:
        with model_url(base_url, replies, MODEL_TIMEOUT) as url:
            model = chat_model(url)
            for peer in peers:
                run_set(
                    chosen, results_path(peer, out_dir), answerer(peer, model, dbs, url), progress
                )
    finally:
        dbs.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.peers", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "--peers", default=",".join(PEERS), help=f"which to run ({','.join(PEERS)}, agent-tools)"
    )
    p.add_argument("--limit", type=int, help="only the first K questions of the fixed sample")
    p.add_argument("--base-url", help="a running OpenAI-compatible server (default: start one)")
    p.add_argument("--no-shared-replies", action="store_true", help="ask the server every time")
    p.add_argument("--report-only", action="store_true", help="write the section, run nothing")
    p.add_argument("--no-write", action="store_true", help="print the figures, write no page")
    args = p.parse_args(argv)
    peers = [x.strip() for x in args.peers.split(",") if x.strip()]
    dataset, chosen = fixed_sample(args.limit)
    if not args.report_only:
        run(
            peers,
            chosen,
            places(dataset, chosen),
            args.base_url,
            None if args.no_shared_replies else REPLIES,
            progress=lambda s: print(s, file=sys.stderr, flush=True),
        )
    write_report(fixed_sample()[1], write=not args.no_write, measured=not args.report_only)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted: the same command resumes the run.", file=sys.stderr)
        sys.exit(130)
