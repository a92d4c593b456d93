"""What the schema read samples of the data: values of low-cardinality text columns and a few
rows of each table (portable: stdlib + sqlglot).

Values: a runner asks :func:`sample_sql` for one query per text column, runs it on its
connection, and hands the rows to :func:`samples_from_rows`; :func:`with_samples` puts the
values into the schema. The same policy feeds the prompt (a few values per column, see
:mod:`cadet_magic.schema.render`) and the linker (values the question mentions).

Rows, for a representation that shows them
(:class:`~cadet_magic.schema.render.Representation`): one bounded query per table (its columns
named in catalog order, ``LIMIT`` :data:`ROWS`), through the runner's own read-only ``fetch``;
each value kept as text (None for NULL), cut to :data:`MAX_CELL_CHARS`. Views are not read
(their query may be costly); a table whose query fails, or any after the time budget, keeps no
rows. :func:`read_samples` reads both.

Example:
    >>> print(sample_sql("orders", "status", dialect_of("sqlite")))
    SELECT v, COUNT(*) AS n FROM (SELECT "status" AS v FROM "orders" WHERE NOT "status" IS NULL LIMIT 10000) AS s GROUP BY v ORDER BY n DESC, v LIMIT 21
    >>> samples_from_rows([("paid", 9), ("open", 3), (None, 1)])
    ('paid', 'open')
    >>> samples_from_rows([(f"v{i}", 1) for i in range(21)])  # not low-cardinality
    ()
    >>> import sqlite3
    >>> con = sqlite3.connect(":memory:")
    >>> _ = con.executescript("CREATE TABLE t (id INT, name TEXT); INSERT INTO t VALUES (1, 'a'), (2, NULL);")
    >>> s = read_rows(Schema.from_mapping({"t": ["id", "name"]}, "sqlite"), lambda q: con.execute(q).fetchall())
    >>> s.table("t").rows
    (('1', 'a'), ('2', None))
    >>> print(rows_sql(s.table("t"), dialect_of("duckdb")))
    SELECT "id", "name" FROM "t" LIMIT 3
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace

import sqlglot
from sqlglot import exp

from cadet_magic.schema.structure import Column, Schema, Table
from cadet_magic.sql.dialect import dialect_of

#: A column with more distinct values than this (in the rows scanned) gets no samples.
LOW_CARDINALITY = 20
#: At most this many values are kept per column (most frequent first).
SAMPLE_VALUES = 5
#: Values longer than this are left out (descriptions, free text).
MAX_VALUE_CHARS = 40
#: Rows scanned per column, so that sampling a large table stays cheap.
SCAN_ROWS = 10_000
#: At most this many columns are sampled per schema read (catalog order).
MAX_COLUMNS = 200
#: Sampling stops after this many seconds (the columns left get no samples); reading rows
#: has a budget as long again (the tables left keep none).
TIME_BUDGET = 0.3
#: Rows read per table.
ROWS = 3
#: Characters of a row's value kept at most.
MAX_CELL_CHARS = 80
#: Tables whose rows are read at most, in catalog order (a catalog of a few dozen tables gets
#: rows on every table; on a 1,000-table catalog the rows add about 50 ms to the schema read,
#: not 0.3 s).
MAX_ROW_TABLES = 50

_TEXT_TYPES = ("char", "text", "string", "clob", "enum", "citext", "name")


def is_text_type(type_: str) -> bool:
    """Whether a declared column type holds text (an empty SQLite type counts).

    Example:
        >>> [is_text_type(t) for t in ["VARCHAR(20)", "TEXT", "", "INTEGER", "character varying"]]
        [True, True, True, False, True]
    """
    t = type_.lower()
    return not t or any(k in t for k in _TEXT_TYPES)


def _table(name: str) -> exp.Table:
    parts = [exp.to_identifier(p, quoted=True) for p in name.split(".")]
    kinds = dict(zip(("this", "db", "catalog"), reversed(parts), strict=False))
    return exp.Table(**kinds)


def sample_sql(
    table: str,
    column: str,
    dialect: sqlglot.Dialect | None = None,
    *,
    max_distinct: int = LOW_CARDINALITY,
    scan_rows: int = SCAN_ROWS,
) -> str:
    """One query giving ``(value, count)`` rows, most frequent first, at most ``max_distinct + 1``.

    The query is built once per dialect and bounds with sqlglot; each call only
    quotes the names into it (about 50 µs instead of 4 ms).

    Args:
        table: the table's name, possibly qualified (``sales.orders``).
        column: the column's name.
        dialect: sqlglot's dialect object (:func:`~cadet_magic.sql.dialect.dialect_of`).
        max_distinct: more distinct values than this: not low-cardinality.
        scan_rows: how many rows of the table are looked at.

    Returns:
        SQL in that dialect, identifiers quoted.

    Example:
        >>> print(sample_sql("sales.Orders", "Status", dialect_of("postgres"), scan_rows=100))
        SELECT v, COUNT(*) AS n FROM (SELECT "Status" AS v FROM "sales"."Orders" WHERE NOT "Status" IS NULL LIMIT 100) AS s GROUP BY v ORDER BY n DESC NULLS LAST, v NULLS FIRST LIMIT 21
        >>> print(sample_sql('we"ird', "__c__", dialect_of("mysql")))
        SELECT v, COUNT(*) AS n FROM (SELECT `__c__` AS v FROM `we"ird` WHERE NOT `__c__` IS NULL LIMIT 10000) AS s GROUP BY v ORDER BY n DESC, v LIMIT 21
    """
    template, table_mark, column_mark = _sample_template(dialect, max_distinct, scan_rows)
    d = dialect
    quoted_column = exp.to_identifier(column, quoted=True).sql(dialect=d)
    quoted_table = _table(table).sql(dialect=d)
    head, _, tail = template.partition(table_mark)
    return (
        head.replace(column_mark, quoted_column)
        + quoted_table
        + tail.replace(column_mark, quoted_column)
    )


_MARK = "cadet_sample_placeholder"


@functools.lru_cache(maxsize=64)
def _sample_template(
    dialect: sqlglot.Dialect | None, max_distinct: int, scan_rows: int
) -> tuple[str, str, str]:
    """The sample query with placeholder names, and those placeholders as quoted in it."""
    d = dialect
    table, column = f"{_MARK}_t", f"{_MARK}_c"
    col = exp.column(column, quoted=True)
    inner = (
        exp.select(exp.alias_(col, "v"))
        .from_(_table(table))
        .where(exp.not_(exp.Is(this=col.copy(), expression=exp.null())))
        .limit(scan_rows)
    )
    query = (
        exp.select("v", exp.alias_(exp.Count(this=exp.Star()), "n"))
        .from_(inner.subquery("s"))
        .group_by("v")
        .order_by(exp.Ordered(this=exp.column("n"), desc=True), "v")
        .limit(max_distinct + 1)
    )
    return (
        query.sql(dialect=d),
        _table(table).sql(dialect=d),
        exp.to_identifier(column, quoted=True).sql(dialect=d),
    )


def samples_from_rows(
    rows: Iterable[Sequence[object]],
    *,
    max_distinct: int = LOW_CARDINALITY,
    limit: int = SAMPLE_VALUES,
    max_chars: int = MAX_VALUE_CHARS,
) -> tuple[str, ...]:
    """The values to keep from the rows of :func:`sample_sql` (none if too many distinct).

    Example:
        >>> samples_from_rows([("a", 5), ("", 2), ("x" * 50, 1), ("b", 1)], limit=5)
        ('a', 'b')
    """
    rows = list(rows)
    if len(rows) > max_distinct:
        return ()
    out = []
    for row in rows:
        value = row[0]
        if not isinstance(value, str) or not value.strip() or len(value) > max_chars:
            continue
        out.append(value)
        if len(out) == limit:
            break
    return tuple(out)


def with_samples(
    schema: Schema,
    values: Mapping[tuple[str, str], Sequence[str]],
    complete: Collection[tuple[str, str]] = (),
) -> Schema:
    """A copy of ``schema`` whose columns carry ``values[(table, column)]`` as samples
    (marked complete for the ``(table, column)`` pairs in ``complete``).

    Example:
        >>> s = Schema.from_mapping({"orders": ["id", "status"]})
        >>> t = with_samples(s, {("orders", "status"): ("paid", "open")}).table("orders")
        >>> t.columns[1].samples, t.columns[1].samples_complete
        (('paid', 'open'), False)
    """
    tables = []
    for t in schema.tables:
        cols = tuple(
            replace(
                c,
                samples=tuple(values[(t.name, c.name)]),
                samples_complete=(t.name, c.name) in complete,
            )
            if (t.name, c.name) in values
            else c
            for c in t.columns
        )
        tables.append(replace(t, columns=cols) if cols != t.columns else t)
    return replace(schema, tables=tuple(tables), _index={})


def text_columns(schema: Schema) -> list[tuple[str, Column]]:
    """``(table name, column)`` for every text column, the candidates for samples.

    Example:
        >>> from cadet_magic.schema.structure import Table
        >>> s = Schema((Table("t", (Column("id", "INT"), Column("name", "TEXT"))),))
        >>> [(t, c.name) for t, c in text_columns(s)]
        [('t', 'name')]
    """
    return [(t.name, c) for t in schema.tables for c in t.columns if is_text_type(c.type)]


def sample_candidates(
    schema: Schema, skip: Collection[str] = (), max_columns: int = MAX_COLUMNS
) -> list[tuple[str, Column]]:
    """The text columns worth sampling: not keys, not in ``skip`` (e.g. views), at most ``max_columns``.

    Key columns (primary or foreign) are left out: their values are identifiers,
    which neither the prompt nor the linker uses.

    Example:
        >>> from cadet_magic.schema.structure import ForeignKey, Table
        >>> t = Table("o", (Column("id", "TEXT", True), Column("c", "TEXT"), Column("s", "TEXT")),
        ...           (ForeignKey(("c",), "c", ("id",)),))
        >>> [(n, c.name) for n, c in sample_candidates(Schema((t,)))]
        [('o', 's')]
    """
    skipped = {name.lower() for name in skip}
    out = []
    for t in schema.tables:
        if t.name.lower() in skipped:
            continue
        keys = {name for fk in t.foreign_keys for name in fk.columns}
        for c in t.columns:
            if is_text_type(c.type) and not c.primary_key and c.name not in keys:
                out.append((t.name, c))
                if len(out) >= max_columns:
                    return out
    return out


def read_samples(
    schema: Schema,
    fetch: Callable[[str], Iterable[Sequence[object]]],
    *,
    skip: Collection[str] = (),
    max_columns: int = MAX_COLUMNS,
    time_budget: float = TIME_BUDGET,
    scan_rows: int = SCAN_ROWS,
) -> Schema:
    """``schema`` with sample values read through ``fetch`` (one bounded query per column), and
    a few rows per table when the prompt's representation shows rows (:func:`read_rows`,
    within its own ``time_budget``).

    Cost is bounded three ways: each query looks at ``scan_rows`` rows at most,
    at most ``max_columns`` columns are sampled, and no new query starts after
    ``time_budget`` seconds. A query that fails gives that column no samples.

    Args:
        schema: the schema as read from the catalog (its ``dialect`` is used).
        fetch: runs one query and returns its rows (the runner's read-only path).
        skip: table names not to sample (views, whose queries may be costly).
        max_columns: columns sampled at most.
        time_budget: seconds after which sampling stops.
        scan_rows: rows looked at per column.

    Returns:
        A copy of the schema with ``samples`` on low-cardinality text columns.

    Example:
        >>> import sqlite3
        >>> con = sqlite3.connect(":memory:")
        >>> _ = con.executescript("CREATE TABLE o (id INT, s TEXT); INSERT INTO o VALUES (1, 'x'), (2, 'y');")
        >>> s = Schema.from_mapping({"o": ["id", "s"]}, dialect="sqlite")
        >>> read_samples(s, lambda q: con.execute(q).fetchall()).table("o").columns[1].samples
        ('x', 'y')
    """
    deadline = time.monotonic() + time_budget
    values: dict[tuple[str, str], tuple[str, ...]] = {}
    complete: set[tuple[str, str]] = set()
    by_table: dict[str, list[str]] = {}
    for table, candidate in sample_candidates(schema, skip, max_columns):
        by_table.setdefault(table, []).append(candidate.name)
    for table, columns in by_table.items():
        if time.monotonic() > deadline:
            break
        try:  # one query per table
            rows = fetch(
                sample_table_sql(table, columns, dialect_of(schema.dialect), scan_rows=scan_rows)
            )
        except Exception:  # noqa: BLE001 - fall back to one query per column
            rows = None
        if rows is not None:
            found: dict[int, list] = {}
            for i, v, n in rows:
                found.setdefault(int(i), []).append((v, n))  # type: ignore[call-overload]
            for i, column in enumerate(columns):
                # A UNION ALL need not keep each branch's order: most frequent first again.
                ranked = sorted(found.get(i, ()), key=lambda r: (-(r[1] or 0), str(r[0])))
                kept = samples_from_rows(ranked)
                if kept:
                    values[(table, column)] = kept
                    if samples_complete(ranked, kept, scan_rows):
                        complete.add((table, column))
            continue
        for column in columns:
            try:
                sql = sample_sql(table, column, dialect_of(schema.dialect), scan_rows=scan_rows)
                got = list(fetch(sql))
                kept = samples_from_rows(got)
            except Exception:  # noqa: BLE001 - an unreadable column simply gets no samples
                continue
            if kept:
                values[(table, column)] = kept
                if samples_complete(got, kept, scan_rows):
                    complete.add((table, column))
    schema = with_samples(schema, values, complete) if values else schema
    return _with_rows(schema, fetch, skip, time_budget)


def _with_rows(
    schema: Schema,
    fetch: Callable[[str], Iterable[Sequence[object]]],
    skip: Collection[str],
    time_budget: float,
) -> Schema:
    """``schema`` with a few rows per table when the prompt's representation shows rows."""
    from cadet_magic.schema.render import REPRESENTATION

    if REPRESENTATION.samples not in ("rows", "both"):
        return schema
    return read_rows(schema, fetch, skip=skip, time_budget=time_budget)


def samples_complete(
    rows: Sequence[Sequence[object]], kept: Sequence[str], scan_rows: int = SCAN_ROWS
) -> bool:
    """Whether the samples ``kept`` from the ``(value, count)`` rows of :func:`sample_sql`
    hold every distinct non-null value of the column: every row was kept and the scan saw
    fewer than ``scan_rows`` rows (so it read the whole column).

    Example:
        >>> samples_complete([("a", 3), ("b", 1)], ("a", "b"))
        True
        >>> samples_complete([("a", 3), ("b", 1)], ("a", "b"), scan_rows=4)
        False
        >>> samples_complete([("a", 3), ("", 1)], ("a",))
        False
    """
    rows = list(rows)
    if len(kept) != len(rows):
        return False
    try:
        seen = sum(int(r[1] or 0) for r in rows)  # type: ignore[call-overload]
    except (TypeError, ValueError, IndexError):
        return False
    return seen < scan_rows


def sample_table_sql(
    table: str,
    columns: Sequence[str],
    dialect: sqlglot.Dialect | None = None,
    *,
    max_distinct: int = LOW_CARDINALITY,
    scan_rows: int = SCAN_ROWS,
) -> str:
    """:func:`sample_sql` for several columns of one table in one query: ``(index, value, count)``.

    Example:
        >>> import sqlite3
        >>> con = sqlite3.connect(":memory:")
        >>> _ = con.executescript("CREATE TABLE o (a TEXT, b TEXT); INSERT INTO o VALUES ('x', 'y');")
        >>> con.execute(sample_table_sql("o", ["a", "b"], dialect_of("sqlite"))).fetchall()
        [(0, 'x', 1), (1, 'y', 1)]
    """
    parts = [
        f"SELECT {i} AS c, v, n FROM ("
        + sample_sql(table, column, dialect, max_distinct=max_distinct, scan_rows=scan_rows)
        + f") AS s{i}"
        for i, column in enumerate(columns)
    ]
    return " UNION ALL ".join(parts)


def cell_text(value: object) -> str | None:
    """A value as the rows show it.

    Example:
        >>> [cell_text(v) for v in (None, 3, 2.5, b"\\x00\\x01", "x" * 100)][:4]
        [None, '3', '2.5', '<2 bytes>']
        >>> len(cell_text("x" * 100))
        80
    """
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    text = str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS]


def rows_sql(table: Table, dialect: sqlglot.Dialect | None = None, n: int = ROWS) -> str:
    """The query reading ``n`` rows of ``table``, its columns in catalog order."""
    parts = [exp.to_identifier(p, quoted=True) for p in table.name.split(".")]
    kinds = dict(zip(("this", "db", "catalog"), reversed(parts), strict=False))
    if table.schema and "db" not in kinds:
        kinds["db"] = exp.to_identifier(table.schema, quoted=True)
    columns = [exp.column(c.name, quoted=True) for c in table.columns]
    return exp.select(*columns).from_(exp.Table(**kinds)).limit(n).sql(dialect=dialect)


def read_rows(
    schema: Schema,
    fetch: Callable[[str], Iterable[Sequence[object]]],
    *,
    skip: Collection[str] = (),
    time_budget: float = TIME_BUDGET,
    n: int = ROWS,
) -> Schema:
    """``schema`` with ``n`` rows on each table (not on those in ``skip``: views)."""
    deadline = time.monotonic() + time_budget
    skipped = {name.lower() for name in skip}
    tables = []
    for i, table in enumerate(schema.tables):
        if (
            table.name.lower() in skipped
            or not table.columns
            or i >= MAX_ROW_TABLES
            or time.monotonic() > deadline
        ):
            tables.append(table)
            continue
        try:
            got = list(fetch(rows_sql(table, dialect_of(schema.dialect), n)))[:n]
        except Exception:  # noqa: BLE001 - a table whose rows cannot be read shows none
            tables.append(table)
            continue
        rows = tuple(tuple(cell_text(v) for v in row) for row in got)
        tables.append(replace(table, rows=rows))
    return replace(schema, tables=tuple(tables), _index={})
