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

The tree is read by :mod:`.values` and :mod:`.number_filters`, the close values named by
:mod:`.close_values`; the queries are built by :mod:`.probe_sql`, the findings and their
wording are :mod:`.findings`'; this module asks the database, within the budget.

Example:
    >>> f = Finding(Filter("country", None, "name", "France", "="), False, ("france",))
    >>> print(value_message(f))
    'France' does not occur in country.name; it holds 'france'.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence

from cadet_magic.options import CHECK_BUDGET
from cadet_magic.result_check.close_values import MAX_CLOSE, close_values, date_variants
from cadet_magic.result_check.close_values import close_to_pattern as _close_to_pattern
from cadet_magic.result_check.findings import (  # noqa: F401 - the findings stay importable here
    ABSENT_WARNING,
    DOUBLE_QUOTED,
    EMPTY_WARNING,
    FEEDBACK,
    RANGE_WARNING,
    SUSPECT_WARNING,
    Finding,
    ValueCheck,
    quote,
    value_message,
)
from cadet_magic.result_check.number_filters import NumberFilter, number_filters
from cadet_magic.result_check.probe_sql import (  # noqa: F401 - the probe queries stay importable here
    MAX_CANDIDATES,
    SCAN_ROWS,
    candidates_sql,
    occurs_sql,
    range_sql,
    same_up_to_case_sql,
    slip_ends,
)
from cadet_magic.result_check.values import Filter, find_column, literal_filters
from cadet_magic.runner import Runner
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.target import Target
from cadet_magic.sql.validate import validate_sql

log = logging.getLogger("cadet_magic")

#: Seconds all the check's queries of one run may take together (``AskOptions.check_budget``).
BUDGET = CHECK_BUDGET


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
    target: Target,
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
        >>> found, queries, _ = check_values(fs, Schema(), fetch, target=Target.named("sqlite"), timeout=1)
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
        rows = run(occurs_sql(ask, target))
        flags = list(rows[0]) if rows else [None] * len(ask)
        for f, flag in zip(ask, flags, strict=False):
            if flag is None:
                known[f] = Finding(f, None)
            elif int(flag):  # type: ignore[call-overload]
                known[f] = Finding(f, True)
            else:
                known[f] = Finding(f, False, _close(f, schema, run, target, expired))
    return tuple(known[f] for f in filters), queries, out_of_budget


def _close(
    f: Filter,
    schema: Schema,
    run: Callable[[str], Sequence[Sequence[object]] | None],
    target: Target,
    expired: Callable[[], bool] = lambda: False,
) -> tuple[str, ...]:
    """The stored values close to a missing filter value (samples first, then queries)."""
    like = f.op in ("LIKE", "ILIKE")

    def close_to_pattern(pattern: str, values: Iterable[object]) -> tuple[str, ...]:
        return _close_to_pattern(pattern, values, expired=expired)

    samples, complete = _samples(schema, f)
    if complete:
        return close_to_pattern(f.value, samples) if like else close_values(f.value, samples)
    rows = run(same_up_to_case_sql(f, target))
    same = [r[0] for r in rows or () if r and isinstance(r[0], str) and r[0] != f.value]
    if same:
        return tuple(dict.fromkeys(same))[:MAX_CLOSE]
    near = close_to_pattern(f.value, samples) if like else close_values(f.value, samples)
    if near:
        return near
    found: list[object] = []
    for by_ends in (True, False) if slip_ends(f) is not None else (False,):
        rows = run(candidates_sql(f, target, by_ends=by_ends))
        found = [r[0] for r in rows or () if r]
        near = close_to_pattern(f.value, found) if like else close_values(f.value, found)
        if near:
            return near
    return () if like else _same_date(f, [*samples, *found], run, target)


def _same_date(
    f: Filter,
    stored: list[object],
    run: Callable[[str], Sequence[Sequence[object]] | None],
    target: Target,
) -> tuple[str, ...]:
    """The filter's date written as the column's stored text writes dates, when it occurs so
    (a date compared in another format than the stored one matches nothing)."""
    variants = date_variants(f.value, stored)
    if not variants:
        return ()
    probes = [dataclasses.replace(f, value=v) for v in variants]
    rows = run(occurs_sql(probes, target))
    flags = list(rows[0]) if rows else []
    return tuple(v for v, flag in zip(variants, flags, strict=False) if flag)


def check_result(
    sql: str,
    *,
    attempt: int,
    rows: int,
    schema: Schema,
    fetch: Fetch,
    target: Target,
    timeout: float,
    budget: float = BUDGET,
) -> ValueCheck:
    """The whole check of one successful run of ``sql`` (the SQL that ran).

    Example:
        >>> import sqlite3
        >>> from cadet_magic.schema.structure import Column, Schema, Table
        >>> con = sqlite3.connect(":memory:")
        >>> _ = con.executescript("CREATE TABLE country (name TEXT); INSERT INTO country VALUES ('france');")
        >>> s = Schema((Table("country", (Column("name", "TEXT"),)),))
        >>> c = check_result("SELECT * FROM country WHERE name = 'France'", attempt=1, rows=0,
        ...                  schema=s, fetch=lambda q, t: con.execute(q).fetchall(),
        ...                  target=Target.named("sqlite"), timeout=5)
        >>> c.suspect, c.warnings()
        (True, ["The answer may be wrong: 'France' does not occur in country.name; it holds 'france'."])
    """
    t0 = time.perf_counter()
    query = sql if isinstance(sql, CheckedQuery) else None
    filters = literal_filters(sql, target, schema)
    findings, queries, out = (
        check_values(filters, schema, fetch, target=target, timeout=timeout, budget=budget)
        if filters
        else ((), 0, False)
    )
    ranges: tuple[str, ...] = ()
    if rows == 0 and not any(f.occurs is False for f in findings):
        left = budget - (time.perf_counter() - t0)
        ranges, more = _out_of_range(number_filters(sql, target, schema), fetch, target, left)
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


def _out_of_range(
    filters: Sequence[NumberFilter], fetch: Fetch, target: Target, budget: float
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
            low, high = fetch(range_sql(f, target), left)[0]
            low, high = float(low), float(high)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - an unanswered check claims nothing
            continue
        if f.outside(low, high):
            out.append(
                RANGE_WARNING.format(comparison=f.text(), column=f.where, low=low, high=high)
            )
    return tuple(out), queries


#: Bytes of values one check query may fetch.
CHECK_BYTES = 2**20


class RefusedProbe(Exception):
    """A probe query the safety check refused: it is not asked, and claims nothing."""


def check_through(
    runner: Runner,
    sql: str,
    *,
    attempt: int,
    rows: int,
    schema: Schema,
    target: Target,
    timeout: float,
    budget: float | None = BUDGET,
) -> ValueCheck:
    """:func:`check_result` asking through ``runner``'s read-only path (each query fetches at
    most :data:`MAX_CANDIDATES` rows and :data:`CHECK_BYTES` bytes), within ``budget`` seconds
    in all (None: no total limit, each query still bounded by ``timeout``); never raises: a
    check that fails claims nothing (the answer must never be lost to it)."""

    def fetch(probe: str, seconds: float) -> list[tuple]:
        # The probe is SQL like any other: the safety check first, then the runner's own
        # read-only run with its engine-side checks (a probe the check refuses is not asked).
        verdict = validate_sql(probe, target)
        if verdict.query is None:
            raise RefusedProbe(verdict.issues[0].message if verdict.issues else "refused")
        run = runner.run(
            verdict.query, limit=MAX_CANDIDATES, timeout=seconds, max_bytes=CHECK_BYTES
        )
        return run.rows

    try:
        vc = check_result(
            sql,
            attempt=attempt,
            rows=rows,
            schema=schema,
            fetch=fetch,
            target=target,
            timeout=timeout,
            budget=math.inf if budget is None else budget,
        )
    except Exception as e:  # noqa: BLE001 - the check must never cost the user the answer
        log.warning("[result check] skipped: %s", e)
        vc = ValueCheck(attempt=attempt, rows=rows)
    log.info(
        "[result check] %d filter(s), %d missing, %d query(ies), %.0f ms%s",
        vc.filters,
        len(vc.missing),
        vc.queries,
        vc.seconds * 1000,
        " (budget spent)" if vc.out_of_budget else "",
    )
    return vc
