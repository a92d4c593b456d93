"""The names a query's own syntax tree gives its result's columns, by position (stdlib + sqlglot).

Below ``samples`` an answer's column names reach the model (a follow-up's "Result columns")
and the notebook (the provenance) only when the product can tell they are not data: a name of
the schema, or the name the query's tree gives the column at its position (an alias, a
column's own name). An engine names a column after data only where one projection makes
columns the text does not list (a star over a ``PIVOT``, DuckDB's ``COLUMNS(...)``, an
``UNNEST``): such a projection gives no names, and the projections after it name the result's
last columns. A name is never looked for in the query's text: a literal can hold every value.

Example:
    >>> output_names("SELECT status, count(*) AS n, amount * 2 FROM orders", "duckdb", 3)
    ('status', 'n', None)
    >>> output_names("SELECT *, amount AS a FROM (PIVOT t ON k USING sum(v))", "duckdb", 4)
    (None, None, None, 'a')
    >>> output_names("PIVOT t ON k USING sum(v)", "duckdb", 2)
    (None, None)
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from cadet_magic.sql.dialect import dialect_of, quiet_sqlglot, resolve_dialect

#: Functions one projection of which makes several columns (or none) of names the text does
#: not give: DuckDB's star expressions and unnesting, Spark's generators.
EXPANDING = frozenset(
    """COLUMNS UNNEST UNPACK EXPLODE EXPLODE_OUTER POSEXPLODE POSEXPLODE_OUTER INLINE
    INLINE_OUTER STACK JSON_TUPLE""".split()
)


def _expands(projection: exp.Expression) -> bool:
    """Whether ``projection`` may make other than one column named by the text: a star (also
    ``t.*``, ``s.*`` of a struct) or a call of an expanding function anywhere in it."""
    if isinstance(projection, exp.Star):
        return True
    if isinstance(projection, exp.Column | exp.Dot) and isinstance(projection.this, exp.Star):
        return True
    for node in projection.find_all(exp.Func, exp.Star):
        if isinstance(node, exp.Star):
            if isinstance(node.parent, exp.Column | exp.Dot):
                return True
        elif isinstance(node, exp.Explode | exp.Unnest | exp.Columns):
            return True
        elif isinstance(node, exp.Func) and _function_name(node) in EXPANDING:
            return True
    return False


def _function_name(node: exp.Func) -> str:
    return str(node.name if isinstance(node, exp.Anonymous) else node.sql_name()).upper()


def _name(projection: exp.Expression) -> str | None:
    if isinstance(projection, exp.Alias):
        return projection.alias or None
    if isinstance(projection, exp.Column):
        return projection.name or None
    return None


def _projections(tree: exp.Expression) -> list[exp.Expression] | None:
    """The projections that name the result's columns (a set operation's first query's)."""
    node: Any = tree
    while isinstance(node, exp.Subquery | exp.Paren | exp.SetOperation):
        node = node.left if isinstance(node, exp.SetOperation) else node.this
    return list(node.expressions) if isinstance(node, exp.Select) else None


def names_of(tree: exp.Expression, count: int) -> tuple[str | None, ...]:
    """For each of a result's ``count`` columns, the name ``tree`` gives it at its position,
    or None where the tree gives none (see the module's description)."""
    none: tuple[str | None, ...] = (None,) * count
    projections = _projections(tree)
    if projections is None:
        return none
    expanding = [i for i, p in enumerate(projections) if _expands(p)]
    if not expanding:
        if len(projections) != count:
            return none  # not one column per projection: nothing is known of the names
        return tuple(_name(p) for p in projections)
    head = [_name(p) for p in projections[: expanding[0]]]
    tail = [_name(p) for p in projections[expanding[-1] + 1 :]]
    if len(head) + len(tail) > count:
        return none
    return tuple(head) + (None,) * (count - len(head) - len(tail)) + tuple(tail)


def output_names(sql: str | None, dialect: str | None, count: int) -> tuple[str | None, ...]:
    """:func:`names_of` the tree of ``sql`` read in ``dialect`` (all None when it does not
    parse as one statement)."""
    if not sql:
        return (None,) * count
    try:
        with quiet_sqlglot():
            trees = sqlglot.parse(sql, dialect=dialect_of(resolve_dialect(dialect)))
    except Exception:  # noqa: BLE001 - not read: no names known
        return (None,) * count
    if len(trees) != 1 or not isinstance(trees[0], exp.Expression):
        return (None,) * count
    return names_of(trees[0], count)
