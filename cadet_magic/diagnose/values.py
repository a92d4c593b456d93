"""What an executed query filters on, and which stored values are close to a missing one
(stdlib + sqlglot): the result check's reading of the tree (:mod:`.result_check`).

A comparison of a column with a string literal (``=``, ``IN``, ``LIKE``) is a :class:`Filter`,
its column's table resolved in the comparison's own scope; :func:`close_values` and
:func:`close_to_pattern` name the stored values a missing one was likely meant to be (another
case, surrounding spaces, a slip in spelling).

Example:
    >>> from cadet_magic.schema.model import Column, Schema, Table
    >>> s = Schema((Table("country", (Column("id", "INT"), Column("name", "TEXT"))),))
    >>> [(f.table, f.column, f.value, f.op) for f in
    ...  literal_filters("SELECT id FROM country AS c WHERE c.name = 'France'", "sqlite", s)]
    [('country', 'name', 'France', '=')]
    >>> close_values("France", ["france", "Spain", "Germany"])
    ('france',)
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from cadet_magic.schema.model import Column, Schema, Table
from cadet_magic.sql.like import like_match
from cadet_magic.sql.query import checked

#: Close values named in the feedback at most.
MAX_CLOSE = 3
#: How similar (difflib ratio, case ignored) a value must be to count as a spelling slip.
CUTOFF = 0.8
#: Literals longer than this are not checked (free-text searches, not values).
MAX_VALUE_CHARS = 200

_TEXT_TYPES = ("char", "text", "string", "clob", "enum", "citext", "name")


@dataclass(frozen=True)
class Filter:
    """A comparison of a table's column with a string literal in the executed query.

    ``table`` and ``column`` are the catalog's names; ``db`` the table's schema (None when
    unqualified); ``op`` is ``"="``, ``"IN"`` or ``"LIKE"`` (``"ILIKE"`` where written so).
    """

    table: str
    db: str | None
    column: str
    value: str
    op: str

    @property
    def where(self) -> str:
        """``table.column`` for messages."""
        return f"{self.table}.{self.column}"

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.table, self.column, self.value, self.op)


# --------------------------------------------------------------------------- the tree


def _is_text(column: Column) -> bool:
    t = column.type.lower()
    return not t or any(k in t for k in _TEXT_TYPES)


def _string(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    return None


def _comparisons(tree: Any) -> Iterable[tuple[exp.Column, str, str]]:
    """(column, value, op) for each column-with-string-literal comparison in ``tree``."""
    for node in tree.find_all(exp.EQ, exp.In, exp.Like, exp.ILike, bfs=False):
        if isinstance(node.parent, exp.Escape):
            continue  # LIKE ... ESCAPE: leave it
        if isinstance(node, exp.In):
            if isinstance(node.this, exp.Column) and not node.args.get("query"):
                for item in node.expressions:
                    value = _string(item)
                    if value is not None:
                        yield node.this, value, "IN"
            continue
        left, right = node.this, node.expression
        if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
            if isinstance(node, exp.EQ):
                left, right = right, left
            else:
                continue
        value = _string(right) if isinstance(left, exp.Column) else None
        if value is None:
            continue
        op = "=" if isinstance(node, exp.EQ) else "ILIKE" if isinstance(node, exp.ILike) else "LIKE"
        yield left, value, op


def find_column(table: Table, name: str) -> Column | None:
    for c in table.columns:
        if c.name == name:
            return c
    lowered = name.lower()
    for c in table.columns:
        if c.name.lower() == lowered:
            return c
    return None


def _resolve(
    column: exp.Column, scopes: dict[int, Any], schema: Schema
) -> tuple[Table, Column] | None:
    """The catalog table and column a column reference reads, resolved in its own scope (and
    the enclosing ones, for a correlated reference); None when not a plain table's column."""
    node: Any = column.parent
    scope = None
    while node is not None and scope is None:
        scope = scopes.get(id(node))
        node = node.parent
    qualifier = column.table
    while scope is not None:
        tables: list[Table] = []
        for name, source in scope.sources.items():
            if qualifier and name.lower() != qualifier.lower():
                continue
            if not isinstance(source, exp.Table):
                if qualifier:
                    return None  # a derived table or CTE: not a catalog column
                continue
            table = schema.table(source.name)
            if table is not None:
                tables.append(table)
        found = [(t, c) for t in tables if (c := find_column(t, column.name)) is not None]
        if len(found) == 1:
            return found[0]
        if len(found) > 1 or qualifier and tables:
            return None  # ambiguous, or the qualifier's table lacks it
        scope = scope.parent
    return None


def literal_filters(sql: str, dialect: str | None, schema: Schema) -> list[Filter]:
    """Every comparison of a text column of a catalog table with a string literal in ``sql``.

    Example:
        >>> from cadet_magic.schema.model import Column, Schema, Table
        >>> s = Schema((Table("t", (Column("k", "TEXT"), Column("n", "INT"))),
        ...             Table("u", (Column("k", "TEXT"), Column("m", "TEXT")))))
        >>> sql = ("SELECT * FROM t JOIN u AS x ON t.k = x.k WHERE m IN ('a', 'b') "
        ...        "AND x.k LIKE 'c%' AND n = '3' AND 'd' = t.k")
        >>> [(f.where, f.value, f.op) for f in literal_filters(sql, "duckdb", s)]
        [('u.m', 'a', 'IN'), ('u.m', 'b', 'IN'), ('u.k', 'c%', 'LIKE'), ('t.k', 'd', '=')]
    """
    from sqlglot.optimizer.scope import traverse_scope

    try:
        query = checked(sql, dialect)
        tree = query.tree if query is not None else sqlglot.parse_one(sql, read=dialect)
        scopes = {id(s.expression): s for s in traverse_scope(tree)}
    except Exception:  # noqa: BLE001 - a tree we cannot walk is simply not checked
        return []
    out: dict[tuple, Filter] = {}
    for column, value, op in _comparisons(tree):
        if not value.strip("%_ ") or len(value) > MAX_VALUE_CHARS:
            continue
        resolved = _resolve(column, scopes, schema)
        if resolved is None or not _is_text(resolved[1]):
            continue
        table, col = resolved
        f = Filter(table.name, table.schema, col.name, value, op)
        out.setdefault(f.key, f)
    return list(out.values())


# --------------------------------------------------------------------------- close values


def _norm(value: str) -> str:
    return " ".join(value.split()).casefold()


def close_values(
    value: str, candidates: Iterable[object], limit: int = MAX_CLOSE, cutoff: float = CUTOFF
) -> tuple[str, ...]:
    """The stored values close to ``value``: the same up to case and spaces first, then
    spelling slips (difflib, case ignored), most similar first.

    Example:
        >>> close_values(" paris", ["Paris", "PARIS", "Lyon"])
        ('Paris', 'PARIS')
        >>> close_values("Jonh Smith", ["John Smith", "Jane Smyth", "Bob"])
        ('John Smith',)
        >>> close_values("Kaubl", ["Kabul", "Kandahar"])
        ('Kabul',)
        >>> close_values("x", ["y"])
        ()
    """
    texts = list(dict.fromkeys(c for c in candidates if isinstance(c, str) and c != value))
    want = _norm(value)
    same = [c for c in texts if _norm(c) == want]
    if same:
        return tuple(same[:limit])
    by_norm: dict[str, list[str]] = {}
    for c in texts:
        by_norm.setdefault(_norm(c), []).append(c)
    near = difflib.get_close_matches(want, list(by_norm), n=limit, cutoff=cutoff)
    if not near and len(want) >= 4:  # one slip in a short word: difflib's ratio is low
        near = [n for n in by_norm if one_slip(want, n)][:limit]
    return tuple(v for n in near for v in by_norm[n])[:limit]


def _loose(text: str) -> str:
    """Text compared "up to case and spacing": case folded, whitespace removed."""
    return "".join(text.casefold().split())


def one_slip(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with one letter dropped, added, replaced or swapped with the next.

    Example:
        >>> [one_slip("volvo", w) for w in ("vlovo", "volo", "voolvo", "volvi", "ovlov")]
        [True, True, True, True, False]
    """
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        if a[i + 1 :] == b[i + 1 :]:
            return True  # replaced
        return a[i + 2 :] == b[i + 2 :] and a[i : i + 2] == b[i : i + 2][::-1]  # swapped
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[i + 1 :] == shorter[i:]  # dropped or added


def _similar(a: str, b: str, cutoff: float) -> float:
    """How similar two normalised strings are: difflib's ratio, or ``cutoff`` for one slip
    in a word of four letters or more (where one slip lowers the ratio most)."""
    ratio = difflib.SequenceMatcher(None, a, b, False).ratio()
    if ratio < cutoff and len(a) >= 4 and one_slip(a, b):
        return cutoff
    return ratio


def _fuzzy_contains(core: str, value: str, cutoff: float) -> float:
    """How well ``core`` matches a stretch of ``value`` (case and spacing ignored): the best
    similarity of the stretches aligned on a matching block; 0 below ``cutoff``.

    Example:
        >>> round(_fuzzy_contains("compter", "Computer Science", 0.8), 2)
        0.93
        >>> _fuzzy_contains("Norht", "NorthDakota", 0.8) >= 0.8
        True
    """
    core, value = _norm(core), _norm(value)
    n = len(core)
    blocks = difflib.SequenceMatcher(None, core, value, False).get_matching_blocks()
    best = 0.0
    for start in {max(0, blk.b - blk.a) for blk in blocks if blk.size}:
        for width in (n - 1, n, n + 1):
            if width >= 1 and start + width <= len(value):
                best = max(best, _similar(core, value[start : start + width], cutoff))
    return best if best >= cutoff else 0.0


def close_to_pattern(
    pattern: str,
    candidates: Iterable[object],
    limit: int = MAX_CLOSE,
    cutoff: float = CUTOFF,
    expired: Callable[[], bool] = lambda: False,
) -> tuple[str, ...]:
    """Stored values a LIKE pattern would match up to case and spacing; failing those, for a
    pattern with one run of plain text (``%text%``, ``text%``...), values holding a stretch
    close to that text (a spelling slip). The pattern is matched in linear time
    (:func:`cadet_magic.sql.like.like_match`), values longer than 800 characters are skipped,
    and nothing more is compared once ``expired()`` says the check's budget is spent.

    Example:
        >>> close_to_pattern("%" * 40 + "#", ["a" * 800])
        ()
        >>> close_to_pattern("% fRANCE%", ["la France", "Spain"])
        ('la France',)
        >>> close_to_pattern("%compter%", ["Computer Science", "History"])
        ('Computer Science',)
    """
    texts = [
        c
        for c in dict.fromkeys(c for c in candidates if isinstance(c, str))
        if len(c) <= 4 * MAX_VALUE_CHARS
    ]
    loose = _loose(pattern)  # matched in linear time (never as a regular expression)
    hits: list[str] = []
    for c in texts:
        if expired():
            return tuple(hits[:limit])
        if like_match(loose, _loose(c)):
            hits.append(c)
    if hits:
        return tuple(hits[:limit])
    core = pattern.strip("%")
    if not 4 <= len(core) <= MAX_VALUE_CHARS or any(ch in core for ch in "%_"):
        return ()
    scored = [(_fuzzy_contains(core, c, cutoff), c) for c in texts if not expired()]
    ranked = sorted((sc for sc in scored if sc[0]), key=lambda sc: -sc[0])
    return tuple(c for _, c in ranked[:limit])


# --------------------------------------------------------------------------- the queries
