"""SQLite's errors, as the portable fields the diagnosis reads (stdlib only: Pyodide too).

SQLite names its errors (``SQLITE_ERROR``, ``SQLITE_READONLY`` ...: ``sqlite_errorname`` on
Python 3.11's exceptions) and words them in a few fixed forms (``no such column: x``,
``near "FROM": syntax error``, ``misuse of aggregate: SUM()``).

Example:
    >>> import sqlite3
    >>> try:
    ...     sqlite3.connect(":memory:").execute("SELECT amout")
    ... except sqlite3.Error as e:
    ...     err = sqlite_error(e)
    >>> err.message, err.code, err.kinds
    ('no such column: amout', 'SQLITE_ERROR', ('OperationalError',))
    >>> from cadet_magic.db.error_reader import read
    >>> read(err, SQLITE).kind.value, read(err, SQLITE).identifier.text
    ('column_not_found', 'amout')
"""

from __future__ import annotations

from cadet_magic.db.base import read_exception
from cadet_magic.db.error_table import ErrorTable, Name, Rule
from cadet_magic.errors import EngineError, ErrorKind, exception_chain


def sqlite_error(error: BaseException) -> EngineError:
    """A ``sqlite3`` error as an :class:`EngineError`: its words and SQLite's error name
    (``SQLITE_ERROR``, ``SQLITE_READONLY`` ...) as the code (what :data:`SQLITE` reads)."""
    names = [getattr(e, "sqlite_errorname", None) for e in exception_chain(error)]
    return read_exception(error, code=next((n for n in names if isinstance(n, str)), None))


K = ErrorKind

SQLITE = ErrorTable(
    "sqlite",
    driver=sqlite_error,
    rules=(
        Rule(K.timeout, codes=("SQLITE_INTERRUPT",), pattern=r"^interrupted\b"),
        Rule(
            K.connection_error,
            codes=("SQLITE_CANTOPEN", "SQLITE_NOTADB", "SQLITE_CORRUPT"),
            pattern=r"unable to open database|database is closed|closed (database|connection)",
        ),
        Rule(
            K.permission_denied,
            codes=("SQLITE_AUTH", "SQLITE_READONLY", "SQLITE_PERM"),
            pattern=r"readonly database|not authorized",
        ),
        Rule(K.multiple_statements, pattern=r"only execute one statement"),
        Rule(
            K.aggregation_error,
            pattern=r"misuse of (?:aliased )?aggregate|misuse of window function",
        ),
        Rule(K.column_not_found, pattern=r"^no such column|has no column named"),
        Rule(K.table_not_found, pattern=r"^no such table|^no such schema|^unknown database"),
        Rule(K.function_not_found, pattern=r"^no such function"),
        Rule(K.type_mismatch, codes=("SQLITE_MISMATCH",)),
        Rule(K.syntax_error, pattern=r"^incomplete input|unrecognized token|near \".*\""),
    ),
    names=(
        Name(K.column_not_found, r"no such column: ?(.+?)\s*$"),  # named whole, spaces included
        Name(K.column_not_found, r"has no column named (\S+)"),
        Name(K.table_not_found, r"no such table: ?(\S+)"),
        Name(K.join_error, r"ambiguous column name: ?(\S+)"),
        Name(K.aggregation_error, r"misuse of aggregate(?: function)?:? (\w+)\("),
        Name(K.function_not_found, r"no such function: ?(\w+)"),
        Name(K.syntax_error, r'near "([^"]*)": syntax error'),
    ),
)
