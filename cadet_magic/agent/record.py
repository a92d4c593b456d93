"""The attempt records: what happened to an attempt, as the :class:`Attempt` the result and
the displays show (finished, or provisional while it runs), and the log lines for it.

The outcome and the message are derived once, from the attempt's diagnosis.

Example:
    >>> from cadet_magic.result import Phase
    >>> from cadet_magic.options import AskOptions
    >>> a = close_attempt({"attempt": 1, "phase": Phase.sql, "sql": "SELECT 1", "attempts": (),
    ...                    "options": AskOptions(), "execution": object()}, feedback_sent=False)
    >>> str(a.outcome), a.category, a.feedback
    ('ok', None, None)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from cadet_magic.agent.state import AskState
from cadet_magic.result import Attempt, Outcome, Phase
from cadet_magic.sql.normalize import sql_diff
from cadet_magic.text import error_text

log = logging.getLogger("cadet_magic")


def executed(state: AskState) -> bool:
    """Whether the SQL attempt in progress produced the answer."""
    return state.get("execution") is not None


def outcome_of(state: AskState, ok: bool) -> tuple[str, str | None]:
    """The attempt's outcome and message, derived once from its diagnosis."""
    if state.get("model_error"):
        return Outcome.model_error, state["model_error"]
    if ok:
        return Outcome.ok, None
    diagnosis = state.get("diagnosis")
    if diagnosis is None:  # pragma: no cover - a failed attempt is always diagnosed
        return Outcome.error, None
    return diagnosis.outcome, diagnosis.error


def same_phase(state: AskState) -> list[Attempt]:
    """The finished attempts of the phase in progress."""
    return [a for a in state["attempts"] if a.phase == state["phase"]]


def sql_change(state: AskState) -> str | None:
    """How the attempt's SQL differs from the previous attempt's of its phase (None first)."""
    previous = same_phase(state)
    if not (previous and state.get("sql")):
        return None
    return sql_diff(previous[-1].sql, state.get("sql"), dialect=state.get("dialect"))


def provisional_attempt(
    state: AskState,
    ok: bool | None = None,
    refusals: Sequence[str] = (),
    failure: str | None = None,
) -> Attempt:
    """The record of the attempt in progress as far as it went (``running=True``): what the
    check refused, the engine's error, the diagnosis once there is one. A later phase passes
    what its own checks refused (``refusals``) and how its own step failed (``failure``).

    Example:
        >>> from cadet_magic.result import Phase
        >>> a = provisional_attempt({"attempt": 1, "phase": Phase.sql, "sql": "SELECT 1",
        ...                          "attempts": (), "timings": {"generate": 0.1}})
        >>> a.running, str(a.outcome), a.sql
        (True, 'ok', 'SELECT 1')
    """
    diagnosis = state.get("diagnosis")
    if diagnosis is not None or state.get("model_error"):
        outcome, error = outcome_of(state, executed(state) if ok is None else bool(ok))
    else:
        outcome, error = Outcome.ok, None
        verdict = state.get("check")
        refused = [
            *(
                ["; ".join(str(getattr(i, "message", i)) for i in verdict.issues)]
                if verdict is not None and not verdict.ok
                else []
            ),
            *refusals,
        ]
        if refused:
            outcome, error = Outcome.refused, "; ".join(refused)
        elif state.get("error") is not None:
            outcome, error = Outcome.error, error_text(state.get("error"))
        elif failure is not None:
            outcome, error = Outcome.error, failure
    return Attempt(
        number=state["attempt"],
        sql=state.get("sql"),
        outcome=outcome,
        category=diagnosis.category.value if diagnosis is not None else None,
        error=error,
        timings=dict(state.get("timings") or {}),
        reply=state.get("reply") or "",
        phase=state["phase"],
        running=True,
        tokens=state.get("tokens"),
        model_seconds=state.get("model_seconds"),
    )


def feedback_text(diagnosis: Any, mode: str | None) -> str:
    """What the model is told after a failed attempt: the diagnosis's feedback, or with
    ``mode="raw"`` only the error text the attempt failed with (the engine's words, the safety
    check's refusal, or the result check's finding; no advice, suggested names or JOIN paths).

    Example:
        >>> from cadet_magic.diagnose.model import Diagnosis
        >>> d = Diagnosis("column_not_found", True, feedback="Use t.name (no column nme).",
        ...               error="no such column: nme")
        >>> feedback_text(d, "targeted"), feedback_text(d, "raw")
        ('Use t.name (no column nme).', 'no such column: nme')
    """
    if mode == "raw":
        return diagnosis.error or str(diagnosis.exception or "") or diagnosis.feedback
    return diagnosis.feedback


def _feedback_mode(state: AskState) -> str | None:
    options = state.get("options")
    return options.feedback if options is not None else None


def close_attempt(
    state: AskState,
    feedback_sent: bool,
    ok: bool | None = None,
    change: Callable[[Any], str | None] = sql_change,
    code: str | None = None,
) -> Attempt:
    """The record of the attempt in progress; ``ok`` says whether it answered (default: the SQL
    ran), ``change`` describes how it differs from the previous one, ``code`` is a later
    phase's program besides the SQL."""
    outcome, error = outcome_of(state, executed(state) if ok is None else ok)
    diagnosis = state.get("diagnosis")
    diff = change(state)
    attempt = Attempt(
        number=state["attempt"],
        sql=state.get("sql"),
        outcome=outcome,
        category=diagnosis.category.value if diagnosis is not None and outcome != "ok" else None,
        error=error,
        feedback=(
            feedback_text(diagnosis, _feedback_mode(state))
            if (feedback_sent and diagnosis is not None)
            else None
        ),
        suggestions=list(diagnosis.suggestions) if diagnosis is not None else [],
        diff=diff,
        timings=dict(state.get("timings") or {}),
        reply=state.get("reply") or "",
        phase=state["phase"],
        retryable=diagnosis.retryable if diagnosis is not None else True,
        code=code,
        tokens=state.get("tokens"),
        model_seconds=state.get("model_seconds"),
    )
    _log_attempt(attempt, state["options"].max_attempts)
    return attempt


def _log_attempt(a: Attempt, max_attempts: int) -> None:
    log.info(
        "[attempt %d/%d] %s%s%s",
        a.number,
        max_attempts,
        "" if a.phase == Phase.sql else f"{a.phase} ",
        a.outcome,
        f" ({a.category})" if a.category else "",
    )
    log.info("[attempt %d/%d] SQL: %s", a.number, max_attempts, a.sql)
    if a.code:
        log.info("[attempt %d/%d] Python: %s", a.number, max_attempts, a.code)
    if a.diff:
        log.info("[attempt %d/%d] diff: %s", a.number, max_attempts, a.diff)
    if a.error:
        log.info("[attempt %d/%d] error: %s", a.number, max_attempts, a.error)
    if a.feedback:
        log.info("[attempt %d/%d] feedback: %s", a.number, max_attempts, a.feedback)
