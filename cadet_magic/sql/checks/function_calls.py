"""Function calls: the fixed rules (files, network, settings, secrets, sleeping, dynamic SQL),
table functions in ``FROM``, and the engine's own catalog of allowed functions.

Example:
    >>> import sqlglot
    >>> from cadet_magic.sql.checks import Context, Target, check_tree
    >>> tree = sqlglot.parse_one("SELECT * FROM read_csv('/etc/passwd')", read="duckdb")
    >>> issue = check_tree(tree, Context(Target.named("duckdb")))[0]
    >>> issue.code
    'file_access'
    >>> forbidden_function({"pg_sleep"})
    ('forbidden_function', 'sleeps')
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from cadet_magic.sql import rules
from cadet_magic.sql.checks.context import Context, classes, quiet_sqlglot
from cadet_magic.sql.functions import catalog_refusal, never_reason
from cadet_magic.sql.target import Target

NODES = (exp.Func,)


def function_names(node: exp.Func) -> set[str]:
    """Every lower-case name under which ``node`` may be called."""
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        return {node.name.lower()}
    return {n.lower() for n in type(node).sql_names()} | {node.key}


def forbidden_function(names: set[str]) -> tuple[str, str] | None:
    """``(code, reason)`` when a function with one of ``names`` is refused, else None."""
    for name in sorted(names):
        if name in rules.FILE_FUNCTIONS or name.startswith(rules.FILE_PREFIXES):
            return "file_access", "reads or writes files or the network"
        if name in rules.OTHER_FUNCTIONS:
            return "forbidden_function", rules.OTHER_FUNCTIONS[name]
        for prefix, reason in rules.OTHER_PREFIXES.items():
            if name.startswith(prefix):
                return "forbidden_function", reason
    return None


_FORBIDDEN_CLASSES: dict[type, tuple[str, str]] = {
    cls: verdict
    for name, verdict in (
        ("ReadCSV", ("file_access", "reads files")),
        ("ReadParquet", ("file_access", "reads files")),
        ("ToFile", ("file_access", "reads staged files")),
        ("NextValueFor", ("forbidden_function", "advances a sequence (a write)")),
        ("Secret", ("forbidden_function", "exposes secrets")),
    )
    for cls in classes(name)
}


_SQL_NAMES: dict[type, frozenset[str]] = {}


def _sql_names(cls: type[exp.Func]) -> frozenset[str]:
    """The lower-case names sqlglot reads and writes a function class under (memoized)."""
    names = _SQL_NAMES.get(cls)
    if names is None:
        names = _SQL_NAMES[cls] = frozenset(n.lower() for n in cls.sql_names())
    return names


_CALL_HEAD = re.compile(r"\s*([A-Za-z_][\w$]*)\s*\(")
_RENAMED: dict[tuple[str | None, type], bool] = {}
#: Function classes sqlglot writes as grammar (keywords and operators), never as a named call.
_GRAMMAR = classes("Connector", "Case", "If", "Exists", "Cast", "Binary", "Unary")


def _renamed_by(target: Target, cls: type[exp.Func]) -> bool:
    """Whether the target's dialect writes ``cls`` with its own generator code (memoized), so
    the name in the SQL to run may differ from the names sqlglot reads it under."""
    key = (target.read, cls)
    found = _RENAMED.get(key)
    if found is None:
        generator = target.dialect.generator_class
        special = cls in generator.TRANSFORMS or hasattr(generator, f"{cls.key}_sql")
        found = _RENAMED[key] = special and not issubclass(cls, _GRAMMAR)
    return found


def _display_name(node: exp.Func) -> str:
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        return node.name
    return type(node).sql_names()[0].lower()


_ROW_SOURCES: tuple[type[exp.Expression], ...] = classes(
    "Table", "From", "Join", "Lateral", "TableFromRows"
)


def _is_table_function_position(node: exp.Func) -> bool:
    """True for a function used as a row source: ``FROM f(...)``, ``JOIN f(...)``, ``LATERAL``."""
    child: Any = node
    parent = node.parent
    if isinstance(parent, exp.Dot):
        child, parent = parent, parent.parent
    return isinstance(parent, _ROW_SOURCES) and child.arg_key == "this"


def check(node: Any, context: Context) -> None:
    names = function_names(node)
    verdict = _FORBIDDEN_CLASSES.get(type(node)) or forbidden_function(names)
    shown = _display_name(node)
    if verdict is not None:
        code, reason = verdict
        never = next(filter(None, map(never_reason, sorted(names))), None)
        instead = (
            f"{never[1]} instead"
            if never
            else "query only the database's tables with ordinary functions"
        )
        context.add(code, f"The function {shown}() is not allowed: it {reason}; {instead}.")
    elif _is_table_function_position(node) and not names & rules.SAFE_TABLE_FUNCTIONS:
        context.add(
            "forbidden_function",
            f"The table function {shown}() is not allowed in FROM; read from the "
            "database's tables (value generators such as range, generate_series and "
            "unnest are fine).",
        )
    elif context.functions is not None:
        _catalog(node, shown, context)


def _catalog(node: exp.Func, shown: str, context: Context) -> None:
    """The engine's own allow-list: a call by name must be on it; sqlglot's built-in
    function classes whose names the engine does not list are SQL syntax (CAST, COALESCE,
    EXTRACT ...) and checked by their parts."""
    catalog = context.functions
    assert catalog is not None
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        verdict = catalog_refusal(node.name, catalog)
    else:
        names = _sql_names(type(node))
        if names & catalog.known and not names & catalog.allowed:
            verdict = catalog_refusal(shown, catalog)
        else:
            written = _written_name(node, context.target)
            if written is None or written in catalog.allowed:
                return
            if written not in catalog.known and never_reason(written) is None:
                return  # syntax (CAST, COALESCE ...), or the engine's own error later
            verdict = catalog_refusal(written, catalog)
    if verdict is not None:
        context.add(*verdict)


def _written_name(node: exp.Func, target: Target) -> str | None:
    """The function name the SQL to run calls for ``node``, where the dialect writes the
    class its own way (``CURRENT_VERSION`` as SQLite's ``SQLITE_VERSION()``); else None."""
    if not _renamed_by(target, type(node)):
        return None
    try:
        with quiet_sqlglot():
            text = node.sql(dialect=target.dialect, comments=False)
    except Exception:  # noqa: BLE001 - not generated: the whole query fails later
        return None
    head = _CALL_HEAD.match(text)
    return head.group(1).lower() if head else None


def finish(context: Context) -> None:
    """Nothing is left to word after the walk."""
