"""The agent's state: a typed dict that nodes read and return partial updates of."""

from __future__ import annotations

from typing import Any, TypedDict

from cadet_magic.db.base import RunResult
from cadet_magic.diagnose.classify import Diagnosis
from cadet_magic.result import Attempt
from cadet_magic.schema.model import Schema
from cadet_magic.sql.validate import Validation


class AskState(TypedDict, total=False):
    """Everything one question's run knows.

    Inputs: ``question``, ``dialect``, ``max_attempts``, ``row_limit``, ``timeout``,
    ``fallback``. Read once: ``schema``, ``schema_text``, ``allowed_tables``.
    The attempt in progress: ``attempt`` (its number), ``reply``, ``sql``,
    ``check``, ``execution``, ``error``, ``diagnosis``, ``timings``.
    Done: ``attempts`` (a tuple of finished :class:`Attempt`), ``stop_reason``,
    ``model_error``.
    """

    question: str
    dialect: str
    max_attempts: int
    row_limit: int
    timeout: float
    fallback: bool
    phase: str

    schema: Schema
    schema_text: str
    allowed_tables: list[str] | None

    attempt: int
    reply: str
    sql: str | None
    check: Validation | None
    execution: RunResult | None
    error: Any
    diagnosis: Diagnosis | None
    timings: dict[str, float]

    attempts: tuple[Attempt, ...]
    stop_reason: str | None
    model_error: str | None


#: Fields that describe the attempt in progress; cleared when the next one starts.
CURRENT_FIELDS = ("reply", "sql", "check", "execution", "error", "diagnosis", "timings")


def initial_state(
    question: str,
    *,
    dialect: str,
    max_attempts: int = 3,
    row_limit: int = 1000,
    timeout: float = 30.0,
    fallback: bool = True,
) -> AskState:
    """The state a run starts from."""
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    return AskState(
        question=question,
        dialect=dialect,
        max_attempts=max_attempts,
        row_limit=row_limit,
        timeout=timeout,
        fallback=fallback,
        phase="sql",
        attempt=1,
        attempts=(),
        stop_reason=None,
        model_error=None,
        **{f: None for f in CURRENT_FIELDS},
    )
