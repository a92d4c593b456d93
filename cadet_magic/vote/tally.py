"""The execution vote: candidates grouped by their result, the answer most of them give.

Each candidate answer that ran is a :class:`Ballot` (its place among the candidates, 0 being
the first answer the agent found, its SQL and its rows). Two ballots are the same answer when
their results are, compared as the evaluation compares an answer with the gold one
(:func:`~cadet_magic.vote.execution_match.execution_match`: rows as multisets, numbers by value, the
columns in any order); a result cut at the row limit agrees only with another cut one. A
:class:`Tally` holds the groups, the most votes first and, on a tie, the group holding the
earliest candidate (the first answer, made greedily, wins its ties), and counts every
candidate drawn, those that gave no answer included: its :attr:`Tally.agreement` is how many
gave the winning answer, of how many were drawn.

Example:
    >>> t = tally([Ballot(0, "SELECT 1", ((1,),)), Ballot(1, "SELECT 2", ((2,),)),
    ...            Ballot(2, "SELECT 1.0", ((1.0,),))], drawn=4)
    >>> t.winner.first.sql, str(t.agreement), t.split
    ('SELECT 1', '2 of 4', True)
    >>> tally([Ballot(0, "a", ((1,),)), Ballot(1, "b", ((2,),))], drawn=2).winner.first.sql
    'a'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cadet_magic.vote.answers import Agreement
from cadet_magic.vote.execution_match import execution_match


@dataclass(frozen=True)
class Ballot:
    """One candidate's answer: ``index`` (its place among the candidates; 0 is the first
    answer), its ``sql``, its result's ``rows`` (and ``columns``), whether the result was cut
    (``truncated``), and ``extra``: whatever its maker keeps with it (not compared)."""

    index: int
    sql: str
    rows: tuple[tuple[Any, ...], ...]
    columns: tuple[str, ...] = ()
    truncated: bool = False
    extra: Any = field(default=None, compare=False)


def same_answer(a: Ballot, b: Ballot) -> bool:
    """Whether two ballots give the same answer (the evaluation's rule, in any row order).

    Example:
        >>> same_answer(Ballot(0, "a", ((1, "x"),)), Ballot(1, "b", (("x", 1.0),)))
        True
        >>> same_answer(Ballot(0, "a", ((1,),), truncated=True), Ballot(1, "b", ((1,),)))
        False
    """
    return a.truncated == b.truncated and execution_match(a.rows, b.rows, ordered=False)


@dataclass(frozen=True)
class Group:
    """Ballots that give the same answer, in candidate order; the first stands for them."""

    ballots: tuple[Ballot, ...]

    @property
    def first(self) -> Ballot:
        return self.ballots[0]

    @property
    def votes(self) -> int:
        return len(self.ballots)


@dataclass(frozen=True)
class Tally:
    """The groups, ranked (most votes first; on a tie the one holding the earliest candidate),
    and ``drawn``: how many candidates were drawn, those without an answer included."""

    groups: tuple[Group, ...] = ()
    drawn: int = 0

    @property
    def winner(self) -> Group | None:
        """The answer most candidates give (None: no candidate gave one)."""
        return self.groups[0] if self.groups else None

    @property
    def runner_up(self) -> Group | None:
        return self.groups[1] if len(self.groups) > 1 else None

    @property
    def answered(self) -> int:
        """Candidates that gave an answer."""
        return sum(g.votes for g in self.groups)

    @property
    def agreement(self) -> Agreement | None:
        """How many candidates gave the winning answer, of how many were drawn."""
        w = self.winner
        return None if w is None else Agreement(w.votes, self.drawn)

    @property
    def split(self) -> bool:
        """Whether the candidates do not all give the winning answer (another answer, or none)."""
        w = self.winner
        return w is not None and w.votes < self.drawn

    @property
    def contested(self) -> bool:
        """Whether another answer competes with the winning one."""
        return len(self.groups) > 1

    def add(self, ballot: Ballot | None) -> Tally:
        """The tally with one more candidate drawn (``None``: it gave no answer)."""
        if ballot is None:
            return Tally(self.groups, self.drawn + 1)
        groups = list(self.groups)
        for i, g in enumerate(groups):
            if same_answer(g.first, ballot):
                groups[i] = Group((*g.ballots, ballot))
                break
        else:
            groups.append(Group((ballot,)))
        return Tally(ranked(groups), self.drawn + 1)


def ranked(groups: Sequence[Group]) -> tuple[Group, ...]:
    """Most votes first; on a tie, the group holding the earliest candidate first."""
    return tuple(sorted(groups, key=lambda g: (-g.votes, min(b.index for b in g.ballots))))


def tally(ballots: Sequence[Ballot | None], drawn: int | None = None) -> Tally:
    """The tally of ``ballots`` in candidate order (``None``: a candidate without an answer);
    ``drawn`` counts more candidates without an answer when it is larger than the list."""
    t = Tally()
    for b in ballots:
        t = t.add(b)
    extra = 0 if drawn is None else max(drawn - t.drawn, 0)
    return Tally(t.groups, t.drawn + extra)
