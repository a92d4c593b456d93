"""Where the agent goes next: pure functions of the state, one place for every retry rule.

The SQL phase retries with feedback up to ``max_attempts``. When it ends at the maximum on a
retryable error and the fallback is allowed, it hands over (``"hand_over"``: the runner starts
the fallback phase, whose own routes live in :mod:`cadet_magic.fallback.phase`). Non-retryable
errors (permission, connection), model errors and the unchanged-SQL guard stop without one.
After a run, the result check (``check_result``) finishes a clean run and retries a suspect
one; when the phase would end without a clean answer, the best suspect result answers
(``finish_suspect``), and the fallback does not run.

Example:
    >>> from cadet_magic.diagnose.model import Category, Diagnosis
    >>> from cadet_magic.options import AskOptions
    >>> s = {"attempt": 3, "options": AskOptions(fallback=False), "phase": "sql",
    ...      "diagnosis": Diagnosis(Category.column_not_found, True), "sql": "x", "attempts": ()}
    >>> str(decide(s))
    'max_attempts'
    >>> decide({**s, "options": AskOptions()})
    'hand_over'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cadet_magic.agent.state import AskState
from cadet_magic.result import Attempt, Phase, StopReason
from cadet_magic.sql.normalize import normalize_sql

#: The decision that hands the run over to the fallback phase.
HAND_OVER = "hand_over"


def checked(state: AskState) -> bool:
    """Whether the safety check passed the attempt's SQL."""
    check = state.get("check")
    return check is not None and check.ok


def _finish(state: AskState) -> str:
    """How the SQL phase ends without a clean answer: with the best suspect result, if any."""
    return "finish_suspect" if state.get("best_suspect") else "finish"


def route_after_generate(state: AskState) -> str:
    if state.get("model_error"):
        return _finish(state)
    return "check" if state.get("sql") else "diagnose"


def route_after_check(state: AskState) -> str:
    return "execute" if checked(state) else "diagnose"


def route_after_execute(state: AskState) -> str:
    return "diagnose" if state.get("execution") is None else "check_result"


def route_after_check_result(state: AskState) -> str:
    """A clean run finishes; a suspect one is retried while attempts remain and the SQL
    changed, else the best suspect result becomes the answer.

    Example:
        >>> route_after_check_result({"value_check": None})
        'finish'
    """
    vc = state.get("value_check")
    if vc is None or not vc.suspect:
        return "finish"
    previous = [a for a in state.get("attempts", ()) if a.phase == Phase.sql]
    if state["attempt"] < state["options"].max_attempts and not same_sql(state, previous):
        return "retry_suspect"
    return "finish_suspect"


def same_sql(state: AskState, previous: Sequence[Attempt]) -> bool:
    """Whether the attempt's SQL is the last of ``previous``'s, up to formatting."""
    sql = state.get("sql")
    if not (sql and previous and previous[-1].sql):
        return False
    dialect = state.get("dialect")
    return normalize_sql(sql, dialect) == normalize_sql(previous[-1].sql, dialect)


def repeated_attempt(state: AskState) -> tuple[int, bool] | None:
    """The earlier SQL attempt whose query this attempt writes again, up to formatting: its
    number and whether it is the previous attempt (else the model alternates); None.

    Example:
        >>> from cadet_magic.result import Attempt, Phase
        >>> a = [Attempt(1, "SELECT a FROM t", "error", phase=Phase.sql),
        ...      Attempt(2, "SELECT b FROM t", "error", phase=Phase.sql)]
        >>> repeated_attempt({"sql": "select a from t", "attempts": a, "dialect": None})
        (1, False)
        >>> repeated_attempt({"sql": "SELECT b  FROM t", "attempts": a, "dialect": None})
        (2, True)
    """
    sql = state.get("sql")
    previous = [a for a in state.get("attempts", ()) if a.phase == Phase.sql and a.sql]
    if not (sql and previous):
        return None
    dialect = state.get("dialect")
    mine = normalize_sql(sql, dialect)
    for a in reversed(previous):
        if normalize_sql(a.sql or "", dialect) == mine:
            return a.number, a is previous[-1]
    return None


def _unchanged(state: AskState) -> bool:
    """The attempt repeats the previous SQL attempt, which repeated the one before it: the
    model was told it repeats itself (:mod:`cadet_magic.diagnose.repeat`) and did again."""
    previous = [a for a in state.get("attempts", ()) if a.phase == Phase.sql]
    return (
        len(previous) >= 2
        and same_sql(state, previous)
        and same_sql({**state, "sql": previous[-1].sql}, previous[:-1])
    )


def fallback_due(state: AskState) -> bool:
    """Whether an SQL phase that stopped at the maximum hands over to the fallback."""
    return state["options"].fallback and not state.get("model_error")


def decide(
    state: AskState,
    unchanged: Callable[[Any], bool] = _unchanged,
    hands_over: Callable[[Any], bool] = fallback_due,
) -> str:
    """After a failed attempt: ``retry``, ``hand_over`` (to the next phase) or the reason to
    stop; the one retry policy of every phase, which says what repeating the previous attempt
    means (``unchanged``) and whether it hands over at the maximum (``hands_over``; the SQL
    phase's defaults).

    The order matters: a non-retryable error stops, then the maximum is checked *before* any
    increment (handing over when allowed), then the unchanged guard (a model that keeps
    writing the same failed attempt hands over when allowed, else stops).
    """
    diagnosis = state["diagnosis"]
    if diagnosis is not None and not diagnosis.retryable:
        return StopReason.not_retryable
    if state["attempt"] >= state["options"].max_attempts:
        return HAND_OVER if hands_over(state) else StopReason.max_attempts
    if unchanged(state):
        return HAND_OVER if hands_over(state) else StopReason.unchanged_sql
    return "retry"


def route_after_diagnose(state: AskState) -> str:
    decision = decide(state)
    if decision == "retry":
        return "next_attempt"
    if state.get("best_suspect"):  # the best suspect result answers rather than the fallback
        return "finish_suspect"
    return "hand_over" if decision == HAND_OVER else "finish"
