"""The figures of an evaluation: accuracies with intervals, the gain of one setting over
another on the same questions (paired bootstrap and McNemar's exact test), and percentiles.
Standard library only.

Example:
    >>> first = [True, False, False, True, False, True, False, False]
    >>> final = [True, True, False, True, True, True, False, True]
    >>> g = gain(first, final, seed=1)
    >>> g.diff, g.gained, g.lost, round(g.p_value, 3)
    (0.375, 3, 0, 0.25)
    >>> g.low <= g.diff <= g.high
    True
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

#: Resamples of the paired bootstrap.
BOOTSTRAP_REPS = 10_000
#: z for a two-sided 95% interval.
Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval (95%) of ``k`` successes in ``n``.

    Example:
        >>> [round(x, 3) for x in wilson(8, 10)]
        [0.49, 0.943]
        >>> wilson(0, 0)
        (0.0, 1.0)
    """
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Gain:
    """How much more often ``after`` is right than ``before`` on the same questions.

    Attributes:
        n: questions compared.
        diff: accuracy of ``after`` minus that of ``before``.
        low, high: the 95% interval of ``diff`` (paired bootstrap, percentile).
        gained: questions right after and wrong before; ``lost``: the other way round.
        p_value: McNemar's exact two-sided p-value on the ``gained``/``lost`` pairs.
    """

    n: int
    diff: float
    low: float
    high: float
    gained: int
    lost: int
    p_value: float


def mcnemar(gained: int, lost: int) -> float:
    """McNemar's exact test: the two-sided binomial p-value of the discordant pairs.

    Example:
        >>> round(mcnemar(10, 2), 4), mcnemar(0, 0)
        (0.0386, 1.0)
    """
    m = gained + lost
    if m == 0:
        return 1.0
    k = min(gained, lost)
    tail = sum(math.comb(m, i) for i in range(k + 1)) / 2**m
    return min(1.0, 2 * tail)


def gain(
    before: Sequence[bool], after: Sequence[bool], reps: int = BOOTSTRAP_REPS, seed: int = 0
) -> Gain:
    """The paired gain of ``after`` over ``before`` (two verdicts per question, same order)."""
    if len(before) != len(after):
        raise ValueError("before and after must hold the same questions")
    n = len(before)
    deltas = [int(a) - int(b) for b, a in zip(before, after, strict=True)]
    gained = deltas.count(1)
    lost = deltas.count(-1)
    if n == 0:
        return Gain(0, 0.0, 0.0, 0.0, 0, 0, 1.0)
    diff = sum(deltas) / n
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(deltas, k=n)) / n for _ in range(reps))
    low = means[int(0.025 * (reps - 1))]
    high = means[int(math.ceil(0.975 * (reps - 1)))]
    return Gain(n, diff, low, high, gained, lost, mcnemar(gained, lost))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation; None without values.

    Example:
        >>> percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90)
        (2.5, 9.1)
    """
    data = sorted(v for v in values if v is not None)
    if not data:
        return None
    pos = (len(data) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)
