"""A toy engine added the way ARCHITECTURE.md says an engine is added, through ``db/`` alone:
a runner (``db/base.BaseRunner`` hooks), its driver's errors read into an ``EngineError``, and
its own error table (registered with ``db/error_reader.register``, by the test that uses it).
Nothing of the diagnosis, the check or the agent is changed for it.

Its "driver" is SQLite underneath with words of its own: numbered codes (``T-101``) and names
in double quotes, unlike any engine the package knows, so that only its own table can read
them.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from cadet_magic.db.base import RunControl, Statement, read_exception
from cadet_magic.db.error_table import ErrorTable, Name, Rule
from cadet_magic.db.sqlite import SQLiteRunner
from cadet_magic.errors import EngineError, ErrorKind
from cadet_magic.sql.query import CheckedQuery


class ToyError(Exception):
    """The toy driver's exception: its code and its words."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(f"{code}: {text}")
        self.code = code


#: SQLite's words -> the toy's (code, words).
_WORDS = (
    (r"^no such column: (.+)$", "T-101", 'no field "{0}" here'),
    (r"^no such table: (\S+)$", "T-102", 'no relation "{0}"'),
    (r"^ambiguous column name: (\S+)$", "T-103", 'field "{0}" is in more than one relation'),
    (r"^no such function: (\w+)$", "T-104", 'no routine "{0}"'),
    (r'^near "([^"]*)": syntax error$', "T-200", 'cannot read the statement at "{0}"'),
    (
        r"^misuse of aggregate(?: function)?:? (\w+)\(\)$",
        "T-301",
        'aggregate "{0}" used outside a group',
    ),
)


def toy_driver_error(error: sqlite3.Error) -> ToyError:
    """What the toy driver raises for an error of the SQLite underneath."""
    for pattern, code, words in _WORDS:
        m = re.match(pattern, str(error))
        if m:
            return ToyError(code, words.format(*m.groups()))
    return ToyError("T-999", str(error))


def toy_error(error: BaseException) -> EngineError:
    """The toy driver's exception as an ``EngineError``: its words, its code."""
    return read_exception(error, code=getattr(error, "code", None))


def toy_printed(text: str) -> EngineError | None:
    """The toy driver's error as it prints it (``T-101: ...``): its code read from the text."""
    m = re.match(r"^(T-\d{3}): ", text)
    return EngineError(text, code=m.group(1)) if m else None


K = ErrorKind
_NAMED = r'"([^"]+)"'

#: The toy engine's errors: its codes say the kind, its double quotes the name.
TOY = ErrorTable(
    "toy",
    dialect="sqlite",
    driver=toy_error,
    printed=toy_printed,
    rules=(
        Rule(K.column_not_found, codes=("T-101",)),
        Rule(K.table_not_found, codes=("T-102",)),
        Rule(K.join_error, codes=("T-103",)),
        Rule(K.function_not_found, codes=("T-104",)),
        Rule(K.syntax_error, codes=("T-200",)),
        Rule(K.aggregation_error, codes=("T-301",)),
    ),
    names=tuple(
        Name(kind, _NAMED)
        for kind in (
            K.column_not_found,
            K.table_not_found,
            K.join_error,
            K.function_not_found,
            K.syntax_error,
        )
    ),
    proposals=("nearest:",),
)


class ToyRunner(SQLiteRunner):
    """The toy engine's runner: SQLite's, with the toy driver's errors."""

    engine = "toy"
    label = "toy engine"

    def execute(
        self, handle: Any, sql: str | CheckedQuery, limit: int, control: RunControl
    ) -> Statement:
        try:
            return super().execute(handle, sql, limit, control)
        except sqlite3.OperationalError as e:
            error = toy_driver_error(e)
        raise error  # the toy driver's own exception, with nothing of SQLite's behind it

    def engine_error(self, error: BaseException) -> EngineError:
        return toy_error(error)
