"""The fallback's "simple SELECT" rule, on the sqlglot tree (portable: stdlib + sqlglot).

The fallback fetches raw rows with one plain SELECT and lets pandas do the rest. On top of
the safety check (:func:`~cadet_magic.sql.validate.validate_sql`), the query must be a single
``SELECT`` of columns and scalar expressions with filters, joins, ordering and a limit: no
aggregation (aggregate functions, ``GROUP BY``, ``HAVING``, ``DISTINCT``), no window functions
or ``QUALIFY``, no CTEs, no subqueries, no set operations (``UNION``, ...), no ``PIVOT``.

Example:
    >>> duckdb = Target.named("duckdb")
    >>> check_simple_select("SELECT c.name, o.amount FROM orders o JOIN customers c "
    ...                     "ON c.id = o.customer_id WHERE o.amount > 10", duckdb).ok
    True
    >>> [i.code for i in check_simple_select(
    ...     "SELECT name, sum(amount) FROM orders GROUP BY name", duckdb).issues]
    ['not_simple', 'not_simple']
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError

from cadet_magic.sql.dialect import parse_statements
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.target import Target
from cadet_magic.sql.validate import Issue, Validation

#: Aggregate functions sqlglot may parse as anonymous calls in some dialects.
AGGREGATE_NAMES = frozenset(
    {
        "any_value",
        "approx_count_distinct",
        "approx_quantile",
        "arbitrary",
        "arg_max",
        "arg_min",
        "argmax",
        "argmin",
        "array_agg",
        "avg",
        "bit_and",
        "bit_or",
        "bool_and",
        "bool_or",
        "count",
        "count_if",
        "every",
        "first",
        "fsum",
        "group_concat",
        "histogram",
        "last",
        "list",
        "listagg",
        "max",
        "max_by",
        "median",
        "min",
        "min_by",
        "mode",
        "percentile_cont",
        "percentile_disc",
        "product",
        "quantile",
        "quantile_cont",
        "quantile_disc",
        "stddev",
        "stddev_pop",
        "stddev_samp",
        "string_agg",
        "sum",
        "total",
        "var_pop",
        "var_samp",
        "variance",
    }
)

#: The rule, once, for feedback.
RULE = (
    "The fallback SELECT must only fetch raw rows: plain columns, WHERE filters and JOINs of "
    "the schema's tables (no aggregation, GROUP BY, DISTINCT, window functions, CTEs, "
    "subqueries or UNION); pandas does the rest."
)


def _clauses(tree: exp.Expression) -> list[tuple[str, str]]:
    """(what was found, what pandas should do instead) for each rule the tree breaks."""
    found: list[tuple[str, str]] = []
    if not isinstance(tree, exp.Select):
        found.append((f"{tree.key.upper()} (a set operation or another statement)", "combining"))
        return found
    if any(True for _ in tree.find_all(exp.With, exp.CTE)):
        found.append(("a CTE (WITH ...)", "intermediate steps"))
    if tree.args.get("group"):
        found.append(("GROUP BY", "grouping (df.groupby)"))
    if tree.args.get("having"):
        found.append(("HAVING", "filtering of groups"))
    if tree.args.get("distinct"):
        found.append(("DISTINCT", "de-duplication (drop_duplicates)"))
    if tree.args.get("qualify"):
        found.append(("QUALIFY", "ranking and filtering"))
    windows = [w for w in tree.find_all(exp.Window)]
    if windows:
        found.append(("a window function (OVER ...)", "ranking (rank, cumsum, shift)"))
    aggregates = sorted(
        {
            (node.sql_name() if isinstance(node, exp.AggFunc) else node.name).lower()
            for node in tree.find_all(exp.AggFunc, exp.Anonymous)
            if isinstance(node, exp.AggFunc) or node.name.lower() in AGGREGATE_NAMES
        }
    )
    if aggregates:
        found.append((f"aggregate function(s) {', '.join(aggregates)}", "aggregation (agg, sum)"))
    if any(node is not tree for node in tree.find_all(exp.Select)) or any(
        True for _ in tree.find_all(exp.Subquery)
    ):
        found.append(("a subquery", "intermediate steps (merge, filter)"))
    if any(True for _ in tree.find_all(exp.Pivot)):
        found.append(("PIVOT", "reshaping (pivot_table)"))
    return found


def check_simple_select(sql: str, target: Target) -> Validation:
    """Checks that ``sql`` is a simple SELECT (see the module). Run it after ``validate_sql``.

    Args:
        sql: the fallback's query (ideally :attr:`Validation.sql` of the safety check).
        target: the database it runs on.

    Returns:
        A :class:`~cadet_magic.sql.validate.Validation`: ``ok``, ``issues`` with code
        ``not_simple`` (``parse_error`` when it does not parse) and the ``sql`` unchanged.

    Example:
        >>> sqlite = Target.named("sqlite")
        >>> check_simple_select("SELECT * FROM t ORDER BY a LIMIT 5", sqlite).ok
        True
        >>> v = check_simple_select("WITH x AS (SELECT 1) SELECT * FROM x", sqlite)
        >>> v.ok, v.issues[0].message.split(":")[0]
        (False, 'Not a simple SELECT')
    """
    query = sql if isinstance(sql, CheckedQuery) else None  # the check's tree: not parsed again
    try:
        trees = [query.tree] if query is not None else parse_statements(sql, target.dialect)
    except SqlglotError as e:
        return Validation(False, [Issue("parse_error", f"The SQL does not parse: {e}")], sql)
    if len(trees) != 1:
        return Validation(False, [Issue("not_simple", "Write exactly one SELECT statement.")], sql)
    issues = [
        Issue("not_simple", f"Not a simple SELECT: it uses {what}; do the {instead} in pandas.")
        for what, instead in _clauses(trees[0])
    ]
    return Validation(not issues, issues, sql)
