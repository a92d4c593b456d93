"""The run's state: frozen records that each step replaces (:func:`dataclasses.replace`), never
changes.

:class:`AskState` is everything one question's run knows: its inputs, what was read once (the
schema and its prompt text), the finished :class:`~cadet_magic.result.Attempt` records, the
candidate answer a phase keeps (:class:`Candidate`) and, in ``work``, the attempt in progress.
The attempt in progress is a record of its own (:class:`Work`): what the model replied
(:class:`Reply`), the SQL and the safety check's verdict (whose ``query`` is the
:class:`~cadet_magic.sql.query.CheckedQuery`), the engine's result or error, the diagnosis,
the steps' timings. A phase whose attempts hold more extends it in its own module (the SQL
phase's result check: ``sql_phase.SqlWork``; the fallback's pandas code:
``fallback_phase.CodeWork``); the next attempt starts from a new record, its phase's
(``PhaseSpec.begin``).

Example:
    >>> s = initial_state("How many?", target="sqlite", max_attempts=2)
    >>> s.options.max_attempts, s.options.row_limit, str(s.phase), s.attempt, s.target.read
    (2, 1000, 'sql', 1, 'sqlite')
    >>> s = s.with_work(sql="SELECT 1").timed("generate", 0.5)
    >>> s.work.sql, dict(s.work.timings), s.question
    ('SELECT 1', {'generate': 0.5}, 'How many?')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from cadet_magic.diagnose.model import Diagnosis
from cadet_magic.options import AskOptions, merged
from cadet_magic.result import Attempt, Phase, StopReason, Tokens
from cadet_magic.runner import RunResult
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.target import Target, as_target
from cadet_magic.sql.validate import Validation
from cadet_magic.vote.tally import Tally

#: No timings yet (a read-only mapping shared by every new attempt).
NO_TIMINGS: Mapping[str, float] = MappingProxyType({})


@dataclass(frozen=True)
class Reply:
    """What the model answered: its text, the tokens its provider reported (None: none
    reported) and the seconds the call took."""

    text: str = ""
    tokens: Tokens | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class Work:
    """The attempt in progress, as far as it went.

    ``number``: its number within the phase. ``reply``: the model's (None before the model
    answered, and in a rerun). ``sql``: the SQL as it stands (the model's; with the strings it
    wrote in double quotes in single quotes once checked). ``check``: the safety check's
    verdict. ``execution``: the engine's result; ``error``: the engine's error (data for the
    diagnosis). ``diagnosis``: why it failed and what to tell the model. ``model_error``: the
    model could not be called (one line). ``timings``: seconds per step.
    """

    number: int = 1
    reply: Reply | None = None
    sql: str | None = None
    check: Validation | None = None
    execution: RunResult | None = None
    error: BaseException | None = None
    diagnosis: Diagnosis | None = None
    model_error: str | None = None
    timings: Mapping[str, float] = field(default_factory=lambda: NO_TIMINGS)

    @property
    def query(self) -> CheckedQuery | None:
        """The checked query, when the safety check let the SQL through."""
        return self.check.query if self.check is not None and self.check.ok else None

    @property
    def checked(self) -> bool:
        """Whether the safety check passed the SQL."""
        return self.check is not None and self.check.ok


@dataclass(frozen=True)
class Candidate:
    """An answer a phase keeps in case no better one follows: the attempt, its SQL, its run,
    how good it is (``rank``: lower is better) and the warnings it answers with."""

    attempt: int
    sql: str | None
    execution: RunResult
    rank: tuple[int, ...]
    warnings: tuple[str, ...] = ()


def better(a: Candidate | None, b: Candidate | None) -> Candidate | None:
    """The better of two candidates (the lower rank; on a tie the second, the later one).

    Example:
        >>> r = RunResult(["n"], [(1,)])
        >>> better(Candidate(1, "a", r, (1,)), Candidate(2, "b", r, (1,))).attempt
        2
        >>> better(Candidate(1, "a", r, (0,)), None).attempt
        1
    """
    if a is None or b is None:
        return a or b
    return a if a.rank < b.rank else b


@dataclass(frozen=True)
class AskState:
    """Everything one question's run knows.

    Inputs: ``question``, ``target`` (the :class:`~cadet_magic.sql.target.Target` the run
    asks: its engine and dialect, and once the schema is read its tables, columns, function
    allow-list and ``ansi_quotes``, which the check, the runner and the diagnosis take whole),
    ``connection`` (the runner's label), ``options`` (the run's
    :class:`~cadet_magic.options.AskOptions`, whole: every step reads its options there). Read
    once: ``schema``, ``schema_text`` (what the prompt shows of it). ``phase``: the phase in
    progress. ``work``: the attempt in progress. Done: ``attempts`` (every phase's, in order;
    ``forms``: their SQL's normal forms, made once from the checked tree as each attempt closes,
    to tell a later attempt that writes the same query; ``tables``: the schema's tables each
    one's checked query reads, read from the same tree), ``best_candidate`` (the best
    candidate answer so far), ``answer`` (the candidate that answered, when no clean attempt
    did) and ``stop_reason``; ``vote``: the vote's tally of candidate answers
    (:mod:`cadet_magic.agent.vote_phase`; None until the vote starts). ``entry``: why the SQL
    phase gives up before its attempts are used up, for the fallback (``engine_lacks``,
    ``computation_missing``; None: it does not).
    """

    question: str
    target: Target
    options: AskOptions = field(default_factory=AskOptions)
    connection: str = ""
    phase: Phase = Phase.sql
    schema: Schema = field(default_factory=Schema)
    schema_text: str = ""
    work: Work = field(default_factory=Work)
    attempts: tuple[Attempt, ...] = ()
    forms: tuple[str, ...] = ()
    tables: tuple[tuple[str, ...], ...] = ()
    best_candidate: Candidate | None = None
    answer: Candidate | None = None
    stop_reason: StopReason | None = None
    vote: Tally | None = None
    entry: StopReason | None = None

    @property
    def attempt(self) -> int:
        """The number of the attempt in progress (within its phase)."""
        return self.work.number

    def replace(self, **changes: Any) -> AskState:
        """A copy with ``changes`` (field names of the state)."""
        return dataclasses.replace(self, **changes)

    def with_work(self, **changes: Any) -> AskState:
        """A copy whose attempt in progress has ``changes`` (field names of its record)."""
        return dataclasses.replace(self, work=dataclasses.replace(self.work, **changes))

    def timed(self, step: str, seconds: float) -> AskState:
        """A copy with ``step``'s seconds added to the attempt's timings."""
        return self.with_work(timings=MappingProxyType({**self.work.timings, step: seconds}))


def initial_state(
    question: str,
    *,
    target: Target | str | None,
    connection: str = "",
    options: AskOptions | None = None,
    **overrides: Any,
) -> AskState:
    """The state a run starts from: the question, what the run asks (a
    :class:`~cadet_magic.sql.target.Target`, or a dialect's name resolved once here) and the
    connection's label, and the inputs of ``options`` (an :class:`AskOptions`, default its
    defaults; ``overrides`` are option names such as ``max_attempts=2`` applied on top); its
    first SQL attempt waits."""
    return AskState(
        question=question,
        target=as_target(target),
        connection=connection,
        options=merged(options, **overrides),
    )
