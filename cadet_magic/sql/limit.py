"""A row limit added on the syntax tree (portable: stdlib + sqlglot).

String-based ``LIMIT`` injection breaks on nested subqueries (an inner ``LIMIT``
hides the missing outer one), on CTEs and set operations (the ``LIMIT`` lands in
the wrong place) and on an existing larger or smaller ``LIMIT``. Here the query
is parsed in its dialect and only the *outermost* query's row limit is touched:

* no limit: an outer ``LIMIT n`` (``TOP n`` / ``FETCH FIRST`` where the dialect
  spells it so) is attached to the top query, after its ``ORDER BY``; on a
  ``UNION``/``INTERSECT``/``EXCEPT`` it applies to the whole set operation;
* a literal ``LIMIT m`` (or ``FETCH FIRST m ROWS ONLY``): ``min(m, n)``, with any
  ``OFFSET`` kept;
* anything else (``LIMIT $1``, ``LIMIT ALL``, ``WITH TIES``, ``PERCENT``, a DuckDB
  ``PIVOT`` statement): the query is wrapped, ``SELECT * FROM (query) LIMIT n``,
  with its CTEs hoisted to the outer query.

Nested subqueries and CTE bodies keep their own ``LIMIT``/``ORDER BY`` untouched,
so the engine returns exactly the first ``n`` rows of the unlimited query.

Example:
    >>> from cadet_magic.sql.target import Target
    >>> add_limit("SELECT name FROM singer ORDER BY age DESC;", Target.named("sqlite"), 11)
    'SELECT name FROM singer ORDER BY age DESC LIMIT 11'
"""

from __future__ import annotations

from typing import cast

from sqlglot import exp

from cadet_magic.sql.dialect import generate, parse_statements
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.target import Target

#: Alias of the derived table when the query has to be wrapped.
WRAP_ALIAS = "_cadet_limited"


_SET_OPERATIONS = tuple(
    getattr(exp, n) for n in ("SetOperation", "Union", "Intersect", "Except") if hasattr(exp, n)
)


def _int_literal(node: exp.Expression | None) -> int | None:
    """The value of a non-negative integer literal, else None."""
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        return int(node.this)
    return None


def _limit_options_plain(node: exp.Expression) -> bool:
    """No ``PERCENT`` and no ``WITH TIES`` (on the node itself in older sqlglot versions)."""
    options = node.args.get("limit_options") or node
    return not (options.args.get("percent") or options.args.get("with_ties"))


def _tighten(query: exp.Query, n: int, target: Target) -> bool:
    """Sets ``query``'s own row limit to at most ``n``; False when it must be wrapped instead."""
    if isinstance(query, _SET_OPERATIONS) and target.read == "tsql":
        return False  # T-SQL has no TOP for a whole UNION
    current = query.args.get("limit")
    if current is None:
        query.set("limit", exp.Limit(expression=exp.Literal.number(n)))
        return True
    if not _limit_options_plain(current):
        return False
    if isinstance(current, exp.Limit):
        m = _int_literal(current.expression)
        if (
            m is None
            and target.read == "sqlite"
            and isinstance(current.expression, exp.Neg)
            and _int_literal(current.expression.this) is not None
        ):
            m = n + 1  # SQLite: a negative LIMIT means no limit
        if m is None:
            return False
        if m > n:
            current.set("expression", exp.Literal.number(n))
        return True
    if isinstance(current, exp.Fetch):
        count = current.args.get("count")
        m = 1 if count is None else _int_literal(count)
        if m is None:
            return False
        if m > n:
            current.set("count", exp.Literal.number(n))
        return True
    return False


def _wrap(query: exp.Expression, n: int) -> exp.Select:
    """``SELECT * FROM (query) AS _cadet_limited LIMIT n``, the query's CTEs hoisted outside."""
    with_ = query.args.get("with_")
    if with_ is not None:
        query.set("with_", None)
    outer = exp.select("*").from_(
        exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(WRAP_ALIAS)))
    )
    outer.set("limit", exp.Limit(expression=exp.Literal.number(n)))
    if with_ is not None:
        outer.set("with_", with_)
    return outer


def add_limit(sql: str | CheckedQuery, target: Target, n: int) -> str:
    """Limits ``sql`` to its first ``n`` rows by editing the syntax tree.

    Args:
        sql: One read-only query: the :class:`~cadet_magic.sql.query.CheckedQuery` the check
            made (its tree is limited in its own target's dialect, on a copy: nothing is
            parsed), or a text (comments and a trailing ``;`` are fine).
        target: The database it runs on (its dialect).
        n: The most rows to return (>= 0). Callers that want to know whether more rows
            existed pass ``limit + 1`` and fetch that many.

    Returns:
        The SQL to run, generated from the tree in the dialect without comments. SQL that
        is not a single query (or does not parse) is returned unchanged: the safety check
        refuses it, and the engine's own error stays what the model sees.

    Raises:
        ValueError: if ``n`` is negative.

    Example:
        >>> duckdb = Target.named("duckdb")
        >>> add_limit("SELECT * FROM (SELECT * FROM products LIMIT 50) AS sub", duckdb, 5)
        'SELECT * FROM (SELECT * FROM products LIMIT 50) AS sub LIMIT 5'
        >>> add_limit("SELECT a FROM t UNION SELECT a FROM u ORDER BY a LIMIT 3",
        ...           Target.named("postgres"), 10)
        'SELECT a FROM t UNION SELECT a FROM u ORDER BY a LIMIT 3'
        >>> add_limit("WITH c AS (SELECT a FROM t LIMIT 100) SELECT * FROM c",
        ...           Target.named("sqlite"), 20)
        'WITH c AS (SELECT a FROM t LIMIT 100) SELECT * FROM c LIMIT 20'
    """
    if isinstance(sql, CheckedQuery):  # checked: its tree, no parse
        if n < 0:
            raise ValueError(f"row limit must be >= 0, got {n}")
        limited = limit_tree(sql.tree.copy(), sql.target, n)
        return str(sql) if limited is None else limited
    try:
        statements = parse_statements(sql, target.dialect)
    except Exception:  # noqa: BLE001 - unparsable SQL goes to the engine unchanged
        return sql
    if len(statements) != 1:
        return sql
    limited = limit_tree(statements[0], target, n)
    return sql if limited is None else limited


def limit_tree(tree: exp.Expression, target: Target, n: int) -> str | None:
    """The SQL of ``tree`` (which it edits) limited to ``n`` rows in ``target``'s dialect;
    None when it is not a query.

    Example:
        >>> duckdb = Target.named("duckdb")
        >>> limit_tree(parse_statements("SELECT a FROM t LIMIT 50", duckdb.dialect)[0], duckdb, 5)
        'SELECT a FROM t LIMIT 5'
    """
    if n < 0:
        raise ValueError(f"row limit must be >= 0, got {n}")
    while (
        isinstance(tree, exp.Subquery)
        and not tree.alias
        and not any(tree.args.get(k) for k in ("limit", "offset", "order", "with_"))
    ):
        tree = tree.this  # redundant outer parentheses
    if isinstance(tree, exp.Values):
        return tree.sql(dialect=target.dialect, comments=False)  # literal rows: nothing to run
    if isinstance(tree, (exp.Select, exp.Subquery, *_SET_OPERATIONS)):
        if not _tighten(cast(exp.Query, tree), n, target):
            tree = _wrap(tree, n)
    elif isinstance(tree, exp.Query | exp.Pivot):
        tree = _wrap(cast(exp.Expression, tree), n)
    else:
        return None
    return generate(tree, target.dialect)
