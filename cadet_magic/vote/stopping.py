"""When to stop drawing candidates: as soon as the vote's outcome is clear.

A question the model is sure of should cost little more than one answer; one it is not sure
of gets more candidates, up to the budget. Every rule stops at the budget and when the winner
can no longer change (:func:`settled`); each adds its own test of "clear":

- :class:`FirstAgree`: the first ``k`` candidates drawn all gave the same answer;
- :class:`BetaStop` (adaptive consistency): the probability that the leading answer is the
  more likely of the two leading ones, under a uniform prior on their shares (a Beta
  distribution), reaches ``threshold``.

Which rule the agent uses, with which setting, is measured (docs/benchmarks-history.md, "the vote's settings").

Example:
    >>> from cadet_magic.vote.tally import Ballot, tally
    >>> same = tally([Ballot(0, "a", ((1,),)), Ballot(1, "b", ((1,),))])
    >>> stop(FirstAgree(2), same, budget=5), stop(BetaStop(0.95), same, budget=5)
    (True, False)
    >>> round(leads(2, 0), 3), round(leads(4, 0), 3)
    (0.875, 0.969)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cadet_magic.vote.tally import Tally


def leads(a: int, b: int) -> float:
    """P(p > 1/2) for p ~ Beta(a + 1, b + 1): how likely the answer seen ``a`` times is more
    probable than the one seen ``b`` times (exact, for whole counts: a binomial tail).

    Example:
        >>> leads(0, 0), leads(1, 1)
        (0.5, 0.5)
    """
    n = a + b + 1
    return sum(math.comb(n, i) for i in range(a + 1)) / 2**n


def settled(t: Tally, budget: int) -> bool:
    """Whether the winner can no longer change: the budget is spent, or the candidates left
    cannot give another answer as many votes."""
    left = budget - t.drawn
    if left <= 0:
        return True
    w, r = t.winner, t.runner_up
    if w is None:
        return False
    return w.votes > (r.votes if r is not None else 0) + left and w.votes > left


@dataclass(frozen=True)
class FirstAgree:
    """Clear when the first ``k`` candidates drawn (and every one after) gave one answer."""

    k: int = 2

    def clear(self, t: Tally) -> bool:
        w = t.winner
        return t.drawn >= self.k and w is not None and w.votes == t.drawn

    def __str__(self) -> str:
        return f"first {self.k} agree"


@dataclass(frozen=True)
class BetaStop:
    """Clear when :func:`leads` (the leading answer against the runner-up; candidates without
    an answer are not counted) reaches ``threshold``."""

    threshold: float = 0.95

    def clear(self, t: Tally) -> bool:
        w, r = t.winner, t.runner_up
        if w is None:
            return False
        return leads(w.votes, r.votes if r is not None else 0) >= self.threshold

    def __str__(self) -> str:
        return f"beta {self.threshold:g}"


Rule = FirstAgree | BetaStop


def stop(rule: Rule, t: Tally, budget: int) -> bool:
    """Whether to stop drawing candidates after the tally ``t`` (``budget``: the most
    candidates, the first answer included)."""
    return settled(t, budget) or rule.clear(t)
