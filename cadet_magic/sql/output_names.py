"""The names a query's own syntax tree gives its result's columns, by position, and the names it
refers to (stdlib + sqlglot).

Below ``samples`` an answer's column names reach the model (a follow-up's "Result columns")
and the notebook (the provenance) only when the product can tell they are not data: a name of
the schema, or the name the query's tree gives the column at its position (an alias, a
column's own name). An engine names a column after data only where one projection makes
columns the text does not list (a star over a ``PIVOT``, DuckDB's ``COLUMNS(...)``, an
``UNNEST``): such a projection gives no names, and the projections after it name the result's
last columns. A name is never looked for in the query's text: a literal can hold every value.

Example:
    >>> from cadet_magic.sql.dialect import dialect_of
    >>> duckdb = dialect_of("duckdb")
    >>> output_names("SELECT status, count(*) AS n, amount * 2 FROM orders", duckdb, 3)
    ('status', 'n', None)
    >>> output_names("SELECT *, amount AS a FROM (PIVOT t ON k USING sum(v))", duckdb, 4)
    (None, None, None, 'a')
    >>> output_names("PIVOT t ON k USING sum(v)", duckdb, 2)
    (None, None)
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from cadet_magic.sql.dialect import quiet_sqlglot

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


def tree_of(sql: str | None, dialect: sqlglot.Dialect | None) -> exp.Expression | None:
    """The tree of ``sql`` read in ``dialect`` (sqlglot's dialect object), None when it does not parse as one statement."""
    if not sql:
        return None
    try:
        with quiet_sqlglot():
            trees = sqlglot.parse(sql, dialect=dialect)
    except Exception:  # noqa: BLE001 - not read: no names known
        return None
    if len(trees) != 1 or not isinstance(trees[0], exp.Expression):
        return None
    return trees[0]


def output_names(
    sql: str | None, dialect: sqlglot.Dialect | None, count: int
) -> tuple[str | None, ...]:
    """:func:`names_of` the tree of ``sql`` read in ``dialect`` (all None when it does not
    parse as one statement)."""
    tree = tree_of(sql, dialect)
    return (None,) * count if tree is None else names_of(tree, count)


def referenced_names(tree: exp.Expression | None) -> set[str]:
    """The names ``tree`` refers to, lower-cased: its columns (and their qualifiers), tables and
    the functions it calls, as written; never a string, a number or an alias it defines.

    Example:
        >>> t = tree_of("SELECT o.amout, foo(x) AS y FROM orders o WHERE c = 'secret'", None)
        >>> sorted(referenced_names(t))
        ['amout', 'c', 'foo', 'o', 'orders', 'x']
    """
    names: set[str] = set()
    if tree is None:
        return names
    for node in tree.walk():
        if isinstance(node, exp.Column):
            names.update(p.name.lower() for p in node.parts)
        elif isinstance(node, exp.Table):
            names.update(p.name.lower() for p in node.parts)
        elif isinstance(node, exp.Anonymous):
            names.add(str(node.name).lower())
        elif isinstance(node, exp.Func):
            names.add(node.sql_name().lower())
    return names
