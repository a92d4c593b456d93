"""SQL normalization for the unchanged-SQL guard, and readable diffs (stdlib + sqlglot).

Example:
    >>> normalize_sql("select  a from T ;") == normalize_sql("SELECT a\\nFROM T")
    True
    >>> same_sql("select  a from T ;", "SELECT a\\nFROM T"), same_sql("SELECT a FROM T", None)
    (True, False)
    >>> sql_diff("SELECT id FROM products", "SELECT product_id FROM products")
    "Changed: 'id' → 'product_id'"
"""

from __future__ import annotations

import difflib
import re

import sqlglot

from cadet_magic.sql.target import Target


def normalize_sql(sql: str, target: Target | None = None) -> str:
    """A canonical form of a query's text read in ``target``'s dialect (None: generic SQL):
    comments, case of keywords, whitespace and a trailing ``;`` ignored (a checked query's own
    form is :attr:`CheckedQuery.normalized`, made from its tree)."""
    text = sql.strip().rstrip(";").strip()
    dialect = target.dialect if target is not None else None
    try:
        trees = sqlglot.parse(text, read=dialect)
        if len(trees) == 1 and trees[0] is not None:
            return trees[0].sql(dialect=dialect, comments=False, normalize=True)
    except Exception:  # noqa: BLE001 - unparsable SQL still gets a textual normal form
        pass
    text = re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"\s+", " ", text).strip().lower()


def same_sql(a: str | None, b: str | None, target: Target | None = None) -> bool:
    """Whether ``a`` and ``b`` are the same query up to formatting (:func:`normalize_sql`);
    never when either is missing."""
    return bool(a and b) and normalize_sql(a or "", target) == normalize_sql(b or "", target)


def _words(sql: str) -> list[str]:
    return re.findall(
        r"'(?:[^']|'')*'|\"[^\"]*\"|\w+|<>|<=|>=|!=|\|\||::|[^\s\w]", sql.strip().rstrip(";")
    )


def sql_diff(
    before: str | None,
    after: str | None,
    max_changes: int = 4,
    target: Target | None = None,
    same: bool | None = None,
) -> str:
    """Describes what changed between two SQL texts (in ``target``'s dialect), with the
    actual snippets; ``same``: whether they are the same query up to formatting, when the
    caller knows (else :func:`same_sql` tells)."""
    if not before:
        return "First attempt"
    if not after:
        return "No SQL"
    if same if same is not None else same_sql(before, after, target):
        return "No functional changes (formatting only)"
    a, b = _words(before), _words(after)
    changes: list[str] = []
    matcher = difflib.SequenceMatcher(
        a=[w.lower() for w in a], b=[w.lower() for w in b], autojunk=False
    )
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = " ".join(a[i1:i2]), " ".join(b[j1:j2])
        if op == "replace":
            changes.append(f"Changed: '{old}' → '{new}'")
        elif op == "delete":
            changes.append(f"Removed: '{old}'")
        elif op == "insert":
            changes.append(f"Added: '{new}'")
    if not changes:
        return "Only letter case changed"
    text = ", ".join(changes[:max_changes])
    if len(changes) > max_changes:
        text += f" (and {len(changes) - max_changes} more)"
    return text
