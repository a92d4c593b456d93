"""A phase's declaration (:class:`PhaseSpec`): its name, its attempt's steps in order and its
hooks, grouped by what they decide. Plain data: the pipeline (:mod:`cadet_magic.agent.pipeline`)
and the routes (:mod:`cadet_magic.agent.routes`) read it, and import nothing that imports them.

- :class:`AttemptHooks`: how an attempt begins, is diagnosed and is recorded;
- :class:`AnswerHooks`: whether it answered, the candidate answer it keeps, its warnings;
- :class:`Ending`: when the phase's attempts end (the limit, one more, a repeat) and whether it
  then hands over;
- :class:`Entry`: how the run enters the phase after the one before it.

The phases run in the order of a tuple (:data:`cadet_magic.agent.phases.PHASES`): the phase a
phase hands over to is one after it in that tuple (:func:`after`), never a field of its own.

Example:
    >>> from cadet_magic.agent.phases import PHASES
    >>> [str(p.name) for p in after(PHASES, named(PHASES, "sql"))]
    ['vote', 'fallback']
    >>> after(PHASES, named(PHASES, "fallback"))
    ()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cadet_magic.agent.state import AskState, Candidate, Work
from cadet_magic.agent.steps import Context
from cadet_magic.kinds import Phase, StepName
from cadet_magic.result import Attempt

#: A step's function: the state and the run's context in, the next state out.
StepFunction = Callable[[AskState, Context], AskState]
#: A test of the state (does the attempt go on, does a step apply, ...).
Test = Callable[[AskState], bool]


def _always(state: AskState) -> bool:
    return True


def _never(state: AskState) -> bool:
    return False


def _no_candidate(state: AskState) -> Candidate | None:
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
class AttemptHooks:
    """How the phase's attempt is made and recorded. ``diagnose``: the step that turns a failure
    into a :class:`~cadet_magic.diagnose.model.Diagnosis`; ``close(state, feedback_sent, ok)``:
    the :class:`Attempt` record; ``provisional(state)``: the record while it runs;
    ``begin(number)``: the record of a new attempt in progress (its fields:
    :class:`~cadet_magic.agent.state.Work` or a phase's own kind of it)."""

    diagnose: StepFunction
    close: Callable[..., Attempt]
    provisional: Callable[[AskState], Attempt]
    begin: Callable[[int], Work] = Work


@dataclass(frozen=True)
class AnswerHooks:
    """What an attempt gives as an answer. ``answered(state)``: whether it gave the answer;
    ``candidate(state)``: its result as a candidate answer, held in case no attempt answers
    (None: it offers none); ``warnings(state)``: what the answer's warnings say."""

    answered: Test
    candidate: Callable[[AskState], Candidate | None] = _no_candidate
    warnings: Callable[[AskState], tuple[str, ...]] = _no_warnings


@dataclass(frozen=True)
class Ending:
    """When the phase's attempts end. ``unchanged(state)``: whether the attempt repeats the
    previous one (the retry policy then stops); ``limit(state)``: attempts at most (default the
    ``max_attempts`` option); ``more(state)``: whether an attempt that passed every step still
    asks for another (a vote not yet clear); ``hands_over(state)``: whether the phase hands over
    to one after it when its attempts are used up."""

    unchanged: Test
    limit: Callable[[AskState], int] = _max_attempts
    more: Test = _never
    hands_over: Test = _never


@dataclass(frozen=True)
class Entry:
    """How the run enters the phase after the one before it. ``start(state, ctx)``: enters it;
    ``prepare(ctx)``: lets it get ready while the phase before it still runs; ``enters(state)``:
    whether the run enters it when the phase before hands over (else it goes on to the phase
    after it); ``after_answer``: whether it also follows a phase that found an answer (its
    ``start`` then finds it: the attempt that answered, or the best candidate), where a phase
    that replaces a failed one (the fallback) follows only a phase that found none. The first
    phase is entered by the run itself: its entry is the default."""

    start: StepFunction | None = None
    prepare: Callable[[Context], None] | None = None
    enters: Test = _always
    after_answer: bool = False


@dataclass(frozen=True)
class PhaseSpec:
    """A phase as a declaration of its attempt pipeline: ``name``, ``steps`` (the attempt's
    steps in order) and its hooks (``attempt``, ``answer``, ``ending``, ``entry``)."""

    name: Phase
    steps: tuple[Step, ...]
    attempt: AttemptHooks
    answer: AnswerHooks
    ending: Ending
    entry: Entry = Entry()

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


#: The phases a run goes through, in the order they run.
Phases = tuple[PhaseSpec, ...]


def named(phases: Iterable[PhaseSpec], name: str) -> PhaseSpec:
    """The phase of ``phases`` called ``name``."""
    for spec in phases:
        if spec.name == name:
            return spec
    raise KeyError(name)


def after(phases: Phases, spec: PhaseSpec) -> Phases:
    """The phases that run after ``spec`` (one of ``phases``), in order (none: ``spec`` is the
    last)."""
    at = next(i for i, p in enumerate(phases) if p is spec)
    return phases[at + 1 :]
