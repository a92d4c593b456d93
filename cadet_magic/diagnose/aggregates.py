"""Which aggregation mistake a query makes, read on its syntax tree (sqlglot only).

Engines word aggregation errors loosely (SQLite says "misuse of aggregate" for an aggregate
in WHERE, a nested aggregate and an aggregate in ORDER BY without GROUP BY alike), so the
advice is chosen from the query itself: an aggregate in WHERE (move it to HAVING), nested
aggregates (a subquery, or ORDER BY ... LIMIT 1), an aggregate without the GROUP BY it needs
(which columns to group by), or selected columns missing from GROUP BY (which to add).

Example:
    >>> aggregate_mistake("SELECT max(count(*)) FROM orders GROUP BY status")
    AggregateMistake(kind='nested_aggregate', columns=(), aggregate=None, expression='MAX(COUNT(*))', outer='MAX', inner='COUNT(*)', in_order_by=False)
    >>> m = aggregate_mistake("SELECT status FROM orders ORDER BY count(*) DESC LIMIT 1")
    >>> m.kind, m.columns, m.in_order_by, m.aggregate
    ('missing_group_by', ('status',), True, 'COUNT(*)')
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from cadet_magic.diagnose.found import AggregateMistake
from cadet_magic.diagnose.sqlcontext import parse_tree
from cadet_magic.sql.target import Target

_SCOPES = (exp.Subquery, exp.Select)


def _own(node: Any, select: exp.Select) -> bool:
    """Whether ``node`` belongs to ``select`` itself, not to a subquery inside it."""
    return node.find_ancestor(exp.Select) is select


def _aggregates(node: Any, select: exp.Select) -> list[Any]:
    """Aggregates of ``select`` under ``node`` (window aggregates excluded)."""
    return [
        a for a in node.find_all(exp.AggFunc) if _own(a, select) and not a.find_ancestor(exp.Window)
    ]


def _bare_columns(node: Any, select: exp.Select) -> list[exp.Column]:
    """Columns of ``select`` under ``node`` outside any aggregate or window."""
    out = []
    for col in node.find_all(exp.Column):
        if not _own(col, select) or isinstance(col.this, exp.Star):
            continue
        if col.find_ancestor(exp.AggFunc, exp.Window):
            agg = col.find_ancestor(exp.AggFunc, exp.Window)
            if agg is not None and _own(agg, select):
                continue
        out.append(col)
    return out


def _sql(node: Any) -> str:
    try:
        return node.sql()
    except Exception:  # noqa: BLE001 - only used to word the advice
        return node.key.upper()


def _names(cols: list[exp.Column]) -> tuple[str, ...]:
    out: list[str] = []
    for c in cols:
        name = c.sql()
        if name not in out:
            out.append(name)
    return tuple(out)


def _nested(select: exp.Select) -> AggregateMistake | None:
    """An aggregate over an aggregate of the same SELECT, written inside it or through the
    alias of a selected aggregate: which one is outside (``outer``) and which inside
    (``inner``).

    Example:
        >>> from cadet_magic.diagnose.sqlcontext import parse_tree
        >>> m = _nested(parse_tree("SELECT COUNT(*) AS n FROM t GROUP BY a ORDER BY MAX(n) DESC"))
        >>> m.kind, m.expression, m.outer, m.inner
        ('nested_aggregate', 'MAX(n)', 'MAX', 'COUNT(*)')
    """
    aliased = {
        e.alias.lower(): inner
        for e in select.expressions
        if isinstance(e, exp.Alias) and (inner := next(iter(_aggregates(e, select)), None))
    }
    for agg in select.find_all(exp.AggFunc):
        if not _own(agg, select) or agg.find_ancestor(exp.Window):
            continue
        inner = [a for a in agg.find_all(exp.AggFunc) if a is not agg and _own(a, select)]
        inner += [
            aliased[c.name.lower()]
            for c in agg.find_all(exp.Column)
            if not c.table and c.name.lower() in aliased and _own(c, select)
        ]
        if inner:
            return AggregateMistake(
                "nested_aggregate", expression=_sql(agg), outer=agg.sql_name(), inner=_sql(inner[0])
            )
    return None


def _select_mistake(select: exp.Select) -> AggregateMistake | None:
    where = select.args.get("where")
    if where is not None:
        found = _aggregates(where, select)
        if found:
            return AggregateMistake("aggregate_in_where", aggregate=_sql(found[0]))
    nested = _nested(select)
    if nested is not None:
        return nested
    group = select.args.get("group")
    order = select.args.get("order")
    having = select.args.get("having")
    aggregated_parts = [
        *select.expressions,
        *([order] if order else []),
        *([having] if having else []),
    ]
    has_aggregate = any(_aggregates(p, select) for p in aggregated_parts)
    if not has_aggregate:
        return None
    selected = [c for e in select.expressions for c in _bare_columns(e, select)]
    ordered = _bare_columns(order, select) if order is not None else []
    aliases = {e.alias.lower() for e in select.expressions if e.alias}
    if group is None:
        if select.args.get("distinct") is not None and not selected:
            return None
        loose = [c for c in [*selected, *ordered] if c.name.lower() not in aliases]
        if not loose:
            return None
        in_order = bool(order is not None and _aggregates(order, select))
        agg = next(a for p in aggregated_parts for a in _aggregates(p, select))
        return AggregateMistake(
            "missing_group_by", columns=_names(loose), in_order_by=in_order, aggregate=_sql(agg)
        )
    grouped = {g.sql().lower() for g in group.expressions}
    grouped |= {g.name.lower() for g in group.expressions if isinstance(g, exp.Column)}
    if any(isinstance(g, exp.Literal) for g in group.expressions):
        return None  # GROUP BY 1, 2: positions, not checked here
    missing = [
        c
        for c in selected
        if c.sql().lower() not in grouped
        and c.name.lower() not in grouped
        and c.name.lower() not in aliases
    ]
    if missing:
        return AggregateMistake("not_grouped", columns=_names(missing))
    return None


def aggregate_mistake(
    sql: str | None, target: Target | None = None, tree: Any = None
) -> AggregateMistake | None:
    """The aggregation mistake of ``sql`` (read on ``tree`` when given, else parsed), or None
    (unparsable, or none recognised): an :class:`~cadet_magic.diagnose.found.AggregateMistake`.

    Example:
        >>> m = aggregate_mistake("SELECT status FROM orders WHERE count(*) > 1 GROUP BY status")
        >>> m.kind, m.aggregate
        ('aggregate_in_where', 'COUNT(*)')
        >>> m = aggregate_mistake("SELECT a, b, sum(c) FROM t GROUP BY a")
        >>> m.kind, m.columns
        ('not_grouped', ('b',))
    """
    if tree is None:
        tree = parse_tree(sql, target)
    if tree is None:
        return None
    for select in tree.find_all(exp.Select):
        found = _select_mistake(select)
        if found is not None:
            return found
    return None
