"""An engine's error (or a safety refusal) -> a :class:`Diagnosis`: take what the engine's
reader found (or what the safety check said), run the refiners of :data:`RULES` over it in
order, pick the template. Reached through :func:`cadet_magic.diagnose.diagnose`.

The engine's error arrives read (:class:`~cadet_magic.errors.EngineError`: its kind, the name,
token or value it is about, the names the engine proposes, what else it states); nothing here
reads an engine's wording. What was found travels as its category's typed record
(:mod:`.found`), and each rule (``rule(found, where) -> found``, :mod:`.refine` and
:mod:`.naming`) returns what is found then, reading the failed query through
:class:`~.sqlcontext.Where` (its checked tree, never parsed again).

Example:
    >>> from cadet_magic.errors import EngineError, EngineText, ErrorKind
    >>> from cadet_magic.sql.target import Target
    >>> e = EngineError("no such column: amout", kind=ErrorKind.column_not_found,
    ...                 identifier=EngineText("amout"))
    >>> d = engine_diagnosis(e, sql="SELECT amout FROM orders", target=Target.named("sqlite"),
    ...                      schema={"orders": ["amount"]})
    >>> d.category.value, d.retryable, d.suggestions[:1], d.details.name
    ('column_not_found', True, ['orders.amount'], 'amout')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cadet_magic.diagnose import feedback as templates
from cadet_magic.diagnose.category import NOT_RETRYABLE, Category
from cadet_magic.diagnose.found import Found, found
from cadet_magic.diagnose.model import Diagnosis
from cadet_magic.diagnose.naming import aliased, case_only, listed, named
from cadet_magic.diagnose.refine import (
    aggregation,
    date_function,
    malformed_reply,
    marked,
    mismatched_value,
    missing_join,
    positioned,
    renamed,
    too_deep,
)
from cadet_magic.diagnose.sqlcontext import Where
from cadet_magic.errors import EngineError, ErrorKind, QueryTimeout
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.sql.target import Target
from cadet_magic.text import error_text

#: A refiner: what was found so far and the failed attempt -> what is found then.
Rule = Callable[[Found, Where], Found]

#: The refiners, in the order they run: the corrections the failed query makes possible, then
#: the names to suggest and what their feedback needs.
RULES: tuple[Rule, ...] = (
    too_deep,
    renamed,
    marked,
    aggregation,
    missing_join,
    date_function,
    mismatched_value,
    malformed_reply,
    named,
    positioned,
    listed,
    aliased,
    case_only,
)

_REFUSAL_CODES = {
    "multiple_statements": Category.multiple_statements,
    "unknown_table": Category.table_not_found,
    "unknown_function": Category.function_not_found,
    "parse_error": Category.syntax_error,
}


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


def _refusal(error: SafetyRefusal, at: Where) -> Found:
    """What a safety refusal says: its category, its words and codes; the check words
    functions as it regenerates them, so they are named as the model wrote them."""
    issues = list(getattr(error, "issues", []) or [])
    codes = tuple(error.codes)
    category = _REFUSAL_CODES.get(codes[0], Category.forbidden) if codes else Category.forbidden
    text = as_written(str(error), at)
    identifier = None
    if category is Category.table_not_found:
        m = re.search(r"Unknown table '([^']+)'", text)
        identifier = m.group(1) if m else None
    elif category is Category.function_not_found:
        m = re.search(r"(\w+)\(\) is not a function", text)
        identifier = m.group(1) if m else None
    return found(
        category,
        message=text,
        codes=codes,
        issues=tuple(as_written(str(getattr(i, "message", i)), at) for i in issues),
        identifier=identifier,
    )


def engine_diagnosis(
    error: BaseException | str,
    *,
    sql: str | None = None,
    target: Target | None = None,
    schema: Schema | Mapping[str, Iterable[str]] | None = None,
    query: CheckedQuery | None = None,
) -> Diagnosis:
    """Builds the diagnosis of an engine's error: its category, suggestions and feedback.

    Args:
        error: the engine's error as its reader read it
            (:class:`~cadet_magic.errors.EngineError`: through
            :func:`cadet_magic.diagnose_error` for a driver's exception or a message), a
            :class:`cadet_magic.errors.QueryTimeout` or a
            :class:`cadet_magic.sql.refusal.SafetyRefusal`; anything else is read by its words
            alone, of no known kind.
        sql: the failed query as the model wrote it (for aliases, positions and the feedback).
        target: the database the query was written for (its dialect: for parsing the
            failed query and for dialect-specific advice; None: generic SQL).
        schema: the live schema, a :class:`Schema` or a ``{table: [column, ...]}`` mapping.
        query: the checked query, when the safety check parsed ``sql`` (its tree is read;
            without it ``sql`` is parsed).

    Returns:
        The :class:`Diagnosis`: category, retryable, what was found (its category's typed
        record: the name it is about, where, ...), ranked suggestions and the feedback text.

    Example:
        >>> from cadet_magic.errors import EngineError, EngineText, ErrorKind
        >>> e = EngineError('column "orders.status" must appear in the GROUP BY clause or be '
        ...     'used in an aggregate function', kind=ErrorKind.aggregation_error,
        ...     identifier=EngineText("orders.status"))
        >>> d = engine_diagnosis(e, sql="SELECT status, SUM(amount) FROM orders",
        ...     target=Target.named("postgresql"), schema={"orders": ["status", "amount"]})
        >>> d.category.value, d.suggestions
        ('aggregation_error', ['orders.status'])
    """
    sch = Schema.coerce(schema)
    target = target if target is not None else Target.named(None)
    if isinstance(error, SafetyRefusal):
        at = Where(sql, query, target, sch)
        finding = _refusal(error, at)
        shown: str = finding.message
    else:
        read = as_read(error)
        at = Where(sql, query, target, sch, read)
        finding = _engine_reading(read, error)
        shown = error_text(read) or ""
    for rule in RULES:
        finding = rule(finding, at)
    category = finding.category
    refused = isinstance(error, SafetyRefusal)
    return Diagnosis(
        category=category,
        retryable=category not in NOT_RETRYABLE,
        details=finding,
        suggestions=list(finding.suggestions),
        feedback=templates.render(sql, finding, target),
        outcome=("refused" if refused else "timeout" if category is Category.timeout else "error"),
        error=shown,
        exception=error if isinstance(error, BaseException) else None,
    )


def _engine_reading(read: EngineError, error: BaseException | str) -> Found:
    """What an engine's error says, as its reader found it: the first finding."""
    category = Category(read.kind.value)
    fields: dict[str, Any] = {
        "message": read.text,
        "primary": read.primary,
        "sqlstate": read.sqlstate or None,
        "code": read.code or None,
        "hint": read.suggestion or None,
        "exception": read.kinds[-1] if read.kinds else None,
    }
    if category is Category.timeout and hasattr(error, "seconds"):
        fields["seconds"] = error.seconds
    if read.near is not None:
        fields["near"] = read.near
    elif read.identifier is not None:
        fields["identifier"] = read.identifier
    return found(category, **fields)


def as_written(text: str, at: Where) -> str:
    """The safety check's words naming functions as the model wrote them: the check words a
    function as it regenerates it (``PERCENTILE_CONT`` for the model's ``MEDIAN`` on SQLite).

    Example:
        >>> at = Where("SELECT median(x) FROM t", target=Target.named("sqlite"))
        >>> as_written("PERCENTILE_CONT() is not a function", at)
        'MEDIAN() is not a function'
    """
    if not at.sql or not text:
        return text
    from cadet_magic.sql.validate import name_as_written, renamed_functions

    renamed = at.query.renamed if at.query is not None else renamed_functions(at.sql, at.target)
    return name_as_written(text, renamed)
