"""``python -m benchmarks.eval``: the agent with the real local model on Spider dev.

A fixed sample (seed 0) of :data:`N_QUESTIONS` Spider dev questions over every database that
has a file, run through :func:`cadet_magic.eval.evaluate` in the three feedback modes
(``targeted``, ``raw``, ``none``), each question in every mode before the next and the
questions grouped by database (the model server caches the prompt prefix). Results go to
``benchmarks/eval/spider.MODE.jsonl`` (kept in the repository, so later changes are measured
on the same questions); an interrupted run resumes from them with the same command. Each start
appends its time, git commit and load average to ``benchmarks/eval/runs.log``. At the end (or
with ``--report-only`` at any time, from what the files hold) the section of BENCHMARKS.md is
written with n, the machine, the load average and the chart ``benchmarks/eval/spider.svg``.

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
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from benchmarks.report import ROOT, machine, versions, write_section

#: Questions in the sample.
N_QUESTIONS = 300
#: The sample's seed.
SEED = 0
#: Where the results files, the run log and the chart go.
OUT_DIR = Path(__file__).resolve().parent / "eval"
#: Seconds one model call may take (the machine is shared: calls are slow under load).
MODEL_TIMEOUT = 600.0
#: Load average (1 min) above which figures of time are marked as taken under load.
LOADED = 1.5
#: The model's replies, shared between the modes and kept across interrupted runs.
REPLIES = ROOT / ".cache" / "eval-replies.jsonl"
#: The command that starts (and resumes) the run, as BENCHMARKS.md gives it.
COMMAND = "setsid nohup nice -n 10 .venv/bin/python -m benchmarks.eval >> .cache/eval.log 2>&1 < /dev/null &"


def spider_dir() -> Path:
    """Spider dev, in the public data sets' folder (``$CADET_DATA``: see workloads.gold)."""
    from workloads.gold import DATA

    return DATA / "spider-dev"


def commit() -> str:
    """The git commit the run uses (``+dirty`` when the tree has changes)."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "cadet_magic"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def questions(
    n: int, seed: int, limit: int | None = None, question_set: str = "fixed"
) -> tuple[object, list]:
    """The data set and its fixed sample (databases without a file are left out); ``limit``:
    only the sample's first questions, in its running order (a stable prefix: the same
    questions before and after a change). ``question_set`` ``"tuning"``: the prompt
    experiment's Spider tuning questions instead (outside the fixed sample: where a change to
    the agent is chosen before the fixed sample measures it)."""
    from cadet_magic.eval import load, sample

    dataset = load(spider_dir())
    if question_set == "tuning":
        from benchmarks.prompt_tuning import tuning_questions

        chosen = tuning_questions()
    elif question_set == "fixed":
        have = dataset.available()
        chosen = sample([q for q in dataset.questions if q.db_id in have], n, seed)
    else:
        raise ValueError(f"unknown question set {question_set!r} (fixed or tuning)")
    return dataset, chosen[:limit] if limit is not None else chosen


@contextlib.contextmanager
def server(base_url: str | None, shared: bool = True) -> Iterator[str]:
    """The model server's base URL (started here unless ``base_url`` names one), behind the
    reply cache when ``shared``."""
    with contextlib.ExitStack() as stack:
        if not base_url:
            from workloads.llm import llm_server

            base_url = stack.enter_context(llm_server(timeout=600.0))
        if shared:
            from benchmarks.reply_cache import ReplyCache

            REPLIES.parent.mkdir(parents=True, exist_ok=True)
            cache = stack.enter_context(ReplyCache(base_url, REPLIES, timeout=MODEL_TIMEOUT))
            stack.callback(
                lambda: print(
                    f"model replies: {cache.misses} asked, {cache.hits} shared", flush=True
                )
            )
            base_url = cache.base_url
        yield base_url


def log_start(
    n: int, seed: int, modes: Sequence[str], limit: int | None = None, candidates: int | str = 1
) -> str:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    line = (
        f"{stamp} start: commit {commit()}, n={n}{f', limit={limit}' if limit else ''}, "
        f"seed={seed}, modes={','.join(modes)}, candidates={candidates}, "
        f"load average {load_average()}"
    )
    with (OUT_DIR / "runs.log").open("a", encoding="utf-8") as f:
        f.write(line + "\n")
    return line


def runs_log() -> list[str]:
    path = OUT_DIR / "runs.log"
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []


def section(evaluation: object, planned: int, loads: Sequence[str], databases: int = 0) -> str:
    """The BENCHMARKS.md section's body (``databases``: how many the sample covers)."""
    runs = evaluation.runs  # type: ignore[attr-defined]
    done = {m: len(r.records) for m, r in runs.items()}
    partial = any(n < planned for n in done.values())
    covered = len({r["db_id"] for run in runs.values() for r in run.records})
    commits = sorted(
        {ln.split("commit ", 1)[1].split(",", 1)[0] for ln in runs_log() if "commit " in ln}
    )
    peak = max((float(x.split()[0]) for x in loads if x), default=0.0)
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
        f"Command (starts and resumes the run; results in `benchmarks/eval/spider.MODE.jsonl`, "
        f"log in `.cache/eval.log`): `{COMMAND}`. Figures from the files at any time: "
        "`.venv/bin/python -m benchmarks.eval --report-only`.",
        "",
        f"Commits the run used: {', '.join(commits) or 'unknown'} (`benchmarks/eval/runs.log`). "
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
        "Runs started from 2026-11-25 03:03 UTC on share the model's replies between modes "
        "(`benchmarks/reply_cache.py`): the first attempt's request is identical in the three "
        "modes, so they start from one reply (before, each mode asked the server, whose reply "
        "at temperature 0 differed between modes for 7 of the first 52 questions, by its "
        "floating-point noise). So the raw and none modes' seconds per question leave out that "
        "shared call; the targeted mode, which runs first, pays for it: its seconds are the "
        "product's.",
        "",
        evaluation.summary,  # type: ignore[attr-defined]
    ]
    return "\n".join(lines)


def report_only(
    n: int,
    seed: int,
    modes: Sequence[str],
    model: str,
    limit: int | None = None,
    question_set: str = "fixed",
) -> object:
    """The figures of what the results files hold (no model is called)."""
    from cadet_magic.eval.report import summary_markdown, write_chart
    from cadet_magic.eval.run import Evaluation, ModeRun, mode_path, read_results

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
        evaluation, chart=OUT_DIR / "spider.svg", relative_to=ROOT / "BENCHMARKS.md"
    )
    return evaluation


def results_out(modes: Sequence[str]) -> Path:
    """What the run passes to ``evaluate`` as ``out``: for several modes the name their files
    are made from, for one mode that mode's own file, so that a run of one mode resumes and
    reports from the file ``--report-only`` reads (``spider.MODE.jsonl``) whatever modes ran."""
    from cadet_magic.eval.run import mode_path

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
        "each with its own --out-dir and --no-write; their files are joined after)",
    )
    p.add_argument(
        "--set",
        default="fixed",
        dest="question_set",
        help="fixed (the sample the figures are reported on) or tuning (the prompt "
        "experiment's Spider tuning questions, with --out-dir and --no-write)",
    )
    p.add_argument("--feedback", default="targeted,raw,none")
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
        help="write the section from the results files, run nothing",
    )
    p.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    p.add_argument("--out-dir", type=Path, help="results folder (default benchmarks/eval)")
    args = p.parse_args(argv)
    if args.skip and (args.out_dir is None or not args.no_write):
        p.error("--skip needs --out-dir and --no-write (the fixed sample's files stay)")
    if args.question_set != "fixed" and (args.out_dir is None or not args.no_write):
        p.error("--set tuning needs --out-dir and --no-write (the fixed sample's files stay)")
    if args.out_dir is not None:
        OUT_DIR = args.out_dir
    from cadet_magic.eval import evaluate
    from cadet_magic.eval.run import _modes
    from cadet_magic.options import AskOptions

    modes = _modes(args.feedback)
    model = "openai:qwen"
    label = f"{model} (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama-cpp-python server, 2 threads)"
    starts = [ln.rsplit("load average ", 1)[1] for ln in runs_log() if "load average " in ln]
    if args.report_only:
        evaluation = report_only(args.n, args.seed, modes, label, args.limit, args.question_set)
    else:
        options = AskOptions(model_timeout=args.model_timeout)
        if args.candidates is not None:
            options = options.replace(candidates=args.candidates)
        print(
            log_start(args.n, args.seed, modes, args.limit, options.candidates or "default"),
            flush=True,
        )
        starts.append(load_average())
        dataset, chosen = questions(args.n, args.seed, args.limit, args.question_set)
        chosen = chosen[args.skip :]
        with server(args.base_url, shared=not args.no_shared_replies) as url:
            evaluation = evaluate(
                dataset,  # type: ignore[arg-type]
                model,
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
        evaluation = report_only(args.n, args.seed, modes, label, args.limit, args.question_set)
    loads = [*starts[-6:], f"{load_average()} (now)"]
    print(f"load average: {load_average()}")
    databases = len({q.db_id for q in questions(args.n, args.seed, None, args.question_set)[1]})
    planned = args.n if args.limit is None else min(args.limit, args.n)
    body = section(evaluation, planned, loads, databases)
    if args.no_write:
        print(body)
    else:
        write_section(
            "eval_spider",
            f"Real local model on Spider dev: accuracy by feedback mode ({args.n} questions)",
            body,
            packages=("llama_cpp_python", "sqlglot", "langchain-openai"),
        )
    print(f"machine: {machine()}; {versions('llama_cpp_python')}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted: the same command resumes the run.", file=sys.stderr)
        sys.exit(130)
