"""Where the agent goes next: pure functions of the state and the phase's declaration, one
place for every routing and retry rule of every phase.

Within an attempt (:func:`route_after_step`): a step that passes leads to the next declared
step that applies, the last one to ``finish``; a step that fails leads to ``diagnose``
(straight to the decision when it diagnosed its own failure, as the result check does); a
model error ends the phase. After a diagnosis (:func:`route_after_diagnose`) the one retry
policy (:func:`decide`) retries with feedback up to ``max_attempts``; at the maximum a phase
with a next phase hands over (``"hand_over"``) when it allows it. Non-retryable errors
(permission, connection), model errors and the unchanged-attempt guard stop without one. A
suspect result (the result check found a filter value missing) is retried like a failure
(``retry_suspect``); when the phase would end without a clean answer the best suspect result
answers (``finish_suspect``), and the phase does not hand over.

Example (the SQL phase, declared in :mod:`cadet_magic.agent.phases`):
    >>> from cadet_magic.agent.phases import SQL_PHASE
    >>> from cadet_magic.diagnose.model import Category, Diagnosis
    >>> from cadet_magic.options import AskOptions
    >>> s = {"attempt": 3, "options": AskOptions(fallback=False), "phase": "sql",
    ...      "diagnosis": Diagnosis(Category.column_not_found, True), "sql": "x", "attempts": ()}
    >>> str(decide(s, SQL_PHASE))
    'max_attempts'
    >>> decide({**s, "options": AskOptions()}, SQL_PHASE)
    'hand_over'
    >>> route(SQL_PHASE, "generate", {"sql": None})
    'diagnose'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cadet_magic.agent import result_step
from cadet_magic.agent.state import AskState
from cadet_magic.result import Attempt, Phase, StopReason
from cadet_magic.sql.normalize import normalize_sql

if TYPE_CHECKING:
    from cadet_magic.agent.pipeline import PhaseSpec

#: The decision that hands the run over to the next phase.
HAND_OVER = "hand_over"


def checked(state: AskState) -> bool:
    """Whether the safety check passed the attempt's SQL."""
    check = state.get("check")
    return check is not None and check.ok


def same_sql(state: AskState, previous: Sequence[Attempt]) -> bool:
    """Whether the attempt's SQL is the last of ``previous``'s, up to formatting."""
    sql = state.get("sql")
    if not (sql and previous and previous[-1].sql):
        return False
    dialect = state.get("dialect")
    return normalize_sql(sql, dialect) == normalize_sql(previous[-1].sql, dialect)


def unchanged_sql(state: AskState) -> bool:
    """The SQL phase's guard: the attempt repeats the previous SQL attempt, which repeated the
    one before it (the model was told it repeats itself, :mod:`cadet_magic.diagnose.repeat`,
    and did again); a suspect result repeating the previous attempt stops at once (the best
    suspect result answers)."""
    previous = [a for a in state.get("attempts", ()) if a.phase == Phase.sql]
    if result_step.suspect_now(state):  # a suspect result written again: its answer stands
        return same_sql(state, previous)
    return (
        len(previous) >= 2
        and same_sql(state, previous)
        and same_sql({**state, "sql": previous[-1].sql}, previous[:-1])
    )


def fallback_due(state: AskState) -> bool:
    """Whether an SQL phase that stopped at the maximum hands over to the fallback."""
    return state["options"].fallback and not state.get("model_error")


def decide(state: AskState, phase: PhaseSpec) -> str:
    """After a failed attempt: ``retry``, ``hand_over`` (to the next phase) or the reason to
    stop; the one retry policy of every phase (``phase`` says what repeating the previous
    attempt means and whether it hands over at the maximum).

    The order matters: a non-retryable error stops, then the maximum is checked *before* any
    increment (handing over when allowed), then the unchanged guard (a model that keeps
    writing the same failed attempt hands over when allowed, else stops).
    """
    diagnosis = state["diagnosis"]
    if diagnosis is not None and not diagnosis.retryable:
        return StopReason.not_retryable
    if state["attempt"] >= state["options"].max_attempts:
        return (
            HAND_OVER
            if phase.next is not None and phase.hands_over(state)
            else StopReason.max_attempts
        )
    if phase.unchanged(state):
        hand_over = phase.next is not None and phase.hands_over(state)
        return HAND_OVER if hand_over else StopReason.unchanged_sql
    return "retry"


def _finish(state: AskState) -> str:
    """How a phase ends: with the best suspect result when there is one (and no clean answer)."""
    return "finish_suspect" if result_step.best_suspect(state) is not None else "finish"


def route_after_diagnose(state: AskState, phase: PhaseSpec) -> str:
    """After a failed (or suspect) attempt: the next attempt, the next phase, or the end."""
    decision = decide(state, phase)
    if decision == "retry":
        return "retry_suspect" if result_step.suspect_now(state) else "next_attempt"
    if decision == HAND_OVER and result_step.best_suspect(state) is None:
        return "hand_over"
    return _finish(state)


def route_after_step(state: AskState, phase: PhaseSpec, name: str) -> str:
    """After the declared step ``name``: the next step that applies, ``diagnose``, or the end."""
    if state.get("model_error"):
        return _finish(state)
    steps = phase.steps
    i = phase.names().index(name)
    if not steps[i].passed(state):
        return "diagnose" if state.get("diagnosis") is None else route_after_diagnose(state, phase)
    return next((s.name for s in steps[i + 1 :] if s.when(state)), "finish")


def route(phase: PhaseSpec, step: str, state: Any) -> str:
    """Where the run goes after ``step`` of ``phase`` (``"end"`` when it is over)."""
    if step == "diagnose":
        return route_after_diagnose(state, phase)
    if step in ("read_schema", "next_attempt", "retry_suspect"):
        return phase.first(state)
    if step == "hand_over":
        assert phase.next is not None
        return phase.next.first(state)
    if step in ("finish", "finish_suspect"):
        return "end"
    return route_after_step(state, phase, step)
