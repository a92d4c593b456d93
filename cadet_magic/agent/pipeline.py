"""The attempt pipeline every phase runs: a phase declares its steps, the pipeline does the rest.

A phase (:class:`PhaseSpec`) is a declaration: its attempt's steps in order (generate, the
checks, the runs, the result check; each a :class:`Step` with the test that lets the attempt
go on), its diagnosis, how it records an attempt, what makes an attempt a repeat of the
previous one, and the phase it hands over to. Everything else is written once, here and in
:mod:`cadet_magic.agent.routes`, for every phase:

- the routes (:func:`cadet_magic.agent.routes.route`): a step that passes leads to the next
  step that applies, the last one to ``finish``; a step that fails leads to ``diagnose``
  (straight to the decision when the step diagnosed its own failure, as the result check
  does); a model error ends the phase;
- the retry policy (:func:`cadet_magic.agent.routes.decide`): retry, hand over, or stop;
- the control steps: :func:`next_attempt` (the failed attempt recorded with its feedback, the
  next one started; the best suspect result kept), :func:`hand_over` (the next phase seeded
  with this one's attempts) and :func:`finish` (the last attempt recorded, the stop reason,
  or the best suspect result as the answer when no clean one came).

A phase without a ``generate`` step (an attempt whose query is already known, e.g. run again
without a model) is a declaration like any other: the pipeline starts at its first step.

Example (the SQL phase's attempt, as declared in :mod:`cadet_magic.agent.phases`):
    >>> from cadet_magic.agent.phases import SQL_PHASE
    >>> SQL_PHASE.names()
    ('generate', 'check', 'execute', 'check_result')
    >>> SQL_PHASE.next.names()
    ('generate', 'check', 'check_code', 'execute', 'run_code')
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

from cadet_magic.agent import result_step
from cadet_magic.agent.nodes import Context
from cadet_magic.agent.routes import decide
from cadet_magic.agent.state import ATTEMPT_FIELDS, AskState, begin_attempt
from cadet_magic.result import Attempt, StopReason

log = logging.getLogger("cadet_magic")

#: A step's function: the state and the run's context in, a partial update out.
StepFunction = Callable[[Any, Context], dict]


def _always(state: Any) -> bool:
    return True


def _never(state: Any) -> bool:
    return False


@dataclass(frozen=True)
class Step:
    """One step of an attempt: its name (the event's), its function, ``passed(state)``: whether
    the attempt goes on after it (else it is diagnosed), and ``when(state)``: whether it applies
    to this attempt (a step that does not is skipped)."""

    name: str
    run: StepFunction
    passed: Callable[[Any], bool]
    when: Callable[[Any], bool] = _always


@dataclass(frozen=True)
class PhaseSpec:
    """A phase as a declaration of its attempt pipeline.

    ``steps``: the attempt's steps in order. ``diagnose``: the step that turns a failure into a
    :class:`~cadet_magic.diagnose.model.Diagnosis`. ``fields``: the state fields of its attempt
    in progress (cleared when the next starts). ``close(state, feedback_sent, ok)``: the
    :class:`Attempt` record; ``provisional(state)``: the record while it runs; ``answered``:
    whether the attempt gave the answer; ``unchanged``: whether it repeats the previous attempt
    (the retry policy then stops). ``next``: the phase handed over to when the attempts are used
    up and ``hands_over(state)`` allows it; ``start(state, ctx)`` enters this phase after the
    one before it, ``prepare(ctx)`` lets it get ready while the phase before it still runs.
    """

    name: str
    steps: tuple[Step, ...]
    diagnose: StepFunction
    close: Callable[..., Attempt]
    provisional: Callable[[Any], Attempt]
    answered: Callable[[Any], bool]
    unchanged: Callable[[Any], bool]
    fields: tuple[str, ...] = ATTEMPT_FIELDS
    next: Optional[PhaseSpec] = None  # noqa: UP045 - a forward reference dataclasses evaluate
    hands_over: Callable[[Any], bool] = _never
    start: Callable[[Any, Context], dict] | None = None
    prepare: Callable[[Context], None] | None = None

    def names(self) -> tuple[str, ...]:
        """The names of the attempt's steps, in order."""
        return tuple(s.name for s in self.steps)

    def step(self, name: str) -> Step:
        """The declared step called ``name``."""
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    def first(self, state: Any) -> str:
        """The name of the attempt's first step that applies."""
        return next(s.name for s in self.steps if s.when(state))

    def node(self, name: str) -> StepFunction:
        """The function that runs step ``name``: a declared step or a control step."""
        control: dict[str, StepFunction] = {
            "diagnose": self.diagnose,
            "next_attempt": self._next_attempt,
            "retry_suspect": self._next_attempt,
            "hand_over": self._hand_over,
            "finish": self._finish,
            "finish_suspect": self._finish,
        }
        return control[name] if name in control else self.step(name).run

    def _next_attempt(self, state: Any, ctx: Context) -> dict:
        return next_attempt(state, ctx, self)

    def _hand_over(self, state: Any, ctx: Context) -> dict:
        return hand_over(state, ctx, self)

    def _finish(self, state: Any, ctx: Context) -> dict:
        return finish(state, ctx, self)


def close(state: AskState, phase: PhaseSpec, feedback_sent: bool) -> Attempt:
    """The record of the attempt in progress, as ``phase`` records it."""
    return phase.close(state, feedback_sent, ok=phase.answered(state))


def next_attempt(state: AskState, ctx: Context, phase: PhaseSpec) -> dict:
    """Records the failed attempt with the feedback that goes to the model and starts the next
    (a suspect result is kept, in case no clean answer follows)."""
    best = result_step.best_suspect(state)
    done = close(state, phase, feedback_sent=True)
    update = {
        "attempts": (*state["attempts"], done),
        **begin_attempt(state["attempt"] + 1, phase.fields),
    }
    return {**update, "best_suspect": best} if best is not None else update


def hand_over(state: AskState, ctx: Context, phase: PhaseSpec) -> dict:
    """The phase ends (its last attempt recorded, without feedback) and the next one starts,
    seeded with the attempts so far."""
    assert phase.next is not None and phase.next.start is not None  # routed only then
    done = close(state, phase, feedback_sent=False)
    return phase.next.start(AskState(**{**state, "attempts": (*state["attempts"], done)}), ctx)


def finish(state: AskState, ctx: Context, phase: PhaseSpec) -> dict:
    """Records the last attempt and why the run stopped; without a clean answer, the best
    suspect result answers (with warnings saying what looks wrong)."""
    done = close(state, phase, feedback_sent=False)
    attempts = (*state["attempts"], done)
    best = None if phase.answered(state) else result_step.best_suspect(state)
    if best is not None:
        log.info("[end] answered with the suspect result of attempt %d", best.attempt)
        return {"attempts": attempts, **result_step.answer_with(best)}
    if state.get("model_error"):
        reason = StopReason.model_error
    elif phase.answered(state):
        reason = StopReason.success
    else:
        reason = StopReason(decide(state, phase))
    label = "" if phase.name == "sql" else phase.name + " "
    log.info("[end] %s%s after %d attempt(s)", label, reason, done.number)
    return {"attempts": attempts, "stop_reason": reason}
