"""A few rows of each table, read with the schema for a representation that shows rows
(:class:`~cadet_magic.schema.render.Representation`; stdlib + sqlglot).

One bounded query per table (its columns named in catalog order, ``LIMIT`` :data:`ROWS`),
through the runner's own read-only ``fetch``; each value kept as text (None for NULL), cut to
:data:`MAX_VALUE_CHARS`. Views are not read (their query may be costly); a table whose query
fails, or any after the time budget, keeps no rows.

Example:
    >>> import sqlite3
    >>> from cadet_magic.schema.model import Schema
    >>> con = sqlite3.connect(":memory:")
    >>> _ = con.executescript("CREATE TABLE t (id INT, name TEXT); INSERT INTO t VALUES (1, 'a'), (2, NULL);")
    >>> s = read_rows(Schema.from_mapping({"t": ["id", "name"]}, "sqlite"), lambda q: con.execute(q).fetchall())
    >>> s.table("t").rows
    (('1', 'a'), ('2', None))
    >>> print(rows_sql(s.table("t"), dialect_of("duckdb")))
    SELECT "id", "name" FROM "t" LIMIT 3
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Collection, Iterable, Sequence

import sqlglot
from sqlglot import exp

from cadet_magic.schema.model import Schema, Table
from cadet_magic.sql.dialect import dialect_of

#: Rows read per table.
ROWS = 3
#: Characters of a value kept at most.
MAX_VALUE_CHARS = 80
#: Seconds reading rows may take in all (the tables left keep none).
TIME_BUDGET = 0.3
#: Tables read at most, in catalog order (a catalog of a few dozen tables gets rows on every
#: table; on a 1,000-table catalog the rows add about 50 ms to the schema read, not 0.3 s).
MAX_TABLES = 50


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
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS]


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
            or i >= MAX_TABLES
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
        tables.append(dataclasses.replace(table, rows=rows))
    return dataclasses.replace(schema, tables=tuple(tables), _index={})
