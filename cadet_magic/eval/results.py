"""The evaluation's results files: one JSON line per question and mode (the keys of
:data:`KEYS`), appended and flushed as each question finishes, read back on resume (the last
line of a question counts; a question the model could not be called for runs again).

Example:
    >>> finished({"error": None}), finished({"error": "model call failed: timed out"})
    (True, False)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cadet_magic.eval.data import Question
from cadet_magic.eval.rows import Database, answer_rows, first_rows, run_rows, sql_phase_rows
from cadet_magic.eval.usage import Usage
from cadet_magic.result import AskResult
from cadet_magic.text import first_line
from cadet_magic.vote.execution_match import execution_match

#: The keys of one results line, in order.
KEYS = (
    "db_id",
    "question",
    "gold",
    "first_sql",
    "first_match",
    "final_sql",
    "final_match",
    "fallback",
    "attempts",
    "fallback_attempts",
    "warnings",
    "calls",
    "input_tokens",
    "output_tokens",
    "seconds",
    "model_seconds",
    "stop_reason",
    "error",
    "sql_match",
    "agreement",
    "competing_votes",
    "uncertain",
    "candidates",
    "asks",
    "readings",
)
#: Characters of the first line of an error message a results line keeps.
ERROR_CHARS = 300
#: How an ``error`` begins when the question could not run because the model could not be
#: called (such questions run again on resume).
MODEL_ERROR = "model call failed"


def error_line(category: str, text: str | None) -> str:
    """An error as a results line keeps it: its category and the first line of its text, cut
    to :data:`ERROR_CHARS` (results files are published; the lines after the first of an
    engine's message can quote whole values or files).

    Example:
        >>> error_line("gold query failed", "Conversion Error: 'x'\\nLINE 1: secret")
        "gold query failed: Conversion Error: 'x'"
    """
    return f"{category}: {first_line(text, ERROR_CHARS, mark='...')}"


def record_of(
    q: Question,
    result: AskResult | None,
    *,
    gold_rows: list[tuple] | None,
    ordered: bool,
    db: Database | None,
    usage: Usage,
    seconds: float,
    error: str | None,
    timeout: float,
) -> dict:
    """One results line (the keys of :data:`KEYS`)."""
    rec: dict[str, Any] = dict.fromkeys(KEYS)
    rec.update(db_id=q.db_id, question=q.question, gold=q.gold, error=error)
    rec.update(calls=usage.calls, input_tokens=usage.input_tokens)
    rec.update(output_tokens=usage.output_tokens, seconds=round(seconds, 3))
    rec.update(model_seconds=usage.model_seconds)
    rec.update(attempts=[], fallback_attempts=[], warnings=[], fallback=False)
    if result is None or db is None or gold_rows is None:
        return rec
    first = first_rows(result, db, timeout)
    final = answer_rows(result, db, timeout)
    rec.update(
        first_sql=result.attempts[0].sql if result.attempts else None,
        first_match=first is not None and execution_match(gold_rows, first, ordered=ordered),
        final_sql=result.final_sql if result.ok else None,
        final_match=final is not None and execution_match(gold_rows, final, ordered=ordered),
        fallback=result.fallback is not None,
        attempts=[
            {
                "category": a.category,
                "outcome": str(a.outcome),
                "sql": a.sql,
                "input_tokens": a.tokens.input if a.tokens is not None else None,
                "model_seconds": a.model_seconds,
            }
            for a in result.attempts
        ],
        fallback_attempts=[
            {
                "outcome": str(a.outcome),
                "category": a.category,
                # its category is beside it: the error's first line only
                "error": first_line(a.error, ERROR_CHARS, mark="...") or None,
                "sql": a.sql,
                "code": a.code,
            }
            for a in (result.fallback.attempts if result.fallback is not None else ())
        ],
        warnings=list(result.warnings),
        stop_reason=str(result.stop_reason) if result.stop_reason else None,
    )
    if result.agreement is not None or result.candidates:
        rec.update(vote_fields(result, gold_rows, ordered, db, timeout))
    rec.update(reading_fields(result, gold_rows, ordered, db, timeout))
    return rec


def reading_fields(
    result: AskResult, gold_rows: list[tuple], ordered: bool, db: Database, timeout: float
) -> dict[str, Any]:
    """What a results line says of the readings: whether the answer asked the user to choose
    (``asks``) and each reading, the leading one first (``sql``, ``votes``, ``summary`` and
    ``match``: whether its result is the gold query's, so a user who knows what was meant and
    chooses it gets a right answer)."""
    readings = []
    for r in result.readings:
        rows: list[tuple] | None = [tuple(x) for x in r.rows]
        if r.truncated:  # cut at the row limit: its whole result, as the answer's
            try:
                rows = run_rows(db, r.sql, timeout)
            except Exception:  # noqa: BLE001 - compared as cut, which cannot match a longer gold
                pass
        match = rows is not None and execution_match(gold_rows, rows, ordered=ordered)
        readings.append({"sql": r.sql, "votes": r.votes, "summary": r.summary, "match": match})
    return {"asks": bool(result.asks), "readings": readings}


def vote_fields(
    result: AskResult, gold_rows: list[tuple], ordered: bool, db: Database, timeout: float
) -> dict[str, Any]:
    """What a results line says of the vote: the SQL phase's own answer's match before it
    (``sql_match``), the agreement (``[votes, of]``), the competing answers' votes, whether
    the vote left the answer in doubt (``uncertain``) and each candidate drawn."""
    before = sql_phase_rows(result, db, timeout)
    agreement = result.agreement
    return {
        "sql_match": before is not None and execution_match(gold_rows, before, ordered=ordered),
        "agreement": [agreement.votes, agreement.of] if agreement is not None else None,
        "competing_votes": [c.votes for c in result.competing],
        "uncertain": result.uncertain,
        "candidates": [
            {
                "outcome": str(a.outcome),
                "category": a.category,
                "sql": a.sql,
                "output_tokens": a.tokens.output if a.tokens is not None else None,
                "model_seconds": a.model_seconds,
            }
            for a in result.candidates
        ],
    }


def read_results(path: Path | None) -> dict[tuple[str, str, str], dict]:
    """The lines of a results file by question (the last line of a question wins); unreadable
    lines (a line cut by an interruption) are skipped."""
    done: dict[tuple[str, str, str], dict] = {}
    if path is None or not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
            key = (rec["db_id"], rec["question"], rec["gold"])
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
        done[key] = rec
    return done


def finished(rec: dict | None) -> bool:
    """Whether a question's line is final (a model failure runs again)."""
    return rec is not None and not str(rec.get("error") or "").startswith(MODEL_ERROR)


def append(path: Path | None, rec: dict) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def mode_path(out: str | os.PathLike | None, mode: str, several: bool) -> Path | None:
    """The results file of ``mode``: ``out`` itself for one mode, ``NAME.MODE.jsonl`` for
    several.

    Example:
        >>> mode_path("runs/spider.jsonl", "raw", True).as_posix()
        'runs/spider.raw.jsonl'
        >>> mode_path("runs/spider.jsonl", "raw", False).as_posix()
        'runs/spider.jsonl'
    """
    if out is None:
        return None
    path = Path(out).expanduser()
    if not several:
        return path
    return path.with_name(f"{path.stem}.{mode}{path.suffix or '.jsonl'}")
