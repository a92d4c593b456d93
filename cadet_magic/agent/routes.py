"""Where the agent goes next: pure functions of the state and the phase's declaration, one
place for every routing and retry rule of every phase.

Every route takes the run's phases (a tuple, in the order they run:
:data:`cadet_magic.agent.phases.PHASES`) and the one the run is in. Within an attempt
(:func:`route_after_step`): a step that passes leads to the next declared
step that applies, the last one to ``finish``; a step that fails leads to ``diagnose``
(straight to the decision when it diagnosed its own failure, as the result check does); a
model error ends the phase. After a diagnosis (:func:`route_after_diagnose`) the one retry
policy (:func:`decide`) retries with feedback up to the phase's ``ending.limit`` (the
``max_attempts`` option); at the maximum a phase hands over (``"hand_over"``) when it allows
it and a phase after it follows (:func:`following`: one that replaces a failed phase, such as
the fallback, follows only when there is no candidate answer, which answers instead; one that
builds on an answer, such as the vote, follows after one too). An attempt that passed every
step ends the phase (:func:`route_after_answer`), unless the phase asks for more attempts or
a phase builds on its answer. Non-retryable errors (permission, connection), model errors and
the unchanged-attempt guard stop without one.

Example (the SQL phase, declared in :mod:`cadet_magic.agent.phases`):
    >>> from cadet_magic.agent.phases import PHASES, SQL_PHASE
    >>> from cadet_magic.agent.state import initial_state
    >>> from cadet_magic.diagnose.model import Category, Diagnosis
    >>> s = initial_state("q", target="duckdb", fallback=False).with_work(
    ...     number=3, sql="x", diagnosis=Diagnosis(Category.column_not_found, True))
    >>> str(decide(PHASES, SQL_PHASE, s))
    'max_attempts'
    >>> decide(PHASES, SQL_PHASE, s.replace(options=s.options.replace(fallback=True)))
    <Decision.hand_over: 'hand_over'>
    >>> route(PHASES, SQL_PHASE, StepName.generate, initial_state("q", target="duckdb"))  # no SQL
    <StepName.diagnose: 'diagnose'>
"""

from __future__ import annotations

from enum import StrEnum

from cadet_magic.agent.phase_spec import Phases, PhaseSpec, after, named
from cadet_magic.agent.state import AskState, Candidate, better
from cadet_magic.kinds import StepName
from cadet_magic.result import StopReason


class Decision(StrEnum):
    """What the retry policy decides after a failed attempt besides stopping (a
    :class:`~cadet_magic.result.StopReason`): another attempt, or the next phase.

    Example:
        >>> Decision("retry") is Decision.retry, str(Decision.hand_over)
        (True, 'hand_over')
    """

    retry = "retry"
    hand_over = "hand_over"

    def __str__(self) -> str:
        return self.value


#: The decision that hands the run over to the next phase.
HAND_OVER = Decision.hand_over


def best_candidate(state: AskState, phase: PhaseSpec) -> Candidate | None:
    """The best candidate answer so far: the state's, or the attempt in progress's (as
    ``phase.answer.candidate`` offers it), whichever ranks better."""
    return better(state.best_candidate, phase.answer.candidate(state))


def following(
    phases: Phases, phase: PhaseSpec, state: AskState, answered: bool
) -> PhaseSpec | None:
    """The phase the run goes on to when ``phase`` ends (``answered``: with an answer, its own
    or the best candidate): the first of ``phases`` after it that ``entry.enters`` and, after an
    answer, that builds on one (``entry.after_answer``); None: the run ends with ``phase``."""
    for nxt in after(phases, phase):
        if nxt.entry.enters(state) and (nxt.entry.after_answer or not answered):
            return nxt
    return None


def decide(phases: Phases, phase: PhaseSpec, state: AskState) -> StopReason | Decision:
    """After a failed attempt: ``retry``, ``hand_over`` (to the next phase) or the reason to
    stop; the one retry policy of every phase (``phase`` says what repeating the previous
    attempt means and whether it hands over at the maximum).

    The order matters: a non-retryable error stops, then a phase that gave up early (the
    state's ``entry``: the engine lacks what the attempt needs, or the attempt ran without
    computing what the question names) hands over when a phase follows, then the maximum is checked *before* any
    increment (handing over when allowed), then the unchanged guard (a model that keeps
    writing the same failed attempt hands over when allowed, else stops).
    """
    diagnosis = state.work.diagnosis
    if diagnosis is not None and not diagnosis.retryable:
        return StopReason.not_retryable
    answered = best_candidate(state, phase) is not None
    ending = phase.ending
    hands_over = ending.hands_over(state) and following(phases, phase, state, answered) is not None
    if state.entry is not None and hands_over:  # the phase gave up early for the one after
        return HAND_OVER
    if state.attempt >= ending.limit(state):
        return HAND_OVER if hands_over else StopReason.max_attempts
    if ending.unchanged(state):
        return HAND_OVER if hands_over else StopReason.unchanged_sql
    return Decision.retry


def route_after_diagnose(phases: Phases, phase: PhaseSpec, state: AskState) -> StepName:
    """After a failed attempt: the next attempt, the next phase, or the end."""
    decision = decide(phases, phase, state)
    if decision is Decision.retry:
        return StepName.next_attempt
    return StepName.hand_over if decision is Decision.hand_over else StepName.finish


def route_after_step(phases: Phases, phase: PhaseSpec, state: AskState, name: StepName) -> StepName:
    """After the declared step ``name``: the next step that applies, ``diagnose``, or the end."""
    if state.work.model_error:
        return StepName.finish
    steps = phase.steps
    i = phase.names().index(name)
    if not steps[i].passed(state):
        if state.work.diagnosis is None:
            return StepName.diagnose
        return route_after_diagnose(phases, phase, state)
    later = next((s.name for s in steps[i + 1 :] if s.when(state)), None)
    return later or route_after_answer(phases, phase, state)


def route_after_answer(phases: Phases, phase: PhaseSpec, state: AskState) -> StepName:
    """After an attempt that passed every step: another attempt when the phase asks for more
    (``ending.more``) and has attempts left, else the phase that follows (one that builds on
    the answer; after a vote that found none, the fallback), else the end."""
    ending = phase.ending
    if ending.more(state) and state.attempt < ending.limit(state):
        return StepName.next_attempt
    answered = phase.answer.answered(state) or best_candidate(state, phase) is not None
    ready = ending.hands_over(state) and following(phases, phase, state, answered) is not None
    return StepName.hand_over if ready else StepName.finish


def route(phases: Phases, phase: PhaseSpec, step: StepName, state: AskState) -> StepName:
    """Where the run goes after ``step`` of ``phase``, one of the run's ``phases`` (``"end"``
    when it is over)."""
    if step == StepName.diagnose:
        return route_after_diagnose(phases, phase, state)
    if step in (StepName.read_schema, StepName.next_attempt):
        return phase.first(state)
    if step == StepName.hand_over:  # the phase it handed over to (the state says which)
        return named(after(phases, phase), state.phase).first(state)
    if step == StepName.finish:
        return StepName.end
    return route_after_step(phases, phase, state, step)
