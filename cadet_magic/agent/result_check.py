"""The result check: after SQL ran, do the string literals it filters on occur? (stdlib + sqlglot)

A query that runs can still be wrong. One sign is visible without knowing the right answer: it
compares a column with a string literal (``=``, ``IN``, ``LIKE``) that the column never holds,
while a close value is there (another case, surrounding spaces, a slip in spelling). After each
successful SQL run the agent finds those comparisons on the syntax tree (the column's table
resolved in the comparison's own scope), asks the database whether each value occurs with
small queries built on the tree (``EXISTS``, ``LIMIT``; literals quoted by sqlglot; run through
the runner's read-only path, bounded by the query's timeout and a total budget), and uses the
schema's sampled values instead of a query when they are complete.

A value that does not occur while a close one does makes the attempt *suspect*: it is
recorded with outcome ``"suspect"`` and category ``"value_not_found"`` and its feedback names
the real values. When the retries give no clean answer, the best suspect result is the answer
and ``AskResult.warnings`` says what looks wrong; an empty result without such an
explanation is answered as is, with a warning.

Example:
    >>> from cadet_magic.schema.model import Column, Schema, Table
    >>> s = Schema((Table("country", (Column("id", "INT"), Column("name", "TEXT"))),))
    >>> [(f.table, f.column, f.value, f.op) for f in
    ...  literal_filters("SELECT id FROM country AS c WHERE c.name = 'France'", "sqlite", s)]
    [('country', 'name', 'France', '=')]
    >>> close_values("France", ["france", "Spain", "Germany"])
    ('france',)
    >>> f = Finding(Filter("country", None, "name", "France", "="), False, ("france",))
    >>> print(value_message(f))
    'France' does not occur in country.name; it holds 'france'.
"""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from cadet_magic.schema.model import Column, Schema, Table
from cadet_magic.sql.like import like_match

log = logging.getLogger("cadet_magic")

#: Seconds all the check's queries of one run may take together.
BUDGET = 0.2
#: Rows scanned for candidate values when looking for a spelling slip.
SCAN_ROWS = 10_000
#: Distinct candidate values compared with a missing value at most.
MAX_CANDIDATES = 1000
#: Close values named in the feedback at most.
MAX_CLOSE = 3
#: How similar (difflib ratio, case ignored) a value must be to count as a spelling slip.
CUTOFF = 0.8
#: Literals longer than this are not checked (free-text searches, not values).
MAX_VALUE_CHARS = 200

_TEXT_TYPES = ("char", "text", "string", "clob", "enum", "citext", "name")


# --------------------------------------------------------------------------- wording

#: What each warning says (the displays show ``AskResult.warnings`` as they are).
SUSPECT_WARNING = "The answer may be wrong: {problems}"
ABSENT_WARNING = "{value} does not occur in {column}, so this filter matches nothing."
EMPTY_WARNING = (
    "The query returned no rows. Check that the filters match how values are stored, or "
    "rephrase the question."
)
#: The feedback for a suspect attempt (the guidance after the SQL).
FEEDBACK = (
    "Your previous query ran, but a value it filters on does not occur in the data:\n"
    "```sql\n{sql}\n```\n{problems} Compare with the value exactly as stored."
)


def quote(value: str) -> str:
    """A value as an SQL string literal, for messages.

    Example:
        >>> quote("O'Hara")
        "'O''Hara'"
    """
    return "'" + value.replace("'", "''") + "'"


# --------------------------------------------------------------------------- the findings


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


@dataclass(frozen=True)
class Finding:
    """What the check found about one filter: whether its value occurs (None: not known,
    the budget ran out or the query failed) and the close values that do."""

    filter: Filter
    occurs: bool | None
    close: tuple[str, ...] = ()

    @property
    def suspect(self) -> bool:
        return self.occurs is False and bool(self.close)


def value_message(f: Finding) -> str:
    """One missing value in words, naming the real close values.

    Example:
        >>> fl = Filter("t", None, "c", "x", "=")
        >>> value_message(Finding(fl, False))
        "'x' does not occur in t.c."
    """
    head = f"{quote(f.filter.value)} does not occur in {f.filter.where}"
    if not f.close:
        return head + "."
    return head + "; it holds " + ", ".join(quote(v) for v in f.close) + "."


@dataclass(frozen=True)
class ValueCheck:
    """The check of one attempt: its number, its findings, the result's row count, and
    what the check cost (queries run, seconds, whether the budget ran out)."""

    attempt: int
    findings: tuple[Finding, ...] = ()
    rows: int = 0
    queries: int = 0
    seconds: float = 0.0
    out_of_budget: bool = False
    filters: int = field(default=0)

    @property
    def suspect(self) -> bool:
        """A value does not occur while a close one does: worth another attempt."""
        return any(f.suspect for f in self.findings)

    @property
    def missing(self) -> tuple[Finding, ...]:
        """The filters whose value does not occur."""
        return tuple(f for f in self.findings if f.occurs is False)

    @property
    def empty(self) -> bool:
        return self.rows == 0

    def problems(self) -> str:
        """The missing values in words (suspect ones first)."""
        ordered = sorted(self.missing, key=lambda f: not f.suspect)
        return " ".join(value_message(f) for f in ordered)

    def feedback(self, sql: str) -> str:
        """What the model is told about a suspect attempt."""
        return FEEDBACK.format(sql=sql.strip(), problems=self.problems())

    def warnings(self) -> list[str]:
        """What looks wrong with this attempt's answer, for ``AskResult.warnings``."""
        if self.suspect:
            return [SUSPECT_WARNING.format(problems=self.problems())]
        out = [
            ABSENT_WARNING.format(value=quote(f.filter.value), column=f.filter.where)
            for f in self.missing
        ]
        if self.empty and not out:
            out.append(EMPTY_WARNING)
        return out

    def rank(self) -> tuple[int, int, int]:
        """Lower is better: fewer missing values, then a non-empty result, then later."""
        return (len(self.missing), int(self.empty), -self.attempt)


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


def _find_column(table: Table, name: str) -> Column | None:
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
        found = [(t, c) for t in tables if (c := _find_column(t, column.name)) is not None]
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
        tree = sqlglot.parse_one(sql, read=dialect)
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


_close_to_pattern = close_to_pattern  # the module's name, for the local helper in _close


# --------------------------------------------------------------------------- the queries


def _table(f: Filter) -> exp.Table:
    return exp.Table(
        this=exp.to_identifier(f.table, quoted=True),
        db=exp.to_identifier(f.db, quoted=True) if f.db else None,
    )


def _col(f: Filter) -> exp.Column:
    return exp.column(f.column, quoted=True)


def _match(f: Filter, col: exp.Expression, value: str) -> exp.Expression:
    lit = exp.Literal.string(value)
    if f.op == "=" or f.op == "IN":
        return exp.EQ(this=col, expression=lit)
    if f.op == "ILIKE":
        return exp.ILike(this=col, expression=lit)
    return exp.Like(this=col, expression=lit)


def occurs_sql(filters: Sequence[Filter], dialect: str | None) -> str:
    """One query, one row: a 0/1 flag per filter, 1 when some row matches its comparison.

    Example:
        >>> print(occurs_sql([Filter("t", None, "c", "it's", "=")], "sqlite"))
        SELECT CASE WHEN EXISTS(SELECT 1 FROM "t" WHERE "c" = 'it''s') THEN 1 ELSE 0 END AS f0
    """
    flags = []
    for i, f in enumerate(filters):
        probe = exp.select("1").from_(_table(f)).where(_match(f, _col(f), f.value))
        flag = exp.Case().when(exp.Exists(this=probe), exp.Literal.number(1))
        flags.append(exp.alias_(flag.else_(exp.Literal.number(0)), f"f{i}"))
    return exp.select(*flags).sql(dialect=dialect)


def same_up_to_case_sql(f: Filter, dialect: str | None, limit: int = MAX_CLOSE) -> str:
    """The stored values equal to (or, for LIKE, matching) the filter's value once case and
    surrounding spaces are ignored.

    Example:
        >>> print(same_up_to_case_sql(Filter("t", "s", "c", " Ab ", "="), "postgres"))
        SELECT DISTINCT "c" FROM "s"."t" WHERE LOWER(TRIM("c")) = 'ab' LIMIT 3
    """
    cond: exp.Expression
    if f.op in ("LIKE", "ILIKE"):
        # every run of spaces may be missing or different: it becomes a wildcard
        wanted = "%".join(f.value.lower().split())
        if f.value[:1].isspace() or f.value[-1:].isspace():
            wanted = f"%{wanted}%" if wanted else wanted
        cond = exp.Like(this=exp.Lower(this=_col(f)), expression=exp.Literal.string(wanted))
    else:
        folded = exp.Lower(this=exp.Trim(this=_col(f)))
        cond = exp.EQ(this=folded, expression=exp.Literal.string(f.value.strip().lower()))
    query = exp.select(_col(f)).distinct().from_(_table(f)).where(cond).limit(limit)
    return query.sql(dialect=dialect)


def _ends(f: Filter) -> tuple[str, str] | None:
    """The first and last two characters of the filter's text (lower case), which a single
    spelling slip leaves at least one of in place; None for short or wildcard-laden values."""
    core = " ".join(f.value.strip("%").split()).lower()
    if len(core) < 4 or any(ch in core for ch in "%_\\"):
        return None
    return core[:2], core[-2:]


def candidates_sql(
    f: Filter,
    dialect: str | None,
    scan_rows: int = SCAN_ROWS,
    limit: int = MAX_CANDIDATES,
    by_ends: bool = True,
) -> str:
    """Distinct stored values to compare with a missing value for a spelling slip: those that
    start or end like it (a slip leaves one end in place; ``by_ends=False``: any), among the
    first ``scan_rows``.

    Example:
        >>> print(candidates_sql(Filter("t", None, "c", "Kaubl", "="), "duckdb", 100, 10))
        SELECT DISTINCT v FROM (SELECT "c" AS v FROM "t" WHERE NOT "c" IS NULL AND (LOWER("c") LIKE 'ka%' OR LOWER("c") LIKE '%bl') LIMIT 100) AS s LIMIT 10
        >>> print(candidates_sql(Filter("t", None, "c", "x", "="), "sqlite", 100, 10))
        SELECT DISTINCT v FROM (SELECT "c" AS v FROM "t" WHERE NOT "c" IS NULL LIMIT 100) AS s LIMIT 10
    """
    cond: Any = exp.not_(exp.Is(this=_col(f), expression=exp.null()))
    ends = _ends(f) if by_ends else None
    if ends is not None:
        lowered = exp.Lower(this=_col(f))
        starts = exp.Like(this=lowered, expression=exp.Literal.string(ends[0] + "%"))
        finishes = exp.Like(this=lowered.copy(), expression=exp.Literal.string("%" + ends[1]))
        cond = exp.and_(cond, exp.paren(exp.or_(starts, finishes)))
    inner = exp.select(exp.alias_(_col(f), "v")).from_(_table(f)).where(cond).limit(scan_rows)
    return exp.select("v").distinct().from_(inner.subquery("s")).limit(limit).sql(dialect=dialect)


# --------------------------------------------------------------------------- the check

#: ``fetch(sql, timeout)`` runs one check query read-only and returns its rows.
Fetch = Callable[[str, float], Sequence[Sequence[object]]]


def _samples(schema: Schema, f: Filter) -> tuple[tuple[str, ...], bool]:
    table = schema.table(f.table)
    column = _find_column(table, f.column) if table is not None else None
    if column is None:
        return (), False
    return column.samples, bool(getattr(column, "samples_complete", False))


def check_values(
    filters: Sequence[Filter],
    schema: Schema,
    fetch: Fetch,
    *,
    dialect: str | None,
    timeout: float,
    budget: float = BUDGET,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[tuple[Finding, ...], int, bool]:
    """Whether each filter's value occurs, and the close values when it does not.

    Complete samples answer without a query when they hold the value exactly or hold
    nothing close to it (no collation could match then); otherwise one query flags every
    remaining filter, and each missing value gets one query for values equal up to case and
    spaces, then (for ``=``/``IN``, without complete samples) one for spelling candidates.
    No query starts once ``budget`` seconds are spent, and each may take what is left of it
    (at most ``timeout``). Returns the findings, the number of queries and whether the budget
    ran out.

    Example:
        >>> import sqlite3
        >>> con = sqlite3.connect(":memory:")
        >>> _ = con.executescript("CREATE TABLE t (c TEXT); INSERT INTO t VALUES ('france');")
        >>> fetch = lambda sql, timeout: con.execute(sql).fetchall()
        >>> fs = [Filter("t", None, "c", "France", "="), Filter("t", None, "c", "france", "=")]
        >>> found, queries, _ = check_values(fs, Schema(), fetch, dialect="sqlite", timeout=1)
        >>> [(f.filter.value, f.occurs, f.close) for f in found], queries
        ([('France', False, ('france',)), ('france', True, ())], 2)
    """
    start = clock()
    queries = 0
    out_of_budget = False

    def expired() -> bool:
        return clock() - start >= budget

    def run(sql: str) -> Sequence[Sequence[object]] | None:
        nonlocal queries, out_of_budget
        left = budget - (clock() - start)
        if left <= 0:
            out_of_budget = True
            return None
        queries += 1
        try:
            return fetch(sql, min(timeout, left))
        except Exception as e:  # noqa: BLE001 - an unanswered check claims nothing
            log.info("[result check] query failed: %s", str(e).splitlines()[0][:200])
            return None

    known: dict[Filter, Finding] = {}
    ask: list[Filter] = []
    for f in filters:
        samples, complete = _samples(schema, f)
        if complete and f.op in ("=", "IN"):
            if f.value in samples:
                known[f] = Finding(f, True)
                continue
            if not close_values(f.value, samples):
                known[f] = Finding(f, False)
                continue
        ask.append(f)
    if ask:
        rows = run(occurs_sql(ask, dialect))
        flags = list(rows[0]) if rows else [None] * len(ask)
        for f, flag in zip(ask, flags, strict=False):
            if flag is None:
                known[f] = Finding(f, None)
            elif int(flag):  # type: ignore[call-overload]
                known[f] = Finding(f, True)
            else:
                known[f] = Finding(f, False, _close(f, schema, run, dialect, expired))
    return tuple(known[f] for f in filters), queries, out_of_budget


def _close(
    f: Filter,
    schema: Schema,
    run: Callable[[str], Sequence[Sequence[object]] | None],
    dialect: str | None,
    expired: Callable[[], bool] = lambda: False,
) -> tuple[str, ...]:
    """The stored values close to a missing filter value (samples first, then queries)."""
    like = f.op in ("LIKE", "ILIKE")

    def close_to_pattern(pattern: str, values: Iterable[object]) -> tuple[str, ...]:
        return _close_to_pattern(pattern, values, expired=expired)

    samples, complete = _samples(schema, f)
    if complete:
        return close_to_pattern(f.value, samples) if like else close_values(f.value, samples)
    rows = run(same_up_to_case_sql(f, dialect))
    same = [r[0] for r in rows or () if r and isinstance(r[0], str) and r[0] != f.value]
    if same:
        return tuple(dict.fromkeys(same))[:MAX_CLOSE]
    near = close_to_pattern(f.value, samples) if like else close_values(f.value, samples)
    if near:
        return near
    for by_ends in (True, False) if _ends(f) is not None else (False,):
        rows = run(candidates_sql(f, dialect, by_ends=by_ends))
        found = [r[0] for r in rows or () if r]
        near = close_to_pattern(f.value, found) if like else close_values(f.value, found)
        if near:
            return near
    return ()


def check_result(
    sql: str,
    *,
    attempt: int,
    rows: int,
    schema: Schema,
    fetch: Fetch,
    dialect: str | None,
    timeout: float,
    budget: float = BUDGET,
) -> ValueCheck:
    """The whole check of one successful run of ``sql`` (the SQL that ran).

    Example:
        >>> import sqlite3
        >>> from cadet_magic.schema.model import Column, Schema, Table
        >>> con = sqlite3.connect(":memory:")
        >>> _ = con.executescript("CREATE TABLE country (name TEXT); INSERT INTO country VALUES ('france');")
        >>> s = Schema((Table("country", (Column("name", "TEXT"),)),))
        >>> c = check_result("SELECT * FROM country WHERE name = 'France'", attempt=1, rows=0,
        ...                  schema=s, fetch=lambda q, t: con.execute(q).fetchall(),
        ...                  dialect="sqlite", timeout=5)
        >>> c.suspect, c.warnings()
        (True, ["The answer may be wrong: 'France' does not occur in country.name; it holds 'france'."])
    """
    t0 = time.perf_counter()
    filters = literal_filters(sql, dialect, schema)
    findings, queries, out = (
        check_values(filters, schema, fetch, dialect=dialect, timeout=timeout, budget=budget)
        if filters
        else ((), 0, False)
    )
    return ValueCheck(
        attempt=attempt,
        findings=findings,
        rows=rows,
        queries=queries,
        seconds=time.perf_counter() - t0,
        out_of_budget=out,
        filters=len(filters),
    )
