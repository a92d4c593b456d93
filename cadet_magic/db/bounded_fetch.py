"""Bounded fetching for the runners (stdlib only): what one result's values weigh, and rows
fetched in chunks until the row limit or the byte budget (:func:`fetch_bounded`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cadet_magic.options import RESULT_BYTES

#: Rows of the first chunk; later chunks grow to what the byte budget allows, at most
#: :data:`MAX_CHUNK` rows, so one fetch overshoots the budget by at most that many rows.
FIRST_CHUNK = 64
MAX_CHUNK = 512
_SIZED = frozenset({str, bytes, bytearray, memoryview})
_NESTED = frozenset({list, tuple, dict, set, frozenset})


def _value_bytes(v: object) -> int:
    """Bytes of a nested value (lists, structs and maps from DuckDB or PostgreSQL arrays)."""
    if v.__class__ in _SIZED:
        return len(v)
    if isinstance(v, dict):
        return sum(_value_bytes(k) + _value_bytes(x) + 16 for k, x in v.items())
    if v.__class__ in _NESTED:
        return sum(_value_bytes(x) + 8 for x in v)
    return 8


def _extra_bytes(v: object) -> int:
    """What a value adds to the 8 bytes every value is counted at."""
    cls = v.__class__
    if cls in _SIZED:
        return len(v)  # type: ignore[arg-type]
    if cls in _NESTED or isinstance(v, dict):
        return _value_bytes(v)
    return 0


def rows_bytes(rows: Sequence[Sequence[object]]) -> int:
    """An estimate of the memory the values of ``rows`` take: text and binary values by
    their length, nested values item by item, anything else 8 bytes (stdlib only).

    Example:
        >>> rows_bytes([(1, "abc"), (2, b"de")])
        37
    """
    n = 8 * sum(map(len, rows))
    for row in rows:
        for v in row:
            cls = v.__class__
            if cls in _SIZED:
                n += len(v)  # type: ignore[arg-type]
            elif cls in _NESTED or isinstance(v, dict):
                n += _value_bytes(v)
    return n


def column_sizer(kinds: Sequence[str]) -> Callable[[Sequence[Sequence[object]]], int]:
    """A faster :func:`rows_bytes` for results whose column types are known: ``kinds`` says
    per column ``"fixed"`` (numbers, dates, booleans: 8 bytes each), ``"text"`` (str or
    bytes values, or NULL) or anything else (measured value by value).

    Example:
        >>> size = column_sizer(["fixed", "text", "other"])
        >>> size([(1, "abc", [1, 2]), (2, None, None)]) == rows_bytes([(1, "abc", [1, 2]), (2, None, None)])
        True
    """
    from operator import itemgetter

    text = [itemgetter(i) for i, k in enumerate(kinds) if k == "text"]
    other = [itemgetter(i) for i, k in enumerate(kinds) if k not in ("fixed", "text")]
    width = 8 * len(kinds)

    def size(rows: Sequence[Sequence[object]]) -> int:
        n = width * len(rows)
        for get in text:
            try:
                n += sum(map(len, filter(None, map(get, rows))))
            except TypeError:  # not text after all: value by value
                n += sum(map(_extra_bytes, map(get, rows)))
        for get in other:
            n += sum(map(_extra_bytes, map(get, rows)))
        return n

    return size


def fetch_bounded(
    fetchmany: Callable[[int], Sequence],
    limit: int,
    max_bytes: int | None,
    size: Callable[[Sequence[Sequence[object]]], int] = rows_bytes,
    first: int = FIRST_CHUNK,
) -> tuple[list, bool, str]:
    """Rows from ``fetchmany`` until ``limit`` + 1 rows or ``max_bytes`` bytes of values.

    Returns the rows (at most ``limit``), whether the result was cut, and why ("rows",
    "bytes" or ""), with ``size`` measuring rows (:func:`rows_bytes` or a
    :func:`column_sizer`). Rows come in chunks: ``first`` rows (default :data:`FIRST_CHUNK`),
    then as many as the budget left allows at the average row size so far (at most :data:`MAX_CHUNK`).

    Example:
        >>> data = iter([("x" * 100,)] * 50)
        >>> take = lambda n: [r for _, r in zip(range(n), data)]
        >>> rows, cut, why = fetch_bounded(take, 10, 10**6)
        >>> len(rows), cut, why
        (10, True, 'rows')
        >>> rows, cut, why = fetch_bounded(take, 30, 1000)
        >>> len(rows), cut, why
        (9, True, 'bytes')
    """
    budget = RESULT_BYTES if max_bytes is None else max_bytes
    want = limit + 1
    rows: list = []
    total = 0
    chunk = min(want, max(1, first))
    while chunk > 0:
        got = fetchmany(chunk)
        if not got:
            break
        got_bytes = size(got)
        if total + got_bytes > budget:
            for row in got:  # keep the rows that fit
                total += size((row,))
                if total > budget:
                    break
                rows.append(row)
            return rows[:limit], True, "bytes"
        rows.extend(got)
        total += got_bytes
        if len(got) < chunk:
            break
        per_row = max(1, total // len(rows))
        chunk = min(want - len(rows), MAX_CHUNK, max(1, (budget - total) // per_row))
    if len(rows) > limit:
        return rows[:limit], True, "rows"
    return rows, False, ""
