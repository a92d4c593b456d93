"""What a failed query refers to: its tables, aliases, CTEs and derived tables (sqlglot only);
and :class:`Where`, the failed attempt a diagnosis reads besides the error.

The diagnosis reads the query's tree: the checked query's own (handed to it, never looked up
by its text) or, for SQL the check did not parse (a refusal), the text parsed once.

Example:
    >>> ctx = sql_context("SELECT o.amount FROM orders AS o JOIN customers c ON o.id = c.id")
    >>> ctx.tables, ctx.aliases["o"], ctx.aliases["c"]
    (['orders', 'customers'], 'orders', 'customers')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from cadet_magic.errors import EngineError
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.target import Target

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


def parse_tree(sql: str | None, target: Target | None = None) -> Any:
    """The sqlglot tree of ``sql`` (in the target's dialect first, then generic SQL), or
    None; the checked query's own tree when ``sql`` is a :class:`CheckedQuery`.

    Example:
        >>> parse_tree("SELECT 1").sql(), parse_tree("SELEC 1 FROM") is None
        ('SELECT 1', True)
        >>> parse_tree("SELECT a FROM t QUALIFY a > 1", Target.named("duckdb")).key
        'select'
    """
    if not sql:
        return None
    if isinstance(sql, CheckedQuery):
        return sql.tree
    import sqlglot

    from cadet_magic.sql.dialect import quiet_sqlglot

    readings = (target.dialect, None) if target is not None and target.read else (None,)
    for d in readings:
        try:
            with quiet_sqlglot():
                return sqlglot.parse_one(sql, read=d)
        except Exception:  # noqa: BLE001 - any parse failure: try the next reading
            continue
    return None


def sql_context(sql: str | None, target: Target | None = None, tree: Any = None) -> SqlContext:
    """The tables and aliases of ``sql`` (leniently); never raises.

    Args:
        sql: the failed query (may be None or unparsable).
        target: the database it was written for (its dialect is read first).
        tree: its syntax tree when the caller has it (else ``sql`` is parsed).

    Returns:
        A :class:`SqlContext`; a regex reading of FROM/JOIN when sqlglot cannot parse it.
    """
    if not sql:
        return SqlContext()
    try:
        if tree is None:
            tree = parse_tree(sql, target)
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


@dataclass(frozen=True)
class Where:
    """The failed attempt a diagnosis reads besides the error.

    Attributes:
        sql: the query as the model wrote it (None: there was none).
        query: the checked query when the safety check parsed it (its tree is read instead of
            parsing ``sql`` again).
        target: the database the query was written for (its dialect, resolved once).
        schema: the live schema.
        read: the engine's error as its reader read it (None for a safety refusal).
    """

    sql: str | None = None
    query: CheckedQuery | None = None
    target: Target = field(default_factory=lambda: Target.named(None))
    schema: Schema = field(default_factory=Schema)
    read: EngineError | None = None

    @cached_property
    def tree(self) -> Any:
        """The query's syntax tree (the checked one, else ``sql`` parsed once), or None."""
        if self.query is not None:
            return self.query.tree
        return parse_tree(self.sql, self.target)

    @cached_property
    def ctx(self) -> SqlContext:
        """The names the query refers to."""
        return sql_context(self.sql, self.target, self.tree)
