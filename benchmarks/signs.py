"""Signs that a query which ran may still be wrong (stdlib + sqlglot).

A query that runs can answer another question than the one asked. Some of those answers show
it without knowing the right one: an empty result; a single NULL from an aggregate over no
rows; a count where the question asks for a list, or a list where it asks "how many";
duplicated rows where the question asks for different things; a SUM or COUNT over a join
(a one-to-many join multiplies the rows it adds up); a LIMIT that cuts rows tied with the last
one kept. Each sign is cheap: the result's rows, the query's tree and the question's words.

:func:`signs` names the signs of one answer. How often each sign is right when it fires is
measured on the evaluation's answers (``python -m benchmarks.eval_signs``); only the signs
that pay for themselves belong in the loop.

Example:
    >>> signs("How many singers are there?", "SELECT name FROM singer", [("a",), ("b",)])
    ['list_for_count']
    >>> signs("List the names of singers.", "SELECT COUNT(*) FROM singer", [(3,)])
    ['count_for_list']
    >>> signs("What is the average age?", "SELECT AVG(age) FROM singer WHERE 1 = 0", [(None,)])
    ['null_aggregate']
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import sqlglot
from sqlglot import exp

#: Every sign, in the order they are reported.
SIGNS = (
    "empty",
    "null_aggregate",
    "list_for_count",
    "count_for_list",
    "duplicates",
    "fan_out",
    "limit_ties",
)

_COUNT_WORDS = re.compile(r"^\s*(how many|count the|what is the (total )?number of)\b", re.I)
_LIST_WORDS = re.compile(r"^\s*(list|show|give|find|return|what are|which|who)\b", re.I)
_DISTINCT_WORDS = re.compile(r"\b(different|distinct|unique)\b", re.I)
_AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Max, exp.Min)


def _tree(sql: str, dialect: str | None) -> Any:
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except Exception:  # noqa: BLE001 - a tree we cannot read shows no sign
        return None


def _only_aggregates(select: Any) -> bool:
    return (
        isinstance(select, exp.Select)
        and not select.args.get("group")
        and all(e.find(*_AGGREGATES) is not None for e in select.expressions)
    )


def fan_out(tree: Any) -> bool:
    """A SUM or COUNT (not COUNT(DISTINCT)) in a SELECT that joins tables.

    Example:
        >>> fan_out(sqlglot.parse_one("SELECT SUM(o.x) FROM a JOIN o ON a.id = o.a"))
        True
        >>> fan_out(sqlglot.parse_one("SELECT COUNT(DISTINCT o.a) FROM a JOIN o ON a.id = o.a"))
        False
    """
    for select in tree.find_all(exp.Select):
        if not select.args.get("joins"):
            continue
        for agg in select.find_all(exp.Sum, exp.Count):
            if agg.find_ancestor(exp.Select) is select and not isinstance(agg.this, exp.Distinct):
                return True
    return False


def limit_cut(tree: Any) -> tuple[int, list[exp.Expression]] | None:
    """The outer query's LIMIT and ORDER BY keys, when it has both (else None)."""
    limit = tree.args.get("limit")
    order = tree.args.get("order")
    if not (isinstance(tree, exp.Select) and limit is not None and order is not None):
        return None
    try:
        n = int(limit.expression.name)
    except (AttributeError, ValueError):
        return None
    return n, [o.this for o in order.expressions]


def ties_sql(tree: Any, dialect: str | None) -> str | None:
    """A query for the outer ORDER BY keys of the first LIMIT + 1 rows (to tell whether the
    LIMIT cut rows tied with the last one kept); None without ORDER BY and LIMIT.

    Example:
        >>> print(ties_sql(sqlglot.parse_one("SELECT name FROM t ORDER BY age DESC LIMIT 1"), None))
        SELECT age AS __k0 FROM t ORDER BY age DESC LIMIT 2
    """
    cut = limit_cut(tree)
    if cut is None:
        return None
    n, keys = cut
    q = tree.copy()
    q.set("expressions", [exp.alias_(k.copy(), f"__k{i}") for i, k in enumerate(keys)])
    q.set("limit", exp.Limit(expression=exp.Literal.number(n + 1)))
    try:
        return q.sql(dialect=dialect)
    except Exception:  # noqa: BLE001
        return None


def signs(
    question: str,
    sql: str,
    rows: Sequence[Sequence[Any]],
    dialect: str | None = None,
    fetch: Callable[[str], Sequence[Sequence[Any]]] | None = None,
) -> list[str]:
    """The signs (names from :data:`SIGNS`) the answer ``rows`` of ``sql`` to ``question``
    shows; ``fetch`` runs one more read-only query for ``limit_ties`` (skipped without it)."""
    tree = _tree(sql, dialect)
    found: list[str] = []
    if not rows:
        found.append("empty")
    only_agg = tree is not None and _only_aggregates(tree)
    if len(rows) == 1 and rows[0] and all(v is None for v in rows[0]) and only_agg:
        found.append("null_aggregate")
    one_number = len(rows) == 1 and len(rows[0]) == 1 and isinstance(rows[0][0], int | float)
    if _COUNT_WORDS.search(question) and rows and not one_number and len(rows) > 1:
        if tree is None or not tree.args.get("group"):
            found.append("list_for_count")
    if (
        _LIST_WORDS.search(question)
        and not _COUNT_WORDS.search(question)
        and one_number
        and tree is not None
        and tree.find(exp.Count) is not None
        and not re.search(r"\b(number|count|how many|total)\b", question, re.I)
    ):
        found.append("count_for_list")
    if _DISTINCT_WORDS.search(question) and len(rows) > 1:
        if any(c > 1 for c in Counter(tuple(r) for r in rows).values()):
            found.append("duplicates")
    if tree is not None and fan_out(tree):
        found.append("fan_out")
    if tree is not None and fetch is not None:
        cut = limit_cut(tree)
        probe = ties_sql(tree, dialect)
        if cut is not None and probe is not None:
            try:
                keys = [tuple(r) for r in fetch(probe)]
            except Exception:  # noqa: BLE001 - an unanswered probe claims nothing
                keys = []
            if len(keys) > cut[0] >= 1 and keys[cut[0]] == keys[cut[0] - 1]:
                found.append("limit_ties")
    return found
