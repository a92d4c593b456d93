"""What the vote tells the user (plain data, standard library only): how many candidates gave
the answer (:class:`Agreement`) and the answers that competed with it (:class:`Competing`).

Example:
    >>> a = Agreement(3, 5)
    >>> str(a), a.unanimous, a.share
    ('3 of 5', False, 0.6)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Agreement:
    """How many candidates gave the answer (``votes``), of how many were drawn (``of``, those
    that gave no answer included)."""

    votes: int
    of: int

    @property
    def unanimous(self) -> bool:
        """Whether every candidate drawn gave this answer."""
        return self.votes == self.of

    @property
    def share(self) -> float:
        return self.votes / self.of if self.of else 0.0

    def __str__(self) -> str:
        return f"{self.votes} of {self.of}"


@dataclass(frozen=True)
class Competing:
    """An answer the candidates gave besides the chosen one: its SQL, the first rows of its
    result (``columns``, ``rows``; ``more``: whether it had more rows than shown) and how many
    candidates gave it (``votes``)."""

    sql: str
    votes: int
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = field(default=())
    more: bool = False
