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
        --con n holds an int (42), not a database connection: pass a SQLAlchemy engine or connection, a duckdb, sqlite3 or PyMySQL connection, or a SparkSession (or connect with %sql and leave out --con).
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
            "engine or connection, a duckdb, sqlite3 or PyMySQL connection, or a SparkSession "
            "(or connect with %sql and leave out --con)."
        )


class ModelCallError(CadetError):
    """Calling the chat model failed: network, authentication, rate limit, server error."""


class EngineError(CadetError):
    """An error the database engine raised, read at the edge (by the runner of that engine)
    into fields the portable diagnosis reads without knowing any driver.

    Attributes:
        message: the engine's own words, as the attempt's record shows them.
        plain: the message without what the driver wrapped it in (MySQL's ``(1054, "...")``,
            Spark's ``[CONDITION]`` and ``SQLSTATE`` tail), when the driver keeps it apart;
            None: ``message`` is plain already.
        sqlstate: the standard SQLSTATE (``42703``), when the engine or the runner knows it.
        code: the engine's own code: SQLite's error name, Spark's error condition, MySQL's
            server error number.
        kinds: the names the driver classes the error by (exception classes, outermost first,
            and Spark's condition), which the category rules key on besides the SQLSTATE.
        position: the 1-based character position in the statement, when the engine says.
        suggestion: the engine's own hint (PostgreSQL's ``HINT``), if any.
        details: engine-specific facts (Spark's message parameters, MySQL's own SQLSTATE).

    Example:
        >>> e = EngineError("no such column: amout", code="SQLITE_ERROR", kinds=("OperationalError",))
        >>> str(e), e.text, e.kinds
        ('no such column: amout', 'no such column: amout', ('OperationalError',))
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

    @property
    def text(self) -> str:
        """The message the diagnosis reads: :attr:`plain` when the driver kept it apart."""
        return self.plain if self.plain is not None else self.message


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
