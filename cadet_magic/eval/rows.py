"""The rows an evaluation compares, read through a read-only connection to the question's
database: the gold query's (as the data set wrote it), the answer's (whole, even when the user
saw it cut), and the first attempt's (run again when it was retried).

A data set is untrusted input, as a model's reply is: every query, the gold one included, passes
the agent's own safety check on the database's schema and function catalog (:func:`checked`)
and runs through the agent's own read-only runner with a row bound (:data:`COMPARE_ROWS`). A
gold query the check refuses is reported (:class:`GoldRefused`), never run. A DuckDB file is
opened read-only with external access off (no file, URL or extension can be read from a query).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from cadet_magic.result import AskResult, Outcome

#: Rows the gold query (and a re-run of an answer's SQL) may return at most.
COMPARE_ROWS = 100_000


class Database:
    """A read-only connection to one database of the data set, opened on first use."""

    def __init__(self, path: Path, engine: str) -> None:
        self.path, self.engine = path, engine
        self._con: Any = None

    def connection(self) -> Any:
        if self._con is None:
            if self.engine == "duckdb":
                import duckdb

                self._con = duckdb.connect(
                    str(self.path), read_only=True, config={"enable_external_access": False}
                )
            else:
                from urllib.parse import quote

                self._con = sqlite3.connect(
                    f"file:{quote(str(self.path))}?mode=ro", uri=True, check_same_thread=False
                )
        return self._con

    def runner(self) -> Any:
        from cadet_magic.db.connect import resolve_runner

        return resolve_runner(self.connection())

    def close(self) -> None:
        if self._con is not None:
            with contextlib.suppress(Exception):
                self._con.close()
            self._con = None


class GoldRefused(ValueError):
    """The safety check refused a data set's gold query: it is reported, never run."""


def checked(db: Database, sql: str) -> str:
    """``sql`` as the agent's safety check passes it on ``db`` (the target the agent's run
    checks against: its tables and columns, its function catalog, how it reads double
    quotes), or ``ValueError`` naming the first refusal."""
    from cadet_magic.runner import target_of
    from cadet_magic.sql.validate import validate_sql

    runner = db.runner()
    verdict = validate_sql(sql, target_of(runner).with_schema(runner.schema()))
    if not verdict.ok:
        raise ValueError("; ".join(str(getattr(i, "message", i)) for i in verdict.issues))
    return verdict.sql


def _rows(db: Database, sql: str, timeout: float) -> list[tuple]:
    result = db.runner().run(sql, limit=COMPARE_ROWS, timeout=timeout)
    if result.truncated:
        raise ValueError(f"more than {COMPARE_ROWS} rows")
    return [tuple(r) for r in result.rows]


def run_rows(db: Database, sql: str, timeout: float) -> list[tuple]:
    """The rows of ``sql`` (a model's) on ``db`` through the agent's read-only runner, after the
    safety check; raises on refusal, error or more than :data:`COMPARE_ROWS` rows."""
    return _rows(db, checked(db, sql), timeout)


def gold_rows(db: Database, sql: str, timeout: float) -> list[tuple]:
    """The gold query's rows: the same check and read-only runner as a model's SQL (a data set
    is untrusted input too); :class:`GoldRefused` when the check refuses it (nothing runs)."""
    try:
        sql = checked(db, sql)
    except ValueError as e:
        raise GoldRefused(str(e)) from None
    return _rows(db, sql, timeout)


def answer_rows(result: AskResult, db: Database, timeout: float) -> list[tuple] | None:
    """The rows the user got, whole: a truncated SQL answer is run again without the row limit,
    a truncated fallback answer is read from its full result."""
    if not result.ok:
        return None
    if not result.truncated:
        return [tuple(r) for r in result.rows]
    if result.answered_by == "fallback" and result.fallback is not None:
        frame = result.fallback.result
        return list(frame.itertuples(index=False, name=None))
    try:
        return run_rows(db, result.sql or "", timeout)
    except Exception:  # noqa: BLE001 - compared as cut, which cannot match a longer gold
        return [tuple(r) for r in result.rows]


def first_rows(result: AskResult, db: Database, timeout: float) -> list[tuple] | None:
    """The rows of the first attempt: the answer when it answered, its SQL run again when it
    ran but was retried (a suspect result), None when it failed."""
    if not result.attempts:
        return None
    first = result.attempts[0]
    if first.outcome not in (Outcome.ok, Outcome.suspect) or not first.sql:
        return None
    if len(result.attempts) == 1 and result.ok and result.answered_by == "sql":
        if result.sql == first.sql:  # (a vote may have answered with another candidate)
            return answer_rows(result, db, timeout)
    try:
        return run_rows(db, first.sql, timeout)
    except Exception:  # noqa: BLE001 - it ran in the agent; if it cannot now, it did not answer
        return None


def sql_phase_rows(result: AskResult, db: Database, timeout: float) -> list[tuple] | None:
    """The rows of the SQL phase's own answer, before the vote weighed it: its last attempt's
    when it answered, else its last suspect result's (the result kept; when several were
    suspect it keeps the one with fewer missing values, which is nearly always the last);
    None when it found none."""
    attempts = result.attempts
    if not attempts:
        return None
    last = attempts[-1]
    answer = last if last.outcome == Outcome.ok else None
    if answer is None:
        answer = next((a for a in reversed(attempts) if a.outcome == Outcome.suspect), None)
    if answer is None or not answer.sql:
        return None
    if answer.sql == result.sql and result.ok and result.answered_by == "sql":
        return answer_rows(result, db, timeout)
    try:
        return run_rows(db, answer.sql, timeout)
    except Exception:  # noqa: BLE001 - it ran in the agent; if it cannot now, it did not answer
        return None
