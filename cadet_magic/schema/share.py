"""What of the database the model may see (``AskMagic.share``), applied before the prompt.

Three levels, least first (:data:`cadet_magic.options.SHARE_LEVELS`):

* ``schema``: table and column names, types and keys. No sample values or rows, no comments (a
  comment is text someone wrote into the database), no counts, not the engine's own
  ``CREATE`` statement (it can hold comments and default values), no labels of an enumerated
  type (``ENUM('a', 'b')`` is shown as ``ENUM``: :func:`~cadet_magic.schema.types.without_labels`).
* ``stats``: the same plus each table's row count and the smallest and largest value of its
  numeric and date/time columns, by their outermost type (never a nested or enumerated one:
  :func:`~cadet_magic.schema.types.ranged_type`), shown only when the engine returned a number
  or a date/time for both (:func:`with_stats`, read-only queries through the runner).
* ``samples``: the schema as read (the default): what the prompt's representation
  (:data:`cadet_magic.schema.render.REPRESENTATION`) shows of it, such as the engine's own
  statement, a few rows of each table, sample values or the comments.

Below ``samples`` nothing the engine says about the data reaches the model either: an
attempt's error text is cut to its category, and the feedback of the categories whose text can
quote a value is replaced by its category-level advice (:func:`shared_attempts`).

Standard library and sqlglot only.

Example:
    >>> from cadet_magic.schema.structure import Column, Schema, Table
    >>> s = Schema((Table("t", (Column("status", "TEXT", samples=("paid",), comment="x"),),
    ...                   comment="who wrote this"),))
    >>> t = shared_schema(s, "schema").tables[0]
    >>> t.columns[0].samples, t.columns[0].comment, t.comment
    ((), None, None)
    >>> shared_schema(s, "samples") is s
    True
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import sqlglot
from sqlglot import exp

from cadet_magic.schema.structure import Column, Schema, Table
from cadet_magic.schema.types import ranged_type, temporal_type, without_labels
from cadet_magic.sql.dialect import dialect_of

#: A date or time written as text (SQLite keeps them so): the only text a range may show.
_ISO_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?")
#: Tables whose statistics are read at most, and the seconds they may take in all.
STATS_TABLES = 30
STATS_SECONDS = 2.0

#: Categories whose feedback may quote a value from the data (an engine message, a date that
#: could not be read, close values the result check found, a pandas error): below ``samples``
#: the model gets the category's own advice instead.
QUOTES_DATA = {
    "unknown": "The engine refused the query (its message is not shared at this sharing "
    "level). Check the query against the schema: names, types and the dialect's functions.",
    "type_mismatch": "A value or column has the wrong type for how the query uses it (the "
    "engine's message is not shared at this sharing level). Cast explicitly or compare like "
    "with like.",
    "datetime_format": "A date/time value could not be read (the value is not shared at this "
    "sharing level). Write dates as 'YYYY-MM-DD' literals and use the dialect's functions.",
    "value_not_found": "A text value the query filters on does not occur in its column (the "
    "column's values are not shared at this sharing level). Check its spelling and case, or "
    "filter on another column.",
    "bad_result": "The pandas code's result was not a table of the answer (details are not "
    "shared at this sharing level).",
}


def shared_schema(schema: Schema, level: str) -> Schema:
    """``schema`` as the level allows: at ``samples`` unchanged; below it without sample values,
    comments and enumerated types' labels (``stats`` adds its figures afterwards,
    :func:`with_stats`)."""
    if level == "samples":
        return schema

    def column(c: Column) -> Column:
        return dataclasses.replace(
            c, type=without_labels(c.type), samples=(), samples_complete=False, comment=None
        )

    tables = tuple(
        dataclasses.replace(
            t, columns=tuple(column(c) for c in t.columns), comment=None, rows=(), ddl=None
        )
        for t in schema.tables
    )
    return Schema(tables, dialect=schema.dialect, functions=schema.functions)


def stats_sql(table: Table, dialect: sqlglot.Dialect) -> tuple[str, list[str]]:
    """One query reading ``table``'s row count and the range of its numeric and date/time
    columns; the SQL and the ranged columns' names.

    Example:
        >>> from cadet_magic.schema.structure import Column, Table
        >>> stats_sql(Table("orders", (Column("id", "INTEGER"), Column("note", "TEXT"))), dialect_of("duckdb"))
        ('SELECT COUNT(*), MIN("id"), MAX("id") FROM "orders"', ['id'])
    """
    ranged = [c.name for c in table.columns if ranged_type(c.type)]
    columns: list[exp.Expression] = [exp.Count(this=exp.Star())]
    for name in ranged:
        col = exp.column(name, quoted=True)
        columns += [exp.Min(this=col), exp.Max(this=col.copy())]
    source = exp.table_(table.name, db=table.schema, quoted=True)
    return exp.select(*columns).from_(source).sql(dialect=dialect), ranged


def with_stats(
    schema: Schema,
    fetch: Callable[[str, float], Sequence[tuple]],
    check: Callable[[str], Any],
    seconds: float = STATS_SECONDS,
) -> Schema:
    """``schema`` (already without samples) with each table's row count and column ranges as
    its comments, read by ``fetch(sql, timeout)`` after ``check(sql)`` passed it (the same
    safety check as the model's SQL); tables past :data:`STATS_TABLES` or the time budget, and
    tables whose query fails, keep no figures."""
    deadline = time.monotonic() + seconds
    tables = []
    for i, table in enumerate(schema.tables):
        left = deadline - time.monotonic()
        if i >= STATS_TABLES or left <= 0:
            tables.append(table)
            continue
        sql, ranged = stats_sql(table, dialect_of(schema.dialect))
        try:
            verdict = check(sql)
            rows = fetch(verdict.sql, left) if verdict.ok else []
        except Exception:  # noqa: BLE001 - no figures for this table, the prompt goes on
            rows = []
        tables.append(_with_figures(table, rows[0], ranged) if rows else table)
    return Schema(tuple(tables), dialect=schema.dialect, functions=schema.functions)


def shown_bound(value: Any, temporal: bool) -> bool:
    """Whether a column's smallest or largest value may be shown as its range: a number, a
    date/time or a duration as the engine returned it, or (for a date/time column) text that
    is a date or time; never other text, bytes or a nested value (an engine such as SQLite
    keeps text in a column declared INTEGER).

    Example:
        >>> [shown_bound(v, False) for v in (3, 2.5, "7", b"7", [1], True)]
        [True, True, False, False, False, False]
        >>> shown_bound("2024-05-01", True), shown_bound("SECRET", True)
        (True, False)
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float | decimal.Decimal):
        return True
    if isinstance(value, datetime.date | datetime.time | datetime.timedelta):
        return True
    return temporal and isinstance(value, str) and _ISO_TEXT.fullmatch(value) is not None


def _with_figures(table: Table, row: tuple, ranged: list[str]) -> Table:
    bounds = {name: (row[1 + 2 * i], row[2 + 2 * i]) for i, name in enumerate(ranged)}

    def column(c: Column) -> Column:
        if c.name not in bounds:
            return c
        low, high = bounds[c.name]
        temporal = temporal_type(c.type)
        if not (shown_bound(low, temporal) and shown_bound(high, temporal)):
            return c
        return dataclasses.replace(c, comment=f"range {low} .. {high}")

    return dataclasses.replace(
        table, columns=tuple(column(c) for c in table.columns), comment=f"{row[0]} rows"
    )


def shared_attempts(attempts: Sequence[Any], level: str) -> list[Any]:
    """The attempt records as the prompt may show them at ``level``: below ``samples`` each
    error is cut to its category and feedback that may quote data is the category's advice.

    Example:
        >>> from cadet_magic.result import Attempt
        >>> a = Attempt(1, "SELECT 1", "error", "type_mismatch", error="'Lyon' is not a number",
        ...             feedback="Could not convert 'Lyon'")
        >>> b = shared_attempts([a], "schema")[0]
        >>> b.error
        'type_mismatch (the error text is not shared at share=schema)'
        >>> "Lyon" in b.feedback, shared_attempts([a], "samples")[0] is a
        (False, True)
    """
    if level == "samples":
        return list(attempts)
    out = []
    for a in attempts:
        what = a.category or str(a.outcome)
        changes: dict[str, Any] = {}
        if a.error and str(a.outcome) != "refused":  # the check's own words stay
            changes["error"] = f"{what} (the error text is not shared at share={level})"
        if a.feedback and a.category in QUOTES_DATA:
            changes["feedback"] = QUOTES_DATA[a.category]
        elif a.feedback and "error" in changes and a.error.strip() in a.feedback:
            # raw feedback (AskMagic.feedback = 'raw') is the error text itself
            changes["feedback"] = a.feedback.replace(a.error.strip(), changes["error"])
        out.append(dataclasses.replace(a, **changes) if changes else a)
    return out
