"""Answers whose shape contradicts the question (stdlib + sqlglot).

A query can run cleanly and still answer another question: a ``LIMIT`` the question did not
ask for (a ranking cut to one row where every category was wanted), one row for a question
"per X" or "for each X", an ordering the question asked for and the query does not give, a
list of things where the question asked for a figure. Each sign reads three things only: the
question's words, the checked query's tree and the result's rows; none asks the database.

:func:`shape_signs` names the signs of one answer (names from :data:`SHAPE_SIGNS`);
:data:`WARNINGS` says each to the user. Which of them the agent shows is decided by
measurement (docs/benchmarks-history.md, "Signs of a wrong answer that ran": their precision on the real model's answers
and their false alarms on right ones), not here.

Example:
    >>> import sqlglot
    >>> q = "What is the revenue per product category, highest first?"
    >>> t = sqlglot.parse_one(
    ...     "SELECT category, SUM(price) FROM p GROUP BY category ORDER BY 2 DESC LIMIT 1")
    >>> shape_signs(q, t, [("Books", 10.0)])
    ('unasked_limit', 'one_row_for_each')
    >>> shape_signs("List the names in alphabetical order.",
    ...             sqlglot.parse_one("SELECT name FROM t"), [("b",), ("a",)])
    ('order_not_given',)
    >>> shape_signs("How many orders are there per month?",
    ...             sqlglot.parse_one("SELECT month FROM o GROUP BY month"), [("Jan",), ("Feb",)])
    ('figure_missing',)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sqlglot import exp

#: Every shape sign, in the order they are reported.
SHAPE_SIGNS = ("unasked_limit", "one_row_for_each", "order_not_given", "figure_missing")

#: What each sign tells the user.
WARNINGS = {
    "unasked_limit": (
        "The query keeps only the first {limit} row(s) (LIMIT {limit}), which the question "
        "does not ask for."
    ),
    "one_row_for_each": (
        "The question asks for each item of a group, and the answer has a single row."
    ),
    "order_not_given": "The question asks for an order, and the query {how}.",
    "figure_missing": (
        "The question asks for a figure (a count, total or average), and the answer shows none."
    ),
}

_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()
#: Words ending in -est that are not superlatives.
_NOT_SUPERLATIVE = frozenset(
    "interest request test forest west guest contest nest honest modest suggest digest rest "
    "harvest protest invest arrest manifest pest quest vest chest attest priest crest detest "
    "infest inquest conquest behest unrest midwest southwest northwest everest budapest "
    "bucharest est latest_".split()
)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|\d+")
#: Words that bound how many rows the answer has (a superlative, a rank, "top", "first").
_BOUNDING = frozenset(
    "most least fewest top first last maximum minimum max min best worst only single".split()
)
#: "For each X", "per X" (not a rate such as "miles per gallon", nor "each time").
_EACH = re.compile(
    r"\b(?:for|in|of|within|from) (?:each|every)\b(?! time\b)|"
    r"(?<!\bmiles )(?<!\bpages )(?<!\bwords )(?<!\bkilometers )(?<!\bkm )\bper\b(?! cent\b)",
    re.I,
)
_ORDER = re.compile(
    r"\b(?:in (?:[a-z]+ ){0,3}order(?! to\b)|order(?:ed)? (?:by|of|from)|sort(?:ed|s)?|"
    r"rank(?:ed|s)?|descending(?:ly)?|ascending(?:ly)?|decreasing|increasing|alphabetical(?:ly)?|"
    r"[a-z]+est first|(?:most|least|fewest) first|from (?:the )?[a-z]+ to (?:the )?[a-z]+)\b",
    re.I,
)
_DESCENDING = re.compile(
    r"\b(?:reverse (?:alphabetical|lexicographic)|descending|decreasing|"
    r"(?:highest|largest|biggest|greatest|most|best) first|"
    r"from (?:the )?(?:highest|largest|biggest|greatest|most|best) to)\b",
    re.I,
)
_ASCENDING = re.compile(
    r"\b(?:ascending|increasing|(?<!reverse )alphabetical(?:ly)?|"
    r"(?:lowest|smallest|least|fewest) first|"
    r"from (?:the )?(?:lowest|smallest|least|fewest) to)\b",
    re.I,
)
#: The question asks for a figure as (part of) the answer, not as a ranking criterion.
_FIGURE = re.compile(
    r"^\s*(?:how many|how much)\b|"
    r"\b(?:and|with|show|give|list|return|display|report|what (?:is|are|was|were)|find)"
    r"\s+(?:the\s+|their\s+|its\s+|his\s+|her\s+)?"
    r"(?:total\s+)?(?:number|count|total|sum|average|mean|amount)\b",
    re.I,
)
_AGGREGATES = (exp.AggFunc, exp.Window)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div)


def words(question: str) -> list[str]:
    """The question's words, lower case (numbers kept as digits).

    Example:
        >>> words("Top 3 singer's names?")
        ['top', '3', "singer's", 'names']
    """
    return _WORD.findall(question.lower().replace("\u2019", "'"))


def superlative(word: str) -> bool:
    """Whether ``word`` is a superlative (``highest``, ``most``, ``youngest``).

    Example:
        >>> [superlative(w) for w in ("highest", "interest", "most", "name")]
        [True, False, True, False]
    """
    w = word.split("'")[0]
    if w in _BOUNDING:
        return True
    return len(w) > 4 and w.endswith("est") and w not in _NOT_SUPERLATIVE


def asks_bounded(question: str, limit: int) -> bool:
    """Whether the question bounds the rows it wants: a superlative, "top", "first", or the
    number ``limit`` itself (as digits or a word); words that ask for an order
    ("highest first", "from lowest to highest") do not bound it.

    Example:
        >>> asks_bounded("Which three singers are the oldest?", 3)
        True
        >>> asks_bounded("Show the revenue of each category.", 1)
        False
        >>> asks_bounded("Show 5 customers.", 5)
        True
        >>> asks_bounded("Show the revenue per category, highest first.", 1)
        False
    """
    found = words(_ORDER.sub(" ", question))
    named = {str(limit)} | ({_NUMBER_WORDS[limit]} if 0 <= limit < len(_NUMBER_WORDS) else set())
    return any(superlative(w) or w in named for w in found)


def outer(tree: exp.Expression) -> exp.Expression:
    """The outermost query (parentheses taken off)."""
    while isinstance(tree, exp.Subquery | exp.Paren):
        tree = tree.this
    return tree


def outer_limit(tree: exp.Expression) -> int | None:
    """The outermost query's LIMIT as a number (None: none, or not a number).

    Example:
        >>> import sqlglot
        >>> outer_limit(sqlglot.parse_one("SELECT a FROM t ORDER BY a LIMIT 3"))
        3
        >>> outer_limit(sqlglot.parse_one("SELECT a FROM (SELECT a FROM t LIMIT 3)")) is None
        True
    """
    limit = outer(tree).args.get("limit")
    if not isinstance(limit, exp.Limit):
        return None
    try:
        return int(limit.expression.name)
    except (AttributeError, ValueError):
        return None


def first_select(tree: exp.Expression) -> exp.Select | None:
    """The outermost SELECT (the left-most one of a set operation)."""
    node = outer(tree)
    while isinstance(node, exp.SetOperation):
        node = outer(node.this)
    return node if isinstance(node, exp.Select) else None


def _identifier(name: str) -> bool:
    n = name.lower()
    return n == "id" or n.endswith(("_id", "id", "_code", "_no"))


def shows_figure(select: exp.Select, rows: Sequence[Sequence[Any]]) -> bool:
    """Whether the answer shows a figure: a column computed (an aggregate, a window,
    arithmetic) or one holding numbers that is not an identifier (``id``, ``..._id``).

    Example:
        >>> import sqlglot
        >>> s = sqlglot.parse_one("SELECT name, budget FROM d")
        >>> shows_figure(s, [("a", 10)]), shows_figure(s, [("a", None)])
        (True, False)
        >>> shows_figure(sqlglot.parse_one("SELECT name, dept_id FROM d"), [("a", 3)])
        False
    """
    columns = select.expressions
    if any(e.find(*_AGGREGATES, *_ARITHMETIC) is not None for e in columns):
        return True
    names = [e.alias_or_name if not isinstance(e, exp.Star) else "" for e in columns]
    if any(isinstance(e, exp.Star) for e in columns) or len(names) != len(rows[0]):
        names = [""] * len(rows[0])  # columns the tree does not name one by one
    return any(
        isinstance(value, int | float | Decimal)
        and not isinstance(value, bool)
        and not _identifier(names[i])
        for row in rows[:20]
        for i, value in enumerate(row)
    )


def order_problem(question: str, tree: exp.Expression) -> str | None:
    """How the query fails the order the question asks for (None: it does not, or the
    question asks for none)."""
    if not _ORDER.search(question):
        return None
    order = outer(tree).args.get("order")
    if order is None or not order.expressions:
        return "does not sort its rows"
    desc = bool(order.expressions[0].args.get("desc"))
    if _DESCENDING.search(question) and not _ASCENDING.search(question) and not desc:
        return "sorts them in ascending order"
    if _ASCENDING.search(question) and not _DESCENDING.search(question) and desc:
        return "sorts them in descending order"
    return None


def shape_signs(
    question: str, tree: exp.Expression | None, rows: Sequence[Sequence[Any]]
) -> tuple[str, ...]:
    """The shape signs (names from :data:`SHAPE_SIGNS`) the answer ``rows`` of the query
    ``tree`` shows for ``question`` (none without a tree)."""
    return tuple(name for name, _ in findings(question, tree, rows))


def findings(
    question: str, tree: exp.Expression | None, rows: Sequence[Sequence[Any]]
) -> list[tuple[str, str]]:
    """Each shape sign found with its warning text, in :data:`SHAPE_SIGNS` order."""
    if tree is None:
        return []
    found: list[tuple[str, str]] = []
    limit = outer_limit(tree)
    if limit is not None and not asks_bounded(question, limit):
        found.append(("unasked_limit", WARNINGS["unasked_limit"].format(limit=limit)))
    if len(rows) == 1 and _EACH.search(question):
        found.append(("one_row_for_each", WARNINGS["one_row_for_each"]))
    how = order_problem(question, tree) if len(rows) > 1 else None
    if how is not None:
        found.append(("order_not_given", WARNINGS["order_not_given"].format(how=how)))
    select = first_select(tree)
    if rows and select is not None and _FIGURE.search(question) and not shows_figure(select, rows):
        found.append(("figure_missing", WARNINGS["figure_missing"]))
    return found
