"""How an engine's error is read into the portable :class:`~cadet_magic.errors.EngineError`
fields the diagnosis reads: each engine's module owns an :class:`ErrorTable` (rows saying
what its messages, classes, codes and SQLSTATEs mean); :func:`read` applies it once, at the
edge (:mod:`cadet_magic.db.error_reader`), so that nothing past the runner reads an engine's
wording (stdlib only: it runs in Pyodide with the SQLite runner).

A table's rows are data: :class:`Rule` (which :class:`~cadet_magic.errors.ErrorKind` an error
is, by SQLSTATE, the driver's class, the engine's code or the words its message starts with),
:class:`Name` (where the unresolved name sits in the message), :class:`Value` (what did not
convert), :class:`Said` (a :class:`~cadet_magic.errors.Fact` the message states) and the
markers after which the engine proposes names itself. :data:`STANDARD` holds what every
engine shares (SQLSTATEs, DB-API classes, common wording); :data:`KIND_ORDER` is the
priority in which kinds are tried, most specific first, so that "column x must appear in the
GROUP BY clause" is an aggregation error, not a missing column.

Example:
    >>> from cadet_magic.db.error_reader import read
    >>> toy = ErrorTable("toy", rules=(Rule(ErrorKind.column_not_found, pattern=r"^no field "),),
    ...                  names=(Name(ErrorKind.column_not_found, r"^no field <(\\w+)>"),))
    >>> e = read(EngineError("no field <amout> in orders"), toy)
    >>> e.kind.value, e.identifier.text, e.engine
    ('column_not_found', 'amout', 'toy')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from cadet_magic.errors import EngineError, ErrorKind, Fact

__all__ = [
    "KIND_ORDER",
    "STANDARD",
    "ErrorTable",
    "Name",
    "Reading",
    "Rule",
    "Said",
    "Value",
    "combine",
    "datetime_state",
    "datetime_target",
]

#: The order kinds are tried in: system errors, the engine refusing the request's shape, the
#: specific SQL errors (whose messages mention columns too), then the generic ones.
KIND_ORDER: tuple[ErrorKind, ...] = (
    ErrorKind.timeout,
    ErrorKind.connection_error,
    ErrorKind.permission_denied,
    ErrorKind.multiple_statements,
    ErrorKind.aggregation_error,
    ErrorKind.join_error,
    ErrorKind.column_not_found,
    ErrorKind.table_not_found,
    ErrorKind.division_by_zero,
    ErrorKind.datetime_format,
    ErrorKind.function_not_found,
    ErrorKind.type_mismatch,
    ErrorKind.syntax_error,
)


@dataclass
class Reading:
    """An error's message taken apart, what the rows of a table test.

    Attributes:
        classes: the driver's classes (outermost first) and the class a library's wrapper
            names in the text.
        sqlstate, code: as the engine's reader found them.
        primary: the first line, without the engine's class prefix.
        body: the message without its echo of the statement and its hint lines.
        hint: the engine's own hint.
        caret: the column of the caret under the echoed statement line.
        message: the whole message as the diagnosis reads it.
        details: the engine's own facts (Spark's message parameters).
    """

    classes: tuple[str, ...] = ()
    sqlstate: str | None = None
    code: str | None = None
    primary: str = ""
    body: str = ""
    hint: str | None = None
    caret: int | None = None
    message: str = ""
    details: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    """One signature of an error kind; matches when any of its keys does (a ``check``, when
    given, must hold too, except for a code, which is exact)."""

    kind: ErrorKind
    sqlstates: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    pattern: str | None = None
    check: Callable[[Reading], bool] | None = None

    def matches(self, r: Reading) -> bool:
        if r.sqlstate and any(r.sqlstate.startswith(s) for s in self.sqlstates):
            return self.check(r) if self.check else True
        if any(c in self.classes for c in r.classes):
            return self.check(r) if self.check else True
        if r.code and r.code in self.codes:
            return True
        if self.pattern and re.search(self.pattern, r.primary, re.I):
            return self.check(r) if self.check else True
        return False


@dataclass(frozen=True)
class Name:
    """Where, in the first line of an error of ``kind``, the name it is about sits (the groups
    of ``pattern`` put into ``form``; for a syntax error, the token the engine stopped near)."""

    kind: ErrorKind
    pattern: str
    form: str = "{0}"


@dataclass(frozen=True)
class Value:
    """What did not convert or compare, in a type or date/time error: the groups of
    ``pattern`` put into ``form``."""

    pattern: str
    form: str = "{0}"


@dataclass(frozen=True)
class Said:
    """A fact the message states: ``pattern`` found in the whole message (``where="message"``)
    or its first line (``"primary"``), for an error of one of ``kinds`` (any when empty)."""

    fact: Fact
    pattern: str
    kinds: tuple[ErrorKind, ...] = ()
    where: str = "message"


@dataclass(frozen=True)
class ErrorTable:
    """What one engine's errors mean, as rows :func:`read` applies.

    Attributes:
        engine: the engine's name (``duckdb``, ``postgres``...).
        dialect: the SQL dialect the engine speaks, when it is not named like the engine.
        rules, names, values, facts: the rows (see the module).
        proposals: the words after which the engine's message lists names it proposes
            (DuckDB's ``Candidate bindings:``).
        hint_proposals: the same, in the engine's hint (PostgreSQL's ``Perhaps you meant``).
        prefixes: the engine's class prefix on a message's first line (DuckDB's ``Binder
            Error:``), a pattern whose group ``prefix`` is left out of the first line.
        echoes: the engine's echo of the statement's line (``LINE 1: ...``, the caret under
            it), a pattern whose group ``text`` is the echoed line.
        hint_lines: how the engine starts a hint line within its message (``HINT:``).
        standard: whether :data:`STANDARD` is read with the table (every engine's is).
        driver: the engine's reading of its driver's exception into the facts the rows read
            (SQLSTATE, code, hint...); None: the exception's words and classes.
        printed: the engine's reading of its error as a driver prints it (MySQL's ``(1054,
            "...")``), None when the text is not one of its own; None: the text as it is.
        naming: the classes, or class prefixes of the message (``Binder Error``), of the
            engine's errors that may name the query's own names and tokens: those its parser,
            binder and catalog raise, before any row is read. The name, token or proposed
            names another error quotes are not read (a function's runtime error quotes what
            the query and its data make it say). Empty: every error may name them.
    """

    engine: str
    dialect: str | None = None
    rules: tuple[Rule, ...] = ()
    names: tuple[Name, ...] = ()
    values: tuple[Value, ...] = ()
    facts: tuple[Said, ...] = ()
    proposals: tuple[str, ...] = ()
    hint_proposals: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    echoes: tuple[str, ...] = ()
    hint_lines: tuple[str, ...] = ()
    standard: bool = True
    driver: Callable[[BaseException], EngineError] | None = field(default=None, compare=False)
    printed: Callable[[str], EngineError | None] | None = field(default=None, compare=False)
    naming: tuple[str, ...] = ()


def combine(engine: str, tables: Iterable[ErrorTable]) -> ErrorTable:
    """One table reading what all of ``tables`` read, their rows in order (the reader of an
    error whose engine is not known).

    Example:
        >>> a = ErrorTable("a", proposals=("x",)); b = ErrorTable("b", proposals=("y",))
        >>> combine("any", [a, b]).proposals
        ('x', 'y')
    """
    tables = list(tables)
    rows: dict[str, Any] = {
        f.name: tuple(dict.fromkeys(r for t in tables for r in getattr(t, f.name)))
        for f in fields(ErrorTable)
        if f.name not in ("engine", "dialect", "standard", "driver", "printed", "naming")
    }
    return ErrorTable(engine, **rows)  # (naming: none, every error may name the query's)


# --- what every engine shares ------------------------------------------------------------

_DATETIME_WORDS = re.compile(
    r"\b(date|time|timestamp|timestamptz|interval|datestyle|time zone)\b|date/time", re.I
)


def datetime_target(r: Reading) -> bool:
    """A conversion whose target is a date, time, timestamp or interval, as the message says
    (``... to DATE``, ``for type timestamp: ...``, ``date/time field``)."""
    text = r.primary
    if re.search(r"date field|timestamp field|time field|date/time|datestyle", text, re.I):
        return True
    m = re.search(r"\bto (\w+)|for type ([\w ]+?):", text, re.I)
    target = (m.group(1) or m.group(2)) if m else ""
    return bool(_DATETIME_WORDS.search(target or ""))


def datetime_state(r: Reading) -> bool:
    """A date/time SQLSTATE (class ``2200x``) or a conversion whose target is a date."""
    return bool(r.sqlstate and r.sqlstate.startswith("2200")) or datetime_target(r)


#: The SQLSTATEs (PostgreSQL's codes serve as the common vocabulary: the MySQL reader maps its
#: error numbers to them), DB-API's classes and the wording several engines share.
STANDARD = ErrorTable(
    "standard",
    rules=(
        Rule(
            ErrorKind.timeout,
            sqlstates=("57014",),
            classes=("QueryTimeout",),
            pattern=r"timed? ?out\b|query (was )?cancel",
        ),
        Rule(
            ErrorKind.connection_error,
            sqlstates=("08",),
            classes=("InterfaceError",),
            pattern=r"connection (refused|closed|reset|failed)|could not connect|"
            r"no connection|connection is closed",
        ),
        Rule(
            ErrorKind.permission_denied,
            sqlstates=("42501", "25006", "28"),
            pattern=r"permission denied|not authorized|read-only (transaction|mode)|"
            r"access denied|insufficient privilege",
        ),
        Rule(ErrorKind.multiple_statements, pattern=r"multiple statements|more than one statement"),
        Rule(ErrorKind.aggregation_error, sqlstates=("42803",)),
        Rule(
            ErrorKind.join_error,
            sqlstates=("42702", "42P09", "42712"),
            pattern=r"ambiguous|is not unique",
        ),
        Rule(ErrorKind.column_not_found, sqlstates=("42703",)),
        Rule(ErrorKind.table_not_found, sqlstates=("42P01", "3F000")),
        Rule(
            ErrorKind.division_by_zero,
            sqlstates=("22012",),
            pattern=r"division by zero|divide by zero|divided by zero",
        ),
        Rule(
            ErrorKind.datetime_format,
            sqlstates=("22007", "22008", "22009"),
            check=datetime_state,
        ),
        Rule(
            ErrorKind.type_mismatch,
            sqlstates=("22P02", "42804", "42883", "22003", "22018", "42846", "22023"),
            pattern=r"cannot be cast|cannot cast|type mismatch|datatype mismatch",
        ),
        Rule(
            ErrorKind.syntax_error,
            sqlstates=("42601", "42P10", "42000"),
            classes=("SyntaxError", "ParseError", "TokenError"),
            pattern=r"syntax error|unterminated|unexpected end",
        ),
    ),
    facts=(
        Said(
            Fact.too_deep,
            r"parser stack overflow|expression depth|stack depth limit|"
            r"expression tree is too large|too deeply nested|maximum recursion depth",
        ),
        Said(Fact.nested_aggregate, r"nested", (ErrorKind.aggregation_error,), "primary"),
        Said(Fact.aggregate_in_where, r"where", (ErrorKind.aggregation_error,), "primary"),
        Said(Fact.parameter, r"binding|parameter"),
    ),
)
