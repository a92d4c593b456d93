"""Reads any engine error into one plain record (stdlib only; keyed on names, never on imports).

Accepts a raw driver exception (DuckDB, sqlite3, psycopg 3, psycopg2), one wrapped by
SQLAlchemy (``.orig``) or jupysql (``__cause__`` / the text "Original error message from DB
driver"), or just the message string.

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

from cadet_magic.text import without_sql_suffix

_WRAPPED = re.compile(r"^\s*\((?P<mod>[\w.]+)\.(?P<cls>\w+)\)\s*", re.S)
_JUPYSQL = "Original error message from DB driver:"
_DUCK_PREFIX = re.compile(r"^(?P<prefix>[A-Z][A-Za-z ]*? Error): ?")
_LINE = re.compile(r"^LINE \d+: ?(?P<text>.*)$")
_SQLSTATE = re.compile(r"^[0-9A-Z]{5}$")


@dataclass
class ErrorInfo:
    """What the diagnosis needs from an error, whatever wrapped it.

    Attributes:
        classes: exception class names, outermost wrapper first, driver class last
            (``("ProgrammingError", "BinderException")``).
        modules: the matching module names (``"_duckdb"``, ``"psycopg.errors"``, ``"sqlite3"``).
        sqlstate: PostgreSQL SQLSTATE (psycopg ``sqlstate`` / psycopg2 ``pgcode``), if any.
        errorname: sqlite3 ``sqlite_errorname``, if any.
        prefix: DuckDB's class prefix (``"Binder Error"``), if any.
        primary: the first line of the message without the prefix.
        body: the message without LINE/caret lines, SQLAlchemy and jupysql decorations.
        hint: PostgreSQL's HINT, if any.
        position: 1-based character position in the statement (PostgreSQL), if known.
        caret: 1-based column of the caret under the ``LINE n:`` line, if shown.
        message: the cleaned full message.
    """

    classes: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    sqlstate: str | None = None
    errorname: str | None = None
    prefix: str | None = None
    primary: str = ""
    body: str = ""
    hint: str | None = None
    position: int | None = None
    caret: int | None = None
    message: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def driver_class(self) -> str:
        """The innermost (driver) exception class name, or ``""``."""
        return self.classes[-1] if self.classes else ""


def _chain(error: BaseException) -> list[BaseException]:
    """The exception and what it wraps (``.orig``, ``__cause__``, ``__context__``), outer first."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        nxt = getattr(current, "orig", None)
        if not isinstance(nxt, BaseException):
            nxt = current.__cause__ or current.__context__
        current = nxt
    return seen


def _clean(text: str) -> tuple[str, list[str], list[str]]:
    """Strips wrapper decorations; returns (text, wrapped classes, wrapped modules)."""
    classes: list[str] = []
    modules: list[str] = []
    if _JUPYSQL in text:
        text = text.split(_JUPYSQL, 1)[1]
    text = text.strip()
    m = _WRAPPED.match(text)
    if m:
        classes.append(m.group("cls"))
        modules.append(m.group("mod"))
        text = text[m.end() :]
    text = without_sql_suffix(text)
    text = re.split(r"\n\(Background on this error at:", text, maxsplit=1)[0]
    text = re.sub(r"\nIf you need help solving this issue.*", "", text, flags=re.S)
    return text.strip(), classes, modules


_SPARK_NAMES = re.compile(r"`((?:[^`]|``)*)`((?:\.`(?:[^`]|``)*`)*)")
_SPARK_TAIL = re.compile(r"\s*SQLSTATE: \w+.*$")


def _spark_call(e: BaseException, method: str) -> object:
    """pyspark's error API (``getCondition``, ``getSqlState`` ...), or None for other errors."""
    f = getattr(e, method, None)
    if not callable(f) or not type(e).__module__.startswith("pyspark"):
        return None
    try:
        return f()
    except Exception:  # noqa: BLE001 - an error without that information
        return None


def _spark_names(text: str) -> str:
    r"""Spark's backquoted names as double-quoted dotted ones (``\`t\`.\`x\``` -> ``"t.x"``)."""

    def dotted(m: re.Match) -> str:
        parts = [m.group(1)] + re.findall(r"\.`((?:[^`]|``)*)`", m.group(2))
        return '"' + ".".join(p.replace("``", "`") for p in parts) + '"'

    return _SPARK_NAMES.sub(dotted, text)


def _spark_primary(info: ErrorInfo, condition: str) -> None:
    """Spark's first line without its ``[CONDITION]`` prefix and ``SQLSTATE`` tail, names
    double-quoted (so the name patterns and the engine's proposals read like other engines')."""
    first = info.primary
    if first.startswith("[" + condition + "]"):
        first = first[len(condition) + 2 :].strip()
    info.prefix = condition
    info.primary = _spark_names(_SPARK_TAIL.sub("", first)).strip()
    info.body = _spark_names(info.body)


def read_error(error: BaseException | str, message: str | None = None) -> ErrorInfo:
    """Reads ``error`` (an exception of any wrapping, or a message) into an :class:`ErrorInfo`;
    ``message``, when given, replaces the exception's text (its class names, SQLSTATE and
    driver attributes are still read).

    Example:
        >>> info = read_error('Binder Error: Referenced column "amout" not found in FROM clause!\\n'
        ...                   'Candidate bindings: "amount"')
        >>> info.prefix, info.primary
        ('Binder Error', 'Referenced column "amout" not found in FROM clause!')
    """
    info = ErrorInfo()
    classes: list[str] = []
    modules: list[str] = []
    spark_condition = ""
    spark_message = None
    if isinstance(error, BaseException):
        chain = _chain(error)
        for e in chain:
            classes.append(type(e).__name__)
            modules.append(type(e).__module__)
            # Spark: the error condition (its head also counts as a class), SQLSTATE, parameters
            condition = _spark_call(e, "getCondition") or _spark_call(e, "getErrorClass")
            if isinstance(condition, str) and condition and not spark_condition:
                spark_condition = condition
                classes.append(condition.split(".")[0])
                modules.append("spark")
                info.extra["condition"] = condition
                info.extra["parameters"] = _spark_call(e, "getMessageParameters") or {}
                state = _spark_call(e, "getSqlState")
                if isinstance(state, str) and _SQLSTATE.match(state):
                    info.sqlstate = state
                msg = _spark_call(e, "getMessage")
                spark_message = msg if isinstance(msg, str) and msg.strip() else None
            state = getattr(e, "sqlstate", None) or getattr(e, "pgcode", None)
            if isinstance(state, str) and _SQLSTATE.match(state) and info.sqlstate is None:
                info.sqlstate = state
            name = getattr(e, "sqlite_errorname", None)
            if isinstance(name, str):
                info.errorname = name
            diag = getattr(e, "diag", None)
            if diag is not None:
                hint = getattr(diag, "message_hint", None)
                if hint:
                    info.hint = str(hint)
                pos = getattr(diag, "statement_position", None)
                if pos:
                    try:
                        info.position = int(pos)
                    except (TypeError, ValueError):
                        pass
        text = str(chain[-1]) if str(chain[-1]).strip() else str(error)
        if _JUPYSQL in str(error) and not any(
            m.startswith(("sqlalchemy", "_duckdb")) for m in modules
        ):
            text = str(error)
        if spark_message is not None:
            text = spark_message
    else:
        text = str(error)
    if message is not None:
        text = message
    text, wrapped_classes, wrapped_modules = _clean(text)
    text = _mysql(info, error, text, modules + wrapped_modules)
    for c, m in zip(wrapped_classes, wrapped_modules, strict=True):
        if c not in classes:
            classes.append(c)
            modules.append(m)
    info.classes = tuple(classes)
    info.modules = tuple(modules)
    info.message = text
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
    if spark_condition:
        _spark_primary(info, spark_condition)
    return info


def _mysql(info: ErrorInfo, error: BaseException | str, text: str, modules: list[str]) -> str:
    """MySQL/MariaDB: the server's error number read from the exception or its text
    (``(1054, "Unknown column ...")``) sets a standard SQLSTATE (:mod:`.mysql_errors`); the
    message alone becomes the text. The server's number and SQLSTATE are kept in ``extra``."""
    from cadet_magic.diagnose.mysql_errors import ERRNO_SQLSTATE, is_mysql_driver, mysql_message

    errno = None
    if isinstance(error, BaseException):
        for e in _chain(error):
            args = getattr(e, "args", ())
            if is_mysql_driver(type(e).__module__) and args and type(args[0]) is int:
                errno = args[0]
                break
    errno, message = mysql_message(text, errno)
    if errno is None or not (message is not text or any(map(is_mysql_driver, modules))):
        return text
    info.extra["mysql_errno"] = errno
    if info.sqlstate:
        info.extra["mysql_sqlstate"] = info.sqlstate
    state = ERRNO_SQLSTATE.get(errno)
    if errno == 1292 and re.search(r"date|time", message, re.I):
        state = "22007"
    info.sqlstate = state
    return message
