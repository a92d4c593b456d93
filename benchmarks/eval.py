"""``python -m benchmarks.eval``: the agent with the real local model on Spider dev: the
reference run of the shipped defaults.

The fixed sample (:mod:`benchmarks.sample`: 300 Spider dev questions, seed 0, over every
database that has a file) runs through :func:`cadet_magic.eval.evaluate` with the product's
default options (``AskOptions()``: the vote of ``CANDIDATES_DEFAULT`` candidates included) in
the three feedback modes (``targeted``, the default, then ``raw`` and ``none``), each question
in every mode before the next and the questions grouped by database (the model server caches
the prompt prefix). The run is the **reference run**, ``benchmarks/eval/reference/``:
``spider.MODE.jsonl`` per mode and ``run.json``, which records the options, the commit, the
model file's SHA-256 and the checksum of the Spider dev files the run read (:func:`run_record`).

A run replaces the reference run (its files are removed first), unless the reference run is the
same run, interrupted: the same questions, modes, options, model file, data and product (the
package's git tree, :func:`benchmarks.report.product_tree`): then it resumes from its files and
``run.json`` adds the start. At the end (or with ``--report-only`` at any time, from what the
files hold) the page of figures is written with n, the machine, the load average and the chart
``benchmarks/eval/reference/spider.svg``. A run elsewhere (``--out-dir``, outside
``benchmarks/eval/``: a change measured before it lands, the tuning set) keeps the same files
there and leaves the pages alone.

The model is the project's local one (``scripts/setup_llm.sh``) served by
:func:`workloads.llm.llm_server` unless ``--base-url`` names a running server. The modes share
the model's replies to identical requests (:class:`benchmarks.reply_cache.ReplyCache`, kept in
``.cache/eval-replies.jsonl``): the first attempt's request is the same in every mode, so the
three modes start from one reply and differ only in what follows it (``--no-shared-replies``
asks the server every time).

Run it in the background, it takes hours on 2 cores::

    setsid nohup nice -n 10 .venv/bin/python -m benchmarks.eval >> .cache/eval.log 2>&1 < /dev/null &
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import hashlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.peers_report import write_report as write_peers
from benchmarks.reply_cache import ReplyCache
from benchmarks.report import (
    PAGES_DIR,
    ROOT,
    Row,
    Stamp,
    commit,
    load_average,
    machine,
    product_tree,
    row,
    shown,
    versions,
    write_page,
)
from benchmarks.sample import MODES, N_QUESTIONS, REFERENCE, SEED, spider_dir
from benchmarks.sample import questions as _questions

__all__ = ["MODES", "N_QUESTIONS", "REFERENCE", "SEED", "main", "questions", "spider_dir"]

#: Where the results files, ``run.json`` and the chart go (the reference run).
OUT_DIR = REFERENCE
#: The run's record, beside its results files.
RUN_FILE = "run.json"
#: Seconds one model call may take (the machine is shared: calls are slow under load).
MODEL_TIMEOUT = 600.0
#: Load average (1 min) above which figures of time are marked as taken under load.
LOADED = 1.5
#: The model's replies, shared between the modes and kept across interrupted runs.
REPLIES = ROOT / ".cache" / "eval-replies.jsonl"
#: The model spec the product is given, and how the report names it.
MODEL = "openai:qwen"
MODEL_LABEL = f"{MODEL} (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama-cpp-python server, 2 threads)"
#: The command that starts (and resumes) the run, as the page gives it.
COMMAND = "setsid nohup nice -n 10 .venv/bin/python -m benchmarks.eval >> .cache/eval.log 2>&1 < /dev/null &"
#: The evaluation's page (its chart is linked from there).
PAGE = PAGES_DIR / "eval.md"
#: The vote's warnings' budgets: the share of the wrong answers given that carry one at least,
#: of the right ones at most (targeted mode, the shipped defaults).
WARNED_WRONG = 0.50
WARNED_RIGHT = 0.15
#: What makes two runs the same run (a start with the same values resumes the run).
IDENTITY = ("questions", "modes", "model", "options", "data", "product", "shared_replies")
#: The files of a run, removed when a new run replaces it.
RUN_FILES = ("spider.*.jsonl", "spider.jsonl", "spider.svg", "runs.log", RUN_FILE)


def questions(
    n: int = N_QUESTIONS, seed: int = SEED, limit: int | None = None, question_set: str = "fixed"
) -> tuple[object, list]:
    """The data set and the questions a run asks (:func:`benchmarks.sample.questions`)."""
    return _questions(n, seed, limit, question_set)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def data_record(dataset: Any, chosen: Sequence[Any]) -> dict[str, Any]:
    """The Spider dev files a run reads (the questions file and the sample's databases), each
    with its SHA-256 and named relative to ``CADET_DATA``, and their checksum: the SHA-256 of
    the lines ``SHA256  NAME`` in name order."""
    files = [Path(dataset.questions_file)]
    files += sorted({Path(dataset.database(q.db_id)[0]) for q in chosen})
    sums = {shown(f): sha256_file(f) for f in files}
    manifest = "".join(f"{sums[name]}  {name}\n" for name in sorted(sums))
    return {
        "folder": shown(spider_dir()),
        "sha256": hashlib.sha256(manifest.encode("utf-8")).hexdigest(),
        "files": dict(sorted(sums.items())),
    }


def model_record(base_url: str | None) -> dict[str, Any]:
    """The model a run asks: the file the local server serves, with its SHA-256 (None when
    ``--base-url`` names a server whose file this run cannot see)."""
    from cadet_magic.local.pin import PIN

    record: dict[str, Any] = {"spec": MODEL, "name": PIN.name, "temperature": 0.0}
    if base_url:
        return record | {"served": "by the server --base-url named", "sha256": None}
    from workloads.llm import model_path

    path = model_path()
    digest = sha256_file(path)
    pinned = "the pinned file" if digest == PIN.sha256 else "not the pinned file"
    return record | {"served": f"llama-cpp-python's server, {pinned}", "sha256": digest}


def options_record(options: Any) -> dict[str, Any]:
    """The options every question runs with, the vote's size resolved as the product resolves
    it for a model that samples (the feedback is set per mode)."""
    import dataclasses

    from cadet_magic.vote.default_size import candidates_for

    resolved = candidates_for(options, stand_in=False)
    secret = {f.name for f in dataclasses.fields(resolved) if f.metadata.get("secret")}
    return {
        f.name: getattr(resolved, f.name)
        for f in dataclasses.fields(resolved)
        if f.name not in secret and f.name != "feedback"
    }


def run_record(
    dataset: Any,
    chosen: Sequence[Any],
    *,
    question_set: str,
    n: int,
    seed: int,
    limit: int | None,
    skip: int,
    modes: Sequence[str],
    options: Any,
    base_url: str | None,
    shared: bool,
) -> dict[str, Any]:
    """``run.json``: what the run asks, with what, on which product and data."""
    return {
        "command": "python -m benchmarks.eval",
        "questions": {
            "set": question_set,
            "n": n,
            "seed": seed,
            "limit": limit,
            "skip": skip,
            "asked": len(chosen),
        },
        "modes": list(modes),
        "options": options_record(options),
        "model": model_record(base_url),
        "data": data_record(dataset, chosen),
        "commit": commit(),
        "product": product_tree(),
        "shared_replies": shared,
        "starts": [],
    }


def read_run(out_dir: Path) -> dict[str, Any] | None:
    path = out_dir / RUN_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def begin(out_dir: Path, record: dict[str, Any]) -> str:
    """Writes ``run.json`` for a start: the run in ``out_dir`` resumes when it is the same
    run (:data:`IDENTITY`), else its files are removed and this run replaces it. Says which."""
    old = read_run(out_dir)
    same = old is not None and all(old.get(k) == record.get(k) for k in IDENTITY)
    if same:
        assert old is not None
        record = old
    elif out_dir.is_dir():
        for pattern in RUN_FILES:
            for path in out_dir.glob(pattern):
                path.unlink()
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    record["starts"] = [
        *record.get("starts", []),
        {"time": stamp, "commit": commit(), "load_average": load_average()},
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / RUN_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if same:
        return f"resumes the run in {shown(out_dir)} (started {record['starts'][0]['time']})"
    return f"starts a run in {shown(out_dir)}" + (" (replacing the one there)" if old else "")


@contextlib.contextmanager
def server(base_url: str | None, shared: bool = True) -> Iterator[str]:
    """The model server's base URL (started here unless ``base_url`` names one), behind the
    reply cache when ``shared``."""
    with contextlib.ExitStack() as stack:
        if not base_url:
            from workloads.llm import llm_server

            base_url = stack.enter_context(llm_server(timeout=600.0))
        if shared:
            REPLIES.parent.mkdir(parents=True, exist_ok=True)
            cache = stack.enter_context(ReplyCache(base_url, REPLIES, timeout=MODEL_TIMEOUT))
            stack.callback(
                lambda: print(
                    f"model replies: {cache.misses} asked, {cache.hits} shared", flush=True
                )
            )
            base_url = cache.base_url
        yield base_url


def starts(out_dir: Path | None = None) -> list[dict[str, str]]:
    """The run's starts (time, commit, load average), from its ``run.json``."""
    run = read_run(out_dir or OUT_DIR)
    return list(run.get("starts", [])) if run else []


def section(evaluation: object, planned: int, loads: Sequence[str], databases: int = 0) -> str:
    """The page's body (``databases``: how many the sample covers)."""
    runs = evaluation.runs  # type: ignore[attr-defined]
    done = {m: len(r.records) for m, r in runs.items()}
    partial = any(n < planned for n in done.values())
    covered = len({r["db_id"] for run in runs.values() for r in run.records})
    run = read_run(OUT_DIR) or {}
    commits = list(dict.fromkeys(s["commit"] for s in run.get("starts", [])))
    peak = max((float(x.split()[0]) for x in loads if x), default=0.0)
    options = run.get("options", {})
    lines = [
        (
            f"**Partial run: {', '.join(f'{m} {n}' for m, n in done.items())} of the {planned} "
            f"questions done, from {covered} of the sample's {databases} databases** (the "
            "questions run grouped by database); the run resumes (command below), figures "
            "will move."
            if partial
            else f"All {planned} questions done in every mode."
        ),
        "",
        f"Command (starts, resumes or replaces the run; results in "
        f"`{shown(OUT_DIR)}/spider.MODE.jsonl` and `run.json`, log in `.cache/eval.log`): "
        f"`{COMMAND}`. Figures from the files at any time: "
        "`.venv/bin/python -m benchmarks.eval --report-only`.",
        "",
        f"The run (`{shown(OUT_DIR / RUN_FILE)}`): the product's default options "
        f"(candidates {options.get('candidates', '?')}, max_attempts "
        f"{options.get('max_attempts', '?')}, model_timeout {options.get('model_timeout', '?')} s); "
        f"commit {run.get('commit', 'unknown')}"
        + (
            f" (starts at {', '.join(commits)})"
            if commits and commits != [run.get("commit")]
            else ""
        )
        + f"; model file SHA-256 {(run.get('model') or {}).get('sha256') or 'not recorded'}; "
        f"Spider dev files' checksum {(run.get('data') or {}).get('sha256') or 'not recorded'}."
        + (f" {run['note']}" if run.get("note") else ""),
        "",
        f"Load average (1, 5, 15 min) at the starts and now: {'; '.join(loads)}."
        + (
            " **Taken under load** (the 2-core machine was shared with other developers' "
            "tests): the seconds per question are not the product's speed on an idle machine; "
            "the accuracies do not depend on the load (temperature 0), except where a call hit "
            'the model timeout (counted under "could not run").'
            if peak > LOADED
            else ""
        ),
        "",
        "The modes share the model's replies (`benchmarks/reply_cache.py`): the first "
        "attempt's request is identical in the three modes, so they start from one reply. So "
        "the raw and none modes' seconds per question leave out that shared call; the targeted "
        "mode, which runs first, pays for it. Replies already in the store come back at once: "
        "the seconds of a run that took them from there are not the product's "
        "(`python -m benchmarks.vote_seconds` measures them without the store).",
        "",
        evaluation.summary,  # type: ignore[attr-defined]
    ]
    return "\n".join(lines)


def report_only(
    n: int,
    seed: int,
    modes: Sequence[str],
    model: str = MODEL_LABEL,
    limit: int | None = None,
    question_set: str = "fixed",
) -> object:
    """The figures of what the results files hold (no model is called)."""
    from cadet_magic.eval.evaluation import Evaluation, ModeRun, mode_path, read_results
    from cadet_magic.eval.report import summary_markdown, write_chart

    dataset, chosen = questions(n, seed, limit, question_set)
    runs = {}
    for m in modes:
        path = mode_path(OUT_DIR / "spider.jsonl", m, True)
        done = read_results(path)
        runs[m] = ModeRun(m, path, [done[q.key] for q in chosen if q.key in done])
    evaluation = Evaluation(
        model=model,
        temperature=0.0,
        data=str(dataset.questions_file),  # type: ignore[attr-defined]
        questions=len(chosen),
        seed=seed,
        scripted=False,
        runs=runs,
    )
    write_chart(evaluation, OUT_DIR / "spider.svg")
    evaluation.summary = summary_markdown(
        evaluation, chart=Path(os.path.relpath(OUT_DIR / "spider.svg", PAGE.parent))
    )
    return evaluation


def figures(evaluation: Any, stamp: Stamp | None = None) -> list[Row]:
    """The rows of BENCHMARKS.md from the targeted mode (the product's default): the shares
    of the wrong and of the right answers given that carry a warning."""
    from cadet_magic.eval.figures import figures as mode_figures
    from cadet_magic.eval.significance import wilson

    run = evaluation.runs.get("targeted")
    if run is None:
        return []
    f = mode_figures(run.records)
    wrong, warned_wrong = f.answered_wrong, f.warned_wrong
    right, warned_right = f.answered - f.answered_wrong, f.warned - f.warned_wrong

    def share(k: int, n: int) -> str:
        low, high = wilson(k, n)
        return f"{k}/{n} ({k / n:.0%}, 95% CI {low:.0%}-{high:.0%})" if n else "none"

    command = "python -m benchmarks.eval"
    return [
        row(
            "Spider dev, shipped defaults: wrong answers that carry a warning",
            share(warned_wrong, wrong),
            f"≥ {WARNED_WRONG:.0%}",
            bool(wrong) and warned_wrong / wrong >= WARNED_WRONG,
            command,
            stamp,
        ),
        row(
            "Spider dev, shipped defaults: right answers that carry a warning",
            share(warned_right, right),
            f"≤ {WARNED_RIGHT:.0%}",
            bool(right) and warned_right / right <= WARNED_RIGHT,
            command,
            stamp,
        ),
    ]


def results_out(modes: Sequence[str]) -> Path:
    """What the run passes to ``evaluate`` as ``out``: for several modes the name their files
    are made from, for one mode that mode's own file, so that a run of one mode resumes and
    reports from the file ``--report-only`` reads (``spider.MODE.jsonl``) whatever modes ran."""
    from cadet_magic.eval.evaluation import mode_path

    base = OUT_DIR / "spider.jsonl"
    if len(modes) > 1:
        return base
    one = mode_path(base, modes[0], True)
    assert one is not None
    return one


def main(argv: Sequence[str] | None = None) -> int:
    global OUT_DIR
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.eval", description=__doc__.split("\n")[0]
    )
    p.add_argument("--n", type=int, default=N_QUESTIONS, help=f"questions ({N_QUESTIONS})")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument(
        "--limit",
        type=int,
        help="only the first K questions of the fixed sample (a stable prefix)",
    )
    p.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the sample's first K questions (a run split between two processes, "
        "each with its own --out-dir; their files are joined after)",
    )
    p.add_argument(
        "--set",
        default="fixed",
        dest="question_set",
        help="fixed (the sample the figures are reported on) or tuning (the Spider tuning "
        "questions, with --out-dir)",
    )
    p.add_argument("--feedback", default=",".join(MODES))
    p.add_argument("--base-url", help="a running OpenAI-compatible server (default: start one)")
    p.add_argument("--model-timeout", type=float, default=MODEL_TIMEOUT)
    p.add_argument(
        "--candidates",
        type=int,
        help="candidate answers that vote (default: the product's, AskOptions.candidates)",
    )
    p.add_argument(
        "--no-shared-replies",
        action="store_true",
        help="ask the server every time (by default identical requests share one reply)",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="write the page from the results files, run nothing",
    )
    p.add_argument("--no-write", action="store_true", help="print the figures, write no page")
    p.add_argument(
        "--out-dir",
        type=Path,
        help="results folder instead of the reference run's, outside benchmarks/eval "
        "(e.g. .cache/eval/NAME); the pages are left alone",
    )
    args = p.parse_args(argv)
    if args.out_dir is not None:
        inside = args.out_dir.resolve()
        if REFERENCE.parent.resolve() in (inside, *inside.parents) and inside != REFERENCE:
            p.error(
                "--out-dir must be outside benchmarks/eval (it holds the reference run only; "
                "use e.g. .cache/eval/NAME)"
            )
    elif args.skip:
        p.error("--skip needs --out-dir (the reference run holds whole runs)")
    elif args.question_set != "fixed":
        p.error("--set tuning needs --out-dir (the reference run holds the fixed sample)")
    if args.out_dir is not None:
        OUT_DIR = args.out_dir
    write = not args.no_write and OUT_DIR.resolve() == REFERENCE.resolve()
    from cadet_magic.eval import evaluate
    from cadet_magic.eval.evaluation import _modes
    from cadet_magic.options import AskOptions

    modes = _modes(args.feedback)
    loads = [s["load_average"] for s in starts()]
    if args.report_only:
        evaluation = report_only(
            args.n, args.seed, modes, MODEL_LABEL, args.limit, args.question_set
        )
    else:
        options = AskOptions(model_timeout=args.model_timeout)
        if args.candidates is not None:
            options = options.replace(candidates=args.candidates)
        dataset, chosen = questions(args.n, args.seed, args.limit, args.question_set)
        chosen = chosen[args.skip :]
        shared = not args.no_shared_replies
        with server(args.base_url, shared=shared) as url:
            record = run_record(
                dataset,
                chosen,
                question_set=args.question_set,
                n=args.n,
                seed=args.seed,
                limit=args.limit,
                skip=args.skip,
                modes=modes,
                options=options,
                base_url=args.base_url,
                shared=shared,
            )
            print(f"benchmarks.eval {begin(OUT_DIR, record)}", flush=True)
            loads = [s["load_average"] for s in starts()]
            evaluation = evaluate(
                dataset,  # type: ignore[arg-type]
                MODEL,
                base_url=url,
                api_key="local",
                feedback=modes,
                out=results_out(modes),
                questions=chosen,
                temperature=0.0,
                options=options,
                progress=sys.stderr,
                print_summary=False,
            )
        evaluation = report_only(
            args.n, args.seed, modes, MODEL_LABEL, args.limit, args.question_set
        )
    loads = [*loads[-6:], f"{load_average()} (now)"]
    print(f"load average: {load_average()}")
    databases = len({q.db_id for q in questions(args.n, args.seed, None, args.question_set)[1]})
    planned = args.n if args.limit is None else min(args.limit, args.n)
    body = section(evaluation, planned, loads, databases)
    if write:
        run = read_run(OUT_DIR) or {}
        write_page(
            "eval",
            f"Real local model on Spider dev: the reference run of the shipped defaults "
            f"({args.n} questions)",
            body,
            figures(evaluation, Stamp.of_run(run) if run else None),
            packages=("llama_cpp_python", "sqlglot", "langchain-openai"),
            measured=not args.report_only,
        )
        write_peers(questions(args.n, args.seed)[1], measured=False)
    else:
        print(body)
    print(f"machine: {machine()}; {versions('llama_cpp_python')}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted: the same command resumes the run.", file=sys.stderr)
        sys.exit(130)
