"""What an executed query filters on (stdlib + sqlglot): the result check's reading of the
tree (:mod:`.result_check`). Which stored values are close to a missing one is
:mod:`.close_values`'s; comparisons with numbers are :mod:`.number_filters`'.

A comparison of a column with a string literal (``=``, ``IN``, ``LIKE``) is a :class:`Filter`,
its column's table resolved in the comparison's own scope.

Example:
    >>> from cadet_magic.schema.structure import Column, Schema, Table
    >>> s = Schema((Table("country", (Column("id", "INT"), Column("name", "TEXT"))),))
    >>> [(f.table, f.column, f.value, f.op) for f in
    ...  literal_filters("SELECT id FROM country AS c WHERE c.name = 'France'", Target.named("sqlite"), s)]
    [('country', 'name', 'France', '=')]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from cadet_magic.result_check.close_values import (  # noqa: F401 - the close values stay importable here
    CUTOFF,
    DATE_FORMATS,
    MAX_CLOSE,
    MAX_VALUE_CHARS,
    close_to_pattern,
    close_values,
    date_variants,
    one_slip,
)
from cadet_magic.schema.structure import Column, Schema, Table
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.target import Target

_TEXT_TYPES = ("char", "text", "string", "clob", "enum", "citext", "name")


@dataclass(frozen=True)
class Filter:
    """A comparison of a table's column with a string literal in the executed query.

    ``table`` and ``column`` are the catalog's names; ``db`` the table's schema (None when
    unqualified); ``op`` is ``"="``, ``"IN"`` or ``"LIKE"`` (``"ILIKE"`` where written so).
    """

    table: str
    db: str | None
    column: str
    value: str
    op: str
    #: Functions the query wraps the column in, outermost first (``("LOWER", "TRIM")``,
    #: ``("CAST AS TEXT",)``): the check compares the value with the column wrapped alike.
    wrap: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """``table.column`` for messages (wrapped as the query compares it).

        Example:
            >>> Filter("t", None, "c", "x", "=", ("LOWER",)).where
            'LOWER(t.c)'
        """
        if not self.wrap:
            return f"{self.table}.{self.column}"
        return self.wrapped(exp.column(self.column, self.table)).sql()

    @property
    def key(self) -> tuple[str, str, str, str, tuple[str, ...]]:
        return (self.table, self.column, self.value, self.op, self.wrap)

    def wrapped(self, col: exp.Expression) -> exp.Expression:
        """``col`` wrapped in the filter's functions, as the query compares it.

        Example:
            >>> Filter("t", None, "c", "x", "=", ("LOWER", "CAST AS TEXT")).wrapped(
            ...     exp.column("c")).sql("sqlite")
            'LOWER(CAST(c AS TEXT))'
        """
        out: exp.Expression = col
        for name in reversed(self.wrap):
            if name.startswith("CAST AS "):
                out = exp.Cast(this=out, to=exp.DataType.build(name[len("CAST AS ") :]))
            else:
                out = _WRAPPERS[name](this=out)
        return out


# --------------------------------------------------------------------------- the tree


def _is_text(column: Column) -> bool:
    t = column.type.lower()
    return not t or any(k in t for k in _TEXT_TYPES)


def _string(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    return None


#: The functions a compared column may be wrapped in (their names in :attr:`Filter.wrap`).
_WRAPPERS: dict[str, type[exp.Expression]] = {
    "LOWER": exp.Lower,
    "UPPER": exp.Upper,
    "TRIM": exp.Trim,
}


def _unwrap(node: Any) -> tuple[exp.Column, tuple[str, ...]] | None:
    """The column inside ``LOWER``/``UPPER``/``TRIM``/``CAST`` wrappers, and the wrappers
    (outermost first); None when ``node`` is anything else.

    Example:
        >>> col, wrap = _unwrap(sqlglot.parse_one("LOWER(TRIM(CAST(x AS TEXT)))"))
        >>> col.name, wrap
        ('x', ('LOWER', 'TRIM', 'CAST AS TEXT'))
    """
    wrap: list[str] = []
    while not isinstance(node, exp.Column):
        if isinstance(node, exp.Cast) and not node.args.get("format"):
            wrap.append("CAST AS " + node.to.sql())
        else:
            name = next((n for n, cls in _WRAPPERS.items() if type(node) is cls), None)
            if name is None or (isinstance(node, exp.Trim) and node.args.get("expression")):
                return None  # TRIM(x, 'chars'), or anything but the wrappers
            wrap.append(name)
        node = node.this
    return node, tuple(wrap)


def _comparisons(tree: Any) -> Iterable[tuple[exp.Column, str, str, tuple[str, ...]]]:
    """(column, value, op, wrap) for each comparison of a (possibly wrapped) column with a
    string literal in ``tree``."""
    for node in tree.find_all(exp.EQ, exp.In, exp.Like, exp.ILike, bfs=False):
        if isinstance(node.parent, exp.Escape):
            continue  # LIKE ... ESCAPE: leave it
        if isinstance(node, exp.In):
            inner = _unwrap(node.this)
            if inner is not None and not node.args.get("query"):
                for item in node.expressions:
                    value = _string(item)
                    if value is not None:
                        yield inner[0], value, "IN", inner[1]
            continue
        left, right = node.this, node.expression
        if _string(left) is not None and _string(right) is None:
            if isinstance(node, exp.EQ):
                left, right = right, left
            else:
                continue
        inner = _unwrap(left)
        value = _string(right) if inner is not None else None
        if inner is None or value is None:
            continue
        op = "=" if isinstance(node, exp.EQ) else "ILIKE" if isinstance(node, exp.ILike) else "LIKE"
        yield inner[0], value, op, inner[1]


def find_column(table: Table, name: str) -> Column | None:
    for c in table.columns:
        if c.name == name:
            return c
    lowered = name.lower()
    for c in table.columns:
        if c.name.lower() == lowered:
            return c
    return None


def resolve_column(
    column: exp.Column, scopes: dict[int, Any], schema: Schema
) -> tuple[Table, Column] | None:
    """The catalog table and column a column reference reads, resolved in its own scope (and
    the enclosing ones, for a correlated reference); None when not a plain table's column."""
    node: Any = column.parent
    scope = None
    while node is not None and scope is None:
        scope = scopes.get(id(node))
        node = node.parent
    return _resolve_in(column.name, column.table, scope, schema, 0)


def _projection(source: Any, name: str) -> exp.Column | None:
    """The plain column a derived table or CTE (a sqlglot scope) outputs as ``name``."""
    select = getattr(source, "expression", None)
    if not isinstance(select, exp.Select):
        return None
    for proj in select.expressions:
        if proj.alias_or_name.lower() == name.lower():
            inner = proj.unalias()
            return inner if isinstance(inner, exp.Column) else None
    return None


def _resolve_in(
    name: str, qualifier: str, scope: Any, schema: Schema, depth: int
) -> tuple[Table, Column] | None:
    """Column ``name`` (written with ``qualifier``) resolved from ``scope`` outwards, through
    derived tables and CTEs that pass a column through unchanged."""
    while scope is not None and depth < 8:
        found: list[tuple[Table, Column]] = []
        sources = 0
        for alias, source in scope.sources.items():
            if qualifier and alias.lower() != qualifier.lower():
                continue
            if isinstance(source, exp.Table):
                table = schema.table(source.name)
                column = find_column(table, name) if table is not None else None
                sources += table is not None
                if table is not None and column is not None:
                    found.append((table, column))
                continue
            inner = _projection(source, name)
            sources += 1
            if inner is not None:
                hit = _resolve_in(inner.name, inner.table, source, schema, depth + 1)
                if hit is not None:
                    found.append(hit)
        if len(found) == 1:
            return found[0]
        if len(found) > 1 or qualifier and sources:
            return None  # ambiguous, or the qualifier's source lacks it
        scope = scope.parent
    return None


def walk_scopes(sql: str, target: Target) -> tuple[Any, dict[int, Any]] | None:
    """The query's tree (the checked one when ``sql`` is a CheckedQuery) and its scopes by node id;
    None for a tree that cannot be walked (such a query is simply not checked)."""
    from sqlglot.optimizer.scope import traverse_scope

    try:
        query = sql if isinstance(sql, CheckedQuery) else None
        tree = query.tree if query is not None else sqlglot.parse_one(sql, read=target.dialect)
        return tree, {id(s.expression): s for s in traverse_scope(tree)}
    except Exception:  # noqa: BLE001 - a tree we cannot walk is simply not checked
        return None


def literal_filters(sql: str, target: Target, schema: Schema) -> list[Filter]:
    """Every comparison of a text column of a catalog table with a string literal in ``sql``.

    Example:
        >>> from cadet_magic.schema.structure import Column, Schema, Table
        >>> s = Schema((Table("t", (Column("k", "TEXT"), Column("n", "INT"))),
        ...             Table("u", (Column("k", "TEXT"), Column("m", "TEXT")))))
        >>> sql = ("SELECT * FROM t JOIN u AS x ON t.k = x.k WHERE m IN ('a', 'b') "
        ...        "AND x.k LIKE 'c%' AND n = '3' AND 'd' = t.k")
        >>> [(f.where, f.value, f.op) for f in literal_filters(sql, Target.named("duckdb"), s)]
        [('u.m', 'a', 'IN'), ('u.m', 'b', 'IN'), ('u.k', 'c%', 'LIKE'), ('t.k', 'd', '=')]
    """
    walked = walk_scopes(sql, target)
    if walked is None:
        return []
    tree, scopes = walked
    out: dict[tuple, Filter] = {}
    for column, value, op, wrap in _comparisons(tree):
        if not value.strip("%_ ") or len(value) > MAX_VALUE_CHARS:
            continue
        resolved = resolve_column(column, scopes, schema)
        if resolved is None or not (_is_text(resolved[1]) or wrap):
            continue
        table, col = resolved
        f = Filter(table.name, table.schema, col.name, value, op, wrap)
        out.setdefault(f.key, f)
    return list(out.values())
