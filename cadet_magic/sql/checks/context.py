"""What every tree rule shares: the issue type, the context a check runs in, sqlglot helpers.

Example:
    >>> from cadet_magic.sql.target import Target
    >>> context = Context(Target.named("duckdb").with_names(["orders"]))
    >>> context.add("row_lock", "No locks.")
    >>> context.add("row_lock", "No locks.")  # the same message once
    >>> context.issues
    [Issue(code='row_lock', message='No locks.')]
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from cadet_magic.sql.dialect import quiet_sqlglot as quiet_sqlglot  # re-exported for the rules
from cadet_magic.sql.target import Target

#: The wording every refusal of a statement kind ends with.
QUERY_HINT = "Write one read-only query: SELECT ..., WITH ... SELECT ..., or VALUES ...."


@dataclass(frozen=True)
class Issue:
    """One reason the check refused a query: a short ``code`` and an actionable ``message``."""

    code: str
    message: str


def classes(*names: str) -> tuple[type[exp.Expression], ...]:
    """The sqlglot expression classes with these names that this sqlglot version has.

    >>> [c.__name__ for c in classes("Select", "NoSuchNode")]
    ['Select']
    """
    return tuple(getattr(exp, n) for n in names if isinstance(getattr(exp, n, None), type))


class Context:
    """One check of one statement against its :class:`Target` (``read``: its dialect's
    sqlglot name; ``functions``: its catalog; ``allowed``: its tables, lower-cased, None for
    any) and the issues found so far (in tree order, at most one per distinct message)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.read = target.read
        self.functions = target.functions
        self.allowed: set[str] | None = None
        self.allowed_display: list[str] = []
        tables = target.tables
        if tables is not None:
            self.allowed_display = sorted({str(t) for t in tables}, key=str.lower)
            self.allowed = {t.lower() for t in self.allowed_display}
        self.issues: list[Issue] = []
        #: Table names not on the allow-list, as written, in order of appearance.
        self.unknown: list[str] = []

    def add(self, code: str, message: str) -> None:
        if all(i.message != message for i in self.issues):
            self.issues.append(Issue(code, message))
