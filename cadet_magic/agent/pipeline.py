"""The attempt pipeline every phase runs: a phase declares its steps, the pipeline does the rest.

A phase (:class:`~cadet_magic.agent.phase_spec.PhaseSpec`) is a declaration: its attempt's
steps in order (generate, the checks, the runs, the result check; each a
:class:`~cadet_magic.agent.phase_spec.Step` with the test that lets the attempt go on) and its
hooks: its diagnosis and how it records an attempt, the candidate answer it offers, when its
attempts end and whether it hands over, how the run enters it. The phases run in the order of a
tuple (:data:`cadet_magic.agent.phases.PHASES`); a phase hands over to one after it there.
Everything else is written once, here and in :mod:`cadet_magic.agent.routes`, for every phase:

- the routes (:func:`cadet_magic.agent.routes.route`): a step that passes leads to the next
  step that applies, the last one to ``finish``; a step that fails leads to ``diagnose``
  (straight to the decision when the step diagnosed its own failure); a model error ends the
  phase;
- the retry policy (:func:`cadet_magic.agent.routes.decide`): retry, hand over, or stop;
- the control steps: :func:`next_attempt` (the failed attempt recorded with its feedback, the
  next one started, the best candidate held), :func:`hand_over` (the next phase seeded with
  this one's attempts) and :func:`finish` (the last attempt recorded, the stop reason, or the
  best candidate as the answer when no attempt answered); :func:`node` names the function of
  any step.

The pipeline holds the best candidate a phase's ``answer.candidate`` offers (by the candidate's
rank) without knowing why the phase offered it.

A phase without a ``generate`` step (an attempt whose query is already known, e.g. run again
without a model) is a declaration like any other: the pipeline starts at its first step.

Example (the phases' attempts, as declared in :mod:`cadet_magic.agent.phases`):
    >>> from cadet_magic.agent.phases import PHASES
    >>> for spec in PHASES:
    ...     print(spec.name, tuple(map(str, spec.names())))
    sql ('generate', 'check', 'execute', 'check_result')
    vote ('generate', 'check', 'execute', 'check_result', 'tally')
    fallback ('generate', 'check', 'check_code', 'execute', 'run_code')
"""

from __future__ import annotations

import logging

from cadet_magic.agent import record
from cadet_magic.agent.phase_spec import Phases, PhaseSpec, StepFunction
from cadet_magic.agent.routes import best_candidate, decide, following
from cadet_magic.agent.state import AskState
from cadet_magic.agent.steps import Context
from cadet_magic.kinds import StepName
from cadet_magic.result import Attempt, StopReason

log = logging.getLogger("cadet_magic")


def node(phases: Phases, phase: PhaseSpec, name: StepName) -> StepFunction:
    """The function that runs step ``name`` of ``phase`` (one of ``phases``, the run's): a
    declared step or a control step."""
    if name == StepName.diagnose:
        return phase.attempt.diagnose
    if name == StepName.next_attempt:
        return lambda state, ctx: next_attempt(state, ctx, phase)
    if name == StepName.hand_over:
        return lambda state, ctx: hand_over(state, ctx, phase, phases)
    if name == StepName.finish:
        return lambda state, ctx: finish(state, ctx, phase, phases)
    return phase.step(name).run


def close(state: AskState, phase: PhaseSpec, feedback_sent: bool) -> Attempt:
    """The record of the attempt in progress, as ``phase`` records it."""
    return phase.attempt.close(state, feedback_sent, ok=phase.answer.answered(state))


def next_attempt(state: AskState, ctx: Context, phase: PhaseSpec) -> AskState:
    """Records the failed attempt with the feedback that goes to the model and starts the next;
    the best candidate answer so far is held."""
    done = record.closed(state, close(state, phase, feedback_sent=True))
    return done.replace(
        work=phase.attempt.begin(state.attempt + 1), best_candidate=best_candidate(state, phase)
    )


def hand_over(state: AskState, ctx: Context, phase: PhaseSpec, phases: Phases) -> AskState:
    """The phase ends (its last attempt recorded, without feedback, the best candidate answer
    held) and the phase of ``phases`` that follows starts
    (:func:`~cadet_magic.agent.routes.following`), seeded with the attempts so far."""
    answered = phase.answer.answered(state)
    target = following(phases, phase, state, answered or best_candidate(state, phase) is not None)
    assert target is not None and target.entry.start is not None  # routed only then
    done = record.closed(state, close(state, phase, feedback_sent=False))
    return target.entry.start(done.replace(best_candidate=best_candidate(state, phase)), ctx)


def finish(state: AskState, ctx: Context, phase: PhaseSpec, phases: Phases) -> AskState:
    """Records the last attempt and why the run stopped; when no attempt answered, the best
    candidate the phase offered answers (with its warnings)."""
    done = close(state, phase, feedback_sent=False)
    ended = record.closed(state, done)
    best = None if phase.answer.answered(state) else best_candidate(state, phase)
    if best is not None:
        log.info("[end] answered with the best candidate, from attempt %d", best.attempt)
        return ended.replace(best_candidate=best, answer=best, stop_reason=StopReason.success)
    if state.work.model_error:
        reason = StopReason.model_error
    elif phase.answer.answered(state):
        reason = StopReason.success
    else:
        reason = StopReason(decide(phases, phase, state))
    label = "" if phase.name == "sql" else phase.name + " "
    log.info("[end] %s%s after %d attempt(s)", label, reason, done.number)
    return ended.replace(stop_reason=reason)
