"""Execution match: is one result the same answer as another? (stdlib; sqlglot for the
outer ORDER BY.)

The evaluation scores an answer against the gold query's result with it
(:mod:`cadet_magic.eval`), and the agent's vote groups its candidates by it
(:mod:`cadet_magic.vote.tally`): one rule, so that candidates agree exactly when the
evaluation would call their answers the same. The rule (docs/evaluation.md states it too):

- the rows are compared as **multisets** (duplicates count, order does not), unless the gold
  query has an outer ``ORDER BY``: then the rows must come in the same order;
- values are normalised first: numbers compare **by value** (``3``, ``3.0``, ``Decimal("3")``
  and ``True``-as-``1`` are equal; floats are rounded to 10 significant digits, so ``1/3``
  computed by the engine and by pandas agree), text compares **as is** (case and spaces
  count), NULL and NaN are the same missing value, dates and times compare as their ISO text;
- the answer must have the gold's number of columns; the columns may come in another order
  (a question asking for "name and age" is answered by ``age, name`` too), names do not count.
  The search for another order has a hard bound on its work (:data:`MAX_WORK`, rows examined
  over all the orders it tries, :func:`column_order`): past it, the answers count as different.

Example:
    >>> execution_match([(1, "a"), (2, "b")], [("b", 2.0), ("a", 1)], ordered=False)
    True
    >>> execution_match([(1,), (2,)], [(2,), (1,)], ordered=True)
    False
    >>> execution_match([(1,), (1,)], [(1,)], ordered=False)
    False
    >>> execution_match([("Paris",)], [("paris",)], ordered=False)
    False
"""

from __future__ import annotations

import datetime as _dt
import decimal
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlglot

#: Significant digits floats are compared at.
FLOAT_DIGITS = 10
#: Rows the search for another column order examines at most, over all the partial orders it
#: tries (each costs its rows once): the bound on its work, whatever the results (two answers
#: of 12 interchangeable-looking columns once cost about 7 x 10^10 orders).
MAX_WORK = 1_000_000


def normalise(value: Any) -> Any:
    """One value in its comparable form.

    Example:
        >>> [normalise(v) for v in (3, 3.0, True, 0.1 + 0.2, float("nan"), None, " a ")]
        [3, 3, 1, 0.3, None, None, ' a ']
        >>> import datetime; normalise(datetime.date(2024, 5, 1))
        '2024-05-01'
    """
    if value is None:
        return None
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__.startswith("numpy"):
        value = item()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float | decimal.Decimal):
        number = float(value)
        if math.isnan(number):
            return None
        if math.isinf(number):
            return number
        if number.is_integer() and abs(number) < 2**63:
            return int(number)
        return float(f"{number:.{FLOAT_DIGITS}g}")
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if type(value).__name__ in ("NaTType", "NAType"):  # pandas' missing values
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value
    return str(value)


def normalise_rows(rows: Iterable[Sequence[Any]]) -> list[tuple]:
    return [tuple(normalise(v) for v in row) for row in rows]


def _same(gold: list[tuple], answer: list[tuple], ordered: bool) -> bool:
    if ordered:
        return gold == answer
    return Counter(gold) == Counter(answer)


def execution_match(
    gold: Iterable[Sequence[Any]], answer: Iterable[Sequence[Any]], *, ordered: bool
) -> bool:
    """Whether ``answer``'s rows are ``gold``'s under the rule above."""
    g, a = normalise_rows(gold), normalise_rows(answer)
    if len(g) != len(a):
        return False
    if not g:
        return True
    width = len(g[0])
    if any(len(r) != width for r in a) or any(len(r) != width for r in g):
        return False
    if _same(g, a, ordered):
        return True
    return width > 1 and column_order(g, a, ordered=ordered).order is not None


@dataclass(frozen=True)
class OrderSearch:
    """What the search for a column order found: ``order`` (for each of gold's columns, the
    answer's column that stands for it; None when none does or the bound was reached),
    ``work`` (rows examined), ``tried`` (partial orders tried) and ``bounded`` (it stopped at
    :data:`MAX_WORK` without an answer)."""

    order: tuple[int, ...] | None
    work: int
    tried: int
    bounded: bool = False


def column_order(
    gold: list[tuple], answer: list[tuple], *, ordered: bool, max_work: int = MAX_WORK
) -> OrderSearch:
    """An order of ``answer``'s columns under which its rows are ``gold``'s (both normalised,
    of one width and one length), found with work bounded by ``max_work`` rows.

    Ordered rows: a column must equal its gold column value for value, so the columns pair up
    by their values at once. Unordered: gold's columns are given answer columns one at a time
    (those of the same values, as a multiset, first the gold column with the fewest); two
    answer columns holding the same values row for row are one choice, and a partial order is
    given up as soon as the rows it pairs do not agree as multisets.

    Example:
        >>> column_order([(1, "a"), (2, "b")], [("b", 2), ("a", 1)], ordered=False).order
        (1, 0)
        >>> column_order([(1, 2)], [(2, 3)], ordered=False).order is None
        True
    """
    gold_cols, answer_cols = list(zip(*gold, strict=True)), list(zip(*answer, strict=True))
    if ordered:
        return _paired_by_values(gold_cols, answer_cols, len(gold))
    return _Search(gold_cols, answer_cols, max_work).run()


def _paired_by_values(gold_cols: list[tuple], answer_cols: list[tuple], rows: int) -> OrderSearch:
    free: dict[tuple, list[int]] = {}
    for j, col in enumerate(answer_cols):
        free.setdefault(col, []).append(j)
    order = []
    for col in gold_cols:
        same = free.get(col)
        if not same:
            return OrderSearch(None, rows * len(gold_cols), 1)
        order.append(same.pop(0))
    return OrderSearch(tuple(order), rows * len(gold_cols), 1)


class _Search:
    """The unordered search (see :func:`column_order`), one per comparison. Setting it up
    reads each column once; the search itself counts every row it examines."""

    def __init__(self, gold_cols: list[tuple], answer_cols: list[tuple], max_work: int) -> None:
        self.gold_cols, self.answer_cols, self.max_work = gold_cols, answer_cols, max_work
        self.rows = len(gold_cols[0])
        self.work = self.tried = 0
        self.ids: dict[tuple, int] = {}  # (row's key so far, value) -> the key it becomes
        self.numbers = itertools.count(1)  # new keys (one drawn per row: gaps do not matter)
        # answer columns holding the same values row for row: one class, one choice
        classes: dict[tuple, int] = {}
        self.same_as = [classes.setdefault(col, j) for j, col in enumerate(answer_cols)]
        by_values: dict[frozenset, list[int]] = {}
        for j, col in enumerate(answer_cols):
            by_values.setdefault(frozenset(Counter(col).items()), []).append(j)
        self.candidates = [by_values.get(frozenset(Counter(c).items()), []) for c in gold_cols]
        # the gold columns with the fewest candidates first: the search narrows at once
        self.sequence = sorted(range(len(gold_cols)), key=lambda i: len(self.candidates[i]))

    def run(self) -> OrderSearch:
        if any(not c for c in self.candidates):
            return OrderSearch(None, 0, 0)
        try:
            found = self._search()
        except _Bounded:
            return OrderSearch(None, self.work, self.tried, bounded=True)
        return OrderSearch(found, self.work, self.tried)

    def _keys(self, before: tuple, column: tuple) -> tuple:
        """Each row's key once ``column`` is added (a number per distinct row so far)."""
        return tuple(map(self.ids.setdefault, zip(before, column, strict=True), self.numbers))

    def _choices(self, depth: int, chosen: list[int]) -> Iterator[int]:
        """The answer columns to try for the gold column at ``depth``: unused ones, one of each
        class (a column like one tried here gives the same partial order)."""
        used, seen = set(chosen), set()
        for j in self.candidates[self.sequence[depth]]:
            if j not in used and self.same_as[j] not in seen:
                seen.add(self.same_as[j])
                yield j

    def _search(self) -> tuple[int, ...] | None:
        """Depth first, without recursion (a result may have thousands of columns): a frame per
        gold column given, with the rows' keys so far and the choices left for the next."""
        start = (0,) * self.rows
        chosen: list[int] = []
        frames = [(start, start, self._choices(0, chosen))]
        while frames:
            gold_keys, answer_keys, choices = frames[-1]
            depth = len(frames) - 1
            j = next(choices, None)
            if j is None:
                frames.pop()
                if chosen:
                    chosen.pop()
                continue
            self.tried += 1
            self.work += self.rows
            if self.work > self.max_work:
                raise _Bounded
            g = self._keys(gold_keys, self.gold_cols[self.sequence[depth]])
            a = self._keys(answer_keys, self.answer_cols[j])
            if dict(Counter(g)) != dict(Counter(a)):  # (dict's own comparison: no Python loop)
                continue  # the rows these columns pair already disagree
            chosen.append(j)
            if len(chosen) == len(self.sequence):
                order = dict(zip(self.sequence, chosen, strict=True))
                return tuple(order[i] for i in range(len(self.sequence)))
            frames.append((g, a, self._choices(depth + 1, chosen)))
        return None


class _Bounded(Exception):
    """The search reached its bound on work."""


def has_outer_order(sql: str, dialect: sqlglot.Dialect | None = None) -> bool:
    """Whether the query's outermost statement sorts its rows (an ``ORDER BY`` outside every
    subquery; a set operation's trailing ``ORDER BY`` counts).

    Example:
        >>> has_outer_order("SELECT a FROM t ORDER BY a")
        True
        >>> has_outer_order("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3)")
        False
        >>> has_outer_order("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1")
        True
    """
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        # Unreadable here: an ORDER BY after the last closing parenthesis is taken as outer.
        text = " ".join(sql.lower().split())
        return text.rfind(" order by ") > text.rfind(")")
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    return tree.args.get("order") is not None


__all__ = [
    "MAX_WORK",
    "OrderSearch",
    "column_order",
    "execution_match",
    "has_outer_order",
    "normalise",
    "normalise_rows",
]
