"""Readings: the answers of a vote without a clear lead, each told in a few words (portable
core: stdlib and sqlglot).

When the candidates give different answers and none leads clearly (the vote's own stop rule),
they read the question in different ways, and the user is the one who knows which was meant.
Each answer is a :class:`Reading`: its SQL, how many candidates gave it, the first rows of its
result, and a ``summary`` saying what it computes that the others do not, derived from its
syntax tree (:func:`summaries`): the aspects below, compared across the readings, each that
differs told for this reading, at most :data:`MAX_PARTS` of them, in this order.

The aspects (:data:`ASPECTS`): a top-N or ``LIMIT``, the order, a filter value (the
``WHERE``/``HAVING`` conditions), the grouping, the aggregate, the join path (the tables read,
then the join conditions), ``DISTINCT``, the columns returned, a set operation. Column names
are compared without their table or alias (``T1.name`` is ``name``).

Example:
    >>> summaries(["SELECT c, sum(r) AS s FROM t GROUP BY c ORDER BY s DESC LIMIT 1",
    ...            "SELECT c, sum(r) AS s FROM t GROUP BY c ORDER BY s DESC"])
    ('top 1', 'all rows')
    >>> summaries(["SELECT count(*) FROM t WHERE g = 'a'", "SELECT count(*) FROM t"])
    ("where g = 'a'", "without g = 'a'")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

#: Aspects a summary names at most.
MAX_PARTS = 3
#: A summary when the trees differ in none of the aspects (or a query cannot be read).
OTHER = "another query"
#: How a subquery within a condition or a column is named in a summary.
SUBQUERY = "subquery"
#: Characters of one part of a summary at most (a long condition is cut).
PART_CHARS = 48
#: Rows of a reading's result its preview holds.
PREVIEW_ROWS = 5


@dataclass(frozen=True)
class Reading:
    """One way the candidates read the question: its ``sql``, what it computes in a few words
    (``summary``), how many candidates gave it (``votes``), the first rows of its result
    (``preview``); and what answering with it needs: its ``columns``, every row fetched
    (``rows``), whether the result was cut (``truncated``) and its own warnings (the result
    check's, not the vote's)."""

    sql: str
    summary: str
    votes: int
    preview: tuple[tuple[Any, ...], ...] = ()
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = field(default=(), repr=False)
    truncated: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def more(self) -> bool:
        """Whether the result has more rows than the preview shows."""
        return len(self.rows) > len(self.preview) or self.truncated


# -- the aspects of one query ------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """The aspects of one query as comparable values (text of sqlglot expressions)."""

    limit: str | None = None
    order: tuple[str, ...] = ()
    filters: frozenset[str] = frozenset()
    having: frozenset[str] = frozenset()
    grouping: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    tables: frozenset[str] = frozenset()
    joins: frozenset[str] = frozenset()
    distinct: bool = False
    columns: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    setop: str | None = None


def _name(e: exp.Expression) -> str:
    """A column's name as the comparison of the columns returned sees it: a column's or an
    alias's name, ``*``, else ``?`` (an expression, told by the aspect it belongs to)."""
    if isinstance(e, exp.Alias):
        return e.alias.lower()
    if isinstance(e, exp.Column):
        return e.name.lower() or "*"
    return "*" if isinstance(e, exp.Star) else "?"


def _bare(tree: exp.Expression) -> exp.Expression:
    """``tree`` with its columns' table qualifiers left out and each subquery within it shown
    as :data:`SUBQUERY` (a summary names the condition, not the query inside it)."""

    def strip(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.args.get("table") is not None:
            return exp.column(node.this.copy())
        if isinstance(node, exp.Select | exp.SetOperation) and node is not top:
            return exp.Var(this=SUBQUERY)
        return node

    top = tree.copy()
    return top.transform(strip, copy=False)


def _text(node: exp.Expression | None, dialect: sqlglot.Dialect | None) -> str:
    return "" if node is None else node.sql(dialect=dialect, normalize_functions="lower")


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    cond = node.this if isinstance(node, exp.Where | exp.Having) else node
    parts: list[Any] = list(cond.flatten()) if isinstance(cond, exp.And) else [cond]
    return parts


def shape(sql: str, dialect: sqlglot.Dialect | None = None) -> Shape | None:
    """The aspects of ``sql`` (None when sqlglot cannot read it).

    Example:
        >>> s = shape("SELECT DISTINCT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.id "
        ...           "WHERE T2.x > 3 LIMIT 2")
        >>> s.limit, sorted(s.filters), sorted(s.tables), s.distinct, s.columns
        ('2', ['x > 3'], ['a', 'b'], True, ('name',))
    """
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, ValueError):
        return None
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    if isinstance(tree, exp.SetOperation):
        kind = type(tree).__name__.lower()
        if isinstance(tree, exp.Union) and not tree.args.get("distinct"):
            kind = "union all"
        first = tree.this
        while isinstance(first, exp.SetOperation | exp.Subquery):
            first = first.this
        selects = _bare(first).expressions if isinstance(first, exp.Select) else []
        return Shape(
            limit=_limit(tree.args.get("limit"), dialect),
            setop=kind,
            tables=_tables(tree),
            columns=tuple(_text(e.unalias(), dialect) for e in selects),
            names=tuple(_name(e) for e in selects),
        )
    if not isinstance(tree, exp.Select):
        return None
    bare = _bare(tree)
    sql_of: Callable[[exp.Expression | None], str] = lambda n: _text(n, dialect)  # noqa: E731
    order = bare.args.get("order")
    group = bare.args.get("group")
    # the aggregates the query returns (those of its conditions are part of their text)
    aggregates = {sql_of(a) for e in bare.expressions for a in e.find_all(exp.AggFunc)}
    return Shape(
        limit=_limit(bare.args.get("limit"), dialect),
        order=tuple(sql_of(o) for o in order.expressions) if order is not None else (),
        filters=frozenset(sql_of(c) for c in _conjuncts(bare.args.get("where"))),
        having=frozenset(sql_of(c) for c in _conjuncts(bare.args.get("having"))),
        grouping=frozenset(sql_of(g) for g in group.expressions)
        if group is not None
        else frozenset(),
        aggregates=frozenset(aggregates),
        tables=_tables(tree),
        joins=frozenset(
            sql_of(j.args.get("on")) for j in bare.args.get("joins") or () if j.args.get("on")
        ),
        distinct=bare.args.get("distinct") is not None,
        columns=tuple(sql_of(e.unalias()) for e in bare.expressions),
        names=tuple(_name(e) for e in bare.expressions),
    )


def _limit(node: exp.Expression | None, dialect: sqlglot.Dialect | None) -> str | None:
    if node is None:
        return None
    value = node.args.get("expression") or node.this
    return _text(value, dialect) if isinstance(value, exp.Expression) else str(value)


def _tables(tree: exp.Expression) -> frozenset[str]:
    return frozenset(t.name.lower() for t in tree.find_all(exp.Table) if t.name)


# -- the words ---------------------------------------------------------------------------------


def _limit_words(s: Shape, others: Sequence[Shape]) -> str:
    if s.limit is None:
        return "all rows"
    if s.order:
        return f"top {s.limit}"
    return "first row" if s.limit == "1" else f"first {s.limit} rows"


def _order_words(s: Shape, others: Sequence[Shape]) -> str:
    return f"ordered by {', '.join(s.order)}" if s.order else "unordered"


def _set_words(own: frozenset[str], others: Sequence[frozenset[str]], lead: str, lacks: str) -> str:
    """The members only this reading has (``lead`` and them), else those it lacks (``lacks``
    and them)."""
    common, union = frozenset.intersection(*others), frozenset().union(*others)
    extra = sorted(own - union) or sorted(own - common)
    if extra:
        return lead + " and ".join(extra)
    missing = sorted(common - own) or sorted(union - own)
    if missing:
        return lacks + " and ".join(missing)
    return lead + " and ".join(sorted(own))


def _filter_words(s: Shape, others: Sequence[Shape]) -> str:
    return _set_words(s.filters, [o.filters for o in others], "where ", "without ")


def _having_words(s: Shape, others: Sequence[Shape]) -> str:
    return _set_words(s.having, [o.having for o in others], "having ", "without having ")


def _group_words(s: Shape, others: Sequence[Shape]) -> str:
    if not s.grouping:
        return "not grouped"
    return f"per {', '.join(sorted(s.grouping))}"


def _aggregate_words(s: Shape, others: Sequence[Shape]) -> str:
    return ", ".join(sorted(s.aggregates)) if s.aggregates else "no aggregate"


def _join_words(s: Shape, others: Sequence[Shape]) -> str:
    if any(o.tables != s.tables for o in others):
        return _set_words(s.tables, [o.tables for o in others], "via ", "without ")
    return _set_words(s.joins, [o.joins for o in others], "joined on ", "not joined on ")


def _distinct_words(s: Shape, others: Sequence[Shape]) -> str:
    return "distinct" if s.distinct else "with duplicates"


def _column_words(s: Shape, others: Sequence[Shape]) -> str:
    return f"returns {', '.join(s.columns)}"


def _setop_words(s: Shape, others: Sequence[Shape]) -> str:
    return s.setop or "no set operation"


def _differs(key: Callable[[Shape], Any]) -> Callable[[Shape, Sequence[Shape]], bool]:
    return lambda s, others: any(key(o) != key(s) for o in others)


def _join_key(s: Shape) -> tuple[frozenset[str], frozenset[str]]:
    return s.tables, s.joins


#: The aspects, in the order a summary names them: (name, whether this reading's differs from
#: another's, its words).
ASPECTS: tuple[tuple[str, Callable[..., bool], Callable[..., str]], ...] = (
    ("limit", _differs(lambda s: s.limit), _limit_words),
    ("filter", _differs(lambda s: s.filters), _filter_words),
    ("having", _differs(lambda s: s.having), _having_words),
    ("grouping", _differs(lambda s: s.grouping), _group_words),
    ("aggregate", _differs(lambda s: s.aggregates), _aggregate_words),
    ("join", _differs(_join_key), _join_words),
    ("distinct", _differs(lambda s: s.distinct), _distinct_words),
    ("columns", _differs(lambda s: s.names), _column_words),
    ("setop", _differs(lambda s: s.setop), _setop_words),
    ("order", _differs(lambda s: s.order), _order_words),
)


def summary(own: Shape | None, others: Sequence[Shape | None]) -> str:
    """What ``own`` computes that ``others`` do not, in a few words (:data:`OTHER` when no
    aspect differs or a query cannot be read)."""
    known = [o for o in others if o is not None]
    if own is None or not known:
        return OTHER
    parts = [words(own, known) for _, differs, words in ASPECTS if differs(own, known)]
    if not parts and any(o.columns != own.columns for o in known):
        parts = [_column_words(own, known)]  # expressions the other aspects do not tell apart
    return "; ".join(_short(p) for p in parts[:MAX_PARTS]) or OTHER


def _short(part: str) -> str:
    return part if len(part) <= PART_CHARS else part[: PART_CHARS - 1].rstrip() + "\u2026"


def summaries(sqls: Sequence[str], dialect: sqlglot.Dialect | None = None) -> tuple[str, ...]:
    """Each query's :func:`summary` against the others'."""
    shapes = [shape(s, dialect) for s in sqls]
    return tuple(
        summary(s, [o for j, o in enumerate(shapes) if j != i]) for i, s in enumerate(shapes)
    )


def readings(
    answers: Sequence[
        tuple[str, int, tuple[str, ...], tuple[tuple[Any, ...], ...], bool, tuple[str, ...]]
    ],
    dialect: sqlglot.Dialect | None = None,
) -> tuple[Reading, ...]:
    """The readings of the vote's answers, most votes first as given: each answer is ``(sql,
    votes, columns, rows, truncated, warnings)``.

    Example:
        >>> a = ("SELECT x FROM t LIMIT 1", 3, ("x",), ((1,),), False, ())
        >>> b = ("SELECT x FROM t", 2, ("x",), ((1,), (2,)), False, ())
        >>> [(r.summary, r.votes, r.preview) for r in readings([a, b])]
        [('first row', 3, ((1,),)), ('all rows', 2, ((1,), (2,)))]
    """
    words = summaries([a[0] for a in answers], dialect)
    return tuple(
        Reading(
            sql,
            said,
            votes,
            tuple(tuple(r) for r in rows[:PREVIEW_ROWS]),
            tuple(columns),
            tuple(tuple(r) for r in rows),
            truncated,
            tuple(warnings),
        )
        for (sql, votes, columns, rows, truncated, warnings), said in zip(
            answers, words, strict=True
        )
    )


__all__ = [
    "ASPECTS",
    "MAX_PARTS",
    "OTHER",
    "PREVIEW_ROWS",
    "Reading",
    "Shape",
    "readings",
    "shape",
    "summaries",
    "summary",
]
