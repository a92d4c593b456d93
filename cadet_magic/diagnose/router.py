"""An engine's error (or a safety refusal) -> a :class:`Diagnosis`: read the error, classify it,
find names, pick the template. Reached through :func:`cadet_magic.diagnose.diagnose`.

Example:
    >>> d = engine_diagnosis("no such column: amout", sql="SELECT amout FROM orders",
    ...                    dialect="sqlite", schema={"orders": ["amount"]})
    >>> d.category.value, d.retryable, d.suggestions[:1], d.details["identifier"]
    ('column_not_found', True, ['orders.amount'], 'amout')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from cadet_magic.diagnose import feedback as templates
from cadet_magic.diagnose.error_info import ErrorInfo, read_error
from cadet_magic.diagnose.model import NOT_RETRYABLE, Category, Diagnosis
from cadet_magic.diagnose.naming import alias_view, case_only, suggest_names
from cadet_magic.diagnose.refine import read_malformed, refine
from cadet_magic.diagnose.rules import classify
from cadet_magic.diagnose.sqlcontext import sql_context
from cadet_magic.schema.model import Schema
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.text import error_text

_REFUSAL_CODES = {
    "multiple_statements": Category.multiple_statements,
    "unknown_table": Category.table_not_found,
    "unknown_function": Category.function_not_found,
    "parse_error": Category.syntax_error,
}

# Where each category's offending identifier sits in the primary message.
_IDENTIFIER = {
    Category.column_not_found: [
        r'Referenced column "([^"]+)" not found',
        r'Referenced column "([^"]+)" was not found',
        r'^column "([^"]+)" does not exist',
        r'Referenced column "?([^"\s]+)"? not found',
        r'does not have a column named "?([^"\s]+)"?',
        r"no such column: ?(.+?)\s*$",  # SQLite names it whole, spaces included
        r'^column "?([^"\s]+?)"? does not exist',
        r"has no column named (\S+)",
        r"^Unknown column '([^']+)' in",  # MySQL / MariaDB
        r'with name "([^"]+)" cannot be resolved',  # Spark
    ],
    Category.table_not_found: [
        r"Table with name \"?([^\"\s!]+)\"? does not exist",
        r"no such table: ?(\S+)",
        r'relation "?([^"\s]+)"? does not exist',
        r'missing FROM-clause entry for table "?([^"\s]+)"?',
        r'Referenced table "?([^"\s]+)"? not found',
        r"^Table '(?:[^'.]+\.)?([^']+)' doesn't exist",  # MySQL / MariaDB
        r"^Unknown table '(?:[^'.]+\.)?([^']+)'",
        r'The table or view "([^"]+)" cannot be found',  # Spark
    ],
    Category.join_error: [
        r'column reference "?([^"\s]+)"? is ambiguous',
        r'Ambiguous reference to (?:column name|table) "?([^"\s]+)"?',
        r"ambiguous column name: ?(\S+)",
        r'table name "?([^"\s]+)"? specified more than once',
        r'Duplicate alias "?([^"\s]+)"?',
        r"^Column '([^']+)' in .* is ambiguous",  # MySQL / MariaDB
        r"^Not unique table/alias: '([^']+)'",
        r'Reference "([^"]+)" is ambiguous',  # Spark
    ],
    Category.aggregation_error: [
        r'column "?([^"\s]+?)"? must appear in the GROUP BY',
        r"misuse of aggregate(?: function)?:? (\w+)\(",
        r"^'([^']+)' isn't in GROUP BY",  # MySQL / MariaDB
        r'non-aggregating expression "([^"]+)"',  # Spark
    ],
    Category.function_not_found: [
        r"Function with name \"?(\w+)\"? does not exist",
        r"no such function: ?(\w+)",
        r"^function (\w+)\(",
        r'Cannot resolve routine "([^"]+)"',  # Spark
        r'^The "(\w+)" requires \d+ parameters',  # Spark
        r"^FUNCTION (?:\w+\.)?(\w+) does not exist",  # MySQL / MariaDB
    ],
    Category.syntax_error: [
        r'at or near "([^"]*)"',
        r'near "([^"]*)": syntax error',
        r"near '([^\s']+)",  # MySQL / MariaDB: the first word it names
    ],
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


def _refusal(
    error: SafetyRefusal, sql: str | None, dialect: str | None
) -> tuple[Category, dict[str, Any]]:
    """The category and details of a safety refusal; the check words functions as it
    regenerates them, so they are named as the model wrote them."""
    issues = list(getattr(error, "issues", []) or [])
    codes = list(error.codes)
    category = _REFUSAL_CODES.get(codes[0], Category.forbidden) if codes else Category.forbidden
    text = as_written(str(error), sql, dialect)
    details: dict[str, Any] = {
        "message": text,
        "codes": codes,
        "issues": [as_written(str(getattr(i, "message", i)), sql, dialect) for i in issues],
    }
    if category is Category.table_not_found:
        m = re.search(r"Unknown table '([^']+)'", text)
        if m:
            details["identifier"] = m.group(1)
    elif category is Category.function_not_found:
        m = re.search(r"(\w+)\(\) is not a function", text)
        if m:
            details["identifier"] = m.group(1)
    return category, details


def engine_diagnosis(
    error: BaseException | str,
    *,
    sql: str | None = None,
    dialect: str | None = None,
    schema: Schema | Mapping[str, Iterable[str]] | None = None,
    message: str | None = None,
) -> Diagnosis:
    """Classifies an error and builds suggestions and feedback for the model.

    Args:
        error: the engine's error as its runner read it (:class:`~cadet_magic.errors.EngineError`),
            any other exception, or its message; also a
            :class:`cadet_magic.errors.QueryTimeout` or a
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
        >>> d = engine_diagnosis('column "orders.status" must appear in the GROUP BY clause or '
        ...     'be used in an aggregate function', sql="SELECT status, SUM(amount) FROM orders",
        ...     dialect="postgresql", schema={"orders": ["status", "amount"]})
        >>> d.category.value, d.suggestions
        ('aggregation_error', ['orders.status'])
    """
    sch = Schema.coerce(schema)
    ctx = sql_context(sql, dialect)
    shown: str | None = None
    if isinstance(error, SafetyRefusal):
        category, details = _refusal(error, sql, dialect)
        shown = details["message"]
        info = None
    else:
        info = read_error(error, message)
        renamed = as_written(info.message, sql, dialect)
        if renamed != info.message:
            info = read_error(error, renamed)
        shown = as_written(
            error_text(message if message is not None else error) or "", sql, dialect
        )
        category = classify(info)
        details = {"message": info.message, "primary": info.primary}
        for key in ("sqlstate", "code", "prefix", "hint"):
            if getattr(info, key):
                details[key] = getattr(info, key)
        if info.driver_class:
            details["exception"] = info.driver_class
        if category is Category.timeout and hasattr(error, "seconds"):
            details["seconds"] = error.seconds
        ident = _first(_IDENTIFIER.get(category, []), info.primary)
        if ident is not None:
            details["identifier" if category is not Category.syntax_error else "near"] = ident
        category = refine(category, details, info, ctx, sql, sch, dialect)
        if category in (Category.type_mismatch, Category.datetime_format):
            value = _value(info.primary)
            if value:
                details["value"] = value
    category = read_malformed(category, details, info, sql, sch, dialect)
    suggestions = suggest_names(category, details, info, ctx, sch, dialect, sql)
    if info is not None:
        pos = _position(info, sql, details.get("identifier") or details.get("near"))
        if pos:
            details["position"] = pos
    if category is Category.table_not_found and sch.tables:
        details["tables"] = sch.table_names()
    details.update(alias_view(category, details, suggestions, ctx, sch))
    if category in (Category.column_not_found, Category.table_not_found):
        real = case_only(category, details, ctx, sch, dialect)
        if real is not None:
            details["case_sensitive"] = real
            suggestions = [real, *[x for x in suggestions if x != real]]
    refused = isinstance(error, SafetyRefusal)
    return Diagnosis(
        category=category,
        retryable=category not in NOT_RETRYABLE,
        details=details,
        suggestions=suggestions,
        feedback=templates.render(sql, category.value, details, suggestions, dialect),
        outcome=("refused" if refused else "timeout" if category is Category.timeout else "error"),
        error=shown,
        exception=error if isinstance(error, BaseException) else None,
    )


_ECHO = re.compile(r"^LINE \d+: ?(?P<text>.*)$")


def as_written(text: str, sql: str | None, dialect: str | None) -> str:
    """An engine's error text naming what the model wrote, not what ran: functions the check
    regenerated in the dialect's own spelling are named as written (``PERCENTILE_CONT`` ->
    ``MEDIAN`` on SQLite), and the engine's echo of a statement line that the model did not
    write (``LINE 1: ...`` and its caret) is left out.

    Example:
        >>> as_written("no such function: PERCENTILE_CONT", "SELECT median(x) FROM t", "sqlite")
        'no such function: MEDIAN'
        >>> as_written("boom\\nLINE 1: SELECT CAST(x AS INT)\\n        ^", "SELECT x::int", "duckdb")
        'boom'
    """
    if not sql or not text:
        return text
    from cadet_magic.sql.validate import renamed_functions

    for run_as, written in renamed_functions(sql, dialect).items():
        text = re.sub(rf"\b{re.escape(run_as)}\b", written, text, flags=re.I)
    lines = text.split("\n")
    flat = re.sub(r"\s+", " ", sql).lower()
    out: list[str] = []
    skip_caret = False
    for line in lines:
        m = _ECHO.match(line)
        if m:
            echoed = re.sub(r"\s+", " ", m.group("text")).strip().strip(".").lower()
            skip_caret = bool(echoed) and not all(p.strip() in flat for p in echoed.split("..."))
            if not skip_caret:
                out.append(line)
            continue
        if skip_caret and line.strip() and set(line.strip()) <= {"^"}:
            skip_caret = False
            continue
        skip_caret = False
        out.append(line)
    return "\n".join(out).rstrip()
