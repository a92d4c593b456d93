"""The agent's state: a typed dict that nodes read and return partial updates of."""

from __future__ import annotations

from typing import Any, TypedDict

from cadet_magic.diagnose.classify import Diagnosis
from cadet_magic.fallback.check import CodeCheck
from cadet_magic.options import AskOptions
from cadet_magic.result import Attempt, Phase
from cadet_magic.runner import RunResult
from cadet_magic.schema.model import Schema
from cadet_magic.sql.functions import FunctionCatalog
from cadet_magic.sql.validate import Validation


class AskState(TypedDict, total=False):
    """Everything one question's run knows.

    Inputs: ``question``, ``dialect``, ``connection`` (the runner's label), ``max_attempts``, ``row_limit``, ``timeout``,
    ``fallback`` (allowed), ``fallback_row_limit`` (rows the fallback SELECT may fetch),
    ``result_bytes`` (bytes of values a result may hold),
    ``fallback_memory`` (bytes the fallback's pandas code may allocate in its worker).
    Read once: ``schema``, ``schema_text``, ``allowed_tables``, ``functions`` (the engine's
    function allow-list, a ``FunctionCatalog``, or None).
    ``phase``: ``"sql"``, then ``"fallback"`` once the SQL attempts are used up;
    ``sql_stop_reason``: why the SQL phase ended when the fallback took over.
    The attempt in progress: ``attempt`` (its number, restarting at 1 in the fallback),
    ``reply``, ``sql``, ``check``, ``execution``, ``error``, ``diagnosis``, ``timings``;
    in the fallback also ``code`` (the pandas code), ``code_check`` and ``code_run``.
    Done: ``attempts`` (a tuple of finished :class:`Attempt`, both phases), ``stop_reason``,
    ``model_error``.
    """

    question: str
    dialect: str
    connection: str
    max_attempts: int
    row_limit: int
    timeout: float
    fallback: bool
    fallback_row_limit: int
    result_bytes: int
    fallback_memory: int
    phase: str
    sql_stop_reason: str | None

    schema: Schema
    schema_text: str
    allowed_tables: list[str] | None
    functions: FunctionCatalog | None

    attempt: int
    reply: str
    sql: str | None
    check: Validation | None
    execution: RunResult | None
    error: Any
    diagnosis: Diagnosis | None
    timings: dict[str, float]
    code: str | None
    code_check: CodeCheck | None
    code_run: Any

    attempts: tuple[Attempt, ...]
    stop_reason: str | None
    model_error: str | None

    # The result check (cadet_magic.agent.result_step): the check of the attempt that ran
    # last, the best suspect result so far, and the answer's SQL and warnings once chosen.
    value_check: Any
    best_suspect: Any
    answer_sql: str | None
    warnings: list[str]


#: Fields that describe the attempt in progress; cleared when the next one starts.
CURRENT_FIELDS = (
    "reply",
    "sql",
    "check",
    "execution",
    "error",
    "diagnosis",
    "timings",
    "code",
    "code_check",
    "code_run",
)


#: The options the state carries as inputs (the rest stay with the run's context).
STATE_OPTIONS = (
    "max_attempts",
    "row_limit",
    "timeout",
    "fallback",
    "fallback_row_limit",
    "result_bytes",
    "fallback_memory",
)


def initial_state(
    question: str,
    *,
    dialect: str,
    connection: str = "",
    options: AskOptions | None = None,
    **overrides: Any,
) -> AskState:
    """The state a run starts from: the question, the connection's dialect and label, and the
    inputs of ``options`` (an :class:`AskOptions`, default its defaults; ``overrides`` are
    option names such as ``max_attempts=2`` applied on top).

    Example:
        >>> s = initial_state("How many?", dialect="sqlite", max_attempts=2)
        >>> s["max_attempts"], s["row_limit"], str(s["phase"]), s["attempt"]
        (2, 1000, 'sql', 1)
    """
    opts = (options or AskOptions()).replace(**overrides)
    if opts.max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    return AskState(
        question=question,
        dialect=dialect,
        connection=connection,
        **{name: getattr(opts, name) for name in STATE_OPTIONS},  # type: ignore[typeddict-item]
        phase=Phase.sql,
        sql_stop_reason=None,
        attempt=1,
        attempts=(),
        stop_reason=None,
        model_error=None,
        **{f: None for f in CURRENT_FIELDS},
    )
