"""Every failure an attempt can have, and the one entry point that diagnoses it.

A failure is an engine error (read by its engine's reader at the edge into an
:class:`~cadet_magic.errors.EngineError`: see :func:`cadet_magic.diagnose_error`), a safety refusal
(:class:`~cadet_magic.sql.refusal.SafetyRefusal`) or one of the plain records below (a reply
without SQL; in the fallback, a reply without both blocks, a SELECT that is not simple, too
many rows, refused pandas code, a failed code run; after a run, a result the result check
found suspect). :func:`diagnose` turns any of them into a
:class:`Diagnosis` carrying the category, the feedback for the model, the outcome and the
message the attempt's record shows, and the original exception; :func:`combine` merges the
diagnoses of one attempt's several problems (the fallback checks its SQL and its code).

Example:
    >>> d = diagnose(NoSQL("Sorry, I cannot."))
    >>> d.category, str(d.outcome), d.error
    (<Category.no_sql: 'no_sql'>, 'no_sql', 'The reply contained no SQL.')
    >>> from cadet_magic.errors import EngineError, EngineText, ErrorKind
    >>> e = EngineError("no such column: amout", kind=ErrorKind.column_not_found,
    ...                 identifier=EngineText("amout"))
    >>> d = diagnose(e, sql="SELECT amout FROM t", schema={"t": ["amount"]})
    >>> d.category.value, str(d.outcome), d.error, d.suggestions
    ('column_not_found', 'error', 'no such column: amout', ['t.amount'])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from cadet_magic.diagnose import code_feedback as fallback_feedback
from cadet_magic.diagnose.feedback import no_sql_feedback
from cadet_magic.diagnose.found import found
from cadet_magic.diagnose.model import Category, Diagnosis
from cadet_magic.diagnose.router import engine_diagnosis
from cadet_magic.kinds import Outcome
from cadet_magic.result_check.findings import ValueCheck
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.checks.context import Issue
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.sql.target import Target, as_target


class CodeFault(Protocol):
    """Why the fallback's pandas code gave no answer, as the diagnosis reads it (the fallback's
    ``CodeError``, whose package the diagnosis does not import): its kind (``timeout``,
    ``memory``, ``no_result``, ``bad_result``, ``unavailable``, ``worker``, ``refused``;
    anything else is a Python error), the exception's type, its message and line."""

    @property
    def kind(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def line(self) -> int | None: ...


class CodeProblem(Protocol):
    """One reason the code check refused the pandas code (the fallback's ``CodeIssue``), read
    by its words."""

    def __str__(self) -> str: ...


@dataclass(frozen=True)
class NoSQL:
    """The model's reply held no SQL."""

    reply: str


@dataclass(frozen=True)
class NoBlocks:
    """A fallback reply lacked its ```sql block, its ```python block, or both (``fetched``: the
    product wrote and ran the SELECT, so only the code was asked for)."""

    has_sql: bool
    has_code: bool
    fetched: bool = False


@dataclass(frozen=True)
class NotSimple:
    """The fallback's SELECT passed the safety check but is not a simple SELECT."""

    issues: Sequence[Issue]


@dataclass(frozen=True)
class CodeRefused:
    """The code check refused the fallback's pandas code (its issues, or their words)."""

    issues: Sequence[CodeProblem | str]


@dataclass(frozen=True)
class TooManyRows:
    """The fallback's SELECT returned more rows than it may fetch."""

    limit: int


@dataclass(frozen=True)
class CodeFailed:
    """The fallback's pandas code ran and gave no answer (``error`` why; None: not known)."""

    error: CodeFault | None
    columns: Sequence[str] = field(default_factory=tuple)
    #: ``df``'s (column, dtype) pairs, when known (the feedback on a type error names them).
    dtypes: Sequence[tuple[str, str]] = field(default_factory=tuple)
    #: Whether the product wrote the SELECT (the model cannot add a column to it then).
    fetched: bool = False


@dataclass(frozen=True)
class SuspectResult:
    """The query ran, but a value it filters on does not occur while a close one does
    (``check`` the :class:`~cadet_magic.result_check.probe_database.ValueCheck` that found it,
    ``sql`` the query as the model wrote it)."""

    check: ValueCheck
    sql: str


#: An engine's error (read at the edge, or not), our own timeout, or a driver's words.
EngineFailure = BaseException | str

#: Every failure :func:`diagnose` takes.
Failure = (
    NoSQL
    | NoBlocks
    | NotSimple
    | CodeRefused
    | TooManyRows
    | CodeFailed
    | SuspectResult
    | SafetyRefusal
    | EngineFailure
)

#: A code-run error's feedback template (taking the error; None: not known).
_Template = Callable[[CodeFault | None], str]

#: Code-run error kinds -> (category, retryable, feedback template taking the error).
_CODE_KINDS: dict[str, tuple[Category, bool, _Template]] = {
    "timeout": (Category.code_timeout, True, fallback_feedback.code_timeout),
    "memory": (Category.code_memory, True, fallback_feedback.code_memory),
    "no_result": (Category.no_result, True, lambda e: fallback_feedback.no_result()),
    "bad_result": (Category.bad_result, True, fallback_feedback.bad_result),
    "unavailable": (Category.unavailable, False, fallback_feedback.unavailable),
    "worker": (Category.unavailable, False, fallback_feedback.unavailable),
    "refused": (Category.code_refused, True, lambda e: fallback_feedback.code_refused([e])),
}


def diagnose(
    failure: Failure,
    *,
    sql: str | None = None,
    target: Target | str | None = None,
    schema: Schema | Mapping[str, Iterable[str]] | None = None,
    query: CheckedQuery | None = None,
) -> Diagnosis:
    """The :class:`Diagnosis` of any failure (see the module's description).

    Args:
        failure: what failed (an engine's error, a refusal, one of the records above).
        sql: the failed query as the model wrote it.
        target: the database it was written for: the run's
            :class:`~cadet_magic.sql.target.Target`, or a dialect's name (``duckdb``,
            ``postgresql``...) resolved here, once; None: generic SQL.
        schema: the live schema (a :class:`Schema` or a ``{table: [column, ...]}`` mapping).
        query: the checked query when the safety check parsed ``sql`` (its tree is read).

    Raises:
        TypeError: ``failure`` is none of :data:`Failure`.

    Example:
        >>> diagnose(TooManyRows(100)).error
        'The SELECT returned more than 100 rows.'
    """
    target = as_target(target)  # a dialect's name resolved once, here
    match failure:
        case NoSQL(reply=reply):
            return Diagnosis(
                Category.no_sql,
                True,
                found(Category.no_sql, reply=reply[:300]),
                [],
                no_sql_feedback(reply),
                outcome=Outcome.no_sql,
                error="The reply contained no SQL.",
            )
        case NoBlocks(has_sql=has_sql, has_code=has_code, fetched=fetched):
            missing = [] if has_sql else ["The reply contained no SQL."]
            missing += [] if has_code else ["The reply contained no Python code."]
            return Diagnosis(
                Category.no_blocks,
                True,
                found(Category.no_blocks),
                [],
                fallback_feedback.no_blocks(has_sql, has_code, fetched),
                outcome=Outcome.no_sql,
                error=" ".join(missing),
            )
        case NotSimple(issues=issues):
            return Diagnosis(
                Category.not_simple,
                True,
                found(Category.not_simple, issues=tuple(i.message for i in issues)),
                [],
                fallback_feedback.not_simple(issues),
                outcome=Outcome.refused,
                error="; ".join(i.message for i in issues),
            )
        case CodeRefused(issues=problems):
            return Diagnosis(
                Category.code_refused,
                True,
                found(Category.code_refused, issues=tuple(str(i) for i in problems)),
                [],
                fallback_feedback.code_refused(problems),
                outcome=Outcome.refused,
                error="; ".join(str(i) for i in problems),
            )
        case TooManyRows(limit=limit):
            return Diagnosis(
                Category.too_many_rows,
                True,
                found(Category.too_many_rows),
                [],
                fallback_feedback.too_many_rows(limit),
                outcome=Outcome.error,
                error=f"The SELECT returned more than {limit} rows.",
            )
        case CodeFailed():
            return _code_failure(failure)
        case SuspectResult(check=check, sql=written):
            return Diagnosis(
                Category.value_not_found,
                retryable=True,
                details=found(
                    Category.value_not_found,
                    missing=tuple(f.filter.key for f in check.missing),
                    suggestions=tuple(v for f in check.missing for v in f.close),
                ),
                suggestions=[v for f in check.missing for v in f.close],
                feedback=check.feedback(written),
                outcome=Outcome.suspect,
                error=check.problems(),
            )
        case SafetyRefusal() | BaseException() | str():
            return engine_diagnosis(failure, sql=sql, target=target, schema=schema, query=query)
        case _:
            raise TypeError(f"not a failure: {failure!r}")


def _code_failure(failure: CodeFailed) -> Diagnosis:
    error = failure.error
    kind = error.kind if error is not None else "error"
    text = str(error) if error is not None else None

    def python_error(e: CodeFault | None) -> str:
        return fallback_feedback.python_error(
            e, list(failure.columns), list(failure.dtypes), failure.fetched
        )

    category, retryable, template = _CODE_KINDS.get(
        kind, (Category.python_error, True, python_error)
    )
    return Diagnosis(
        category,
        retryable,
        found(category, error=text),
        [],
        template(error),
        outcome=Outcome.timeout if kind == "timeout" else Outcome.error,
        error=text,
    )


def combine(diagnoses: Sequence[Diagnosis], labels: Sequence[str | None] = ()) -> Diagnosis:
    """One attempt's diagnosis from several problems found at once: the first one's category,
    details and suggestions; retryable only when all are; the feedback on all of them; the
    outcome ``refused`` when a check refused something (else the first one's); the messages
    joined, each after its label (``"SQL"``, ``"Python"``) when one is given.

    Example:
        >>> d = combine([diagnose(NoBlocks(True, False)), diagnose(CodeRefused(["no imports"]))],
        ...             [None, "Python"])
        >>> d.category.value, str(d.outcome), d.error
        ('no_blocks', 'refused', 'The reply contained no Python code. Python: no imports')
    """
    if len(diagnoses) == 1 and not any(labels):
        return diagnoses[0]
    first = diagnoses[0]
    texts = []
    for d, label in zip(diagnoses, [*labels, *[None] * len(diagnoses)], strict=False):
        if d.error:
            texts.append(f"{label}: {d.error}" if label else d.error)
    refused = any(d.outcome == Outcome.refused for d in diagnoses)
    return Diagnosis(
        first.category,
        all(d.retryable for d in diagnoses),
        first.details,
        list(first.suggestions),
        "\n\n".join(d.feedback for d in diagnoses if d.feedback),
        outcome=Outcome.refused if refused else first.outcome,
        error=" ".join(texts) or None,
        exception=first.exception,
    )
