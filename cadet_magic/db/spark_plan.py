"""Spark's own parse of the agent's statement, read as text: what a plan may contain and call.

The runner (:mod:`cadet_magic.db.spark`) asks Spark for the statement's parsed, unresolved
plan and refuses it unless every node only reads (:data:`QUERY_NODES`), no function called is
one a Spark session never lets the agent call (:data:`SPARK_NEVER`, the fixed rules), and no
function that builds one value of a literal size is asked for more than :data:`MAX_BUILT`
elements (:func:`oversized_calls`, :func:`oversized_sql`). A refusal is a
:class:`SparkPlanRefused`, diagnosed like the safety check's.

Example:
    >>> node_names("'Sort ['id ASC NULLS FIRST], true\\n+- 'Project [*]\\n   +- 'UnresolvedRelation [t], [], false")
    ['Sort', 'Project', 'UnresolvedRelation']
    >>> refused_nodes(["Project", "InsertIntoStatement"])
    ['InsertIntoStatement']
"""

from __future__ import annotations

import re
from typing import Any

from cadet_magic.sql.checks.context import Issue
from cadet_magic.sql.checks.function_calls import forbidden_function
from cadet_magic.sql.functions import ENGINE_NEVER, never_reason
from cadet_magic.sql.refusal import SafetyRefusal

#: Nodes of a parsed (unresolved) Spark plan that only read: a plan containing any other
#: node (a command, a write, DDL, CACHE, SET, a script transformation, scripting) never runs.
QUERY_NODES: frozenset[str] = frozenset(
    """Project Filter Aggregate Sort GlobalLimit LocalLimit Offset Tail Distinct Deduplicate
    Union Intersect Except Join LateralJoin SubqueryAlias UnresolvedRelation
    UnresolvedInlineTable LocalRelation OneRowRelation UnresolvedWith CTE WithCTE
    CTERelationDef CTERelationRef Window WithWindowDefinition Generate
    UnresolvedTableValuedFunction UnresolvedTVFAliases Pivot Unpivot Expand Sample
    UnresolvedHint UnresolvedHaving UnresolvedSubqueryColumnAliases Range PipeOperator
    RepartitionByExpression Repartition RebalancePartitions View Transpose
    UnresolvedStarExcept""".split()
)
#: Functions a Spark session never lets the agent call, whatever its catalog says: Java
#: reflection, file readers and the name of the file a row came from, XML parsers (external
#: entities), and the session's identity.
SPARK_NEVER: frozenset[str] = frozenset(
    """reflect java_method try_reflect read_files input_file_name input_file_block_start
    input_file_block_length xpath xpath_boolean xpath_double xpath_float xpath_int
    xpath_long xpath_number xpath_short xpath_string""".split()
)

_NODE = re.compile(r"^[\s:|+\-]*'?([A-Za-z_$][\w$]*)")
#: Function calls in an unresolved plan's text: ``'reflect(...)``, ``'UnresolvedTableValuedFunction
#: [read_files], ...``.
_CALL = re.compile(
    r"'(?:`?[\w$]+`?\.)*`?([A-Za-z_][\w$]*)`?\(|UnresolvedTableValuedFunction \[(?:[^\]]*, )?([\w$]+)\]"
)


class SparkPlanRefused(SafetyRefusal):
    """Spark's own parse of the statement is not a read-only query, or calls a function that is
    never allowed; it did not run (diagnosed like the safety check's refusals)."""

    def __init__(
        self, nodes: list[str], functions: list[str] | None = None, oversized: bool = False
    ) -> None:
        self.nodes = nodes
        self.functions = functions or []
        if oversized:
            shown = ", ".join(f + "()" for f in self.functions)
            issue = Issue(
                "forbidden_function",
                f"Not run: {shown} with a size above {MAX_BUILT:,} builds one value that can "
                "fill the Spark JVM's memory; use range() as a table for many rows, or a "
                "smaller size.",
            )
        elif nodes:
            issue = Issue(
                "forbidden_statement",
                f"Not run: Spark reads this as {', '.join(nodes)}, not a read-only query. "
                "Write one query: SELECT ..., WITH ... SELECT ..., or VALUES ....",
            )
        elif all(f in ENGINE_NEVER["spark"] for f in self.functions):
            shown = ", ".join(f + "()" for f in self.functions)
            what, instead = ENGINE_NEVER["spark"][self.functions[0]]
            issue = Issue("forbidden_function", f"Not run: {shown} {what}; {instead} instead.")
        else:
            shown = ", ".join(f + "()" for f in self.functions)
            issue = Issue(
                "forbidden_function",
                f"Not run: {shown} calls Java code or reads files, which is not allowed; "
                "query the tables with ordinary functions instead.",
            )
        super().__init__([issue])


def node_names(tree: str) -> list[str]:
    """The node names of a plan's ``treeString`` (one per line, in order)."""
    names = []
    for line in tree.splitlines():
        m = _NODE.match(line)
        if m:
            names.append(m.group(1))
    return names


def refused_nodes(names: list[str]) -> list[str]:
    """The names of ``names`` that are not reading nodes (:data:`QUERY_NODES`), once each."""
    out: list[str] = []
    for n in names:
        if n not in QUERY_NODES and n not in out:
            out.append(n)
    return out


def refused_functions(tree: str) -> list[str]:
    """Functions called in a parsed plan's text that are never allowed (:data:`SPARK_NEVER`,
    the fixed rules), once each in order.

    Example:
        >>> refused_functions("'Project [unresolvedalias('reflect(java.lang.System, getenv, HOME))]")
        ['reflect']
        >>> refused_functions("'UnresolvedTableValuedFunction [read_files], [/etc/hostname], false")
        ['read_files']
        >>> refused_functions("'Project ['upper('name)]")
        []
    """
    out: list[str] = []
    for m in _CALL.finditer(tree):
        name = (m.group(1) or m.group(2) or "").lower()
        if name and name not in out:
            if name in SPARK_NEVER or never_reason(name, "spark") or forbidden_function({name}):
                out.append(name)
    return out


#: Functions whose numeric argument is the size of the one value they build (elements or
#: characters), and the largest such literal allowed: beyond it one value fills a JVM's heap.
SIZED_FUNCTIONS = frozenset({"sequence", "array_repeat", "repeat", "space", "rpad", "lpad"})
MAX_BUILT = 10**7
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)")


def oversized_calls(tree: str) -> list[str]:
    """Calls in a parsed plan's text of :data:`SIZED_FUNCTIONS` with a numeric literal above
    :data:`MAX_BUILT` among their arguments (a size the function would build one value of).

    Example:
        >>> oversized_calls("'Project [unresolvedalias('size('sequence(1, 1000000000)))]")
        ['sequence']
        >>> oversized_calls("'Project [unresolvedalias('sequence(1, 1.0E9))]")
        ['sequence']
        >>> oversized_calls("'Project ['lpad('name, 5, 0), 'sequence(1, 100)]")
        []
    """
    out: list[str] = []
    for m in re.finditer(r"'(?:`?[\w$]+`?\.)*`?([A-Za-z_][\w$]*)`?\(", tree):
        name = m.group(1).lower()
        if name not in SIZED_FUNCTIONS or name in out:
            continue
        depth, i = 1, m.end()
        while i < len(tree) and depth:
            depth += {"(": 1, ")": -1}.get(tree[i], 0)
            i += 1
        args = tree[m.end() : i - 1]
        if any(float(n) > MAX_BUILT for n in _NUMBER.findall(args)):
            out.append(name)
    return out


def oversized_sql(sql: str) -> list[str]:
    """:func:`oversized_calls` on the statement's sqlglot tree (spark dialect), before Spark
    sees it: on Spark Connect even ``EXPLAIN`` folds constants, so ``size(sequence(1, 1e9))``
    would fill the server's heap while being explained.

    Example:
        >>> oversized_sql("SELECT size(sequence(1, 1e9)) AS n"), oversized_sql("SELECT space(3)")
        (['sequence'], [])
    """
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except Exception:  # noqa: BLE001 - Spark's own plan is checked next
        return []
    out: list[str] = []
    for node in tree.find_all(exp.Func):
        name = node.sql("spark").split("(", 1)[0].strip().lower()
        if name not in SIZED_FUNCTIONS or name in out:
            continue
        numbers = [lit.this for lit in node.find_all(exp.Literal) if lit.is_number]
        try:
            if any(float(n) > MAX_BUILT for n in numbers):
                out.append(name)
        except ValueError:
            continue
    return out


#: What Spark raises when a guarded call would build a value beyond :data:`MAX_BUILT`.
GUARD_MESSAGE = (
    "cadet_magic: a value of more than 10000000 characters or elements would be built from the "
    "data; build smaller values or select the rows themselves"
)


def guarded_sql(sql: str) -> str:
    """The text to run, with every call of ``repeat``, ``space``, ``lpad``/``rpad`` and
    ``array_repeat`` whose size comes from the data (not a literal) guarded on Spark itself:
    the size becomes ``CASE WHEN <size> <= MAX_BUILT THEN <size> ELSE raise_error(...) END``
    (for ``repeat``, the size times the repeated text's length), so a row that would build one
    value beyond :data:`MAX_BUILT` fails the statement before the value is built (Spark
    evaluates a CASE branch only for the rows that take it). A text without its checked tree
    (not a :class:`~cadet_magic.sql.query.CheckedQuery`) runs as it is.

    Example:
        >>> from cadet_magic.sql.validate import validate_sql
        >>> q = validate_sql("SELECT repeat(s, n) AS r, lpad(s, 3, '0') AS p FROM t", "spark").query
        >>> print(guarded_sql(q).split(" ELSE ")[0])
        SELECT REPEAT(s, CASE WHEN n * LENGTH(s) <= 10000000 THEN n
        >>> guarded_sql("SELECT repeat(s, n) FROM t")
        'SELECT repeat(s, n) FROM t'
    """
    from sqlglot import exp

    tree = getattr(sql, "tree", None)
    if tree is None:
        return str(sql)
    copy = tree.copy()
    changed = False
    for node in list(copy.find_all(exp.Repeat, exp.Space, exp.Pad, exp.Anonymous)):
        size, weight = _size_of(node)
        if size is None or (isinstance(size, exp.Literal) and weight is None):
            continue  # a literal size alone: oversized_sql refuses it beyond MAX_BUILT
        bound = exp.Mul(this=size.copy(), expression=weight) if weight else size.copy()
        guard = exp.Case(
            ifs=[
                exp.If(
                    this=exp.LTE(this=bound, expression=exp.Literal.number(MAX_BUILT)),
                    true=size.copy(),
                )
            ],
            default=exp.Anonymous(
                this="raise_error", expressions=[exp.Literal.string(GUARD_MESSAGE)]
            ),
        )
        size.replace(guard)
        changed = True
    if not changed:
        return str(sql)
    from cadet_magic.sql.dialect import quiet_sqlglot

    with quiet_sqlglot():
        return copy.sql(dialect="spark")


def _size_of(node: Any) -> tuple[Any, Any]:
    """``(size argument, what it multiplies or None)`` of a sized call, else ``(None, None)``."""
    from sqlglot import exp

    if isinstance(node, exp.Repeat):
        text = node.this
        weight = (
            None
            if isinstance(text, exp.Literal) and text.is_string and len(text.name) <= 1
            else exp.Length(this=text.copy())
        )
        return node.args.get("times"), weight
    if isinstance(node, exp.Space):
        return node.this, None
    if isinstance(node, exp.Pad):
        return node.expression, None
    if isinstance(node, exp.Anonymous) and node.name.lower() == "array_repeat":
        args = node.expressions
        return (args[1], None) if len(args) == 2 else (None, None)
    return None, None


def parsed_section(explain: str) -> str:
    """The ``== Parsed Logical Plan ==`` section of ``EXPLAIN EXTENDED`` output."""
    text = explain.split("== Parsed Logical Plan ==", 1)[-1]
    return text.split("== Analyzed Logical Plan ==", 1)[0]


def view_texts(spark: Any, names: list[str]) -> dict[str, str]:
    """Each persistent view's query as the catalog keeps it (``View Text`` of ``DESCRIBE TABLE
    EXTENDED``, read without running it; empty when it cannot be read, which withholds the
    view: :mod:`cadet_magic.sql.views`)."""
    texts = {}
    for name in names:
        quoted = "`" + name.replace("`", "``") + "`"
        try:
            described = spark.sql(f"DESCRIBE TABLE EXTENDED {quoted}").collect()
            texts[name] = next((r[1] for r in described if r[0] == "View Text"), "") or ""
        except Exception:  # noqa: BLE001 - unreadable: withheld
            texts[name] = ""
    return texts
