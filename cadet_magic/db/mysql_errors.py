"""MySQL and MariaDB errors read into the standard SQLSTATEs the diagnosis's rules key on.

A MySQL error carries its server error number (``args[0]`` of PyMySQL's and mysqlclient's
exceptions; ``(1054, "Unknown column ...")`` in their text) and a SQLSTATE that is often only
a class (``42000`` for a syntax error and for an unknown function alike, ``23000`` for an
ambiguous column). The number is the stable key: :data:`ERRNO_SQLSTATE` maps it to the
SQLSTATE the same mistake has in standard SQL (PostgreSQL's codes), so the diagnosis's rules
classify it; the server's own number and SQLSTATE stay in the error's ``details``
(:func:`mysql_error`, the MySQL runner's reading of its driver's errors).

Example:
    >>> errno, text = mysql_message('(1054, "Unknown column \\'amout\\' in \\'SELECT\\'")')
    >>> errno, text, ERRNO_SQLSTATE[errno]
    (1054, "Unknown column 'amout' in 'SELECT'", '42703')
    >>> mysql_message("no such column: x")
    (None, 'no such column: x')
"""

from __future__ import annotations

import re
from typing import Any

from cadet_magic.db.base import read_exception
from cadet_magic.db.error_table import ErrorTable, Name, Rule
from cadet_magic.errors import EngineError, ErrorKind

#: Server (and client) error numbers -> the standard SQLSTATE of the same mistake.
ERRNO_SQLSTATE: dict[int, str] = {
    # names that do not exist
    1054: "42703",  # Unknown column 'x' in 'field list'
    1146: "42P01",  # Table 'db.t' doesn't exist
    1109: "42P01",  # Unknown table 't' in ...
    1051: "42P01",  # Unknown table 't'
    1049: "3F000",  # Unknown database 'x'
    1305: "42883",  # FUNCTION db.f does not exist
    1630: "42883",  # FUNCTION db.f does not exist. Check the 'Function Name Parsing ...'
    1582: "42804",  # Incorrect parameter count in the call to native function 'f'
    1583: "42804",  # Incorrect parameters in the call to native function 'f'
    # joins and names used twice
    1052: "42702",  # Column 'x' in field list is ambiguous
    1066: "42712",  # Not unique table/alias: 't'
    # grouping and windows
    1111: "42803",  # Invalid use of group function
    1055: "42803",  # 'x' isn't in GROUP BY (ONLY_FULL_GROUP_BY)
    1140: "42803",  # Mixing of GROUP columns ... with no GROUP columns is illegal
    1463: "42803",  # Non-grouping field 'x' is used in HAVING clause
    3029: "42803",  # Expression of ORDER BY is not in GROUP BY (MySQL)
    4015: "42803",  # Window function is allowed only in SELECT list and ORDER BY clause
    3593: "42803",  # You cannot use the window function 'f' in this context (MySQL)
    # syntax and statement shape
    1064: "42601",  # You have an error in your SQL syntax; ... near '...' at line 1
    1149: "42601",  # You have an error in your SQL syntax
    1241: "42601",  # Operand should contain 1 column(s)
    1222: "42601",  # The used SELECT statements have a different number of columns
    1248: "42601",  # Every derived table must have its own alias
    1060: "42701",  # Duplicate column name 'x'
    # values
    1365: "22012",  # Division by 0 (strict writes only; a query gets NULL)
    1292: "22P02",  # Truncated incorrect DOUBLE value / Incorrect datetime value
    1411: "22007",  # Incorrect datetime value: 'x' for function str_to_date
    1690: "22003",  # BIGINT value is out of range
    1366: "22P02",  # Incorrect integer value: 'x' for column ...
    1267: "42804",  # Illegal mix of collations
    1270: "42804",  # Illegal mix of collations (3 operands)
    1242: "21000",  # Subquery returns more than 1 row
    # time limits and interrupts
    1969: "57014",  # Query execution was interrupted (max_statement_time exceeded)
    3024: "57014",  # Query execution was interrupted, maximum statement execution time exceeded
    1317: "57014",  # Query execution was interrupted (KILL QUERY)
    # privileges and read-only
    1792: "25006",  # Cannot execute statement in a READ ONLY transaction
    1142: "42501",  # SELECT command denied to user ... for table 't'
    1143: "42501",  # SELECT command denied to user ... for column 'c' in table 't'
    1227: "42501",  # Access denied; you need (at least one of) the ... privilege(s)
    1044: "42501",  # Access denied for user ... to database 'db'
    1045: "28000",  # Access denied for user ... (using password: ...)
    1370: "42501",  # execute command denied to user ... for routine 'f'
    # connection (client-side numbers)
    2002: "08006",
    2003: "08006",
    2006: "08006",
    2013: "08006",
    2055: "08006",
}

_TUPLE_TEXT = re.compile(r"^\((?P<errno>\d{3,5}), (?P<quote>[\"'])(?P<msg>.*)(?P=quote)\)$", re.S)


def mysql_message(text: str, errno: int | None = None) -> tuple[int | None, str]:
    """``(error number, message)`` from a MySQL driver error's text (``(1054, "...")``, as
    PyMySQL and mysqlclient print it); the text unchanged and ``errno`` when it is not one."""
    m = _TUPLE_TEXT.match(text.strip())
    if m is None:
        return errno, text
    message = m.group("msg")
    if m.group("quote") == "'":
        message = message.replace("\\'", "'")
    else:
        message = message.replace('\\"', '"')
    return int(m.group("errno")), message


def mysql_errno(error: BaseException) -> int | None:
    """The server's error number of a driver error (PyMySQL, mysqlclient: ``args[0]``)."""
    seen = 0
    e: BaseException | None = error
    while e is not None and seen < 6:
        args = getattr(e, "args", ())
        if args and isinstance(args[0], int) and not isinstance(args[0], bool):
            return args[0]
        orig = getattr(e, "orig", None)
        e = orig if isinstance(orig, BaseException) else e.__cause__
        seen += 1
    return None


def mysql_error(error: BaseException) -> EngineError:
    """A MySQL/MariaDB driver error as an :class:`EngineError`: the server's error number
    (the code), its message without the driver's ``(1054, "...")``, and the standard SQLSTATE
    of the same mistake (:data:`ERRNO_SQLSTATE`), with the
    server's own number and SQLSTATE kept in ``details``.

    Example:
        >>> import pymysql
        >>> e = mysql_error(pymysql.err.OperationalError(1054, "Unknown column 'amout' in 'SELECT'"))
        >>> e.plain, e.sqlstate, e.code, e.details
        ("Unknown column 'amout' in 'SELECT'", '42703', '1054', {'mysql_errno': 1054})
    """
    base = read_exception(error)
    errno, message = mysql_message(base.text, mysql_errno(error))
    if errno is None:
        return base
    details: dict[str, Any] = {"mysql_errno": errno}
    state = getattr(error, "sqlstate", None)
    if isinstance(state, str) and state:
        details["mysql_sqlstate"] = state
    sqlstate = ERRNO_SQLSTATE.get(errno)
    if errno == 1292 and re.search(r"date|time", message, re.I):
        sqlstate = "22007"
    return EngineError(
        base.message,
        plain=message,
        sqlstate=sqlstate,
        code=str(errno),
        kinds=base.kinds,
        details=details,
    )


_PRINTED = re.compile(
    r"^\s*\((?:pymysql|MySQLdb|mysql\.connector)[\w.]*\.(?P<cls>\w+)\)\s*"
    r"(?P<tuple>\(\d{3,5}, .*?\))\s*(?:\n\[SQL:.*)?$",
    re.S,
)


def mysql_printed(text: str) -> EngineError | None:
    """A MySQL driver's error as SQLAlchemy prints it (``(pymysql.err.X) (1054, "...")``):
    its number and SQLSTATE read as from the exception; None for any other text.

    Example:
        >>> e = mysql_printed('(pymysql.err.OperationalError) (1054, "Unknown column `a`")')
        >>> e.plain, e.sqlstate, e.kinds
        ('Unknown column `a`', '42703', ('OperationalError',))
    """
    m = _PRINTED.match(text)
    if m is None:
        return None
    read = mysql_error(_Printed(m.group("tuple")))
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


K = ErrorKind

#: MySQL's and MariaDB's errors: :func:`mysql_error` gives each the SQLSTATE of the standard
#: table; here the server's wording, where it names what it is about.
MYSQL = ErrorTable(
    "mysql",
    driver=mysql_error,
    printed=mysql_printed,
    rules=(
        Rule(K.aggregation_error, pattern=r"not in GROUP BY"),
        Rule(K.function_not_found, sqlstates=("42883",)),
    ),
    names=(
        Name(K.column_not_found, r"^Unknown column '([^']+)' in"),
        Name(K.table_not_found, r"^Table '(?:[^'.]+\.)?([^']+)' doesn't exist"),
        Name(K.table_not_found, r"^Unknown table '(?:[^'.]+\.)?([^']+)'"),
        Name(K.join_error, r"^Column '([^']+)' in .* is ambiguous"),
        Name(K.join_error, r"^Not unique table/alias: '([^']+)'"),
        Name(K.aggregation_error, r"^'([^']+)' isn't in GROUP BY"),
        Name(K.function_not_found, r"^FUNCTION (?:\w+\.)?(\w+) does not exist"),
        Name(K.syntax_error, r"near '([^\s']+)"),  # the first word it names
    ),
)
