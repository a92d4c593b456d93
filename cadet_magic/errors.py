"""The exceptions cadet_magic raises, in one hierarchy.

Everything the package raises on purpose derives from :class:`CadetError`, so a
caller (the ``%%ask`` magic above all) can catch one class and show the user a
single clear line instead of a traceback::

    CadetError
    ├── ConfigurationError        something the user must set up first
    │   ├── NoModelError          no chat model configured
    │   ├── LocalModelError       the local model is not installed, or cannot run here
    │   └── NoConnectionError     no database connection to ask
    │       └── UnsupportedConnectionError   the object given is not a connection we can ask
    ├── ModelCallError            the model call itself failed (network, auth, rate limit,
    │                             no answer within the model timeout)
    ├── EngineError               the database engine refused or failed the query (read by
    │                             its runner into portable fields for the diagnosis)
    ├── QueryTimeout              a query ran past its time limit and was cancelled
    ├── FailedTransactionError    the user's transaction has failed and no other connection exists
    └── ResultTooLarge            the driver ran out of memory fetching a result

    KeyboardInterrupt
    └── ModelCallInterrupted      the user interrupted a model call (no query was running)

Example:
    >>> from cadet_magic.errors import CadetError, NoModelError
    >>> issubclass(NoModelError, CadetError)
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class CadetError(Exception):
    """Base class of every error cadet_magic raises on purpose."""


class ConfigurationError(CadetError):
    """The user must configure something before asking."""


class NoModelError(ConfigurationError):
    """No chat model is configured (and the local model is not installed)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message
            or "No model configured. Either install the local model, which runs in this "
            "kernel with no key: python -m cadet_magic.local install; or name one: %%ask "
            '--model openai:gpt-4o-mini, %config AskMagic.model = "openai:gpt-4o-mini" or the '
            "CADET_MODEL environment variable."
        )


class LocalModelError(ConfigurationError):
    """The local model (``--model local``) is not installed, its file does not match the pin,
    or it cannot run on this machine (its CPU, its memory): the message says which and what to
    do."""


class NoConnectionError(ConfigurationError):
    """No database connection is available."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message
            or "No database connection. Connect first with %sql (e.g. %sql duckdb:///shop.duckdb) "
            "or pass --con VAR naming a SQLAlchemy engine/connection, a duckdb or a sqlite3 "
            "connection."
        )


class UnsupportedConnectionError(NoConnectionError):
    """The object given as the connection (``--con VAR``, ``ask(con=...)``) is not one
    cadet_magic can ask; ``name`` is the notebook variable holding it, when known.

    Example:
        >>> print(UnsupportedConnectionError(42, name="n"))
        --con n holds an int (42), not a database connection: pass a SQLAlchemy engine or connection, a duckdb, sqlite3 or PyMySQL connection, a SparkSession or DataFrames (pandas, polars, Arrow) (or connect with %sql and leave out --con).
    """

    def __init__(self, value: object, name: str | None = None) -> None:
        self.value = value
        kind = type(value).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        what = f"--con {name} holds" if name else "The connection given is"
        super().__init__(
            f"{what} {article} {kind} ({shown}), not a database connection: pass a SQLAlchemy "
            "engine or connection, a duckdb, sqlite3 or PyMySQL connection, a SparkSession or "
            "DataFrames (pandas, polars, Arrow) (or connect with %sql and leave out --con)."
        )


class ModelCallError(CadetError):
    """Calling the chat model failed: network, authentication, rate limit, server error."""


class ErrorKind(StrEnum):
    """What an engine's error is, in portable words: read by the engine's own reader at the
    edge (``cadet_magic.db``), so that the diagnosis never reads an engine's message. The
    values are the diagnosis' categories of engine errors.

    Example:
        >>> ErrorKind("column_not_found") is ErrorKind.column_not_found
        True
    """

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
    multiple_statements = "multiple_statements"
    unknown = "unknown"


class Fact(StrEnum):
    """What an engine's message says besides its kind, in portable words.

    Example:
        >>> sorted(Fact)[:2]
        [<Fact.aggregate_in_where: 'aggregate_in_where'>, <Fact.alias_required: 'alias_required'>]
    """

    #: The missing table is a qualifier (``x.col``) the statement's FROM clause lacks.
    qualifier = "qualifier"
    #: The statement nests deeper than the engine's parser allows.
    too_deep = "too_deep"
    #: A derived table (a subquery in FROM) lacks the alias the engine requires.
    alias_required = "alias_required"
    #: An aggregate is nested inside another aggregate.
    nested_aggregate = "nested_aggregate"
    #: An aggregate is used in WHERE.
    aggregate_in_where = "aggregate_in_where"
    #: The engine met a bind parameter (a placeholder) with no value bound to it.
    parameter = "parameter"


@dataclass(frozen=True)
class EngineText:
    """Text quoted from an engine's message (a name, a token or a value as the engine printed
    it), never a name resolved against the schema: what passes it on can tell the engine's
    words apart from the schema's by type.

    Example:
        >>> EngineText("amout").text
        'amout'
    """

    text: str


class EngineError(CadetError):
    """An error the database engine raised, read at the edge (by the runner of that engine,
    through the engine's own table of errors) into fields the portable diagnosis reads without
    knowing any driver or any engine's wording.

    Attributes:
        message: the engine's own words, as the attempt's record shows them (functions named
            as the model wrote them, and no echo of a statement the model did not write).
        plain: the message as the diagnosis reads it, without what the driver or a library
            wrapped it in (MySQL's ``(1054, "...")``, Spark's ``[CONDITION]`` and ``SQLSTATE``
            tail, SQLAlchemy's and jupysql's decorations), when it differs from ``message``.
        sqlstate: the standard SQLSTATE (``42703``), when the engine or the runner knows it.
        code: the engine's own code: SQLite's error name, Spark's error condition, MySQL's
            server error number.
        kinds: the names the driver classes the error by (exception classes, outermost first,
            and Spark's condition).
        position: the 1-based character position in the statement, when the engine says.
        suggestion: the engine's own hint (PostgreSQL's ``HINT``), if any.
        details: engine-specific facts (Spark's message parameters, MySQL's own SQLSTATE).
        kind: what the error is (:class:`ErrorKind`), read by the engine's table.
        primary: the message's first line, without the engine's class prefix.
        identifier: the name the engine could not resolve (a column, table, function, or the
            ambiguous or ungrouped one), as the engine quoted it.
        near: where a syntax error is, as the engine quoted it.
        value: what did not convert or compare (type and date/time errors), as the engine
            quoted it.
        candidates: the names the engine proposes itself, in its order.
        caret: the 1-based column of the caret under the engine's echo of the statement's line.
        facts: what else the message says (:class:`Fact`).
        engine: the engine whose table read the error (None: not read by one).

    Example:
        >>> e = EngineError("no such column: amout", code="SQLITE_ERROR", kinds=("OperationalError",),
        ...                 kind=ErrorKind.column_not_found, identifier=EngineText("amout"))
        >>> str(e), e.text, e.kinds, e.kind.value, e.identifier.text
        ('no such column: amout', 'no such column: amout', ('OperationalError',), 'column_not_found', 'amout')
        >>> e.with_fields(identifier=None).identifier, e.with_fields(identifier=None).code
        (None, 'SQLITE_ERROR')
    """

    def __init__(
        self,
        message: str,
        *,
        plain: str | None = None,
        sqlstate: str | None = None,
        code: str | None = None,
        kinds: tuple[str, ...] = (),
        position: int | None = None,
        suggestion: str | None = None,
        details: dict | None = None,
        kind: ErrorKind = ErrorKind.unknown,
        primary: str | None = None,
        identifier: EngineText | None = None,
        near: EngineText | None = None,
        value: EngineText | None = None,
        candidates: tuple[EngineText, ...] = (),
        caret: int | None = None,
        facts: frozenset[Fact] = frozenset(),
        engine: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.plain = plain
        self.sqlstate = sqlstate
        self.code = code
        self.kinds = tuple(kinds)
        self.position = position
        self.suggestion = suggestion
        self.details = dict(details or {})
        self.kind = ErrorKind(kind)
        self.primary = primary if primary is not None else self.text.strip().split("\n")[0]
        self.identifier = identifier
        self.near = near
        self.value = value
        self.candidates = tuple(candidates)
        self.caret = caret
        self.facts = frozenset(facts)
        self.engine = engine

    @property
    def text(self) -> str:
        """The message the diagnosis reads: :attr:`plain` when the driver kept it apart."""
        return self.plain if self.plain is not None else self.message

    def fields(self) -> dict[str, Any]:
        """Every field, by the name :class:`EngineError` takes it."""
        return {name: getattr(self, name) for name in _FIELDS}

    def with_fields(self, **changes: Any) -> EngineError:
        """A copy with ``changes`` (the driver's exception it was read from stays its cause)."""
        copy = EngineError(**{**self.fields(), **changes})
        copy.__cause__ = self.__cause__
        return copy


_FIELDS = (
    "message plain sqlstate code kinds position suggestion details kind primary identifier "
    "near value candidates caret facts engine"
).split()


class QueryTimeout(CadetError):
    """A query ran past its time limit and was cancelled in the engine."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"Query cancelled after the {seconds:g} s time limit.")


class FailedTransactionError(CadetError):
    """The user's connection is in a failed transaction and the agent has no connection of its own.

    The agent never rolls back the user's transaction (their next COMMIT would then commit
    half of it); the user decides.
    """

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message or "Your connection has a failed transaction: run ROLLBACK, then ask again."
        )


class ResultTooLarge(CadetError):
    """The database driver ran out of memory while fetching the result."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message
            or "The result is too large for memory: ask for fewer or narrower rows, or lower "
            "%config AskMagic.row_limit / AskMagic.result_bytes."
        )


class ModelCallInterrupted(KeyboardInterrupt):
    """The user interrupted the run while it waited for the model (no query was running).

    A ``KeyboardInterrupt``, so it stops the run like any interrupt; the magic tells the user
    that the model call, not a query, was stopped.
    """


def exception_chain(error: BaseException) -> list[BaseException]:
    """The exception and what it wraps (``.orig``, ``__cause__``, ``__context__``), outer first.

    Example:
        >>> try:
        ...     try:
        ...         raise KeyError("x")
        ...     except KeyError as e:
        ...         raise RuntimeError("failed") from e
        ... except RuntimeError as outer:
        ...     [type(e).__name__ for e in exception_chain(outer)]
        ['RuntimeError', 'KeyError']
    """
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        nxt = getattr(current, "orig", None)
        if not isinstance(nxt, BaseException):
            nxt = current.__cause__ or current.__context__
        current = nxt
    return seen
