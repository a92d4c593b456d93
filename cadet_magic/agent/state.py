"""The agent's state: a typed dict that nodes read and return partial updates of."""

from __future__ import annotations

from typing import Any, TypedDict

from cadet_magic.diagnose.model import Diagnosis
from cadet_magic.options import AskOptions, merged
from cadet_magic.result import Attempt, Phase, Tokens
from cadet_magic.runner import RunResult
from cadet_magic.schema.model import Schema
from cadet_magic.sql.functions import FunctionCatalog
from cadet_magic.sql.validate import Validation


class AttemptInProgress(TypedDict, total=False):
    """The attempt in progress: what the model replied (and the tokens and seconds its call
    took), its SQL, the check's verdict, the engine's result or error, the diagnosis and the
    steps' timings. A new attempt starts with all of it cleared (:func:`begin_attempt`)."""

    reply: str
    tokens: Tokens | None
    model_seconds: float | None
    sql: str | None
    check: Validation | None
    execution: RunResult | None
    error: Any
    diagnosis: Diagnosis | None
    timings: dict[str, float]


class AskState(AttemptInProgress, total=False):
    """Everything one question's run knows.

    Inputs: ``question``, ``dialect``, ``connection`` (the runner's label), ``options`` (the
    run's :class:`~cadet_magic.options.AskOptions`, whole: every step reads its options there,
    e.g. ``feedback``: what a retry tells the model).
    Read once: ``schema``, ``schema_text``, ``allowed_tables``, ``functions`` (the engine's
    function allow-list, a ``FunctionCatalog``, or None).
    ``phase``: the phase in progress (:class:`~cadet_magic.result.Phase`); a later phase
    declares the fields of its own attempts itself.
    The attempt in progress: ``attempt`` (its number within the phase) and the fields of
    :class:`AttemptInProgress`.
    Done: ``attempts`` (a tuple of finished :class:`Attempt`, every phase), ``stop_reason``,
    ``model_error``.
    """

    question: str
    dialect: str
    connection: str
    options: AskOptions
    phase: str

    schema: Schema
    schema_text: str
    allowed_tables: list[str] | None
    functions: FunctionCatalog | None

    attempt: int

    attempts: tuple[Attempt, ...]
    stop_reason: str | None
    model_error: str | None

    # The result check (cadet_magic.agent.result_step): the check of the attempt that ran
    # last, the best suspect result so far, and the answer's SQL and warnings once chosen.
    value_check: Any
    best_suspect: Any
    answer_sql: str | None
    warnings: list[str]


#: The fields of the attempt in progress.
ATTEMPT_FIELDS = tuple(AttemptInProgress.__annotations__)


def begin_attempt(number: int, fields: tuple[str, ...] = ATTEMPT_FIELDS) -> dict[str, Any]:
    """The update that starts attempt ``number``: the previous attempt's ``fields`` cleared.

    Example:
        >>> u = begin_attempt(2)
        >>> u["attempt"], u["sql"], u["diagnosis"]
        (2, None, None)
    """
    return {"attempt": number, **dict.fromkeys(fields)}


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
        >>> s["options"].max_attempts, s["options"].row_limit, str(s["phase"]), s["attempt"]
        (2, 1000, 'sql', 1)
    """
    return AskState(
        question=question,
        dialect=dialect,
        connection=connection,
        options=merged(options, **overrides),
        phase=Phase.sql,
        attempts=(),
        stop_reason=None,
        model_error=None,
        **begin_attempt(1),  # type: ignore[typeddict-item]
    )
