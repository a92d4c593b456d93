"""A model that writes a failed query again (stdlib + sqlglot).

A small model told what was wrong often answers with the very query that failed, or goes back
to an earlier one. Repeating the same feedback then gets the same reply, so the instruction
changes: the feedback says the query is a repeat (of which attempt) and gives the exact column
list of the tables the query reads (or, when it names none the schema has, of the tables its
suggestions point to), the smallest slice of the schema around the failing names.
:func:`repeated` adds this to any :class:`~cadet_magic.diagnose.model.Diagnosis`.

Example:
    >>> from cadet_magic.diagnose.model import Diagnosis
    >>> from cadet_magic.schema.structure import Schema
    >>> sch = Schema.coerce({"singer": ["Singer_ID", "Name"], "sic": ["Singer_ID", "cid"]})
    >>> d = Diagnosis("column_not_found", True, feedback="Column T2.Name does not exist.")
    >>> r = repeated(d, "SELECT T2.Name FROM sic AS T2", 1, last=True, schema=sch)
    >>> print(r.feedback)
    Column T2.Name does not exist.
    You wrote the query of attempt 1 again, and it fails the same way: write a different query. The tables it reads have exactly these columns (use only these, with the alias of their table):
    sic: Singer_ID, cid
    >>> r.details.repeats
    1
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from cadet_magic.diagnose.model import Diagnosis
from cadet_magic.diagnose.sqlcontext import sql_context
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.target import Target

#: Tables listed in full at most.
MAX_TABLES = 6
#: Columns listed per table at most.
MAX_COLUMNS = 40

SAME = (
    "You wrote the query of attempt {n} again, and it fails the same way: write a different query."
)
ALTERNATING = (
    "You went back to the query of attempt {n}, which failed already: the queries you "
    "alternate between both fail, so write a different one."
)
COLUMNS = (
    " The tables it reads have exactly these columns (use only these, with the alias of "
    "their table):\n{tables}"
)


def involved_tables(
    sql: str | None,
    target: Target | None,
    schema: Schema,
    suggestions: Iterable[str] = (),
    query: CheckedQuery | None = None,
) -> list[str]:
    """The schema's tables a failed query reads (on the checked query's tree when given),
    then those its suggestions name.

    Example:
        >>> sch = Schema.coerce({"a": ["x"], "b": ["y"], "c": ["z"]})
        >>> involved_tables("SELECT * FROM a JOIN nowhere", None, sch, ["c.z"])
        ['a', 'c']
    """
    names: list[str] = []
    tree = query.tree if query is not None else None
    read = sql_context(sql, target, tree).tables
    for name in [*read, *(s.rpartition(".")[0] for s in suggestions)]:
        table = schema.table(name) if name else None
        if table is not None and table.name not in names:
            names.append(table.name)
    return names[:MAX_TABLES]


def column_list(tables: Iterable[str], schema: Schema) -> str:
    """One line per table: its name and its exact columns."""
    lines = []
    for name in tables:
        table = schema.table(name)
        if table is not None:
            cols = list(table.column_names())
            more = ", ..." if len(cols) > MAX_COLUMNS else ""
            lines.append(f"{table.name}: {', '.join(cols[:MAX_COLUMNS])}{more}")
    return "\n".join(lines)


def repeated(
    diagnosis: Diagnosis,
    sql: str | None,
    attempt: int,
    *,
    last: bool,
    schema: Schema | Mapping[str, Iterable[str]] | None,
    target: Target | None = None,
    query: CheckedQuery | None = None,
) -> Diagnosis:
    """``diagnosis`` of a query that repeats attempt ``attempt`` (``last``: the one just
    before; else the model alternates between failed queries), with feedback that says so and
    lists the exact columns of the tables involved (read on ``query``'s tree when given, else
    ``sql`` parsed in ``target``'s dialect); ``details.repeats`` is ``attempt``."""
    sch = Schema.coerce(schema)
    head = (SAME if last else ALTERNATING).format(n=attempt)
    involved = involved_tables(sql, target, sch, diagnosis.suggestions, query)
    tables = column_list(involved, sch)
    extra = head + (COLUMNS.format(tables=tables) if tables else "")
    details = diagnosis.details.replace(repeats=attempt)
    feedback = f"{diagnosis.feedback.rstrip()}\n{extra}" if diagnosis.feedback else extra
    return dataclasses.replace(diagnosis, details=details, feedback=feedback)
