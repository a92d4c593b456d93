"""What a failed query refers to: its tables, aliases, CTEs and derived tables (sqlglot only).

Example:
    >>> ctx = sql_context("SELECT o.amount FROM orders AS o JOIN customers c ON o.id = c.id")
    >>> ctx.tables, ctx.aliases["o"], ctx.aliases["c"]
    (['orders', 'customers'], 'orders', 'customers')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cadet_magic.sql.dialect import resolve_dialect
from cadet_magic.sql.query import checked

_FROM = re.compile(
    r"\b(?:FROM|JOIN)\s+([\w.\"`\[\]]+)(?:\s+(?:AS\s+)?(?!ON\b|WHERE\b|JOIN\b|GROUP\b|ORDER\b|"
    r"LEFT\b|RIGHT\b|INNER\b|OUTER\b|CROSS\b|FULL\b|LIMIT\b|HAVING\b|UNION\b|NATURAL\b)(\w+))?",
    re.I,
)


@dataclass
class SqlContext:
    """Names used by a query.

    Attributes:
        tables: real table names in order of appearance (CTEs and derived tables excluded).
        aliases: alias (and table name) -> table name, lower-cased keys.
        ctes: names of CTEs.
        derived: aliases of derived tables (subqueries in FROM).
        functions: names of the functions called, lower-cased.
        spelling: alias (lower-cased) -> the alias as the query writes it.
    """

    tables: list[str] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    ctes: list[str] = field(default_factory=list)
    derived: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    spelling: dict[str, str] = field(default_factory=dict)

    def resolve(self, qualifier: str | None) -> str | None:
        """The table behind an alias or table name used in the query, or None."""
        if not qualifier:
            return None
        return self.aliases.get(qualifier.strip('"`[]').lower())


@lru_cache(maxsize=32)
def _parse(sql: str, dialect: str | None) -> Any:
    import sqlglot

    from cadet_magic.sql.dialect import quiet_sqlglot

    for d in dict.fromkeys((resolve_dialect(dialect), None)):
        try:
            with quiet_sqlglot():
                return sqlglot.parse_one(sql, read=d)
        except Exception:  # noqa: BLE001 - any parse failure: try the next reading
            continue
    return None


def parse_tree(sql: str | None, dialect: str | None = None) -> Any:
    """The sqlglot tree of ``sql`` (its dialect first, then generic SQL), or None; shared by
    the diagnosis' readers (cached: callers must not change it).

    Example:
        >>> parse_tree("SELECT 1").sql(), parse_tree("SELEC 1 FROM") is None
        ('SELECT 1', True)
    """
    if not sql:
        return None
    query = checked(sql, dialect)
    if query is not None:  # the check's tree: not parsed again
        return query.tree
    try:
        return _parse(sql, dialect)
    except RecursionError:
        return None


def sql_context(sql: str | None, dialect: str | None = None) -> SqlContext:
    """Parses ``sql`` (leniently) for its tables and aliases; never raises.

    Args:
        sql: the failed query (may be None or unparsable).
        dialect: the engine's dialect name (``duckdb``, ``sqlite``, ``postgresql``...).

    Returns:
        A :class:`SqlContext`; a regex reading of FROM/JOIN when sqlglot cannot parse it.
    """
    if not sql:
        return SqlContext()
    try:
        tree = parse_tree(sql, dialect)
        if tree is None:
            raise ValueError("unparsable")
        return _from_tree(tree)
    except Exception:  # noqa: BLE001 - fall back on a regex reading
        return _from_text(sql)


def _from_tree(tree: Any) -> SqlContext:
    """The tables, aliases, CTEs, derived tables and functions of a parsed query."""
    from sqlglot import exp

    ctx = SqlContext()
    ctx.ctes = [c.alias_or_name for c in tree.find_all(exp.CTE)]
    cte_lower = {c.lower() for c in ctx.ctes}
    for sub in tree.find_all(exp.Subquery):
        if sub.alias:
            ctx.derived.append(sub.alias)
            ctx.aliases[sub.alias.lower()] = sub.alias
    for t in tree.find_all(exp.Table):
        if not t.name or t.name.lower() in cte_lower:
            continue
        if t.name not in ctx.tables:
            ctx.tables.append(t.name)
        ctx.aliases.setdefault(t.name.lower(), t.name)
        if t.alias:
            ctx.aliases[t.alias.lower()] = t.name
            ctx.spelling[t.alias.lower()] = t.alias
    for anonymous in tree.find_all(exp.Anonymous):
        ctx.functions.append(str(anonymous.name).lower())
    for f in tree.find_all(exp.Func):
        if not isinstance(f, exp.Anonymous):
            ctx.functions.append(f.sql_name().lower())
    return ctx


def _from_text(sql: str) -> SqlContext:
    """A regex reading of FROM/JOIN and calls, for a query sqlglot cannot parse."""
    ctx = SqlContext()
    for m in _FROM.finditer(sql):
        name = m.group(1).strip('"`[]').split(".")[-1]
        if name.startswith("("):
            continue
        if name not in ctx.tables:
            ctx.tables.append(name)
        ctx.aliases.setdefault(name.lower(), name)
        if m.group(2):
            ctx.aliases[m.group(2).lower()] = name
            ctx.spelling[m.group(2).lower()] = m.group(2)
    ctx.functions = [f.lower() for f in re.findall(r"\b(\w+)\s*\(", sql)]
    return ctx
