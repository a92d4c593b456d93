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

import datetime as _dt
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
    #: Functions the query wraps the column in, outermost first (``("LOWER", "TRIM")``,
    #: ``("CAST AS TEXT",)``): the check compares the value with the column wrapped alike.
    wrap: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """``table.column`` for messages (wrapped as the query compares it).

        Example:
            >>> Filter("t", None, "c", "x", "=", ("LOWER",)).where
            'LOWER(t.c)'
        """
        if not self.wrap:
            return f"{self.table}.{self.column}"
        return self.wrapped(exp.column(self.column, self.table)).sql()

    @property
    def key(self) -> tuple[str, str, str, str, tuple[str, ...]]:
        return (self.table, self.column, self.value, self.op, self.wrap)

    def wrapped(self, col: exp.Expression) -> exp.Expression:
        """``col`` wrapped in the filter's functions, as the query compares it.

        Example:
            >>> Filter("t", None, "c", "x", "=", ("LOWER", "CAST AS TEXT")).wrapped(
            ...     exp.column("c")).sql("sqlite")
            'LOWER(CAST(c AS TEXT))'
        """
        out: exp.Expression = col
        for name in reversed(self.wrap):
            if name.startswith("CAST AS "):
                out = exp.Cast(this=out, to=exp.DataType.build(name[len("CAST AS ") :]))
            else:
                out = _WRAPPERS[name](this=out)
        return out


# --------------------------------------------------------------------------- the tree


def _is_text(column: Column) -> bool:
    t = column.type.lower()
    return not t or any(k in t for k in _TEXT_TYPES)


def _string(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    return None


#: The functions a compared column may be wrapped in (their names in :attr:`Filter.wrap`).
_WRAPPERS: dict[str, type[exp.Expression]] = {
    "LOWER": exp.Lower,
    "UPPER": exp.Upper,
    "TRIM": exp.Trim,
}


def _unwrap(node: Any) -> tuple[exp.Column, tuple[str, ...]] | None:
    """The column inside ``LOWER``/``UPPER``/``TRIM``/``CAST`` wrappers, and the wrappers
    (outermost first); None when ``node`` is anything else.

    Example:
        >>> col, wrap = _unwrap(sqlglot.parse_one("LOWER(TRIM(CAST(x AS TEXT)))"))
        >>> col.name, wrap
        ('x', ('LOWER', 'TRIM', 'CAST AS TEXT'))
    """
    wrap: list[str] = []
    while not isinstance(node, exp.Column):
        if isinstance(node, exp.Cast) and not node.args.get("format"):
            wrap.append("CAST AS " + node.to.sql())
        else:
            name = next((n for n, cls in _WRAPPERS.items() if type(node) is cls), None)
            if name is None or (isinstance(node, exp.Trim) and node.args.get("expression")):
                return None  # TRIM(x, 'chars'), or anything but the wrappers
            wrap.append(name)
        node = node.this
    return node, tuple(wrap)


def _comparisons(tree: Any) -> Iterable[tuple[exp.Column, str, str, tuple[str, ...]]]:
    """(column, value, op, wrap) for each comparison of a (possibly wrapped) column with a
    string literal in ``tree``."""
    for node in tree.find_all(exp.EQ, exp.In, exp.Like, exp.ILike, bfs=False):
        if isinstance(node.parent, exp.Escape):
            continue  # LIKE ... ESCAPE: leave it
        if isinstance(node, exp.In):
            inner = _unwrap(node.this)
            if inner is not None and not node.args.get("query"):
                for item in node.expressions:
                    value = _string(item)
                    if value is not None:
                        yield inner[0], value, "IN", inner[1]
            continue
        left, right = node.this, node.expression
        if _string(left) is not None and _string(right) is None:
            if isinstance(node, exp.EQ):
                left, right = right, left
            else:
                continue
        inner = _unwrap(left)
        value = _string(right) if inner is not None else None
        if inner is None or value is None:
            continue
        op = "=" if isinstance(node, exp.EQ) else "ILIKE" if isinstance(node, exp.ILike) else "LIKE"
        yield inner[0], value, op, inner[1]


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
    return _resolve_in(column.name, column.table, scope, schema, 0)


def _projection(source: Any, name: str) -> exp.Column | None:
    """The plain column a derived table or CTE (a sqlglot scope) outputs as ``name``."""
    select = getattr(source, "expression", None)
    if not isinstance(select, exp.Select):
        return None
    for proj in select.expressions:
        if proj.alias_or_name.lower() == name.lower():
            inner = proj.unalias()
            return inner if isinstance(inner, exp.Column) else None
    return None


def _resolve_in(
    name: str, qualifier: str, scope: Any, schema: Schema, depth: int
) -> tuple[Table, Column] | None:
    """Column ``name`` (written with ``qualifier``) resolved from ``scope`` outwards, through
    derived tables and CTEs that pass a column through unchanged."""
    while scope is not None and depth < 8:
        found: list[tuple[Table, Column]] = []
        sources = 0
        for alias, source in scope.sources.items():
            if qualifier and alias.lower() != qualifier.lower():
                continue
            if isinstance(source, exp.Table):
                table = schema.table(source.name)
                column = find_column(table, name) if table is not None else None
                sources += table is not None
                if table is not None and column is not None:
                    found.append((table, column))
                continue
            inner = _projection(source, name)
            sources += 1
            if inner is not None:
                hit = _resolve_in(inner.name, inner.table, source, schema, depth + 1)
                if hit is not None:
                    found.append(hit)
        if len(found) == 1:
            return found[0]
        if len(found) > 1 or qualifier and sources:
            return None  # ambiguous, or the qualifier's source lacks it
        scope = scope.parent
    return None


def _walk(sql: str, dialect: str | None) -> tuple[Any, dict[int, Any]] | None:
    """The query's tree (the checked one when the check made it) and its scopes by node id;
    None for a tree that cannot be walked (such a query is simply not checked)."""
    from sqlglot.optimizer.scope import traverse_scope

    try:
        query = checked(sql, dialect)
        tree = query.tree if query is not None else sqlglot.parse_one(sql, read=dialect)
        return tree, {id(s.expression): s for s in traverse_scope(tree)}
    except Exception:  # noqa: BLE001 - a tree we cannot walk is simply not checked
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
    walked = _walk(sql, dialect)
    if walked is None:
        return []
    tree, scopes = walked
    out: dict[tuple, Filter] = {}
    for column, value, op, wrap in _comparisons(tree):
        if not value.strip("%_ ") or len(value) > MAX_VALUE_CHARS:
            continue
        resolved = _resolve(column, scopes, schema)
        if resolved is None or not (_is_text(resolved[1]) or wrap):
            continue
        table, col = resolved
        f = Filter(table.name, table.schema, col.name, value, op, wrap)
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


# --------------------------------------------------------------------------- dates as text

#: Date formats a date stored as text is commonly written in (day-first before month-first:
#: both are tried when they parse).
DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d-%m-%Y",
    "%m-%d-%Y",
    "%d.%m.%Y",
    "%Y%m%d",
    "%Y-%m-%d %H:%M:%S",
    "%d %B %Y",
    "%B %d, %Y",
)


def _formats_of(text: str) -> list[str]:
    out = []
    for fmt in DATE_FORMATS:
        try:
            _dt.datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
        out.append(fmt)
    return out


def date_variants(value: str, stored: Iterable[object], limit: int = 2) -> tuple[str, ...]:
    """``value`` (a date) rewritten in the formats the ``stored`` text values are written in,
    when those differ from the value's own; empty when the value is no date.

    Example:
        >>> date_variants("2020-01-05", ["05/03/2019", "17/11/2020"])
        ('05/01/2020',)
        >>> date_variants("2020-01-05", ["2019-03-05"]), date_variants("soon", ["2019-03-05"])
        ((), ())
    """
    own = _formats_of(value)
    if not own:
        return ()
    when = _dt.datetime.strptime(value.strip(), own[0])
    counts: dict[str, int] = {}
    for v in stored:
        if isinstance(v, str) and len(v) <= 40:
            for fmt in _formats_of(v):
                counts[fmt] = counts.get(fmt, 0) + 1
    ranked = sorted((f for f in counts if f not in own), key=lambda f: -counts[f])
    out = [when.strftime(f) for f in ranked if counts[f] == max(counts.values())]
    return tuple(dict.fromkeys(v for v in out if v != value))[:limit]


# --------------------------------------------------------------------------- numbers

_NUMBER_TYPES = ("int", "real", "float", "double", "numeric", "decimal", "number")
_RANGE_OPS: dict[type, str] = {exp.EQ: "=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}


@dataclass(frozen=True)
class NumberFilter:
    """A comparison of a numeric column with numbers (``op`` one of ``= > >= < <=`` with one
    value, or ``BETWEEN`` with two)."""

    table: str
    db: str | None
    column: str
    op: str
    values: tuple[float, ...]

    @property
    def where(self) -> str:
        return f"{self.table}.{self.column}"

    def text(self) -> str:
        """The comparison in words, e.g. ``age > 200``."""
        nums = [f"{v:g}" for v in self.values]
        if self.op == "BETWEEN":
            return f"{self.column} BETWEEN {nums[0]} AND {nums[1]}"
        return f"{self.column} {self.op} {nums[0]}"

    def outside(self, low: float, high: float) -> bool:
        """Whether no value in [low, high] can satisfy the comparison.

        Example:
            >>> NumberFilter("t", None, "age", ">", (200,)).outside(18, 60)
            True
            >>> NumberFilter("t", None, "age", "BETWEEN", (10, 20)).outside(18, 60)
            False
        """
        v = self.values
        return {
            "=": lambda: not low <= v[0] <= high,
            ">": lambda: high <= v[0],
            ">=": lambda: high < v[0],
            "<": lambda: low >= v[0],
            "<=": lambda: low > v[0],
            "BETWEEN": lambda: v[1] < low or v[0] > high,
        }[self.op]()


def _number(node: Any) -> float | None:
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        return -inner if inner is not None else None
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return float(node.this)
        except ValueError:
            return None
    return None


def number_filters(sql: str, dialect: str | None, schema: Schema) -> list[NumberFilter]:
    """Every comparison of a numeric column of a catalog table with numbers in ``sql``.

    Example:
        >>> from cadet_magic.schema.model import Column, Schema, Table
        >>> s = Schema((Table("t", (Column("age", "INT"), Column("name", "TEXT"))),))
        >>> [f.text() for f in number_filters(
        ...     "SELECT * FROM t WHERE age > 200 AND 5 >= age AND age BETWEEN 1 AND 9", "sqlite", s)]
        ['age > 200', 'age <= 5', 'age BETWEEN 1 AND 9']
    """
    walked = _walk(sql, dialect)
    if walked is None:
        return []
    tree, scopes = walked
    out: dict[tuple, NumberFilter] = {}
    for node in tree.find_all(*_RANGE_OPS, exp.Between, bfs=False):
        nums: tuple[float | None, ...]
        if isinstance(node, exp.Between):
            col, nums = node.this, (_number(node.args.get("low")), _number(node.args.get("high")))
            op = "BETWEEN"
        else:
            col, other, op = node.this, node.expression, _RANGE_OPS[type(node)]
            if not isinstance(col, exp.Column):
                col, other, op = other, col, _FLIPPED[op]
            nums = (_number(other),)
        if not isinstance(col, exp.Column) or any(n is None for n in nums):
            continue
        resolved = _resolve(col, scopes, schema)
        if resolved is None or not any(k in resolved[1].type.lower() for k in _NUMBER_TYPES):
            continue
        table, column = resolved
        f = NumberFilter(
            table.name, table.schema, column.name, op, tuple(n for n in nums if n is not None)
        )
        out.setdefault((f.table, f.column, f.op, f.values), f)
    return list(out.values())
