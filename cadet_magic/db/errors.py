"""A driver's exception (or the text it prints) as an :class:`~cadet_magic.errors.EngineError`,
read by the runner module of its engine (edge: no driver is imported here).

The runners read their own errors (each run's failure goes through its
:meth:`~cadet_magic.db.base.BaseRunner.engine_error`); this is for code that holds a driver's
error without a runner: a query run directly on a connection, a logged message.

Example:
    >>> import sqlite3
    >>> try:
    ...     sqlite3.connect(":memory:").execute("SELECT amout")
    ... except sqlite3.Error as e:
    ...     err = engine_error(e)
    >>> err.code, err.message
    ('SQLITE_ERROR', 'no such column: amout')
    >>> engine_error('(pymysql.err.OperationalError) (1054, "Unknown column \\'amout\\' in \\'SELECT\\'")').sqlstate
    '42703'
"""

from __future__ import annotations

import re

from cadet_magic.db.base import read_exception
from cadet_magic.errors import EngineError, exception_chain

#: jupysql's line before the driver's own message, in the errors it raises.
JUPYSQL_MARK = "Original error message from DB driver:"
_MYSQL_TEXT = re.compile(
    r"^\s*\((?:pymysql|MySQLdb|mysql\.connector)[\w.]*\.(?P<cls>\w+)\)\s*"
    r"(?P<tuple>\(\d{3,5}, .*?\))\s*(?:\n\[SQL:.*)?$",
    re.S,
)
_MYSQL_MODULES = ("pymysql", "MySQLdb", "mysql.connector", "_mysql", "mariadb")


def engine_error(error: BaseException | str) -> EngineError:
    """The :class:`EngineError` of ``error``: a driver's exception (raw, SQLAlchemy- or
    jupysql-wrapped) read by its engine's reader, or a message as a driver printed it."""
    if isinstance(error, EngineError):
        return error
    if isinstance(error, str):
        return _from_text(error)
    modules = [type(e).__module__ for e in exception_chain(error)]
    if any(m.startswith("pyspark") for m in modules):
        from cadet_magic.db.spark_errors import spark_error

        return spark_error(error)
    if any(m.startswith(_MYSQL_MODULES) for m in modules):
        from cadet_magic.db.mysql_errors import mysql_error

        return mysql_error(error)
    if any(m.startswith("psycopg") for m in modules):
        from cadet_magic.db.postgres import postgres_error

        return postgres_error(error)
    if any(m.startswith("sqlite3") for m in modules):
        from cadet_magic.db.sqlite import sqlite_error

        return sqlite_error(error)
    if JUPYSQL_MARK in str(error) and not any(
        m.startswith(("sqlalchemy", "_duckdb")) for m in modules
    ):
        return read_exception(error, plain=str(error))
    return read_exception(error)


def _from_text(text: str) -> EngineError:
    """A message as printed: a MySQL driver's ``(1054, "...")`` (also inside SQLAlchemy's
    ``(pymysql.err.X)`` wrapper) read into its number and SQLSTATE; any other text as it is."""
    m = _MYSQL_TEXT.match(text)
    if m is None:
        return EngineError(text)
    from cadet_magic.db.mysql_errors import mysql_error

    cause = _Printed(m.group("tuple"))
    read = mysql_error(cause)
    return EngineError(
        text,
        plain=read.plain,
        sqlstate=read.sqlstate,
        code=read.code,
        kinds=(m.group("cls"),),
        details=read.details,
    )


class _Printed(Exception):
    """A driver's error known only from its printed text."""
