"""The fallback's simple SELECT, written by the product: the rows the pandas code gets as ``df``
(portable: stdlib + sqlglot).

The model no longer writes the fallback's SQL (its SELECTs repeated the SQL phase's mistakes,
or were refused for grouping, and it wrote the same shape again): :func:`fetch_select` reads
every column of the tables the question needs, joined along their foreign keys, with no filter,
grouping or order, and the model writes only pandas. Which tables: those the SQL attempts read
(:func:`~cadet_magic.schema.queried.tables_read`: they name the right tables far more often than they compute the right
thing; :func:`~cadet_magic.schema.queried.tables_in` reads them from each attempt's checked
tree when it closes), else the
tables of the schema when there are few. Tables the
chosen ones do not reach by foreign keys directly are joined through the tables between them
(at most :data:`MAX_HOPS` per table), along shared key-like column names (``..._id``) where
the schema declares no foreign key; a table neither reaches is left out.

A column keeps its name when no other column of the SELECT has it; otherwise it is named
``table_column``. A foreign key and the key it references hold the same values after the
join: only the first is kept. :class:`FetchPlan` says where each column of ``df`` comes from,
for the prompt.

Example:
    >>> from cadet_magic.schema.structure import Column, ForeignKey, Schema, Table
    >>> s = Schema((
    ...     Table("orders", (Column("order_id", "INTEGER", True), Column("day", "DATE"))),
    ...     Table("items", (Column("order_id", "INTEGER"), Column("price", "REAL")),
    ...           (ForeignKey(("order_id",), "orders", ("order_id",)),)),
    ... ))
    >>> from cadet_magic.sql.target import Target
    >>> plan = fetch_select(s, ["items", "orders"], Target.named("sqlite"))
    >>> print(plan.sql)
    SELECT items.order_id AS order_id, items.price AS price, orders.day AS day FROM items JOIN orders ON items.order_id = orders.order_id
    >>> plan.sources
    ('items.order_id', 'items.price', 'orders.day')
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from cadet_magic.schema.structure import Schema, Table
from cadet_magic.sql.target import Target

#: Tables between two chosen ones a join may pass through, at most.
MAX_HOPS = 2
#: Tables of the schema shown to the model used when no SQL attempt names any, at most.
MAX_SCHEMA_TABLES = 4


@dataclass(frozen=True)
class FetchPlan:
    """The product's SELECT: its text (``sql``, in the target's dialect), the tables it reads
    in join order, and for each column of its result the ``table.column`` it comes from."""

    sql: str
    tables: tuple[str, ...]
    columns: tuple[str, ...]
    sources: tuple[str, ...]


#: Column names that look like keys (joined on when two tables declare no foreign key).
_KEYISH = re.compile(r"(^|_)(id|key|code)$|id$", re.I)


def _shared_keys(schema: Schema, table: Table) -> list[tuple[str, list[tuple[str, str]]]]:
    """Tables sharing a key-like column name with ``table``: (other, [(own, other)])."""
    out = []
    own = {c.lower(): c for c in table.column_names() if _KEYISH.search(c)}
    for other in schema.tables:
        if other.name == table.name:
            continue
        pairs = [(own[c.lower()], c) for c in other.column_names() if c.lower() in own]
        if pairs:
            out.append((other.name, pairs[:1]))
    return out


def _path_to(
    schema: Schema, joined: list[str], target: str
) -> list[tuple[str, str, list[tuple[str, str]]]] | None:
    """The shortest chain of foreign-key joins from a joined table to ``target`` (along
    shared key-like column names when no foreign key leads there)."""
    for edges in (Schema.linked, _shared_keys):
        seen = {j.lower() for j in joined}
        queue: deque = deque((j, []) for j in joined)
        while queue:
            name, path = queue.popleft()
            if name.lower() == target.lower():
                return path
            if len(path) > MAX_HOPS:
                continue
            table = schema.table(name)
            for other, pairs in edges(schema, table) if table is not None else []:
                if other.lower() in seen:
                    continue
                seen.add(other.lower())
                queue.append((other, [*path, (name, other, pairs)]))
    return None


def _root(schema: Schema, tables: Sequence[str]) -> str:
    """The table to start from: the one referencing most of the others (the facts' table)."""

    def refs(name: str) -> int:
        table = schema.table(name)
        wanted = {t.lower() for t in tables}
        if table is None:
            return 0
        return sum(1 for fk in table.foreign_keys if fk.ref_table.lower() in wanted)

    return max(tables, key=lambda n: (refs(n), -list(tables).index(n)))


def fetch_select(schema: Schema, tables: Sequence[str], target: Target) -> FetchPlan | None:
    """Every column of ``tables`` (and of the tables between them), joined along foreign keys;
    None when none of ``tables`` is in the schema. Its text is in ``target``'s dialect."""
    known = [t.name for name in tables if (t := schema.table(name)) is not None]
    known = list(dict.fromkeys(known))
    if not known:
        return None
    order = [_root(schema, known)]
    joins: list[tuple[str, str, list[tuple[str, str]]]] = []
    for name in known:
        if name in order:
            continue
        path = _path_to(schema, order, name)
        if path is None:
            continue  # not reached by any key: left out
        for src, dst, pairs in path:
            if dst not in order:
                order.append(dst)
                joins.append((src, dst, pairs))
    same: dict[tuple[str, str], tuple[str, str]] = {}  # (table, column) -> the one kept
    for src, dst, pairs in joins:
        for a, b in pairs:
            same[(dst.lower(), b.lower())] = (src, a)
    picked: list[tuple[str, str]] = []
    for name in order:
        table = schema.table(name)
        assert table is not None
        picked += [
            (table.name, c) for c in table.column_names() if (name.lower(), c.lower()) not in same
        ]
    counts: dict[str, int] = {}
    for _, c in picked:
        counts[c.lower()] = counts.get(c.lower(), 0) + 1
    names = [c if counts[c.lower()] == 1 else f"{t}_{c}" for t, c in picked]
    select = exp.select(
        *(
            exp.alias_(exp.column(c, table=t, quoted=None), n)
            for (t, c), n in zip(picked, names, strict=True)
        )
    ).from_(exp.to_table(order[0]))
    for src, dst, pairs in joins:
        on = exp.and_(*(exp.column(a, table=src).eq(exp.column(b, table=dst)) for a, b in pairs))
        select = select.join(exp.to_table(dst), on=on)
    sql = select.sql(dialect=target.dialect, identify=False)
    return FetchPlan(
        sql=sql,
        tables=tuple(order),
        columns=tuple(names),
        sources=tuple(f"{t}.{c}" for t, c in picked),
    )
