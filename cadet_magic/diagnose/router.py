"""The error-analysis router: read the error, classify it, find names, pick the template.

Example:
    >>> d = diagnose_error("no such column: amout", sql="SELECT amout FROM orders",
    ...                    dialect="sqlite", schema={"orders": ["amount"]})
    >>> d.category.value, d.retryable, d.suggestions[:1], d.details["identifier"]
    ('column_not_found', True, ['orders.amount'], 'amout')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from cadet_magic.diagnose import feedback as templates
from cadet_magic.diagnose import suggest
from cadet_magic.diagnose.error_info import ErrorInfo, read_error
from cadet_magic.diagnose.model import NOT_RETRYABLE, Category, Diagnosis
from cadet_magic.diagnose.rules import classify
from cadet_magic.diagnose.sqlcontext import SqlContext, sql_context
from cadet_magic.schema.model import Schema
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.text import error_text

_REFUSAL_CODES = {
    "multiple_statements": Category.multiple_statements,
    "unknown_table": Category.table_not_found,
    "unknown_function": Category.function_not_found,
    "parse_error": Category.syntax_error,
}
_DATE_PARTS = frozenset(
    "year years month months day days week weeks hour hours minute minutes second seconds "
    "quarter dd mm yy yyyy hh mi ss dw dy wk qq".split()
)
_DATE_FUNCTION_WORDS = ("date", "time", "year", "month", "day", "char", "strf", "format")

# Where each category's offending identifier sits in the primary message.
_IDENTIFIER = {
    Category.column_not_found: [
        r'Referenced column "([^"]+)" not found',
        r'^column "([^"]+)" does not exist',
        r'Referenced column "?([^"\s]+)"? not found',
        r'does not have a column named "?([^"\s]+)"?',
        r"no such column: ?(\S+)",
        r'^column "?([^"\s]+?)"? does not exist',
        r"has no column named (\S+)",
        r'with name "([^"]+)" cannot be resolved',  # Spark
    ],
    Category.table_not_found: [
        r"Table with name \"?([^\"\s!]+)\"? does not exist",
        r"no such table: ?(\S+)",
        r'relation "?([^"\s]+)"? does not exist',
        r'missing FROM-clause entry for table "?([^"\s]+)"?',
        r'Referenced table "?([^"\s]+)"? not found',
        r'The table or view "([^"]+)" cannot be found',  # Spark
    ],
    Category.join_error: [
        r'column reference "?([^"\s]+)"? is ambiguous',
        r'Ambiguous reference to (?:column name|table) "?([^"\s]+)"?',
        r"ambiguous column name: ?(\S+)",
        r'table name "?([^"\s]+)"? specified more than once',
        r'Duplicate alias "?([^"\s]+)"?',
        r'Reference "([^"]+)" is ambiguous',  # Spark
    ],
    Category.aggregation_error: [
        r'column "?([^"\s]+?)"? must appear in the GROUP BY',
        r"misuse of aggregate(?: function)?:? (\w+)\(",
        r'non-aggregating expression "([^"]+)"',  # Spark
    ],
    Category.function_not_found: [
        r"Function with name \"?(\w+)\"? does not exist",
        r"no such function: ?(\w+)",
        r"^function (\w+)\(",
        r'Cannot resolve routine "([^"]+)"',  # Spark
        r'^The "(\w+)" requires \d+ parameters',  # Spark
    ],
    Category.syntax_error: [r'at or near "([^"]*)"', r'near "([^"]*)": syntax error'],
}


# What was mismatched, for type and date/time errors: (pattern, format).
_VALUE = (
    (r"Could not convert string ([\"'].*?[\"']) to ([\w(),]+)", "{0} as {1}"),
    (r"invalid input syntax for type ([\w ]+): (\".*?\")", "{1} as {0}"),
    (r"Cannot compare values of type (\w+) and type (\w+)", "{0} compared with {1}"),
    (r"operator does not exist: (.+)$", "{0}"),
    (r"argument types '([^']+)'", "{0}"),
    (r"(?:field format|out of range): (\".*?\")", "{0}"),
)


def _value(text: str) -> str | None:
    for pattern, fmt in _VALUE:
        m = re.search(pattern, text, re.I)
        if m:
            return fmt.format(*m.groups())[:80]
    return None


def _first(patterns: Iterable[str], text: str) -> str | None:
    for p in patterns:
        m = re.search(p, text, re.I)
        if m:
            return m.group(1).strip().rstrip("!.,;:")
    return None


def _position(info: ErrorInfo, sql: str | None, ident: str | None) -> int | None:
    if info.position:
        return info.position
    if sql and ident:
        m = re.search(rf"(?<![\w.]){re.escape(ident)}(?!\w)", sql, re.I)
        if m:
            return m.start() + 1
    if info.caret and sql and "\n" not in sql:
        return info.caret
    return None


def _refusal(error: SafetyRefusal) -> tuple[Category, dict[str, Any]]:
    issues = list(getattr(error, "issues", []) or [])
    codes = list(error.codes)
    category = _REFUSAL_CODES.get(codes[0], Category.forbidden) if codes else Category.forbidden
    details: dict[str, Any] = {
        "message": str(error),
        "codes": codes,
        "issues": [str(getattr(i, "message", i)) for i in issues],
    }
    if category is Category.table_not_found:
        m = re.search(r"Unknown table '([^']+)'", str(error))
        if m:
            details["identifier"] = m.group(1)
    elif category is Category.function_not_found:
        m = re.search(r"(\w+)\(\) is not a function", str(error))
        if m:
            details["identifier"] = m.group(1)
    return category, details


def diagnose_error(
    error: BaseException | str,
    *,
    sql: str | None = None,
    dialect: str | None = None,
    schema: Schema | Mapping[str, Iterable[str]] | None = None,
    message: str | None = None,
) -> Diagnosis:
    """Classifies an error and builds suggestions and feedback for the model.

    Args:
        error: the engine's exception (raw, SQLAlchemy- or jupysql-wrapped) or its message;
            also a :class:`cadet_magic.errors.QueryTimeout` or a
            :class:`cadet_magic.sql.refusal.SafetyRefusal`.
        sql: the failed query (for aliases, positions and the feedback).
        dialect: ``duckdb``, ``sqlite``, ``postgresql``... (for dialect-specific advice).
        schema: the live schema, a :class:`Schema` or a ``{table: [column, ...]}`` mapping.
        message: the error's text to read instead of the exception's own (e.g. naming
            functions as the model wrote them); the exception's class and SQLSTATE still count.

    Returns:
        The :class:`Diagnosis`: category, retryable, details (message, identifier,
        position, ...), ranked suggestions and the feedback text.

    Example:
        >>> d = diagnose_error('column "orders.status" must appear in the GROUP BY clause or '
        ...     'be used in an aggregate function', sql="SELECT status, SUM(amount) FROM orders",
        ...     dialect="postgresql", schema={"orders": ["status", "amount"]})
        >>> d.category.value, d.suggestions
        ('aggregation_error', ['orders.status'])
    """
    sch = Schema.coerce(schema)
    ctx = sql_context(sql, dialect)
    if isinstance(error, SafetyRefusal):
        category, details = _refusal(error)
        info = None
    else:
        info = read_error(error, message)
        category = classify(info)
        details = {"message": info.message, "primary": info.primary}
        for key in ("sqlstate", "errorname", "prefix", "hint"):
            if getattr(info, key):
                details[key] = getattr(info, key)
        if info.driver_class:
            details["exception"] = info.driver_class
        if category is Category.timeout and hasattr(error, "seconds"):
            details["seconds"] = error.seconds
        ident = _first(_IDENTIFIER.get(category, []), info.primary)
        if ident is not None:
            details["identifier" if category is not Category.syntax_error else "near"] = ident
        category = _refine(category, details, info, ctx, sql, sch)
        if category in (Category.type_mismatch, Category.datetime_format):
            value = _value(info.primary)
            if value:
                details["value"] = value
    suggestions = _suggestions(category, details, info, ctx, sch, dialect)
    if info is not None:
        pos = _position(info, sql, details.get("identifier") or details.get("near"))
        if pos:
            details["position"] = pos
    if category is Category.table_not_found and sch.tables:
        details["tables"] = sch.table_names()
    if category is Category.column_not_found and suggestions and "identifier" in details:
        bare = details["identifier"].split(".")[-1].strip('"')
        real = suggestions[0].split(".")[-1]
        if bare != real and bare.lower() == real.lower():
            details["case_sensitive"] = True
    refused = isinstance(error, SafetyRefusal)
    return Diagnosis(
        category=category,
        retryable=category not in NOT_RETRYABLE,
        details=details,
        suggestions=suggestions,
        feedback=templates.render(sql, category.value, details, suggestions, dialect),
        outcome=("refused" if refused else "timeout" if category is Category.timeout else "error"),
        error=str(error) if refused else error_text(error),
        exception=error if isinstance(error, BaseException) else None,
    )


def _missing_qualified_column(alias: str, ctx: SqlContext, sql: str, schema: Schema) -> str | None:
    """The first ``alias.column`` of the query whose table lacks that column."""
    table = schema.table(ctx.resolve(alias) or "")
    if table is None:
        return None
    columns = {c.lower() for c in table.column_names()}
    for m in re.finditer(rf"(?<![\w.]){re.escape(alias)}\.\"?(\w+)", sql, re.I):
        if m.group(1).lower() not in columns:
            return f"{alias}.{m.group(1)}"
    return None


def _refine(
    category: Category,
    details: dict[str, Any],
    info: ErrorInfo,
    ctx: SqlContext,
    sql: str | None,
    schema: Schema,
) -> Category:
    """Corrections the query itself makes possible."""
    ident = (details.get("identifier") or "").strip('"')
    if category is Category.column_not_found and ident.lower() in _DATE_PARTS and sql:
        # DATEADD(day, ...) / DATEDIFF(day, ...): another dialect's function whose first
        # argument the engine read as a column.
        m = re.search(rf"\b(\w+)\s*\(\s*{re.escape(ident)}\s*,", sql, re.I)
        if m:
            details["identifier"] = m.group(1)
            details["date_function"] = True
            return Category.function_not_found
    if (
        category is Category.table_not_found
        and sql
        and ident.lower() in ctx.aliases
        and re.match(r"Referenced table", info.primary)
    ):
        # DuckDB, in a subquery: T1.bad_column is looked up in the outer query too and
        # reported as a missing table "T1"; the alias exists, the column does not.
        bad = _missing_qualified_column(ident, ctx, sql, schema)
        if bad:
            details["identifier"] = bad
            return Category.column_not_found
    if category is Category.column_not_found and sql and ident and f'"{ident}"' in sql:
        if " " in ident or re.search(
            rf"(=|<>|!=|LIKE|IN\s*\(|,)\s*\"{re.escape(ident)}\"", sql, re.I
        ):
            details["double_quoted_string"] = True
    if category is Category.syntax_error and "must have an alias" in info.primary:
        details["derived_alias"] = True
    if category is Category.column_not_found and "." in ident:
        qualifier = ident.split(".")[0]
        if qualifier.lower() in {d.lower() for d in ctx.derived}:
            details["derived_alias"] = True
    if category is Category.table_not_found and ident.lower() in {d.lower() for d in ctx.derived}:
        details["derived_alias"] = True
    if category is Category.aggregation_error:
        low = info.primary.lower()
        if "where" in low or "misuse of aggregate" in low:
            details["aggregate_in_where"] = True
    if category is Category.function_not_found:
        fn = (details.get("identifier") or "").lower()
        if any(w in fn for w in _DATE_FUNCTION_WORDS):
            details["date_function"] = True
    return category


def _suggestions(
    category: Category,
    details: dict[str, Any],
    info: ErrorInfo | None,
    ctx: SqlContext,
    sch: Schema,
    dialect: str | None,
) -> list[str]:
    ident = details.get("identifier")
    engine = suggest.engine_candidates(info) if info is not None else []
    if category is Category.column_not_found and ident:
        return suggest.rank_columns(
            ident, sch, tables=ctx.tables, aliases=ctx.aliases, engine=engine
        )
    if category is Category.table_not_found and ident:
        return suggest.rank_tables(ident, sch, engine=engine)
    if category is Category.join_error and ident:
        found = suggest.qualify(ident, sch, tables=ctx.tables, aliases=ctx.aliases)
        for cand in engine:
            q, _, c = cand.rpartition(".")
            for name in suggest.qualify(cand, sch, tables=ctx.tables, aliases=ctx.aliases):
                if name not in found and q:
                    found.append(name)
            del c
        return found
    if category is Category.aggregation_error and ident and not details.get("aggregate_in_where"):
        found = suggest.qualify(ident, sch, tables=ctx.tables, aliases=ctx.aliases)
        return found[:1] if found else [ident]
    if category is Category.function_not_found and ident:
        return suggest.rank_functions(ident, dialect, engine)
    return []
