"""The attempt pipeline every phase runs: a phase declares its steps, the pipeline does the rest.

A phase (:class:`PhaseSpec`) is a declaration: its attempt's steps in order (generate, the
checks, the runs, the result check; each a :class:`Step` with the test that lets the attempt
go on), its diagnosis, how it records an attempt, the record of its attempt in progress
(``begin``), the candidate answer it keeps (``keep``), what makes an attempt a repeat of the
previous one, and the phase it hands over to. Everything else is written once, here and in
:mod:`cadet_magic.agent.routes`, for every phase:

- the routes (:func:`cadet_magic.agent.routes.route`): a step that passes leads to the next
  step that applies, the last one to ``finish``; a step that fails leads to ``diagnose``
  (straight to the decision when the step diagnosed its own failure); a model error ends the
  phase;
- the retry policy (:func:`cadet_magic.agent.routes.decide`): retry, hand over, or stop;
- the control steps: :func:`next_attempt` (the failed attempt recorded with its feedback, the
  next one started, the best candidate kept), :func:`hand_over` (the next phase seeded with
  this one's attempts) and :func:`finish` (the last attempt recorded, the stop reason, or the
  best candidate as the answer when no attempt answered).

The pipeline keeps the best candidate a phase's ``keep`` offers (by the candidate's rank)
without knowing why the phase kept it.

A phase without a ``generate`` step (an attempt whose query is already known, e.g. run again
without a model) is a declaration like any other: the pipeline starts at its first step.

Example (the SQL phase's attempt, as declared in :mod:`cadet_magic.agent.phases`):
    >>> from cadet_magic.agent.phases import SQL_PHASE
    >>> tuple(map(str, SQL_PHASE.names()))
    ('generate', 'check', 'execute', 'check_result')
    >>> tuple(map(str, SQL_PHASE.next.names()))  # the vote's: each candidate checked, run and tallied
    ('generate', 'check', 'execute', 'check_result', 'tally')
    >>> tuple(map(str, SQL_PHASE.next.next.names()))  # the fallback's
    ('generate', 'check', 'check_code', 'execute', 'run_code')
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from cadet_magic.agent import record
from cadet_magic.agent.routes import candidate, decide, following
from cadet_magic.agent.state import AskState, Candidate, Work
from cadet_magic.agent.steps import Context
from cadet_magic.kinds import StepName
from cadet_magic.result import Attempt, StopReason

log = logging.getLogger("cadet_magic")

#: A step's function: the state and the run's context in, the next state out.
StepFunction = Callable[[AskState, Context], AskState]
#: A test of the state (does the attempt go on, does a step apply, ...).
Test = Callable[[AskState], bool]


def _always(state: AskState) -> bool:
    return True


def _never(state: AskState) -> bool:
    return False


def _keeps_nothing(state: AskState) -> Candidate | None:
    return None


def _no_warnings(state: AskState) -> tuple[str, ...]:
    return ()


def _max_attempts(state: AskState) -> int:
    return state.options.max_attempts


@dataclass(frozen=True)
class Step:
    """One step of an attempt: its name (the event's), its function, ``passed(state)``: whether
    the attempt goes on after it (else it is diagnosed), and ``when(state)``: whether it applies
    to this attempt (a step that does not is skipped)."""

    name: StepName
    run: StepFunction
    passed: Test
    when: Test = _always


@dataclass(frozen=True)
class PhaseSpec:
    """A phase as a declaration of its attempt pipeline.

    ``steps``: the attempt's steps in order. ``diagnose``: the step that turns a failure into a
    :class:`~cadet_magic.diagnose.model.Diagnosis`. ``begin(number)``: the record of a new
    attempt in progress (its fields: :class:`~cadet_magic.agent.state.Work` or a phase's own
    kind of it). ``close(state, feedback_sent, ok)``: the :class:`Attempt` record;
    ``provisional(state)``: the record while it runs; ``answered``: whether the attempt gave the
    answer; ``keep(state)``: the attempt's result as a candidate answer, kept in case no attempt
    answers (None: nothing to keep); ``warnings(state)``: what the answer's warnings say;
    ``unchanged``: whether it repeats the previous attempt (the retry policy then stops).
    ``limit(state)``: attempts at most (default the ``max_attempts`` option); ``more(state)``:
    whether an attempt that passed every step still asks for another (a vote not yet clear).
    ``next``: the phase handed over to when the attempts are used up and ``hands_over(state)``
    allows it; ``start(state, ctx)`` enters this phase after the one before it,
    ``prepare(ctx)`` lets it get ready while the phase before it still runs. ``enters(state)``:
    whether the run enters this phase when the one before it hands over (else it goes on to
    the phase after it); ``after_answer``: whether it also follows a phase that found an answer
    (its ``start`` then finds it: the attempt that answered, or the candidate kept), where a
    phase that replaces a failed one (the fallback) follows only a phase that found none.
    """

    name: str
    steps: tuple[Step, ...]
    diagnose: StepFunction
    close: Callable[..., Attempt]
    provisional: Callable[[AskState], Attempt]
    answered: Test
    unchanged: Test
    begin: Callable[[int], Work] = Work
    keep: Callable[[AskState], Candidate | None] = _keeps_nothing
    warnings: Callable[[AskState], tuple[str, ...]] = _no_warnings
    limit: Callable[[AskState], int] = _max_attempts
    more: Test = _never
    next: Optional[PhaseSpec] = None  # noqa: UP045 - a forward reference dataclasses evaluate
    hands_over: Test = _never
    start: StepFunction | None = None
    prepare: Callable[[Context], None] | None = None
    enters: Test = _always
    after_answer: bool = False

    def names(self) -> tuple[StepName, ...]:
        """The names of the attempt's steps, in order."""
        return tuple(s.name for s in self.steps)

    def step(self, name: StepName) -> Step:
        """The declared step called ``name``."""
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    def first(self, state: AskState) -> StepName:
        """The name of the attempt's first step that applies."""
        return next(s.name for s in self.steps if s.when(state))

    def node(self, name: StepName) -> StepFunction:
        """The function that runs step ``name``: a declared step or a control step."""
        control: dict[StepName, StepFunction] = {
            StepName.diagnose: self.diagnose,
            StepName.next_attempt: self._next_attempt,
            StepName.hand_over: self._hand_over,
            StepName.finish: self._finish,
        }
        return control[name] if name in control else self.step(name).run

    def _next_attempt(self, state: AskState, ctx: Context) -> AskState:
        return next_attempt(state, ctx, self)

    def _hand_over(self, state: AskState, ctx: Context) -> AskState:
        return hand_over(state, ctx, self)

    def _finish(self, state: AskState, ctx: Context) -> AskState:
        return finish(state, ctx, self)


def close(state: AskState, phase: PhaseSpec, feedback_sent: bool) -> Attempt:
    """The record of the attempt in progress, as ``phase`` records it."""
    return phase.close(state, feedback_sent, ok=phase.answered(state))


def next_attempt(state: AskState, ctx: Context, phase: PhaseSpec) -> AskState:
    """Records the failed attempt with the feedback that goes to the model and starts the next;
    the best candidate answer so far is kept."""
    done = record.closed(state, close(state, phase, feedback_sent=True))
    return done.replace(work=phase.begin(state.attempt + 1), kept=candidate(state, phase))


def hand_over(state: AskState, ctx: Context, phase: PhaseSpec) -> AskState:
    """The phase ends (its last attempt recorded, without feedback, the best candidate answer
    kept) and the phase that follows starts (:func:`~cadet_magic.agent.routes.following`),
    seeded with the attempts so far."""
    answered = phase.answered(state)
    target = following(phase, state, answered or candidate(state, phase) is not None)
    assert target is not None and target.start is not None  # routed only then
    done = record.closed(state, close(state, phase, feedback_sent=False))
    return target.start(done.replace(kept=candidate(state, phase)), ctx)


def finish(state: AskState, ctx: Context, phase: PhaseSpec) -> AskState:
    """Records the last attempt and why the run stopped; when no attempt answered, the best
    candidate the phase kept answers (with its warnings)."""
    done = close(state, phase, feedback_sent=False)
    ended = record.closed(state, done)
    best = None if phase.answered(state) else candidate(state, phase)
    if best is not None:
        log.info("[end] answered with the kept result of attempt %d", best.attempt)
        return ended.replace(kept=best, answer=best, stop_reason=StopReason.success)
    if state.work.model_error:
        reason = StopReason.model_error
    elif phase.answered(state):
        reason = StopReason.success
    else:
        reason = StopReason(decide(state, phase))
    label = "" if phase.name == "sql" else phase.name + " "
    log.info("[end] %s%s after %d attempt(s)", label, reason, done.number)
    return ended.replace(stop_reason=reason)
