"""What a diagnosis found, as typed records: one per category that has something of its own,
the feedback templates' arguments (stdlib only).

:class:`Found` holds what every diagnosis may know: its category, the error's text as read,
the name, token or value it is about (:data:`Said`: the engine's words as an
:class:`~cadet_magic.errors.EngineText`, or a name the query or the schema gives), where it
is, the safety check's own words, what the engine's reader knew (SQLSTATE, code, hint), the
real names to suggest, and the earlier attempt a repeated query repeats. A category with more
to say has its own record (:class:`ColumnNotFound`, :class:`JoinProblem`, ...: see
:data:`KINDS`); :func:`found` makes the record of a category and :func:`recast` moves a
finding to another category as the diagnosis learns more.

Example:
    >>> f = found(Category.column_not_found, identifier=EngineText("amout"))
    >>> type(f).__name__, said(f.identifier), f.double_quoted_string
    ('ColumnNotFound', 'amout', False)
    >>> j = recast(f, Category.join_error, missing_join=MissingJoin("x", "t"))
    >>> type(j).__name__, said(j.identifier), j.missing_join.table
    ('JoinProblem', 'amout', 't')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cadet_magic.diagnose.category import Category
from cadet_magic.errors import EngineText

#: A text a diagnosis is about: the engine's own words, or a name the query or schema gives.
Said = EngineText | str


def said(text: Said | None) -> str:
    """The text of ``text`` ("" for None).

    >>> said(EngineText("x")), said("y"), said(None)
    ('x', 'y', '')
    """
    if text is None:
        return ""
    return text.text if isinstance(text, EngineText) else text


@dataclass(frozen=True)
class MissingJoin:
    """A column the query uses from a table it does not join.

    Attributes:
        column: the column, as the schema spells it.
        table: the best table holding it.
        joins: the JOIN clauses that bring ``table`` in, from a table the query uses (empty
            when no path was found).
        owners: every table holding the column that the query does not use, best first.
        qualifier: the qualifier the query wrote (an un-joined table or an undefined alias).
        in_query: the query's own tables that have the column (a qualifier may simply name the
            wrong table), qualified.
    """

    column: str
    table: str
    joins: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
    qualifier: str | None = None
    in_query: tuple[str, ...] = ()


@dataclass(frozen=True)
class AggregateMistake:
    """Which aggregation mistake a query makes.

    ``kind``: ``aggregate_in_where`` (``aggregate``: the aggregate in WHERE),
    ``nested_aggregate`` (``expression``, and the ``outer`` and ``inner`` aggregates when
    known), ``missing_group_by`` (``columns`` to group by, ``in_order_by``, ``aggregate``) or
    ``not_grouped`` (``columns`` to add).
    """

    kind: str
    columns: tuple[str, ...] = ()
    aggregate: str | None = None
    expression: str | None = None
    outer: str | None = None
    inner: str | None = None
    in_order_by: bool = False


@dataclass(frozen=True)
class Cut:
    """A query cut short: its last words (``tail``) and the real names the last word begins
    (``completions``, likeliest first)."""

    tail: str
    completions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Found:
    """What a diagnosis found, for every category.

    Attributes:
        category: the failure's category.
        message: the error's text as the diagnosis read it (the refusal's, for a safety
            refusal).
        primary: the engine's primary message (without hint or position lines).
        identifier: the name the failure is about; ``near``: the token a syntax error names.
        position: the 1-based character position in the query, when known.
        issues: the safety check's own words; ``codes``: its issue codes.
        sqlstate, code, hint, exception: what the engine's reader knew (the SQLSTATE, the
            engine's own code, its hint, the driver's class for the error).
        suggestions: the real names to suggest, best first.
        repeats: the earlier attempt whose query this one writes again (None: none).
        corrected: the failed query showed another reading of the engine's error (its category
            and name were corrected from the query), so later corrections do not apply.
    """

    category: Category = Category.unknown
    message: str = ""
    primary: str = ""
    identifier: Said | None = None
    near: Said | None = None
    position: int | None = None
    issues: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    sqlstate: str | None = None
    code: str | None = None
    hint: str | None = None
    exception: str | None = None
    suggestions: tuple[str, ...] = ()
    repeats: int | None = None
    corrected: bool = False

    def replace(self, **changes: Any) -> Found:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)

    @property
    def name(self) -> str:
        """The identifier's text ("" when there is none)."""
        return said(self.identifier)


@dataclass(frozen=True)
class ColumnNotFound(Found):
    """A column the engine did not find: whether it is a string written in double quotes or a
    column of a derived table, the real name when only its case differs, the table behind the
    qualifier the model wrote and its columns, and each suggestion as the query writes it
    (``as_written``: ``T1.Name`` for ``singer.Name`` when the query calls ``singer`` T1)."""

    double_quoted_string: bool = False
    derived_alias: bool = False
    case_sensitive: str | None = None
    qualifier_table: str | None = None
    qualifier_columns: tuple[str, ...] = ()
    as_written: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TableNotFound(Found):
    """A table the engine did not find: whether it is a derived table's alias, the real name
    when only its case differs, and the tables the query may use."""

    derived_alias: bool = False
    case_sensitive: str | None = None
    tables: tuple[str, ...] = ()


@dataclass(frozen=True)
class SyntaxProblem(Found):
    """A query the engine could not parse: nested too deeply, with bind placeholders, with
    syntax the engine lacks (``unsupported``: what, and what to write instead), a word repeated
    over and over (``degenerate``), cut off (``truncated``), or a derived table without its
    alias."""

    too_deep: bool = False
    placeholders: tuple[str, ...] = ()
    unsupported: tuple[str, str] | None = None
    degenerate: str | None = None
    truncated: Cut | None = None
    derived_alias: bool = False


@dataclass(frozen=True)
class TypeMismatch(Found):
    """Values of different types compared or combined: what was mismatched."""

    value: Said | None = None


@dataclass(frozen=True)
class DatetimeFormat(Found):
    """A date or time value the engine could not read."""

    value: Said | None = None


@dataclass(frozen=True)
class JoinProblem(Found):
    """An ambiguous column, or (``missing_join``) a column of a table the query does not
    join."""

    missing_join: MissingJoin | None = None


@dataclass(frozen=True)
class AggregationProblem(Found):
    """An aggregation mistake, and which one when the query shows it."""

    mistake: AggregateMistake | None = None

    @property
    def in_where(self) -> bool:
        """An aggregate is used in WHERE."""
        return self.mistake is not None and self.mistake.kind == "aggregate_in_where"


@dataclass(frozen=True)
class FunctionNotFound(Found):
    """A function the engine does not have; whether it deals with dates."""

    date_function: bool = False


@dataclass(frozen=True)
class QueryTimedOut(Found):
    """The query ran past the time limit (``seconds``, when known)."""

    seconds: float | None = None


@dataclass(frozen=True)
class NoSQLReply(Found):
    """The model's reply held no SQL (the reply, shortened)."""

    reply: str = ""


@dataclass(frozen=True)
class ValueMissing(Found):
    """The query ran, but values it filters on do not occur (``missing``: the filters)."""

    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class CodeProblem(Found):
    """The fallback's pandas code was refused, or ran and gave no answer: the error it ended
    with (a refusal's words are its ``issues``)."""

    error: str | None = None


#: The record of each category that has one of its own (the others are a :class:`Found`).
KINDS: dict[Category, type[Found]] = {
    Category.column_not_found: ColumnNotFound,
    Category.table_not_found: TableNotFound,
    Category.syntax_error: SyntaxProblem,
    Category.type_mismatch: TypeMismatch,
    Category.datetime_format: DatetimeFormat,
    Category.join_error: JoinProblem,
    Category.aggregation_error: AggregationProblem,
    Category.function_not_found: FunctionNotFound,
    Category.timeout: QueryTimedOut,
    Category.no_sql: NoSQLReply,
    Category.value_not_found: ValueMissing,
    **dict.fromkeys(
        (
            Category.code_refused,
            Category.python_error,
            Category.code_timeout,
            Category.code_memory,
            Category.no_result,
            Category.bad_result,
            Category.unavailable,
        ),
        CodeProblem,
    ),
}


def found(category: Category, **fields: Any) -> Found:
    """The record of ``category`` with ``fields``."""
    return KINDS.get(category, Found)(category=category, **fields)


def recast(finding: Found, category: Category, **fields: Any) -> Found:
    """``finding`` as a finding of ``category`` (the same record when the category does not
    change): what every finding knows goes along, and so does each of its own fields the new
    category's record has too; ``fields`` are set on top."""
    if category is finding.category:
        return finding.replace(**fields) if fields else finding
    kind = KINDS.get(category, Found)
    names = {f.name for f in dataclasses.fields(kind)} - {"category"}
    kept = {n: getattr(finding, n) for n in names if hasattr(finding, n)}
    return kind(category=category, **{**kept, **fields})
