"""Table references: files and URLs, system tables, and the allow-list of the tables the
question may read (CTE names are told apart by scope); unknown tables are worded last, with the
closest allowed name.

Example:
    >>> import sqlglot
    >>> from cadet_magic.sql.checks import Context, Target, check_tree
    >>> tree = sqlglot.parse_one("SELECT * FROM orderz", read="duckdb")
    >>> print(check_tree(tree, Context(Target.named("duckdb").with_names(["orders"])))[0].message)
    ... # doctest: +NORMALIZE_WHITESPACE
    Unknown table 'orderz'; tables you may use: orders. Did you mean 'orders' instead of
    'orderz'? Use only these tables; define helper results as CTEs (WITH name AS (...)).
"""

from __future__ import annotations

import difflib
from typing import Any

from sqlglot import exp

from cadet_magic.sql import rules
from cadet_magic.sql.checks.context import Context

NODES = (exp.Table,)


def _ctes_in_scope(node: exp.Expression) -> set[str]:
    """Lower-case names of the CTEs a table reference at ``node`` can see."""
    names: set[str] = set()
    child: Any = node
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.With):
            ctes = parent.expressions
            if parent.args.get("recursive"):
                names.update(c.alias_or_name.lower() for c in ctes)
            else:
                for cte in ctes:
                    if cte is child:
                        break
                    names.add(cte.alias_or_name.lower())
        else:
            with_ = parent.args.get("with_") or parent.args.get("with")
            if isinstance(with_, exp.With) and with_ is not child:
                names.update(c.alias_or_name.lower() for c in with_.expressions)
        child, parent = parent, parent.parent
    return names


def _is_dual(node: Any, context: Context) -> bool:
    """MySQL's ``FROM DUAL`` (unquoted, unqualified, no alias), which names no table."""
    return (
        context.read == "mysql"
        and node.name.lower() == "dual"
        and not node.args.get("db")
        and not node.this.quoted
        and not node.alias
    )


def _looks_like_path(name: str) -> bool:
    return any(ch in name for ch in "/\\:*?~") or "." in name


def check(node: Any, context: Context) -> None:
    if node.arg_key == "indexed" or node.this is None or isinstance(node.this, exp.Func):
        return  # an index hint, ROWS FROM (...) or a table function: checked on their own
    if not isinstance(node.this, exp.Identifier):
        text = node.this.sql(dialect=context.target.dialect)
        if not isinstance(node.this, exp.Placeholder) and (
            text.startswith("@") or _looks_like_path(text)
        ):
            context.add(
                "file_access",
                f"'{text}' reads staged or external files, which is not allowed; read "
                "from the database's tables.",
            )
        else:
            context.add(
                "table_reference",
                f"'{text}' is not a table name; name the table directly (one of the "
                "allowed tables, or a CTE).",
            )
        return
    name = node.name
    lowered = name.lower()
    qualified = ".".join(p.name.lower() for p in node.parts)
    if not node.args.get("db") and lowered in _ctes_in_scope(node):
        return
    if _is_dual(node, context):
        return  # MySQL's FROM DUAL: no table at all
    if _looks_like_path(name):
        context.add(
            "file_access",
            f"'{name}' looks like a file or URL, and scanning files is not allowed; "
            "read from the database's tables.",
        )
        return
    if lowered in rules.SENSITIVE_TABLES or qualified in rules.SENSITIVE_TABLES:
        context.add(
            "system_table",
            f"The system table {qualified} exposes secrets, settings or other sessions "
            "and may not be read; query the database's own tables.",
        )
        return
    if context.allowed is None or _allowed(node, lowered, qualified, context):
        return
    shown = ".".join(p.name for p in node.parts)
    if shown not in context.unknown:
        context.unknown.append(shown)


def _allowed(node: exp.Table, lowered: str, qualified: str, context: Context) -> bool:
    assert context.allowed is not None
    if qualified in context.allowed:
        return True
    qualifiers = [p.name.lower() for p in node.parts[:-1]]
    if len(qualifiers) > 1 or (qualifiers and qualifiers[0] not in rules.DEFAULT_SCHEMAS):
        return False
    return lowered in context.allowed or any(
        f"{schema}.{lowered}" in context.allowed for schema in rules.DEFAULT_SCHEMAS
    )


def finish(context: Context) -> None:
    """Words the unknown tables, if any, as one issue."""
    if not context.unknown:
        return
    listed = repr(context.unknown[0])
    if len(context.unknown) > 1:
        listed += "; also unknown: " + ", ".join(repr(u) for u in context.unknown[1:])
    shown = ", ".join(context.allowed_display[:60]) or "(none)"
    if len(context.allowed_display) > 60:
        shown += f" (and {len(context.allowed_display) - 60} more)"
    message = f"Unknown table {listed}; tables you may use: {shown}."
    for u in context.unknown:
        close = difflib.get_close_matches(u.split(".")[-1], context.allowed_display, n=1)
        if close:
            message += f" Did you mean '{close[0]}' instead of '{u}'?"
    message += " Use only these tables; define helper results as CTEs (WITH name AS (...))."
    context.add("unknown_table", message)
