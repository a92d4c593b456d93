"""Where the agent goes next: pure functions of the state and the phase's declaration, one
place for every routing and retry rule of every phase.

Within an attempt (:func:`route_after_step`): a step that passes leads to the next declared
step that applies, the last one to ``finish``; a step that fails leads to ``diagnose``
(straight to the decision when it diagnosed its own failure, as the result check does); a
model error ends the phase. After a diagnosis (:func:`route_after_diagnose`) the one retry
policy (:func:`decide`) retries with feedback up to ``max_attempts``; at the maximum a phase
with a next phase hands over (``"hand_over"``) when it allows it and no candidate answer was
kept (a kept candidate answers instead). Non-retryable errors (permission, connection), model
errors and the unchanged-attempt guard stop without one.

Example (the SQL phase, declared in :mod:`cadet_magic.agent.phases`):
    >>> from cadet_magic.agent.phases import SQL_PHASE
    >>> from cadet_magic.agent.state import initial_state
    >>> from cadet_magic.diagnose.model import Category, Diagnosis
    >>> s = initial_state("q", dialect="duckdb", fallback=False).with_work(
    ...     number=3, sql="x", diagnosis=Diagnosis(Category.column_not_found, True))
    >>> str(decide(s, SQL_PHASE))
    'max_attempts'
    >>> decide(s.replace(options=s.options.replace(fallback=True)), SQL_PHASE)
    'hand_over'
    >>> route(SQL_PHASE, "generate", initial_state("q", dialect="duckdb"))  # no SQL in the reply
    'diagnose'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cadet_magic.agent.state import AskState, Candidate, better
from cadet_magic.result import StopReason

if TYPE_CHECKING:
    from cadet_magic.agent.pipeline import PhaseSpec

#: The decision that hands the run over to the next phase.
HAND_OVER = "hand_over"


def candidate(state: AskState, phase: PhaseSpec) -> Candidate | None:
    """The best candidate answer so far: the one kept, or the attempt in progress's (as
    ``phase.keep`` offers it), whichever ranks better."""
    return better(state.kept, phase.keep(state))


def decide(state: AskState, phase: PhaseSpec) -> str:
    """After a failed attempt: ``retry``, ``hand_over`` (to the next phase) or the reason to
    stop; the one retry policy of every phase (``phase`` says what repeating the previous
    attempt means and whether it hands over at the maximum).

    The order matters: a non-retryable error stops, then the maximum is checked *before* any
    increment (handing over when allowed), then the unchanged guard (a model that keeps
    writing the same failed attempt hands over when allowed, else stops).
    """
    diagnosis = state.work.diagnosis
    if diagnosis is not None and not diagnosis.retryable:
        return StopReason.not_retryable
    hands_over = phase.next is not None and phase.hands_over(state)
    if state.attempt >= state.options.max_attempts:
        return HAND_OVER if hands_over else StopReason.max_attempts
    if phase.unchanged(state):
        return HAND_OVER if hands_over else StopReason.unchanged_sql
    return "retry"


def route_after_diagnose(state: AskState, phase: PhaseSpec) -> str:
    """After a failed attempt: the next attempt, the next phase, or the end."""
    decision = decide(state, phase)
    if decision == "retry":
        return "next_attempt"
    if decision == HAND_OVER and candidate(state, phase) is None:
        return "hand_over"
    return "finish"


def route_after_step(state: AskState, phase: PhaseSpec, name: str) -> str:
    """After the declared step ``name``: the next step that applies, ``diagnose``, or the end."""
    if state.work.model_error:
        return "finish"
    steps = phase.steps
    i = phase.names().index(name)
    if not steps[i].passed(state):
        if state.work.diagnosis is None:
            return "diagnose"
        return route_after_diagnose(state, phase)
    return next((s.name for s in steps[i + 1 :] if s.when(state)), "finish")


def route(phase: PhaseSpec, step: str, state: AskState) -> str:
    """Where the run goes after ``step`` of ``phase`` (``"end"`` when it is over)."""
    if step == "diagnose":
        return route_after_diagnose(state, phase)
    if step in ("read_schema", "next_attempt"):
        return phase.first(state)
    if step == "hand_over":
        assert phase.next is not None
        return phase.next.first(state)
    if step == "finish":
        return "end"
    return route_after_step(state, phase, step)
