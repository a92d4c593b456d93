"""Reading an engine's error through its :class:`~cadet_magic.db.error_table.ErrorTable`: the
words without what libraries wrapped them in, naming what the model wrote, taken apart (first
line, the engine's echo of the statement and its caret, its hint), then the table's rows
applied: the kind, the name or value the error is about, the names the engine proposes and
what else it states. Also where each engine's table is found (:func:`table_for`, which an
engine added outside this package extends with :func:`register`). Stdlib only.

Example:
    >>> from cadet_magic.errors import EngineError
    >>> e = read(EngineError("(sqlite3.OperationalError) no such table: ordrs\\n[SQL: SELECT 1]"),
    ...          table_for("sqlite"))
    >>> e.kind.value, e.identifier.text, e.kinds, e.text
    ('table_not_found', 'ordrs', ('OperationalError',), 'no such table: ordrs')
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping

from cadet_magic.db.error_table import (
    KIND_ORDER,
    STANDARD,
    ErrorTable,
    Name,
    Reading,
    Rule,
    Said,
    Value,
    combine,
)
from cadet_magic.errors import EngineError, EngineText, ErrorKind, Fact

__all__ = [
    "ANY",
    "ENGINES",
    "JUPYSQL_MARK",
    "as_written",
    "read",
    "register",
    "table_for",
    "unwrap",
]


#: Each engine's table, where its module keeps it (imported when an error is first read).
ENGINES: dict[str, str] = {
    "duckdb": "cadet_magic.db.duckdb_errors:DUCKDB",
    "sqlite": "cadet_magic.db.sqlite_errors:SQLITE",
    "postgres": "cadet_magic.db.postgres:POSTGRES",
    "mysql": "cadet_magic.db.mysql_errors:MYSQL",
    "spark": "cadet_magic.db.spark_errors:SPARK",
}
_LOADED: dict[str, ErrorTable] = {}


def register(table: ErrorTable) -> None:
    """Makes ``table`` the one that reads the errors of the engine it names (an engine added
    outside this package registers its table so)."""
    _LOADED[table.engine] = table
    ENGINES.setdefault(table.engine, "")
    _LOADED.pop(ANY, None)


#: The name under which every known table reads an error whose engine is not known.
ANY = "any"


def engine_key(engine: str | None) -> str:
    """The name an engine's table is registered under (a dialect or driver name accepted).

    Example:
        >>> engine_key("PostgreSQL"), engine_key("mariadb"), engine_key(None)
        ('postgres', 'mysql', 'any')
    """
    from cadet_magic.sql.dialect import dialect_key

    key = dialect_key(engine)
    return key if key in ENGINES else ANY


def table_for(engine: str | None) -> ErrorTable:
    """The table that reads ``engine``'s errors; every known table at once when the engine is
    not known (:data:`ANY`).

    Example:
        >>> table_for("postgresql").engine, table_for("nonsense").engine
        ('postgres', 'any')
    """
    key = engine_key(engine)
    if key not in _LOADED:
        if key == ANY:
            _LOADED[ANY] = combine(ANY, [table_for(name) for name in ENGINES])
        else:
            module, _, name = ENGINES[key].partition(":")
            _LOADED[key] = getattr(importlib.import_module(module), name)
    return _LOADED[key]


_WRAPPED = re.compile(r"^\s*\((?P<mod>[\w.]+)\.(?P<cls>\w+)\)\s*", re.S)
#: jupysql's line before the driver's own message, in the errors it raises.
JUPYSQL_MARK = "Original error message from DB driver:"
_SQL_SUFFIX = "[SQL: "
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'")


def unwrap(text: str) -> tuple[str, list[str]]:
    """The engine's message without what libraries wrapped it in (jupysql's preamble,
    SQLAlchemy's ``(module.Class)`` and ``[SQL: ...]``, their help links), and the class a
    wrapper names.

    Example:
        >>> unwrap("(sqlite3.OperationalError) no such column: x\\n[SQL: SELECT x]")
        ('no such column: x', ['OperationalError'])
    """
    classes: list[str] = []
    if JUPYSQL_MARK in text:
        text = text.split(JUPYSQL_MARK, 1)[1]
    text = text.strip()
    m = _WRAPPED.match(text)
    if m:
        classes.append(m.group("cls"))
        text = text[m.end() :]
    text = text.split(_SQL_SUFFIX, 1)[0].strip()
    text = re.split(r"\n\(Background on this error at:", text, maxsplit=1)[0]
    text = re.sub(r"\nIf you need help solving this issue.*", "", text, flags=re.S)
    return text.strip(), classes


def as_written(
    text: str, table: ErrorTable, renamed: Mapping[str, str], written: str | None
) -> str:
    """``text`` naming what the model wrote, not what ran: the functions the check wrote in
    the dialect's own spelling (``renamed``: ``{RUN_AS: WRITTEN}``) named as written, and the
    engine's echo of a statement line the model did not write (with its caret) left out.

    Example:
        >>> pg = ErrorTable("pg", echoes=(r"^LINE \\d+: ?(?P<text>.*)$",))
        >>> as_written("boom\\nLINE 1: SELECT CAST(x AS INT)\\n        ^", pg, {}, "SELECT x::int")
        'boom'
        >>> as_written("no such function: PERCENTILE_CONT", pg, {"PERCENTILE_CONT": "MEDIAN"}, None)
        'no such function: MEDIAN'
    """
    if not text:
        return text
    from cadet_magic.sql.validate import name_as_written

    text = name_as_written(text, renamed)
    if not written:
        return text
    flat = re.sub(r"\s+", " ", written).lower()
    out: list[str] = []
    skip_caret = False
    for line in text.split("\n"):
        m = _echo(line, table)
        if m:
            echoed = re.sub(r"\s+", " ", m.group("text")).strip().strip(".").lower()
            skip_caret = bool(echoed) and not all(p.strip() in flat for p in echoed.split("..."))
            if not skip_caret:
                out.append(line)
            continue
        if skip_caret and line.strip() and set(line.strip()) <= {"^"}:
            skip_caret = False
            continue
        skip_caret = False
        out.append(line)
    return "\n".join(out).rstrip()


def _echo(line: str, table: ErrorTable) -> re.Match | None:
    for pattern in table.echoes:
        m = re.match(pattern, line)
        if m:
            return m
    return None


def _layout(r: Reading, text: str, table: ErrorTable) -> None:
    """The body without the statement's echo (whose caret column is kept) and the hint lines,
    the first line without the engine's class prefix."""
    body: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        lm = _echo(line, table)
        if lm:
            if i + 1 < len(lines) and "^" in lines[i + 1]:
                prefix_len = len(line) - len(lm.group("text"))
                r.caret = lines[i + 1].index("^") - prefix_len + 1
            continue
        if line.strip() and set(line.strip()) <= {"^"}:
            continue
        mark = next((h for h in table.hint_lines if line.startswith(h)), None)
        if mark is not None:
            r.hint = r.hint or line[len(mark) :].strip()
            continue
        body.append(line)
    r.body = "\n".join(body).strip()
    first = next((b for b in body if b.strip()), "")
    for pattern in table.prefixes:
        pm = re.match(pattern, first)
        if pm and pm.group("prefix") != "Error":
            first = first[pm.end() :]
            break
    r.primary = first.strip()


def _names_the_query(r: Reading, text: str, naming: tuple[str, ...]) -> bool:
    """Whether the error is one whose quoted names are the query's (see
    :attr:`ErrorTable.naming`): by its class, or the class prefix of its first line."""
    if not naming:
        return True
    first = text.lstrip().split("\n", 1)[0]
    return any(c in naming for c in r.classes) or any(first.startswith(f"{n}:") for n in naming)


def _kind(r: Reading, rules: tuple[Rule, ...]) -> ErrorKind:
    for kind in KIND_ORDER:
        if any(rule.kind is kind and rule.matches(r) for rule in rules):
            return kind
    return ErrorKind.unknown


def _first(kind: ErrorKind, names: tuple[Name, ...], text: str) -> EngineText | None:
    for row in names:
        if row.kind is kind:
            m = re.search(row.pattern, text, re.I)
            if m:
                return EngineText(row.form.format(*m.groups()).strip().rstrip("!.,;:"))
    return None


def _value(values: tuple[Value, ...], text: str) -> EngineText | None:
    for row in values:
        m = re.search(row.pattern, text, re.I)
        if m:
            return EngineText(row.form.format(*m.groups())[:80])
    return None


def _proposed(r: Reading, table: ErrorTable) -> tuple[EngineText, ...]:
    """The names the engine proposes, in its order."""
    texts: list[str] = []
    for marker in table.proposals:
        for part in r.body.split(marker)[1:]:
            texts.append(part.split("\n\n")[0] if marker != "(use:" else part.split(")")[0])
    if r.hint and any(m in r.hint for m in table.hint_proposals):
        texts.append(r.hint)
    found: list[str] = []
    for text in texts:
        for m in _QUOTED.finditer(text):
            name = (m.group(1) or m.group(2)).strip()
            if name and name not in found:
                found.append(name)
    return tuple(EngineText(n) for n in found)


def _facts(r: Reading, kind: ErrorKind, said: tuple[Said, ...]) -> frozenset[Fact]:
    out = set()
    for row in said:
        where = r.primary if row.where == "primary" else r.message
        if (not row.kinds or kind in row.kinds) and re.search(row.pattern, where, re.I):
            out.add(row.fact)
    return frozenset(out)


def read(
    error: EngineError,
    table: ErrorTable,
    *,
    renamed: Mapping[str, str] | None = None,
    written: str | None = None,
) -> EngineError:
    """``error`` (its words, classes, codes and SQLSTATE as the engine's reader found them)
    read through ``table`` (and :data:`STANDARD`): its kind, the name, token or value it is
    about, the names the engine proposes and what else it states, with its words naming what
    the model wrote (``renamed`` functions; no echo of a line the model's ``written`` query
    lacks).

    Example:
        >>> from cadet_magic.db.postgres import POSTGRES
        >>> e = read(EngineError('column "amout" does not exist\\nLINE 1: SELECT amout FROM t\\n'
        ...                      '               ^\\nHINT:  Perhaps you meant to reference the '
        ...                      'column "t.amount".'), POSTGRES, written="SELECT amout FROM t")
        >>> e.kind.value, e.identifier.text, e.caret, [c.text for c in e.candidates]
        ('column_not_found', 'amout', 8, ['t.amount'])
    """
    naming = table.naming
    if table.standard:
        table = combine(table.engine, [table, STANDARD])
    renamed = renamed or {}
    text, wrapped = unwrap(error.text)
    text = as_written(text, table, renamed, written)
    r = Reading(
        classes=tuple(dict.fromkeys([*error.kinds, *wrapped])),
        sqlstate=error.sqlstate,
        code=error.code,
        hint=error.suggestion,
        message=text,
        details=error.details,
    )
    _layout(r, text, table)
    kind = _kind(r, table.rules)
    names = _names_the_query(r, text, naming)
    named = _first(kind, table.names, r.primary) if names else None
    return error.with_fields(
        message=as_written(error.message, table, renamed, written),
        plain=text,
        kinds=r.classes,
        suggestion=r.hint,
        kind=kind,
        primary=r.primary,
        identifier=named if kind is not ErrorKind.syntax_error else None,
        near=named if kind is ErrorKind.syntax_error else None,
        value=_value(table.values, r.primary)
        if kind in (ErrorKind.type_mismatch, ErrorKind.datetime_format)
        else None,
        candidates=_proposed(r, table) if names else (),
        caret=r.caret,
        facts=_facts(r, kind, table.facts),
        engine=table.engine,
    )
