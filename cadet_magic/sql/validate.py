"""The SQL safety check (portable: stdlib + sqlglot).

PLACEHOLDER-LEVEL: a first version sufficient for the agent; the safety issue
replaces it with the full check.

Example:
    >>> v = validate_sql("SELECT name FROM singer;", "sqlite", tables=["singer"])
    >>> v.ok, v.issues
    (True, [])
    >>> validate_sql("DROP TABLE singer", "sqlite").issues[0].code
    'forbidden_statement'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp


@dataclass(frozen=True)
class Issue:
    """One reason the check refused a query: a short ``code`` and an actionable ``message``."""

    code: str
    message: str


@dataclass
class Validation:
    """The verdict: ``ok``, the ``issues`` found and the ``sql`` to run."""

    ok: bool
    issues: list[Issue] = field(default_factory=list)
    sql: str = ""


_READ_ONLY = (exp.Select, exp.Union, exp.Intersect, exp.Except)


def validate_sql(sql: str, dialect: str | None, tables: Iterable[str] | None = None) -> Validation:
    """Checks that ``sql`` is one read-only statement over the allowed tables."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except sqlglot.errors.ParseError as e:
        return Validation(False, [Issue("parse_error", f"The SQL does not parse: {e}")], sql)
    if len(statements) != 1:
        return Validation(
            False,
            [
                Issue(
                    "multiple_statements",
                    "Write exactly one SELECT statement (use a CTE for steps).",
                )
            ],
            sql,
        )
    tree = statements[0]
    if not isinstance(tree, _READ_ONLY):
        return Validation(
            False,
            [
                Issue(
                    "forbidden_statement",
                    f"Only read-only SELECT queries are allowed, not {tree.key.upper()}.",
                )
            ],
            sql,
        )
    if tables is not None:
        allowed = {t.lower() for t in tables}
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        unknown = sorted(
            {
                t.name
                for t in tree.find_all(exp.Table)
                if t.name and t.name.lower() not in allowed | ctes
            }
        )
        if unknown:
            names = ", ".join(sorted(tables))
            return Validation(
                False,
                [
                    Issue(
                        "unknown_table",
                        f"Unknown table {', '.join(repr(u) for u in unknown)}; tables you may use: {names}",
                    )
                ],
                sql,
            )
    return Validation(True, [], sql.strip().rstrip(";").strip())
