"""An engine's error (or a safety refusal) -> a :class:`Diagnosis`: take what the engine's
reader found, correct it with what the failed query shows, find names, pick the template.
Reached through :func:`cadet_magic.diagnose.diagnose`.

The engine's error arrives read (:class:`~cadet_magic.errors.EngineError`: its kind, the name,
token or value it is about, the names the engine proposes, what else it states); nothing here
reads an engine's wording.

Example:
    >>> from cadet_magic.errors import EngineError, EngineText, ErrorKind
    >>> e = EngineError("no such column: amout", kind=ErrorKind.column_not_found,
    ...                 identifier=EngineText("amout"))
    >>> d = engine_diagnosis(e, sql="SELECT amout FROM orders", dialect="sqlite",
    ...                      schema={"orders": ["amount"]})
    >>> d.category.value, d.retryable, d.suggestions[:1], d.details["identifier"]
    ('column_not_found', True, ['orders.amount'], 'amout')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from cadet_magic.diagnose import feedback as templates
from cadet_magic.diagnose.model import NOT_RETRYABLE, Category, Diagnosis
from cadet_magic.diagnose.naming import alias_view, case_only, suggest_names
from cadet_magic.diagnose.refine import read_malformed, refine
from cadet_magic.diagnose.sqlcontext import sql_context
from cadet_magic.errors import EngineError, ErrorKind, QueryTimeout
from cadet_magic.schema.model import Schema
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.text import error_text

_REFUSAL_CODES = {
    "multiple_statements": Category.multiple_statements,
    "unknown_table": Category.table_not_found,
    "unknown_function": Category.function_not_found,
    "parse_error": Category.syntax_error,
}


def _position(error: EngineError, sql: str | None, ident: str | None) -> int | None:
    if error.position:
        return error.position
    if sql and ident:
        m = re.search(rf"(?<![\w.]){re.escape(ident)}(?!\w)", sql, re.I)
        if m:
            return m.start() + 1
    if error.caret and sql and "\n" not in sql:
        return error.caret
    return None


def as_read(error: BaseException | str) -> EngineError:
    """``error`` as an :class:`EngineError`: as the engine's reader read it; our own
    :class:`QueryTimeout` as a timeout; anything else (not read by an engine's reader) by its
    words alone, of no known kind.

    Example:
        >>> as_read(QueryTimeout(5)).kind.value, as_read("odd").kind.value
        ('timeout', 'unknown')
    """
    if isinstance(error, EngineError):
        return error
    text = error_text(error) or ""
    kinds = (type(error).__name__,) if isinstance(error, BaseException) else ()
    if isinstance(error, QueryTimeout):
        return EngineError(text, kinds=kinds, kind=ErrorKind.timeout)
    return EngineError(text, kinds=kinds)


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
) -> Diagnosis:
    """Builds the diagnosis of an engine's error: its category, suggestions and feedback.

    Args:
        error: the engine's error as its reader read it
            (:class:`~cadet_magic.errors.EngineError`: through
            :func:`cadet_magic.diagnose_error` for a driver's exception or a message), a
            :class:`cadet_magic.errors.QueryTimeout` or a
            :class:`cadet_magic.sql.refusal.SafetyRefusal`; anything else is read by its words
            alone, of no known kind.
        sql: the failed query (for aliases, positions and the feedback).
        dialect: ``duckdb``, ``sqlite``, ``postgresql``... (for dialect-specific advice).
        schema: the live schema, a :class:`Schema` or a ``{table: [column, ...]}`` mapping.

    Returns:
        The :class:`Diagnosis`: category, retryable, details (message, identifier,
        position, ...), ranked suggestions and the feedback text.

    Example:
        >>> from cadet_magic.errors import EngineError, EngineText, ErrorKind
        >>> e = EngineError('column "orders.status" must appear in the GROUP BY clause or be '
        ...     'used in an aggregate function', kind=ErrorKind.aggregation_error,
        ...     identifier=EngineText("orders.status"))
        >>> d = engine_diagnosis(e, sql="SELECT status, SUM(amount) FROM orders",
        ...     dialect="postgresql", schema={"orders": ["status", "amount"]})
        >>> d.category.value, d.suggestions
        ('aggregation_error', ['orders.status'])
    """
    sch = Schema.coerce(schema)
    ctx = sql_context(sql, dialect)
    read: EngineError | None = None
    if isinstance(error, SafetyRefusal):
        category, details = _refusal(error, sql, dialect)
        shown = details["message"]
    else:
        read = as_read(error)
        shown = error_text(read) or ""
        category, details = _engine_details(read, error)
        category = refine(category, details, read, ctx, sql, sch, dialect)
        if category in (Category.type_mismatch, Category.datetime_format) and read.value:
            details["value"] = read.value.text
    category = read_malformed(category, details, read, sql, sch, dialect)
    suggestions = suggest_names(category, details, read, ctx, sch, dialect, sql)
    if read is not None:
        pos = _position(read, sql, details.get("identifier") or details.get("near"))
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


def _engine_details(read: EngineError, error: BaseException | str) -> tuple[Category, dict]:
    """The category and the first details of an engine's error, as its reader found them."""
    category = Category(read.kind.value)
    details: dict[str, Any] = {"message": read.text, "primary": read.primary}
    for key, value in (
        ("sqlstate", read.sqlstate),
        ("code", read.code),
        ("hint", read.suggestion),
    ):
        if value:
            details[key] = value
    if read.kinds:
        details["exception"] = read.kinds[-1]
    if category is Category.timeout and hasattr(error, "seconds"):
        details["seconds"] = error.seconds
    if read.near is not None:
        details["near"] = read.near.text
    elif read.identifier is not None:
        details["identifier"] = read.identifier.text
    return category, details


def as_written(text: str, sql: str | None, dialect: str | None) -> str:
    """The safety check's words naming functions as the model wrote them: the check words a
    function as it regenerates it (``PERCENTILE_CONT`` for the model's ``MEDIAN`` on SQLite).

    Example:
        >>> as_written("PERCENTILE_CONT() is not a function", "SELECT median(x) FROM t", "sqlite")
        'MEDIAN() is not a function'
    """
    if not sql or not text:
        return text
    from cadet_magic.sql.validate import renamed_functions

    for run_as, written in renamed_functions(sql, dialect).items():
        text = re.sub(rf"\b{re.escape(run_as)}\b", written, text, flags=re.I)
    return text
