"""Reads an engine error into one plain record (stdlib only; no driver is named here).

Accepts the :class:`~cadet_magic.errors.EngineError` a runner read from its driver (kinds,
SQLSTATE, the engine's code, position and hint), any other exception (the classes of its
chain, ``.orig`` / ``__cause__``, and its innermost words), or just the message text, as an
engine, SQLAlchemy or jupysql print it.

Example:
    >>> info = read_error('(psycopg.errors.UndefinedColumn) column "amout" does not exist\\n'
    ...                   'LINE 1: SELECT amout FROM orders\\n'
    ...                   '               ^\\n'
    ...                   'HINT:  Perhaps you meant to reference the column "orders.amount".\\n'
    ...                   '[SQL: SELECT amout FROM orders]')
    >>> info.classes, info.primary, info.hint, info.caret
    (('UndefinedColumn',), 'column "amout" does not exist', 'Perhaps you meant to reference the column "orders.amount".', 8)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cadet_magic.errors import EngineError, exception_chain
from cadet_magic.text import without_sql_suffix

_WRAPPED = re.compile(r"^\s*\((?P<mod>[\w.]+)\.(?P<cls>\w+)\)\s*", re.S)
_JUPYSQL = "Original error message from DB driver:"
_DUCK_PREFIX = re.compile(r"^(?P<prefix>[A-Z][A-Za-z ]*? Error): ?")
_LINE = re.compile(r"^LINE \d+: ?(?P<text>.*)$")


@dataclass
class ErrorInfo:
    """What the diagnosis needs from an error, whatever wrapped it.

    Attributes:
        classes: the kinds the error is classed by: exception class names, outermost wrapper
            first, driver class last (``("ProgrammingError", "BinderException")``), and an
            engine's condition (Spark).
        sqlstate: the standard SQLSTATE, if known.
        code: the engine's own code (SQLite's error name, Spark's condition, MySQL's error
            number), if any.
        prefix: DuckDB's class prefix (``"Binder Error"``), if any.
        primary: the first line of the message without the prefix.
        body: the message without LINE/caret lines, SQLAlchemy and jupysql decorations.
        hint: the engine's own suggestion (PostgreSQL's HINT), if any.
        position: 1-based character position in the statement (PostgreSQL), if known.
        caret: 1-based column of the caret under the ``LINE n:`` line, if shown.
        message: the cleaned full message.
        details: engine-specific facts (Spark's condition and message parameters).
    """

    classes: tuple[str, ...] = ()
    sqlstate: str | None = None
    code: str | None = None
    prefix: str | None = None
    primary: str = ""
    body: str = ""
    hint: str | None = None
    position: int | None = None
    caret: int | None = None
    message: str = ""
    details: dict = field(default_factory=dict)

    @property
    def driver_class(self) -> str:
        """The innermost (driver) exception class name, or ``""``."""
        return self.classes[-1] if self.classes else ""


def _clean(text: str) -> tuple[str, list[str]]:
    """Strips the decorations wrappers put around an engine's message (jupysql's preamble,
    SQLAlchemy's ``(module.Class)`` and ``[SQL: ...]``); returns the text and the wrapped
    class named in it."""
    classes: list[str] = []
    if _JUPYSQL in text:
        text = text.split(_JUPYSQL, 1)[1]
    text = text.strip()
    m = _WRAPPED.match(text)
    if m:
        classes.append(m.group("cls"))
        text = text[m.end() :]
    text = without_sql_suffix(text)
    text = re.split(r"\n\(Background on this error at:", text, maxsplit=1)[0]
    text = re.sub(r"\nIf you need help solving this issue.*", "", text, flags=re.S)
    return text.strip(), classes


def read_error(error: EngineError | BaseException | str, message: str | None = None) -> ErrorInfo:
    """Reads ``error`` into an :class:`ErrorInfo`: an :class:`EngineError` (what a runner
    read from its driver: kinds, SQLSTATE, code, position, hint), any other exception by its
    chain's classes and its innermost words, or a message; ``message``, when given, replaces
    the error's text (its kinds, SQLSTATE and code are still read).

    Example:
        >>> info = read_error('Binder Error: Referenced column "amout" not found in FROM clause!\\n'
        ...                   'Candidate bindings: "amount"')
        >>> info.prefix, info.primary
        ('Binder Error', 'Referenced column "amout" not found in FROM clause!')
    """
    info = ErrorInfo()
    classes: list[str] = []
    if isinstance(error, EngineError):
        classes = list(error.kinds)
        info.sqlstate = error.sqlstate
        info.code = error.code
        info.hint = error.suggestion
        info.position = error.position
        info.details = dict(error.details)
        text = error.text
    elif isinstance(error, BaseException):
        chain = exception_chain(error)
        classes = [type(e).__name__ for e in chain]
        text = str(chain[-1]) if str(chain[-1]).strip() else str(error)
    else:
        text = str(error)
    if message is not None:
        text = message
    text, wrapped = _clean(text)
    classes += [c for c in wrapped if c not in classes]
    info.classes = tuple(classes)
    info.message = text
    _read_body(info, text)
    return info


def _read_body(info: ErrorInfo, text: str) -> None:
    """The body without the statement echo (``LINE n:`` and its caret, whose column is kept),
    the HINT, DuckDB's error-class prefix and the first line."""
    body: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        lm = _LINE.match(line)
        if lm:
            if i + 1 < len(lines) and "^" in lines[i + 1]:
                caret_line = lines[i + 1]
                prefix_len = len(line) - len(lm.group("text"))
                info.caret = caret_line.index("^") - prefix_len + 1
            continue
        if line.strip() and set(line.strip()) <= {"^"}:
            continue
        if line.startswith("HINT:"):
            info.hint = info.hint or line[5:].strip()
            continue
        body.append(line)
    info.body = "\n".join(body).strip()
    first = next((b for b in body if b.strip()), "")
    pm = _DUCK_PREFIX.match(first)
    if pm and pm.group("prefix") != "Error":
        info.prefix = pm.group("prefix")
        first = first[pm.end() :]
    info.primary = first.strip()
