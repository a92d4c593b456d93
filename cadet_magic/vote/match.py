"""Execution match: is one result the same answer as another? (stdlib; sqlglot for the
outer ORDER BY.)

The evaluation scores an answer against the gold query's result with it
(:mod:`cadet_magic.eval.match`), and the agent's vote groups its candidates by it
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
from collections.abc import Iterable, Sequence
from typing import Any

#: Significant digits floats are compared at.
FLOAT_DIGITS = 10
#: Column orders tried at most when the answer's columns come in another order.
MAX_PERMUTATIONS = 5040


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
    if width < 2:
        return False
    # Another column order: only columns whose values (as a multiset) agree can pair up.
    gold_cols = [Counter(r[i] for r in g) for i in range(width)]
    answer_cols = [Counter(r[i] for r in a) for i in range(width)]
    candidates = [[j for j in range(width) if answer_cols[j] == gold_cols[i]] for i in range(width)]
    if any(not c for c in candidates):
        return False
    tried = 0
    for choice in itertools.product(*candidates):
        if len(set(choice)) != width or list(choice) == list(range(width)):
            continue
        tried += 1
        if tried > MAX_PERMUTATIONS:
            break
        if _same(g, [tuple(r[j] for j in choice) for r in a], ordered):
            return True
    return False


def has_outer_order(sql: str, dialect: str | None = None) -> bool:
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


__all__ = ["execution_match", "has_outer_order", "normalise", "normalise_rows"]
