"""The SQL safety check (portable: stdlib + sqlglot).

Every decision is taken on the sqlglot syntax tree of the query, parsed in the
connection's dialect: exactly one statement, a read-only statement kind, and,
anywhere in the tree, no data-modifying CTE, no ``SELECT INTO``, no row lock, no
function that touches files, the network, settings or secrets, runs a SQL
string, sleeps or signals the server, and no table outside the allowed set
(CTE names, subquery aliases and value-only table functions are told apart on
the tree). Comments and a trailing semicolon are harmless and accepted.

The SQL to run (:attr:`Validation.sql`) is generated from the checked tree
without comments, so what runs is exactly what was checked, even where an engine
would read a comment differently from the parser.

This module checks the statement as a whole (one statement, a query kind) and generates the SQL
to run; the rules applied inside the tree are one module each under :mod:`cadet_magic.sql.checks`,
chained in order by its ``RULES``.

Example:
    >>> v = validate_sql("SELECT name FROM singer; -- all singers", "sqlite", tables=["singer"])
    >>> v.ok, v.issues, v.sql
    (True, [], 'SELECT name FROM singer')
    >>> validate_sql("DROP TABLE singer", "sqlite").issues[0].code
    'forbidden_statement'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

from sqlglot import exp

from cadet_magic.sql import rules
from cadet_magic.sql.checks import Context, check_tree
from cadet_magic.sql.checks.context import QUERY_HINT as _QUERY_HINT
from cadet_magic.sql.checks.context import Issue
from cadet_magic.sql.checks.context import classes as _classes
from cadet_magic.sql.checks.defined_operators import defined_operator
from cadet_magic.sql.checks.executable_comments import executable_comment
from cadet_magic.sql.checks.side_effects import SIDE_EFFECT_NODES as _SIDE_EFFECT_NODES
from cadet_magic.sql.checks.side_effects import STATEMENT_WORDS as _STATEMENT_WORDS
from cadet_magic.sql.checks.side_effects import statement_name as _statement_name
from cadet_magic.sql.dialect import generate, parse_statements, quiet_sqlglot
from cadet_magic.sql.functions import FunctionCatalog
from cadet_magic.sql.query import CheckedQuery, renamed_in
from cadet_magic.sql.quotes import ansi_identifiers, single_quoted
from cadet_magic.sql.target import Target

__all__ = ["CheckedQuery", "Issue", "Validation", "renamed_functions", "validate_sql"]


@dataclass
class Validation:
    """The verdict: ``ok``, the ``issues`` found and the ``sql`` to run; when ``ok``, ``sql``
    is the :class:`~cadet_magic.sql.query.CheckedQuery` (the text, with its tree, dialect and
    the text as written) the later steps are handed instead of parsing it again."""

    ok: bool
    issues: list[Issue] = field(default_factory=list)
    sql: str = ""

    @property
    def query(self) -> CheckedQuery | None:
        """The checked query (``sql`` itself, when ``ok``)."""
        return self.sql if isinstance(self.sql, CheckedQuery) else None


def _parse_error_message(error: Exception, target: Target) -> str:
    where = f"as {target.read} SQL" if target.read else "as SQL"
    detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    errors = getattr(error, "errors", None)
    if errors:
        first = errors[0]
        detail = first.get("description") or detail
        line, col = first.get("line"), first.get("col")
        near = (first.get("highlight") or "").strip()
        if line:
            detail += f" at line {line}, column {col}"
        if near:
            detail += f" (near '{near}')"
    return f"The SQL does not parse {where}: {detail}. Fix the syntax; {_QUERY_HINT}"


def _first_word(sql: str, target: Target) -> str | None:
    """The first token of ``sql`` (comments skipped), lower-cased; None if it does not tokenize."""
    try:
        tokens = target.dialect.tokenize(sql)
    except Exception:  # noqa: BLE001 - only used to word a refusal
        return None
    return tokens[0].text.lower() if tokens else None


def _not_a_query(sql: str, target: Target) -> Issue | None:
    """A ``forbidden_statement`` issue when ``sql`` starts with a non-query statement keyword."""
    word = _first_word(sql, target)
    if word in rules.NON_QUERY_KEYWORDS:
        return Issue(
            "forbidden_statement",
            f"Only read-only queries may run; {word.upper()} statements are not allowed. "
            + _QUERY_HINT,
        )
    return None


_QUERY_NODES = _classes("Select", "SetOperation", "Union", "Intersect", "Except", "Values", "Pivot")


def _is_query(tree: exp.Expression) -> bool:
    """A read-only statement kind: SELECT, a set operation, VALUES, or a DuckDB PIVOT."""
    if isinstance(tree, exp.Subquery):
        return _is_query(cast(exp.Expression, tree.unnest()))
    return isinstance(tree, _QUERY_NODES)


def validate_sql(
    sql: str,
    dialect: Target | str | None,
    tables: Iterable[str] | None = None,
    functions: FunctionCatalog | None = None,
    columns: Mapping[str, Iterable[str]] | None = None,
    *,
    ansi_quotes: bool = False,
) -> Validation:
    """Checks that ``sql`` is one read-only statement over the allowed tables and functions.

    Args:
        sql: The SQL text, as the model wrote it (comments and a trailing ``;`` are fine).
        dialect: The database's :class:`~cadet_magic.sql.target.Target` (its dialect, tables,
            columns, functions and ``ansi_quotes``: the arguments below are then not given),
            or the connection's dialect's name (``"duckdb"``, ``"sqlite"``, ``"postgres"``,
            ``"mysql"``, ... or a SQLAlchemy name such as ``"postgresql"``; None parses
            generic SQL), resolved once here with the arguments below into a Target.
        tables: The table names the query may read (optionally ``schema.table``); None
            switches the allow-list off.
        functions: The functions the engine's catalog allows
            (:class:`~cadet_magic.sql.functions.FunctionCatalog`); every function called by
            name must be on it, besides passing the fixed rules. None: the fixed rules only.
        columns: Each table's column names. Given, a double-quoted token that the engine
            reads as a string (SQLite when it names nothing in scope, MySQL always) is
            written in single quotes in the text that runs and in the query's ``written``
            text (:mod:`cadet_magic.sql.quotes`); its values are the query's
            ``double_quoted``.
        ansi_quotes: The MySQL/MariaDB session reads double quotes as names (its
            ``sql_mode`` has ``ANSI_QUOTES``): ``"x"`` is a column or table, never a string
            (:func:`~cadet_magic.sql.quotes.ansi_identifiers`); other dialects ignore it.

    Returns:
        A :class:`Validation`: ``ok`` and no ``issues`` when the query may run, with
        ``sql`` the text to run (generated from the checked tree, comments dropped);
        otherwise ``ok`` False and the issues, the first one the most important
        (``multiple_statements``, ``parse_error``, ``forbidden_statement``, then what was
        found inside the tree, ``unknown_table`` last).

    Example:
        >>> v = validate_sql("SELECT * FROM orders_2024", "duckdb", ["customers", "orders"])
        >>> v.ok, v.issues[0].code
        (False, 'unknown_table')
        >>> print(v.issues[0].message)  # doctest: +NORMALIZE_WHITESPACE
        Unknown table 'orders_2024'; tables you may use: customers, orders. Did you mean
        'orders' instead of 'orders_2024'? Use only these tables; define helper results as
        CTEs (WITH name AS (...)).
        >>> validate_sql("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "postgres").ok
        False
        >>> from cadet_magic.sql.target import Target
        >>> validate_sql("SELECT * FROM orders", Target.named("duckdb").with_names(["orders"])).ok
        True
    """
    if isinstance(dialect, Target):
        if tables is not None or functions is not None or columns is not None or ansi_quotes:
            raise TypeError("validate_sql: give a Target, or a dialect's name and its names")
        return _validate(sql, dialect)
    return _validate(sql, Target.named(dialect).with_names(tables, columns, functions, ansi_quotes))


def _validate(sql: str, target: Target) -> Validation:
    """The check of ``sql`` against ``target`` (see :func:`validate_sql`)."""
    ansi_quotes = target.ansi_quotes and target.read == "mysql"
    source = ansi_identifiers(sql) if ansi_quotes else sql  # the text as the engine reads it
    hidden = executable_comment(source, target)
    if hidden is not None:
        return Validation(False, [hidden], sql)
    try:
        statements = parse_statements(source, target.dialect)
    except Exception as e:  # noqa: BLE001 - a parser crash is still a refusal, never an escape
        issue = _not_a_query(source, target) or Issue(
            "parse_error", _parse_error_message(e, target)
        )
        return Validation(False, [issue], sql)
    if not statements:
        return Validation(
            False, [Issue("parse_error", f"The SQL is empty (only comments). {_QUERY_HINT}")], sql
        )
    if len(statements) > 1:
        kinds = ", ".join(_statement_name(s) for s in statements)
        return Validation(
            False,
            [
                Issue(
                    "multiple_statements",
                    f"Write exactly one statement; found {len(statements)} ({kinds}). "
                    "Combine the steps into one query with CTEs (WITH step AS (...) SELECT ...).",
                )
            ],
            sql,
        )
    tree = statements[0]
    if not _is_query(tree):
        if isinstance(tree, (exp.Query, *_SIDE_EFFECT_NODES)) or isinstance(
            tree, tuple(_STATEMENT_WORDS)
        ):
            message = f"Only read-only queries may run; this is {_statement_name(tree)}. "
            return Validation(False, [Issue("forbidden_statement", message + _QUERY_HINT)], sql)
        not_a_query = _not_a_query(source, target)
        if not_a_query is not None:
            return Validation(False, [not_a_query], sql)
        return Validation(
            False,
            [
                Issue(
                    "parse_error",
                    f"This is not a SQL statement (it parses as a bare {tree.key} expression; "
                    f"check the spelling of SELECT and FROM). {_QUERY_HINT}",
                )
            ],
            sql,
        )
    issues = check_tree(tree, Context(target))
    if issues:
        return Validation(False, issues, sql)
    written, double_quoted = sql, cast(tuple[str, ...], ())
    if target.columns is not None and not ansi_quotes:
        tree, written, double_quoted = single_quoted(tree, target, sql)
    try:
        text = generate(tree, target.dialect)
    except Exception as e:  # noqa: BLE001 - cannot be generated safely: refuse
        return Validation(
            False,
            [Issue("parse_error", f"The SQL cannot be handled ({e}). Simplify it. {_QUERY_HINT}")],
            sql,
        )
    operator = defined_operator(text, target)
    if operator is not None:
        return Validation(False, [operator], sql)
    query = CheckedQuery(tree, target, text, written)
    query.double_quoted = double_quoted
    return Validation(True, [], query)


def renamed_functions(sql: str, target: Target) -> dict[str, str]:
    """Functions the checked SQL spells differently from the model: ``{RUN_AS: WRITTEN}``.

    What runs is regenerated from the checked tree, and sqlglot writes some functions in the
    dialect's own spelling (``median(x)`` becomes ``PERCENTILE_CONT(x, 0.5)`` for SQLite). When
    the engine then rejects a function, the diagnosis names the one the model wrote.

    Example:
        >>> sqlite = Target.named("sqlite")
        >>> renamed_functions("SELECT median(amount) FROM orders", sqlite)
        {'PERCENTILE_CONT': 'MEDIAN'}
        >>> renamed_functions("SELECT max(amount) FROM orders", sqlite)
        {}
    """
    if isinstance(sql, CheckedQuery):  # the check's tree: not parsed again
        return dict(sql.renamed)
    try:
        with quiet_sqlglot():
            trees = parse_statements(sql, target.dialect)
    except Exception:  # noqa: BLE001 - nothing parsed, nothing renamed
        return {}
    return renamed_in(trees, target.dialect, sql)


def name_as_written(text: str, renamed: Mapping[str, str]) -> str:
    """``text`` with each function the check renamed (``{RUN_AS: WRITTEN}``, from
    :func:`renamed_functions`) named as the model wrote it.

    Example:
        >>> name_as_written("no such function: PERCENTILE_CONT", {"PERCENTILE_CONT": "MEDIAN"})
        'no such function: MEDIAN'
    """
    for run_as, written in renamed.items():
        text = re.sub(rf"\b{re.escape(run_as)}\b", written, text, flags=re.I)
    return text
