"""What the peers' benchmark and the first-prompt experiment share: the question sets, one
results line per question (appended as it finishes, resumed from), the scoring of a SQL answer
by the evaluation's own rule, and the model behind the reply store.

Every answer is scored as :mod:`cadet_magic.eval` scores the product's: its SQL passes the
safety check and runs through the read-only runner (:func:`cadet_magic.eval.rows.run_rows`),
and its rows are compared with the gold query's by :func:`cadet_magic.vote.execution_match.execution_match`
(ordered when the gold query sorts its outer rows).

A results line (:class:`Line`): the question's key (``db_id``, ``question``, ``gold``), the SQL
scored (``sql``; None when the reply held none), whether it ran and matched, the error when it
did not run, the model calls, prompt and reply tokens, seconds, and the reply (cut to
:data:`REPLY_CHARS`); ``extra`` holds what one approach records besides.

Example:
    >>> line = Line("db", "q?", "SELECT 1", sql="SELECT 1", ran=True, match=True, calls=1)
    >>> Line.from_json(line.to_json()) == line
    True
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.reply_cache import ReplyCache
from benchmarks.report import ROOT
from cadet_magic.eval.data import Question
from cadet_magic.eval.rows import Database, gold_rows, run_rows
from cadet_magic.sql.dialect import dialect_of
from cadet_magic.text import first_line
from cadet_magic.vote.execution_match import execution_match, has_outer_order

#: Characters of a model's reply a results line keeps.
REPLY_CHARS = 4000
#: Seconds a query (gold or answer) may run.
QUERY_TIMEOUT = 30.0
#: How an ``error`` begins when the model could not be called (such questions run again).
MODEL_ERROR = "model call failed"


@dataclass(frozen=True)
class Line:
    """One question's result for one approach (one line of a results file)."""

    db_id: str
    question: str
    gold: str
    sql: str | None = None
    ran: bool = False
    match: bool = False
    error: str | None = None
    calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    seconds: float = 0.0
    reply: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.db_id, self.question, self.gold)

    @property
    def finished(self) -> bool:
        """Final (a line whose model could not be called runs again on resume)."""
        return not str(self.error or "").startswith(MODEL_ERROR)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), ensure_ascii=False, default=str)

    @classmethod
    def from_json(cls, text: str) -> Line:
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def read_lines(path: Path) -> dict[tuple[str, str, str], Line]:
    """The lines of a results file by question (the last one of a question counts; a line cut
    by an interruption is skipped)."""
    done: dict[tuple[str, str, str], Line] = {}
    if not path.is_file():
        return done
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            line = Line.from_json(text)
        except (ValueError, TypeError):
            continue
        done[line.key] = line
    return done


def append_line(path: Path, line: Line) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(line.to_json() + "\n")
        f.flush()
        os.fsync(f.fileno())


# --------------------------------------------------------------------------- databases


class Databases:
    """The read-only databases of a question set by ``db_id`` (opened once), and the gold
    rows of each question (run once)."""

    def __init__(self, places: dict[str, tuple[Path, str]]) -> None:
        self.places = places
        self._open: dict[str, Database] = {}
        self._gold: dict[tuple[str, str, str], tuple[list[tuple] | None, str | None]] = {}

    def get(self, db_id: str) -> Database:
        if db_id not in self._open:
            path, engine = self.places[db_id]
            self._open[db_id] = Database(path, engine)
        return self._open[db_id]

    def gold(self, q: Question) -> tuple[list[tuple] | None, str | None]:
        """The gold query's rows, or why they could not be read."""
        if q.key not in self._gold:
            try:
                self._gold[q.key] = (gold_rows(self.get(q.db_id), q.gold, QUERY_TIMEOUT), None)
            except Exception as e:  # noqa: BLE001 - one line for this question
                self._gold[q.key] = (None, f"gold query failed: {first_line(str(e), 200)}")
        return self._gold[q.key]

    def close(self) -> None:
        for db in self._open.values():
            db.close()
        self._open.clear()


@dataclass(frozen=True)
class Score:
    """What became of one SQL answer: it ran (the check passed and the engine answered),
    it matched the gold rows, or why it did not run."""

    ran: bool
    match: bool
    error: str | None = None


def score(dbs: Databases, q: Question, sql: str | None) -> Score:
    """Scores ``sql`` against the gold query of ``q`` by the evaluation's rule."""
    if not sql or not sql.strip():
        return Score(False, False, "no SQL in the reply")
    gold, why = dbs.gold(q)
    if gold is None:
        return Score(False, False, why)
    db = dbs.get(q.db_id)
    try:
        rows = run_rows(db, sql, QUERY_TIMEOUT)
    except Exception as e:  # noqa: BLE001 - the answer failed: that is its result
        return Score(False, False, first_line(str(e), 300) or type(e).__name__)
    ordered = has_outer_order(q.gold, dialect_of(db.engine))
    return Score(True, execution_match(gold, rows, ordered=ordered))


# --------------------------------------------------------------------------- the loop


def run_set(
    questions: Sequence[Question],
    path: Path,
    answer: Callable[[Question], Line],
    progress: Callable[[str], None] | None = None,
    max_model_failures: int = 5,
) -> dict[tuple[str, str, str], Line]:
    """Answers every question of ``questions`` not already in ``path`` with ``answer`` (which
    returns its line), appending each line as it finishes; stops after ``max_model_failures``
    model failures in a row (the same command resumes). Returns the lines by question."""
    done = read_lines(path)
    todo = [q for q in questions if not (q.key in done and done[q.key].finished)]
    failures = 0
    right = sum(1 for q in questions if q.key in done and done[q.key].match)
    for i, q in enumerate(todo, 1):
        line = answer(q)
        append_line(path, line)
        done[q.key] = line
        right += line.match
        failures = 0 if line.finished else failures + 1
        if progress is not None:
            progress(
                f"{path.stem}: {i}/{len(todo)} {q.db_id} {'right' if line.match else 'wrong'} "
                f"({right} right so far) {line.seconds:.1f} s"
            )
        if failures >= max_model_failures:
            raise RuntimeError(
                f"the model failed on {failures} questions in a row ({line.error}); run the "
                "same command again to resume"
            )
    return done


@contextlib.contextmanager
def model_url(base_url: str | None, replies: Path | None, timeout: float) -> Iterator[str]:
    """The base URL to give a client: the reply store in front of ``base_url`` (a running
    server) or of a local model server started here (:func:`workloads.llm.llm_server`, the
    evaluation's settings); ``replies`` None: no store."""
    with contextlib.ExitStack() as stack:
        if not base_url:
            from workloads.llm import llm_server

            base_url = stack.enter_context(llm_server(timeout=600.0))
        if replies is not None:
            replies.parent.mkdir(parents=True, exist_ok=True)
            cache = stack.enter_context(ReplyCache(base_url, replies, timeout=timeout))
            base_url = cache.base_url
        yield base_url


def timer() -> Callable[[], float]:
    t0 = time.perf_counter()
    return lambda: round(time.perf_counter() - t0, 3)


#: The real model's replies, one store for the evaluation, the peers and the prompt
#: experiment (identical requests are answered once).
REPLIES = ROOT / ".cache" / "eval-replies.jsonl"
