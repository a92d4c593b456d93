"""Engine error -> category (portable: stdlib only).

FIRST VERSION: enough for the agent; the diagnosis issue replaces it with the full
classifier, suggestions and feedback templates.

Example:
    >>> d = diagnose_error("no such column: amout", sql="SELECT amout FROM orders",
    ...                    dialect="sqlite", schema={"orders": ["amount"]})
    >>> d.category.value, d.retryable, d.suggestions[:1]
    ('column_not_found', True, ['orders.amount'])
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cadet_magic.schema.model import Schema


class Category(StrEnum):
    """What kind of failure an attempt had."""

    column_not_found = "column_not_found"
    table_not_found = "table_not_found"
    syntax_error = "syntax_error"
    type_mismatch = "type_mismatch"
    join_error = "join_error"
    aggregation_error = "aggregation_error"
    function_not_found = "function_not_found"
    division_by_zero = "division_by_zero"
    datetime_format = "datetime_format"
    timeout = "timeout"
    permission_denied = "permission_denied"
    connection_error = "connection_error"
    forbidden = "forbidden"
    multiple_statements = "multiple_statements"
    no_sql = "no_sql"
    unknown = "unknown"

    def __str__(self) -> str:
        return self.value


NOT_RETRYABLE = frozenset({Category.permission_denied, Category.connection_error})


@dataclass
class Diagnosis:
    """What went wrong and what to tell the model."""

    category: Category
    retryable: bool
    details: dict[str, Any] = field(default_factory=dict)
    suggestions: list[str] = field(default_factory=list)
    feedback: str = ""


_RULES: list[tuple[Category, str]] = [
    (Category.timeout, r"timeout|timed out|interrupt|canceling statement"),
    (
        Category.connection_error,
        r"connection (?:refused|closed|reset)|server closed|could not connect",
    ),
    (Category.permission_denied, r"permission denied|not authorized|read-only transaction"),
    (Category.aggregation_error, r"group by|aggregate"),
    (Category.join_error, r"ambiguous"),
    (
        Category.column_not_found,
        r"no such column|column .* (?:not found|does not exist)|referenced column",
    ),
    (
        Category.table_not_found,
        r"no such table|table .* (?:does not exist)|relation .* does not exist",
    ),
    (Category.function_not_found, r"no such function|function .* does not exist|scalar function"),
    (Category.division_by_zero, r"division by zero"),
    (
        Category.type_mismatch,
        r"conversion|could not convert|invalid input syntax|cannot compare|no operator",
    ),
    (Category.syntax_error, r"syntax error|parser error|incomplete input"),
]

_IDENT = re.compile(
    r'(?:no such column|no such table|column|table|relation)[:\s]+"?([\w.]+)"?', re.I
)


def _message(error: BaseException | str) -> str:
    if isinstance(error, BaseException):
        orig = getattr(error, "orig", None)
        if orig is not None:
            error = orig
        return f"{type(error).__name__}: {error}"
    return str(error)


def diagnose_error(
    error: BaseException | str,
    *,
    sql: str | None = None,
    dialect: str | None = None,
    schema: Schema | dict | None = None,
) -> Diagnosis:
    """Classifies an engine error and builds feedback for the model."""
    msg = _message(error)
    low = msg.lower()
    codes = getattr(error, "codes", None)
    if codes is not None:  # a SafetyRefusal from the safety check
        msg = str(error)
        category = {
            "multiple_statements": Category.multiple_statements,
            "unknown_table": Category.table_not_found,
            "parse_error": Category.syntax_error,
        }.get(codes[0] if codes else "", Category.forbidden)
    else:
        category = next((c for c, rx in _RULES if re.search(rx, low)), Category.unknown)
    details: dict[str, Any] = {"message": msg}
    m = _IDENT.search(msg)
    if m:
        details["identifier"] = m.group(1)
    suggestions: list[str] = []
    sch = Schema.coerce(schema)
    if "identifier" in details and category in (
        Category.column_not_found,
        Category.table_not_found,
    ):
        ident = details["identifier"].split(".")[-1].lower()
        if category is Category.column_not_found:
            pool = {f"{t.name}.{c}": c.lower() for t in sch.tables for c in t.column_names()}
        else:
            pool = {t.name: t.name.lower() for t in sch.tables}
        scored = sorted(pool, key=lambda k: -difflib.SequenceMatcher(a=ident, b=pool[k]).ratio())
        suggestions = [
            k for k in scored if difflib.SequenceMatcher(a=ident, b=pool[k]).ratio() > 0.5
        ][:3]
    feedback = f"The query failed with {category.value}: {msg.splitlines()[0][:300]}"
    if suggestions:
        feedback += f" Did you mean: {', '.join(suggestions)}?"
    return Diagnosis(
        category=category,
        retryable=category not in NOT_RETRYABLE,
        details=details,
        suggestions=suggestions,
        feedback=feedback,
    )
