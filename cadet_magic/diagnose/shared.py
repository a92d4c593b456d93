"""What a failure may tell the model below ``samples`` (standard library, sqlglot lazily).

At the ``schema`` and ``stats`` sharing levels nothing the engine says about the data may reach
the model, and an engine's message is not to be trusted to say only that: a query the model
wrote can make the engine quote stored values in the very words the diagnosis reads
(``regexp_matches('a', 'Referenced column "' || string_agg(ssn, ' ') || '" not found (')``).
So below ``samples`` the feedback is built from a *shareable* copy of the failure, holding only
what the model may see, and never filtered out of a text afterwards:

* an engine error keeps its kind, its codes and the portable facts its engine's table read; the
  name or token it quotes (``identifier``, ``near``) only when the query's syntax tree refers to
  it (a column, table or function it names: :func:`quoted_names`), never because the text holds
  it (a literal can hold every guess), nor because it is a word of SQL (a query can make a
  runtime error quote the keyword its data picks: ``near "FROM"`` for a 1, ``near "WHERE"``
  for a 2); the names it proposes only when they are names of the schema; its message, the
  value it quotes, its hint and its numbers (the position in the statement, the caret) never;
* a failure of the fallback's code keeps its kind, its exception's type only when it is one of
  the known exception types (:data:`KNOWN_TYPES`: the child runs whatever the model wrote, and
  a class it defines can carry any name) and the SELECT's columns that are names of the schema
  or the SELECT's own names for them (:func:`~cadet_magic.provenance.shareable_columns`); its
  message never, nor its line: the code chooses the line it fails on (a thousand one-line
  lambdas, one called by a value, spell three digits of it per attempt).

The attempt's record keeps the whole failure for the user; only the feedback sent is built
this way (:func:`with_shared_feedback`, called by the SQL and fallback phases' diagnose steps).

Example:
    >>> from cadet_magic.fallback.in_process import CodeError
    >>> e = CodeError("error", "Secret_123_45_6789", "invalid literal: '123-45-6789'", 2)
    >>> shareable_code_error(e)
    CodeError(kind='error', type='Exception', message='(not shared at this sharing level)', line=None)
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlglot

    from cadet_magic.sql.target import Target

#: What replaces a message the model may not see.
NOT_SHARED = "(not shared at this sharing level)"

#: Exception types whose names the model may be told: Python's own, and pandas' and numpy's.
KNOWN_TYPES = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
) | frozenset(
    """IndexingError MergeError ParserError IntCastingNaNError InvalidIndexError DataError
    SpecificationError UndefinedVariableError OutOfBoundsDatetime OutOfBoundsTimedelta
    DtypeWarning EmptyDataError InvalidComparison NullFrequencyError AxisError
    UFuncTypeError ComplexWarning TooHardError AbstractMethodError ChainedAssignmentError
    InvalidVersion WorkerError TimeoutError ConfinementError""".split()
)


def _name(text: str | None) -> str:
    return (text or "").strip().strip("\"'`[]").strip().lower()


def quoted_names(sql: str | None, dialect: sqlglot.Dialect | None, tree: Any = None) -> set[str]:
    """The names an engine's error may quote back below ``samples``: those the query's tree
    (``tree``, else ``sql`` read in ``dialect``, sqlglot's dialect object) refers to.

    Example:
        >>> sorted(quoted_names("SELECT amout FROM t WHERE x = '123-45-6789'", None))
        ['amout', 't', 'x']
    """
    from cadet_magic.sql.output_names import referenced_names, tree_of

    return referenced_names(tree if tree is not None else tree_of(sql, dialect))


def schema_names(schema: Any) -> set[str]:
    """The lowercased table and column names of ``schema`` (and ``table.column``)."""
    names: set[str] = set()
    for t in getattr(schema, "tables", ()) or ():
        names.add(t.name.lower())
        for c in t.columns:
            names.add(c.name.lower())
            names.add(f"{t.name}.{c.name}".lower())
    return names


def _read_in(target: Target | None, schema: Any) -> sqlglot.Dialect:
    """The dialect a failed query is read in: the target's, else the schema's (sqlglot's
    generic SQL when neither names one sqlglot knows)."""
    from cadet_magic.sql.target import Target

    if target is not None and target.read:
        return target.dialect
    return Target.named(getattr(schema, "dialect", None)).dialect


def shareable_engine_error(
    error: Any, sql: str | None, schema: Any, target: Target | None = None, tree: Any = None
) -> Any:
    """A copy of an engine error (``cadet_magic.errors.EngineError`` as its engine's table
    read it) holding only what the model may see below ``samples``; the query is read in
    ``target``'s dialect (else the schema's) unless its ``tree`` is given."""
    kind = str(getattr(getattr(error, "kind", None), "value", "") or "unknown")
    names = schema_names(schema)
    referred = quoted_names(sql, _read_in(target, schema), tree)

    def ours(field: Any) -> Any:
        if field is None:
            return None
        text = _name(field.text)
        parts = text.split(".")
        if text in referred or (len(parts) > 1 and all(p.strip('"`') in referred for p in parts)):
            return field
        return None

    return error.with_fields(
        message=kind,
        plain=kind,
        primary="",
        value=None,
        suggestion=None,
        details={},
        position=None,
        caret=None,
        identifier=ours(getattr(error, "identifier", None)),
        near=ours(getattr(error, "near", None)),
        candidates=tuple(c for c in error.candidates if c.text.lower() in names),
    )


def shareable_code_error(error: Any) -> Any:
    """A copy of a ``CodeError`` of the fallback's code holding only what the model may see:
    no message, no line."""
    if error is None:
        return None
    kind_type = error.type if error.type in KNOWN_TYPES else "Exception"
    return dataclasses.replace(error, type=kind_type, message=NOT_SHARED, line=None)


def shareable(
    failure: Any, *, sql: str | None, schema: Any, target: Target | None = None, tree: Any = None
) -> Any:
    """``failure`` as the model may see it below ``samples`` (see the module's description);
    failures that hold nothing from the engine or the child are returned as they are.
    ``tree``: the checked query's tree, when there is one (else ``sql`` is read)."""
    from cadet_magic.diagnose.failures import CodeFailed

    if isinstance(failure, CodeFailed):
        return CodeFailed(shareable_code_error(failure.error), _shown(failure.columns, schema, sql))
    if hasattr(failure, "with_fields") and hasattr(failure, "candidates"):
        return shareable_engine_error(failure, sql, schema, target, tree)
    return failure


def _shown(columns: Iterable[str], schema: Any, sql: str | None) -> tuple[str, ...]:
    """The SELECT's columns (``df``'s) as the model may see them: names of the schema and the
    SELECT's own names for them, by position."""
    from cadet_magic.provenance import shareable_columns

    return shareable_columns(list(columns), schema, sql, _read_in(None, schema), None)


def with_shared_feedback(
    diagnosis: Any,
    failure: Any,
    *,
    share: str,
    sql: str | None,
    target: Target | None,
    schema: Any,
    query: Any = None,
) -> Any:
    """``diagnosis`` (of the whole ``failure``, which the user sees) with, below ``samples``,
    the feedback of the failure's shareable copy (:func:`shareable`); ``query``: the checked
    query, when there is one (its tree is read)."""
    if share == "samples":
        return diagnosis
    tree = getattr(query, "tree", None)
    shared = shareable(failure, sql=sql, schema=schema, target=target, tree=tree)
    if shared is failure:
        return diagnosis
    from cadet_magic.diagnose.failures import diagnose

    again = diagnose(shared, sql=sql, target=target, schema=schema, query=query)
    return dataclasses.replace(diagnosis, feedback=again.feedback)
