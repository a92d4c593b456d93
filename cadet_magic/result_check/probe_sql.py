"""The small queries the result check asks the database (built on sqlglot's tree, literals
quoted by sqlglot, rendered in the connection's dialect): does each filtered value occur, which
stored values equal it up to case and spaces, which stored values could be a spelling slip
away, and the stored range of a numeric column. Each is bounded (``EXISTS``, ``LIMIT``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from cadet_magic.result_check.close_values import MAX_CLOSE
from cadet_magic.result_check.number_filters import NumberFilter
from cadet_magic.result_check.values import Filter
from cadet_magic.sql.target import Target

#: Rows scanned for candidate values when looking for a spelling slip.
SCAN_ROWS = 10_000
#: Distinct candidate values compared with a missing value at most.
MAX_CANDIDATES = 1000


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


def occurs_sql(filters: Sequence[Filter], target: Target) -> str:
    """One query, one row: a 0/1 flag per filter, 1 when some row matches its comparison.

    Example:
        >>> print(occurs_sql([Filter("t", None, "c", "it's", "=")], Target.named("sqlite")))
        SELECT CASE WHEN EXISTS(SELECT 1 FROM "t" WHERE "c" = 'it''s') THEN 1 ELSE 0 END AS f0
    """
    flags = []
    for i, f in enumerate(filters):
        probe = exp.select("1").from_(_table(f)).where(_match(f, _col(f), f.value))
        flag = exp.Case().when(exp.Exists(this=probe), exp.Literal.number(1))
        flags.append(exp.alias_(flag.else_(exp.Literal.number(0)), f"f{i}"))
    return exp.select(*flags).sql(dialect=target.dialect)


def same_up_to_case_sql(f: Filter, target: Target, limit: int = MAX_CLOSE) -> str:
    """The stored values equal to (or, for LIKE, matching) the filter's value once case and
    surrounding spaces are ignored.

    Example:
        >>> print(same_up_to_case_sql(Filter("t", "s", "c", " Ab ", "="), Target.named("postgres")))
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
    return query.sql(dialect=target.dialect)


def slip_ends(f: Filter) -> tuple[str, str] | None:
    """The first and last two characters of the filter's text (lower case), which a single
    spelling slip leaves at least one of in place; None for short or wildcard-laden values."""
    core = " ".join(f.value.strip("%").split()).lower()
    if len(core) < 4 or any(ch in core for ch in "%_\\"):
        return None
    return core[:2], core[-2:]


def candidates_sql(
    f: Filter,
    target: Target,
    scan_rows: int = SCAN_ROWS,
    limit: int = MAX_CANDIDATES,
    by_ends: bool = True,
) -> str:
    """Distinct stored values to compare with a missing value for a spelling slip: those that
    start or end like it (a slip leaves one end in place; ``by_ends=False``: any), among the
    first ``scan_rows``.

    Example:
        >>> print(candidates_sql(Filter("t", None, "c", "Kaubl", "="), Target.named("duckdb"), 100, 10))
        SELECT DISTINCT v FROM (SELECT "c" AS v FROM "t" WHERE NOT "c" IS NULL AND (LOWER("c") LIKE 'ka%' OR LOWER("c") LIKE '%bl') LIMIT 100) AS s LIMIT 10
        >>> print(candidates_sql(Filter("t", None, "c", "x", "="), Target.named("sqlite"), 100, 10))
        SELECT DISTINCT v FROM (SELECT "c" AS v FROM "t" WHERE NOT "c" IS NULL LIMIT 100) AS s LIMIT 10
    """
    cond: Any = exp.not_(exp.Is(this=_col(f), expression=exp.null()))
    ends = slip_ends(f) if by_ends else None
    if ends is not None:
        lowered = exp.Lower(this=_col(f))
        starts = exp.Like(this=lowered, expression=exp.Literal.string(ends[0] + "%"))
        finishes = exp.Like(this=lowered.copy(), expression=exp.Literal.string("%" + ends[1]))
        cond = exp.and_(cond, exp.paren(exp.or_(starts, finishes)))
    inner = exp.select(exp.alias_(_col(f), "v")).from_(_table(f)).where(cond).limit(scan_rows)
    return (
        exp.select("v")
        .distinct()
        .from_(inner.subquery("s"))
        .limit(limit)
        .sql(dialect=target.dialect)
    )


def range_sql(f: NumberFilter, target: Target) -> str:
    """The stored range of a numeric filter's column.

    Example:
        >>> print(range_sql(NumberFilter("t", None, "age", ">", (200,)), Target.named("sqlite")))
        SELECT MIN("age"), MAX("age") FROM "t"
    """
    col = exp.column(f.column, quoted=True)
    table = exp.Table(
        this=exp.to_identifier(f.table, quoted=True),
        db=exp.to_identifier(f.db, quoted=True) if f.db else None,
    )
    return (
        exp.select(exp.Min(this=col), exp.Max(this=col.copy()))
        .from_(table)
        .sql(dialect=target.dialect)
    )
