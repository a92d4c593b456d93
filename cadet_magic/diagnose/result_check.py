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

The tree is read by :mod:`.values` (the filters and the close values); this module asks the
database, within the budget, and words the findings.

Example:
    >>> f = Finding(Filter("country", None, "name", "France", "="), False, ("france",))
    >>> print(value_message(f))
    'France' does not occur in country.name; it holds 'france'.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from cadet_magic.diagnose.values import (
    MAX_CLOSE,
    Filter,
    NumberFilter,
    close_values,
    date_variants,
    find_column,
    literal_filters,
    number_filters,
)
from cadet_magic.diagnose.values import close_to_pattern as _close_to_pattern
from cadet_magic.schema.model import Schema
from cadet_magic.sql.query import checked

log = logging.getLogger("cadet_magic")

#: Seconds all the check's queries of one run may take together.
BUDGET = 0.2
#: Rows scanned for candidate values when looking for a spelling slip.
SCAN_ROWS = 10_000
#: Distinct candidate values compared with a missing value at most.
MAX_CANDIDATES = 1000


# --------------------------------------------------------------------------- wording

#: What each warning says (the displays show ``AskResult.warnings`` as they are).
SUSPECT_WARNING = "The answer may be wrong: {problems}"
ABSENT_WARNING = "{value} does not occur in {column}, so this filter matches nothing."
RANGE_WARNING = "No row can match {comparison}: {column} ranges from {low:g} to {high:g}."
EMPTY_WARNING = (
    "The query returned no rows. Check that the filters match how values are stored, or "
    "rephrase the question."
)
#: The feedback for a suspect attempt (the guidance after the SQL).
FEEDBACK = (
    "Your previous query ran, but a value it filters on does not occur in the data:\n"
    "```sql\n{sql}\n```\n{problems} Compare with the value exactly as stored."
)


#: Added to the feedback when a missing value was written in double quotes.
DOUBLE_QUOTED = (
    "Write text values in single quotes ({value}); double quotes name columns and tables."
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
    #: Values the model wrote in double quotes that the engine read as strings.
    double_quoted: tuple[str, ...] = ()
    #: For an empty result: numeric comparisons no stored value can meet, in words.
    out_of_range: tuple[str, ...] = ()

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
        """What the model is told about a suspect attempt (with a reminder that strings take
        single quotes when a missing value was written in double quotes)."""
        text = FEEDBACK.format(sql=sql.strip(), problems=self.problems())
        quoted = [f.filter.value for f in self.missing if f.filter.value in self.double_quoted]
        if quoted:
            text += " " + DOUBLE_QUOTED.format(value=quote(quoted[0]))
        return text

    def warnings(self) -> list[str]:
        """What looks wrong with this attempt's answer, for ``AskResult.warnings``."""
        if self.suspect:
            return [SUSPECT_WARNING.format(problems=self.problems())]
        out = [
            ABSENT_WARNING.format(value=quote(f.filter.value), column=f.filter.where)
            for f in self.missing
        ]
        if self.empty and not out:
            out.extend(self.out_of_range or [EMPTY_WARNING])
        return out

    def rank(self) -> tuple[int, int, int]:
        """Lower is better: fewer missing values, then a non-empty result, then later."""
        return (len(self.missing), int(self.empty), -self.attempt)


def _table(f: Filter) -> exp.Table:
    return exp.Table(
        this=exp.to_identifier(f.table, quoted=True),
        db=exp.to_identifier(f.db, quoted=True) if f.db else None,
    )


def _col(f: Filter) -> exp.Expression:
    """The filter's column as the query compares it (inside its wrappers, if any)."""
    return f.wrapped(exp.column(f.column, quoted=True))


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
    if f.wrap:  # the samples are the stored values, not the wrapped ones
        return (), False
    table = schema.table(f.table)
    column = find_column(table, f.column) if table is not None else None
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
    found: list[object] = []
    for by_ends in (True, False) if _ends(f) is not None else (False,):
        rows = run(candidates_sql(f, dialect, by_ends=by_ends))
        found = [r[0] for r in rows or () if r]
        near = close_to_pattern(f.value, found) if like else close_values(f.value, found)
        if near:
            return near
    return () if like else _same_date(f, [*samples, *found], run, dialect)


def _same_date(
    f: Filter,
    stored: list[object],
    run: Callable[[str], Sequence[Sequence[object]] | None],
    dialect: str | None,
) -> tuple[str, ...]:
    """The filter's date written as the column's stored text writes dates, when it occurs so
    (a date compared in another format than the stored one matches nothing)."""
    variants = date_variants(f.value, stored)
    if not variants:
        return ()
    probes = [dataclasses.replace(f, value=v) for v in variants]
    rows = run(occurs_sql(probes, dialect))
    flags = list(rows[0]) if rows else []
    return tuple(v for v, flag in zip(variants, flags, strict=False) if flag)


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
    query = checked(sql, dialect)
    filters = literal_filters(sql, dialect, schema)
    findings, queries, out = (
        check_values(filters, schema, fetch, dialect=dialect, timeout=timeout, budget=budget)
        if filters
        else ((), 0, False)
    )
    ranges: tuple[str, ...] = ()
    if rows == 0 and not any(f.occurs is False for f in findings):
        left = budget - (time.perf_counter() - t0)
        ranges, more = _out_of_range(number_filters(sql, dialect, schema), fetch, dialect, left)
        queries += more
    return ValueCheck(
        attempt=attempt,
        findings=findings,
        rows=rows,
        queries=queries,
        seconds=time.perf_counter() - t0,
        out_of_budget=out,
        filters=len(filters),
        double_quoted=query.double_quoted if query is not None else (),
        out_of_range=ranges,
    )


def range_sql(f: NumberFilter, dialect: str | None) -> str:
    """The stored range of a numeric filter's column.

    Example:
        >>> print(range_sql(NumberFilter("t", None, "age", ">", (200,)), "sqlite"))
        SELECT MIN("age"), MAX("age") FROM "t"
    """
    col = exp.column(f.column, quoted=True)
    table = exp.Table(
        this=exp.to_identifier(f.table, quoted=True),
        db=exp.to_identifier(f.db, quoted=True) if f.db else None,
    )
    return exp.select(exp.Min(this=col), exp.Max(this=col.copy())).from_(table).sql(dialect=dialect)


def _out_of_range(
    filters: Sequence[NumberFilter], fetch: Fetch, dialect: str | None, budget: float
) -> tuple[tuple[str, ...], int]:
    """The numeric comparisons of an empty result that no stored value can meet, in words
    (one MIN/MAX query per column, within ``budget`` seconds); and the queries run."""
    start = time.perf_counter()
    out: list[str] = []
    queries = 0
    for f in filters[:MAX_CLOSE]:
        left = budget - (time.perf_counter() - start)
        if left <= 0:
            break
        queries += 1
        try:
            low, high = fetch(range_sql(f, dialect), left)[0]
            low, high = float(low), float(high)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - an unanswered check claims nothing
            continue
        if f.outside(low, high):
            out.append(
                RANGE_WARNING.format(comparison=f.text(), column=f.where, low=low, high=high)
            )
    return tuple(out), queries
