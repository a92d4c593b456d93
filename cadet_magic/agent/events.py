"""The run's progress events: a few frozen records the displays ``match`` on (standard library
only), never the run's state.

After every step the loop emits where the run is: :class:`AttemptProvisional` while an attempt
is in progress (its provisional record, rendered with the helpers of a finished one), else
:class:`StepDone` (the schema read, an attempt recorded); at the end :class:`RunDone`, with the
result as the core built it (the edge's ``finish`` adds the DataFrame and the cost).

Example:
    >>> from cadet_magic.result import AskResult, Attempt, Phase
    >>> def where(event):
    ...     match event:
    ...         case AttemptProvisional(attempt=a):
    ...             return f"{event.step}: attempt {a.number} running"
    ...         case StepDone(step=step, phase=phase):
    ...             return f"{step} ({phase})"
    ...         case RunDone(result=r):
    ...             return f"done: {r.ok}"
    >>> done = StepDone(StepName.read_schema, Phase.sql, 1, 3, "sqlite", "", (), 0.1)
    >>> where(done), where(RunDone(AskResult("q"), 0.2))
    ('read_schema (sql)', 'done: False')
    >>> where(AttemptProvisional(StepName.generate, Phase.sql, 1, 3, "sqlite", "", (), 0.3,
    ...                          Attempt(1, running=True)))
    'generate: attempt 1 running'
"""

from __future__ import annotations

from dataclasses import dataclass

from cadet_magic.kinds import Phase, StepName
from cadet_magic.result import AskResult, Attempt


@dataclass(frozen=True)
class StepDone:
    """A step finished, with no attempt in progress (the schema was read, or the step recorded
    the attempt).

    Attributes:
        step: the step that finished.
        phase: the phase the run is in after it.
        number: the number of the attempt in progress (within its phase).
        max_attempts: the most attempts that phase makes (the run's option; the vote's
            candidates besides the first answer).
        dialect: the dialect of the connection the run asks (its name).
        connection: the label of the connection the run asks.
        attempts: the finished attempts, every phase's, in order.
        elapsed: seconds since the run started.
    """

    step: StepName
    phase: Phase
    number: int
    max_attempts: int
    dialect: str
    connection: str
    attempts: tuple[Attempt, ...]
    elapsed: float


@dataclass(frozen=True)
class AttemptProvisional(StepDone):
    """A step finished with an attempt in progress: ``attempt`` is its provisional record
    (``running=True``; what is known so far)."""

    attempt: Attempt


@dataclass(frozen=True)
class RunDone:
    """The run ended: its result as the core built it, and the seconds it took."""

    result: AskResult
    elapsed: float


#: A progress event.
Event = StepDone | AttemptProvisional | RunDone
