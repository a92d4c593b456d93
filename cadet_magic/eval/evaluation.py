"""The evaluation loop: every question through :func:`cadet_magic.ask` as a user's would be,
its answer compared with the gold query's, one JSON line per question as it finishes.

Each question runs with the user's options (fallback on, the result check on) on a read-only
connection to its database; the model is loaded once from its spec with a pinned temperature.
Feedback modes: ``targeted`` (the product), ``raw`` (a retry sees only the error text),
``none`` (one attempt, in the SQL phase and in the fallback). With several modes, each
question runs in every mode before the next question (so a model server's prompt cache keeps
the database's schema), and each mode writes its own file.

A results file is appended to, one line per finished question, flushed at once; a rerun with
the same file skips the questions it holds (the last line of a question counts), except those
that could not run because the model could not be called, which run again.

This module is the loop; the rows it compares are read in :mod:`cadet_magic.eval.rows`, the
results lines written and read back in :mod:`cadet_magic.eval.results`, the progress line
drawn by :mod:`cadet_magic.eval.progress_line`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cadet_magic.api import ask
from cadet_magic.errors import CadetError, ConfigurationError
from cadet_magic.eval.data import Dataset, Question, load, sample
from cadet_magic.eval.progress_line import Progress
from cadet_magic.eval.results import (  # noqa: F401 - the results-file names stay importable here
    KEYS,
    MODEL_ERROR,
    append,
    error_line,
    finished,
    mode_path,
    read_results,
    record_of,
)
from cadet_magic.eval.rows import (  # noqa: F401 - importable here
    COMPARE_ROWS,
    Database,
    GoldRefused,
    gold_rows,
)
from cadet_magic.eval.usage import Usage, usage_of
from cadet_magic.llm import is_scripted, load_model, model_label
from cadet_magic.metrics import SessionMetrics
from cadet_magic.options import AskOptions
from cadet_magic.result import AskResult
from cadet_magic.sql.dialect import dialect_of
from cadet_magic.text import first_line
from cadet_magic.vote.execution_match import has_outer_order

#: The feedback modes, in the order they run and are shown.
MODES = ("targeted", "raw", "none")
#: Consecutive model failures after which the run stops (the model's server is down).
MAX_MODEL_FAILURES = 5


class ModelUnavailable(CadetError):
    """The model failed on several questions in a row: the run stops (it resumes later)."""


@dataclass
class ModeRun:
    """One feedback mode's results: the records (last line per question, in run order)."""

    mode: str
    out: Path | None
    records: list[dict] = field(default_factory=list)


@dataclass
class Evaluation:
    """What :func:`evaluate` returns: the settings and each mode's records.

    ``summary`` is the report's Markdown (also printed and, with ``report=``, written).
    """

    model: str
    temperature: float | None
    data: str
    questions: int
    seed: int | None
    scripted: bool
    runs: dict[str, ModeRun]
    summary: str = ""
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- the loop


def _modes(feedback: str | Sequence[str]) -> list[str]:
    names = [feedback] if isinstance(feedback, str) else list(feedback)
    names = [m.strip() for n in names for m in n.split(",") if m.strip()]
    bad = [m for m in names if m not in MODES]
    if bad or not names:
        raise ConfigurationError(
            f"feedback must be {', '.join(MODES)} or several of them (got {', '.join(bad) or 'none'})."
        )
    return list(dict.fromkeys(names))


def mode_options(base: AskOptions, mode: str) -> AskOptions:
    """The options a question runs with in ``mode``: the user's, with the feedback mode
    (``none``: one attempt per phase, so no feedback is ever sent), and never the kept
    examples of the folder it runs in (they would be answers to the questions measured).

    Example:
        >>> o = mode_options(AskOptions(), "none")
        >>> o.max_attempts, o.feedback, o.fallback, o.examples_path
        (1, 'targeted', True, None)
        >>> mode_options(AskOptions(), "raw").feedback
        'raw'
    """
    if mode == "none":
        return base.replace(max_attempts=1, feedback="targeted", examples_path=None)
    return base.replace(feedback=mode, examples_path=None)


@contextlib.contextmanager
def _stop_fallback_worker() -> Iterator[None]:
    """Stops the fallback's worker process at the end (the run may start one)."""
    try:
        yield
    finally:
        try:
            from cadet_magic.fallback.worker import shutdown
        except ImportError:
            return
        with contextlib.suppress(Exception):
            shutdown()


def evaluate(
    data: str | os.PathLike | Dataset,
    model: Any,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    limit: int | None = None,
    seed: int | None = 0,
    feedback: str | Sequence[str] = "targeted",
    out: str | os.PathLike | None = None,
    report: str | os.PathLike | None = None,
    chart: str | os.PathLike | None = None,
    temperature: float | None = 0.0,
    options: AskOptions | None = None,
    questions: Sequence[Question] | None = None,
    progress: IO[str] | None = sys.stderr,
    print_summary: bool = True,
    notes: Sequence[str] = (),
) -> Evaluation:
    """Runs the questions of ``data`` through :func:`cadet_magic.ask` and measures them.

    Args:
        data: a data folder (Spider's or BIRD's layout, SQLite or DuckDB files), a question
            file, or a loaded :class:`~cadet_magic.eval.data.Dataset`.
        model: a model spec (``"openai:qwen"``, ``"scripted:PATH"``) or a chat model object.
        base_url, api_key: for a model given by spec (an OpenAI-compatible server's ``…/v1``).
        limit: questions to run (a sample drawn with ``seed`` over every database; None: all).
        seed: the sample's seed.
        feedback: ``"targeted"``, ``"raw"``, ``"none"``, or several (a list or
            ``"targeted,raw"``): each mode runs the same questions.
        out: the results file (JSON lines; with several modes ``NAME.MODE.jsonl`` each);
            an existing file is resumed.
        report: a Markdown file for the summary; ``chart``: an SVG file for the accuracy chart
            (default: beside ``report``, same name with ``.svg``).
        temperature: the sampling temperature the model is loaded with (default 0); recorded
            with the model spec in the report.
        options: the :class:`~cadet_magic.options.AskOptions` every question runs with
            (default: the product's defaults).
        questions: the questions to run, in order (instead of ``limit``/``seed``).
        progress: where the progress line goes (None: nowhere).
        print_summary: print the summary to stdout at the end.
        notes: lines added under the report's settings (the machine's load, a commit).

    Returns:
        An :class:`Evaluation` with every mode's records and the summary.

    Raises:
        ConfigurationError: the data or the model cannot be used at all (one line).
    """
    from cadet_magic.eval.report import summary_markdown, write_chart

    modes = _modes(feedback)
    dataset = data if isinstance(data, Dataset) else load(Path(data))
    base = (options or AskOptions()).replace(temperature=temperature)
    base.check()
    chosen = list(questions) if questions is not None else sample(dataset.questions, limit, seed)
    spec = model if isinstance(model, str) else None
    loaded = load_model(
        model,
        api_key=api_key,
        base_url=base_url,
        timeout=base.model_timeout,
        temperature=temperature,
    )
    label = spec or model_label(loaded)
    several = len(modes) > 1
    runs = {m: ModeRun(m, mode_path(out, m, several)) for m in modes}
    previous = {m: read_results(runs[m].out) for m in modes}
    for i, why in dataset.bad:
        print(f"question {i} of {dataset.questions_file} skipped: {why}", file=sys.stderr)
    todo = sum(1 for q in chosen for m in modes if not finished(previous[m].get(q.key)))
    bar = Progress(todo, progress)
    tally = _tally(modes, chosen, previous)
    databases: dict[str, Database | str] = {}
    gold_cache: dict[tuple[str, str, str], tuple[list[tuple] | None, str | None]] = {}
    metrics = SessionMetrics()
    failures = 0
    try:
        with _stop_fallback_worker():
            for q in chosen:
                for m in modes:
                    if finished(previous[m].get(q.key)):
                        continue
                    rec = _one(
                        q,
                        m,
                        dataset,
                        databases,
                        gold_cache,
                        mode_options(base, m).replace(model=loaded),
                        metrics,
                    )
                    append(runs[m].out, rec)
                    previous[m][q.key] = rec
                    if not rec["error"]:
                        tally[m][0] += bool(rec["final_match"])
                        tally[m][1] += 1
                    failures = (
                        failures + 1 if str(rec["error"] or "").startswith(MODEL_ERROR) else 0
                    )
                    bar.update(m, q, rec, tally)
                    if failures >= MAX_MODEL_FAILURES:
                        raise ModelUnavailable(
                            f"The model failed on {failures} questions in a row "
                            f"({first_line(rec['error'], 200, mark='...')}); stopping. Check "
                            "the model's server, then run the same command again to resume."
                        )
    finally:
        bar.close()
        for db in databases.values():
            if isinstance(db, Database):
                db.close()
    for m in modes:
        runs[m].records = [previous[m][q.key] for q in chosen if q.key in previous[m]]
    evaluation = Evaluation(
        model=label,
        temperature=temperature,
        data=str(dataset.questions_file),
        questions=len(chosen),
        seed=seed if questions is None and limit is not None else None,
        scripted=is_scripted(loaded),
        runs=runs,
        notes=list(notes),
    )
    svg = None
    if chart is not None or report is not None:
        svg = Path(chart) if chart is not None else Path(str(report)).with_suffix(".svg")
        write_chart(evaluation, svg)
    evaluation.summary = summary_markdown(evaluation, chart=svg, relative_to=report)
    if report is not None:
        Path(report).expanduser().write_text(evaluation.summary, encoding="utf-8")
    if print_summary:
        print(evaluation.summary)
    return evaluation


def _tally(
    modes: Sequence[str],
    chosen: Sequence[Question],
    previous: dict[str, dict[tuple[str, str, str], dict]],
) -> dict[str, list[int]]:
    """Per mode, [answers that matched, questions answered] among the results already on file
    (a resumed run's progress line starts from them)."""
    tally = {m: [0, 0] for m in modes}
    for m in modes:
        for q in chosen:
            rec = previous[m].get(q.key)
            if finished(rec) and rec is not None and not rec.get("error"):
                tally[m][0] += bool(rec.get("final_match"))
                tally[m][1] += 1
    return tally


def _database(dataset: Dataset, db_id: str, databases: dict[str, Database | str]) -> Database | str:
    """The database of ``db_id`` (opened once), or why there is none."""
    if db_id not in databases:
        try:
            path, engine = dataset.database(db_id)
        except LookupError as e:
            databases[db_id] = first_line(str(e), None)
        else:
            databases[db_id] = Database(path, engine)
    return databases[db_id]


def _gold(
    q: Question,
    db: Database,
    cache: dict[tuple[str, str, str], tuple[list[tuple] | None, str | None]],
    timeout: float,
) -> tuple[list[tuple] | None, str | None]:
    if q.key not in cache:
        try:
            cache[q.key] = (gold_rows(db, q.gold, timeout), None)
        except GoldRefused as e:  # reported, never run: the data set is untrusted input
            cache[q.key] = (None, error_line("gold query refused by the safety check", str(e)))
        except Exception as e:  # noqa: BLE001 - one line for this question, the others go on
            cache[q.key] = (None, error_line("gold query failed", str(e)))
    return cache[q.key]


def _one(
    q: Question,
    mode: str,
    dataset: Dataset,
    databases: dict[str, Database | str],
    gold_cache: dict,
    opts: AskOptions,
    metrics: SessionMetrics,
) -> dict:
    """Runs one question in one mode: its results line."""
    t0 = time.perf_counter()
    timeout = opts.timeout

    def line(
        error: str | None,
        result: AskResult | None = None,
        gold: list[tuple] | None = None,
        db: Database | None = None,
        usage: Usage | None = None,
    ) -> dict:
        return record_of(
            q,
            result,
            gold_rows=gold,
            ordered=has_outer_order(q.gold, dialect_of(db.engine) if db else None),
            db=db,
            usage=usage or Usage(),
            seconds=time.perf_counter() - t0,
            error=error,
            timeout=timeout,
        )

    db = _database(dataset, q.db_id, databases)
    if isinstance(db, str):
        return line(db)
    try:
        db.connection()
    except Exception as e:  # noqa: BLE001 - one line, the other databases go on
        return line(error_line("database could not be opened", str(e)))
    gold, why = _gold(q, db, gold_cache, timeout)
    if why is not None:
        return line(why)
    calls = getattr(opts.model, "calls", None)
    if is_scripted(opts.model) and isinstance(calls, dict):
        calls.clear()  # a scripted model replays its script from the start in every mode
    try:
        result = ask(q.question, con=db.connection(), options=opts, metrics=metrics)
    except CadetError as e:
        why = MODEL_ERROR if "model" in type(e).__name__.lower() else "could not ask"
        return line(error_line(why, str(e)))
    usage = usage_of(result)
    seconds = time.perf_counter() - t0
    if result.stop_reason == "model_error" and not result.ok:
        tried = result.all_attempts  # the failed call may be a fallback attempt
        last = tried[-1] if tried else None
        error = last.error if last is not None and last.error else (result.message or "")
        return line(error_line(MODEL_ERROR, error), usage=usage)
    rec = line(None, result, gold, db, usage)
    rec["seconds"] = round(seconds, 3)
    return rec
